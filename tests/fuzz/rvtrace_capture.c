/* rvtrace_capture.c — libFuzzer target: rva_capture_decode and the
 * streaming rva_capture_summarize on arbitrary bytes.  Both must accept or
 * reject the same inputs and agree on the call count. */
#include "rvtrace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rva_trace *t = NULL;
	rva_summary s;
	rva_error err;
	int r1 = rva_capture_decode(data, size, &t, &err);
	int r2 = rva_capture_summarize(data, size, &s, &err);
	if ((r1 < 0) != (r2 < 0))
		abort();
	if (r1 == 0 && r2 == 0) {
		uint64_t calls = 0;
		for (size_t i = 0; i < s.trace->nmethods; i++)
			calls += s.stats[i].calls;
		if (calls != t->threads[0].ncalls)
			abort();
		rva_chains ch;
		if (rva_chains_from_tree(s.trace, &s.tree, 3, &ch) == 0)
			rva_chains_release(&ch);
	}
	if (r2 == 0)
		rva_summary_release(&s);
	rva_trace_free(t);
	return rvtrace_fuzz_one(rva_capture_decode, data, size);
}
