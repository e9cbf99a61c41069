/* rvtrace_chrome.c — libFuzzer target: rva_chrome_import on arbitrary bytes. */
#include "rvtrace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return rvtrace_fuzz_one(rva_chrome_import, data, size);
}
