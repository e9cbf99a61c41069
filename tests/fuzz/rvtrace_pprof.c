/* rvtrace_pprof.c — libFuzzer target: rva_pprof_import on arbitrary bytes. */
#include "rvtrace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return rvtrace_fuzz_one(rva_pprof_import, data, size);
}
