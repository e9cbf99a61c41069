/*
 * server_symbols.c — libFuzzer target: reading an uploaded ELF debug file
 * (server/src/symbols.c rvs_symbols_inspect), the body of
 * POST /api/v1/symbols.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char bid[2 * RVS_BUILD_ID_MAX + 1], reason[160];
	size_t nfuncs = 0;
	reason[0] = '\0';
	if (rvs_symbols_inspect(data, size, bid, &nfuncs, reason, sizeof reason) == 0) {
		/* Accepted files yield a usable store key and some functions. */
		if (!rvs_symbols_key_ok(bid) || nfuncs == 0)
			__builtin_trap();
	} else if (strlen(reason) == 0) {
		__builtin_trap();
	}
	return 0;
}
