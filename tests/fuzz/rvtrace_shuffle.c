/* rvtrace_shuffle.c — libFuzzer target: the unshuffler (tracer/FORMAT.md §3)
 * on arbitrary bytes, fed in pieces whose size the input's last byte picks.
 * What it accepts must shuffle back to exactly the input (the transform is a
 * bijection on a valid layout), and the capture that comes out goes on to
 * the decoder and every consumer, as a server would use it. */
#include <string.h>

#include "rvtrace_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *out = malloc(size + 1), *back;
	size_t piece = size ? 1 + (size_t)data[size - 1] * 97 : 1, len = 0;
	rva_unshuffler *u;
	int rc = 0;

	if (!out || rva_unshuffler_new(out, size, &u)) {
		free(out);
		return 0;
	}
	for (size_t pos = 0; pos < size && !rc; pos += piece)
		rc = rva_unshuffler_write(u, data + pos, size - pos < piece ? size - pos : piece);
	if (!rc)
		rc = rva_unshuffler_finish(u, &len);
	rva_unshuffler_free(u);
	if (!rc) {
		if (len != size || !(back = malloc(size)))
			abort();
		if (rva_shuffle_buf(out, len, back) || memcmp(back, data, size) != 0)
			abort();
		free(back);
		rvtrace_fuzz_one(rva_capture_decode, out, len);
	}
	free(out);
	return 0;
}
