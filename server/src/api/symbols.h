/* SPDX-License-Identifier: Apache-2.0 */
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

#include "model/symstore.h"

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
