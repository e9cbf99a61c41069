
short"
Bad Reason