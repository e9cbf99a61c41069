/*
 * symbols.h — the server's symbol store: ELF debug files engineers upload
 * (POST /api/v1/symbols), kept content-addressed by their GNU build-id as
 * DIR/<build-id hex>.debug, listed (GET /api/v1/symbols) and queried for the
 * function at a module offset (GET /api/v1/symbols/{build-id}?offset=0x…).
 * The key is always the hex of the build-id read from the file's note, never
 * a name from the client.  Work queue only (file I/O, ELF parsing).
 */
#ifndef RVS_SYMBOLS_H
#define RVS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "query.h"
#include "rvs.h"

#define RVS_BUILD_ID_MAX 64 /* bytes; the hex key is at most twice that */

/* Reads an ELF image: its GNU build-id (as lowercase hex into bid) and how
 * many functions its .symtab defines.  0, or -EINVAL with a reason for the
 * client (not ELF, damaged, no build-id note, no .symtab functions). */
int rvs_symbols_inspect(const uint8_t *buf, size_t len, char bid[2 * RVS_BUILD_ID_MAX + 1],
			size_t *nfuncs, char *reason, size_t rlen);

/* 1 when s is a well-formed build-id key: 2..128 lowercase hex digits, even. */
int rvs_symbols_key_ok(const char *s);

/* The function of debug file `bid` in dir containing offset (an ELF virtual
 * address, i.e. the module offset of FORMAT.md's SYMBOL record): its name
 * into name.  0, -EINVAL (bad key), -ENOENT (no such file or no function
 * there), -EIO (the stored file does not parse). */
int rvs_symbols_lookup(const char *dir, const char *bid, uint64_t offset, char *name,
		       size_t namelen);

/* The /api/v1/symbols endpoints (route.c's table; work thread; each fills
 * c->q always).  put: POST /api/v1/symbols, a debug file stored under its
 * build-id (then in c->build_id, "" when nothing was stored); list: GET
 * /api/v1/symbols; get: GET /api/v1/symbols/{build-id} (c->arg, ?offset=
 * looks a function up); refuse: POST to /api/v1/symbols/… (405). */
struct rvs_call;
void rvs_symbols_put(struct rvs_call *c);
void rvs_symbols_list(struct rvs_call *c);
void rvs_symbols_get(struct rvs_call *c);
void rvs_symbols_refuse(struct rvs_call *c);

#endif
