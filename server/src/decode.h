/*
 * decode.h — the decoder behind api.h's struct rvs_decoder: reads a stored
 * capture blob, inflates it when the upload says so (zstd, or zstd over
 * the shuffled form), summarizes it
 * with librvanalysis and indexes it in sqlite (tables traces, trace_methods,
 * trace_chains; server/SCHEMA.md migration 2).  Runs on the libuv work
 * queue only.  It uses its own sqlite connection to the store's database;
 * the store must have been opened (migrated) before the first decode.
 */
#ifndef RVS_DECODE_H
#define RVS_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

struct rvs_decode;

/* Limits: compressed blob and decompressed capture (bytes). */
#define RVS_DECODE_MAX_BLOB    (512ull << 20)
#define RVS_DECODE_MAX_CAPTURE RVS_MAX_CAPTURE_BYTES

/* database: path of the sqlite file.  Fills *dec with the seam (ctx = the
 * new object).  0 or -ENOMEM / -ENAMETOOLONG.  Free with rvs_decode_free. */
int rvs_decode_new(const char *database, struct rvs_decoder *dec, struct rvs_decode **out);
void rvs_decode_free(struct rvs_decode *d); /* NULL is a no-op */

/* The symbol store (symbols.c) the decoder names unresolved methods from:
 * a capture's "module+0xoffset" methods whose module's debug file is there
 * get the function's name; the build-ids still missing are recorded in
 * trace_unresolved.  "" or never called: no symbolization.  0 or
 * -ENAMETOOLONG. */
int rvs_decode_set_symbols_dir(struct rvs_decode *d, const char *dir);

/* Decompresses a zstd frame (or concatenated frames) of any content size up
 * to max bytes.  *out is malloc'd (caller frees).  0, -EINVAL (not zstd /
 * corrupt / truncated), -E2BIG (over max), -ENOMEM. */
int rvs_zstd_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen);

/* The most a capture whose upload declared payload_size `declared` may
 * inflate to: declared, capped at RVS_DECODE_MAX_CAPTURE (which is also the
 * limit when nothing was declared, rows from before the declaration was
 * required).  Any thread. */
size_t rvs_inflate_limit(uint64_t declared);

/* The capture held in a stored payload of Compression comp (upload.proto):
 * COMPRESSION_ZSTD decompressed as rvs_zstd_decompress does,
 * COMPRESSION_ZSTD_SHUFFLED decompressed and taken out of its shuffled form
 * (tracer/FORMAT.md §3; its frames must declare their sizes).  *out is
 * malloc'd (caller frees).  0, -EINVAL (corrupt, truncated, not a capture's
 * shuffled form), -E2BIG (over max), -EPROTONOSUPPORT (any other comp,
 * including COMPRESSION_NONE: the payload is the capture), -ENOMEM. */
int rvs_payload_inflate(int comp, const uint8_t *in, size_t len, size_t max, uint8_t **out,
			size_t *outlen);

#endif
