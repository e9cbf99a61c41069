/*
 * control.c — the control thread (placeholder until the socket client lands):
 * fork support only.
 */
#include "tracer-int.h"

#include <errno.h>

void rvt_control_atfork_child(void)
{
}

int rvt_control_start(const char *socket_path)
{
	(void)socket_path;
	return -ENOSYS;
}

void rvt_control_stop(void)
{
}
