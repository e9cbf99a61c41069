/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode.h — the decoder behind decoder.h's struct rvs_decoder: reads a stored
 * capture blob, inflates it when the upload says so (zstd, or zstd over
 * the shuffled form), summarizes it
 * with librvanalysis and has the store index it (tables traces,
 * trace_methods, trace_chains; server/SCHEMA.md; store.h index_write) on
 * either backend.  Runs on the libuv work queue only.  Each decode lane
 * has its own index connection to the store's database.
 */
#ifndef RVS_DECODE_H
#define RVS_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/decoder.h"
#include "pipeline/payload.h"

struct rvs_decode;

/* database: the store's dsn (a sqlite path or a postgresql:// URI), taken
 * with rvs_store_acquire (opened and migrated when nothing holds it yet;
 * blocks).  Fills *dec with the seam (ctx = the new object).  0, -ENOMEM
 * or the acquire's -errno.  Free with rvs_decode_free (it releases the
 * store). */
int rvs_decode_new(const char *database, struct rvs_decoder *dec, struct rvs_decode **out);
void rvs_decode_free(struct rvs_decode *d); /* NULL is a no-op */

/* The symbol store (symbols.c) the decoder names unresolved methods from:
 * a capture's "module+0xoffset" methods whose module's debug file is there
 * get the function's name; the build-ids still missing are recorded in
 * trace_unresolved.  "" or never called: no symbolization.  0 or
 * -ENAMETOOLONG. */
int rvs_decode_set_symbols_dir(struct rvs_decode *d, const char *dir);

#endif
