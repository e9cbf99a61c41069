/*
 * decode.h — the decoder behind decoder.h's struct rvs_decoder: reads a stored
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

#include "decoder.h"
#include "payload.h"

struct rvs_decode;

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

#endif
