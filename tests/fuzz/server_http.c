/*
 * server_http.c — libFuzzer target: the server's HTTP request path
 * (server/src/http.c) fed arbitrary plaintext, split at a point chosen by
 * the first input byte, with keep-alive handling as net.c does it.
 */
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rvs_http h;
	size_t split, off = 0;

	if (size == 0)
		return 0;
	split = data[0] % 64 + 1;
	data++;
	size--;
	rvs_http_init(&h, 2048, 4096);
	while (off < size) {
		size_t n = size - off < split ? size - off : split;
		ssize_t k = rvs_http_feed(&h, (const char *)data + off, n);
		if (k < 0)
			break;
		off += (size_t)k;
		if (h.complete) {
			/* What a handler may read: bounded, terminated strings. */
			volatile size_t sink = h.req.body_len;
			for (size_t i = 0; h.req.path[i]; i++)
				sink += (unsigned char)h.req.path[i];
			(void)sink;
			rvs_http_next(&h);
		} else if (k == 0) {
			break;
		}
	}
	rvs_http_release(&h);
	return 0;
}
