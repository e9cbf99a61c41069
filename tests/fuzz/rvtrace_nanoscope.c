/* rvtrace_nanoscope.c — libFuzzer target: rva_nanoscope_import on arbitrary bytes. */
#include "rvtrace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return rvtrace_fuzz_one(rva_nanoscope_import, data, size);
}
