/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbols.c — the symbol store's endpoints (symbols.h) over its files
 * (symstore.c).
 *
 * Invariants: a stored file's name is the hex of the build-id libelf read
 * from its NT_GNU_BUILD_ID note (rvs_symbols_inspect), so no request can
 * name a path; keys taken from URLs are checked to be bounded lowercase hex
 * (rvs_symbols_path) before they become paths.  Files are written
 * atomically (temp, fsync, rename).  A file without a build-id or without
 * .symtab functions is refused (400) rather than kept.
 */
#include "api/symbols.h"
#include "http/reply.h"
#include "http/route.h"
#include "base/log.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

/* ---- the endpoints ---------------------------------------------------------- */

static void put(const char *dir, const uint8_t *body, size_t len, struct rvs_query_resp *r,
		char stored[2 * RVS_BUILD_ID_MAX + 1])
{
	char bid[2 * RVS_BUILD_ID_MAX + 1], reason[160], path[1024];
	size_t nfuncs;
	int rc;

	if (!body || !len)
		return rvs_query_set_error(r, 400, "empty body: send an ELF debug file");
	if (rvs_symbols_inspect(body, len, bid, &nfuncs, reason, sizeof reason))
		return rvs_query_set_error(r, 400, reason);
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		return rvs_query_set_error(r, 500, "cannot create the symbol store");
	if (rvs_symbols_path(dir, bid, path, sizeof path))
		return rvs_query_set_error(r, 500, "symbol store path too long");
	if ((rc = rvs_write_file_atomic(path, body, len, 0640))) {
		rvs_log("error", "symbol store write", "build_id=%s err=%d", bid, rc);
		return rvs_query_set_error(r, 500, "cannot store the file");
	}
	rvs_log("info", "symbols stored", "build_id=%s bytes=%zu functions=%zu", bid, len, nfuncs);
	memcpy(stored, bid, sizeof bid);
	rvs_query_reply(r, 201,
			json_pack("{s:s,s:I,s:I}", "build_id", bid, "bytes", (json_int_t)len,
				  "functions", (json_int_t)nfuncs));
}

static void list(const char *dir, struct rvs_query_resp *r)
{
	json_t *arr = json_array();
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char key[2 * RVS_BUILD_ID_MAX + 1], path[1024];
		const char *dot = strrchr(de->d_name, '.');
		size_t n = dot ? (size_t)(dot - de->d_name) : 0;
		struct stat st;
		if (!dot || strcmp(dot, ".debug") != 0 || n >= sizeof key)
			continue;
		memcpy(key, de->d_name, n);
		key[n] = '\0';
		if (rvs_symbols_path(dir, key, path, sizeof path) || stat(path, &st) < 0)
			continue;
		json_array_append_new(arr, json_pack("{s:s,s:I,s:I}", "build_id", key, "bytes",
						     (json_int_t)st.st_size, "uploaded_at",
						     (json_int_t)st.st_mtime));
	}
	if (d)
		closedir(d);
	rvs_query_reply(r, 200, json_pack("{s:o}", "symbols", arr));
}

static void get_one(const char *dir, const char *bid, const char *query, struct rvs_query_resp *r)
{
	char path[1024], v[32], name[512];
	struct stat st;
	json_t *doc;

	if (!rvs_symbols_key_ok(bid))
		return rvs_query_set_error(r, 400, "bad build-id: 2-128 lowercase hex digits");
	if (rvs_symbols_path(dir, bid, path, sizeof path) || stat(path, &st) < 0)
		return rvs_query_set_error(r, 404, "no symbols for this build-id");
	doc = json_pack("{s:s,s:I,s:I}", "build_id", bid, "bytes", (json_int_t)st.st_size,
			"uploaded_at", (json_int_t)st.st_mtime);
	/* ?offset=0x… (hex, as module+0x… names show it). */
	if (strncmp(query, "offset=", 7) == 0) {
		char *end;
		unsigned long long off;
		snprintf(v, sizeof v, "%s", query + 7);
		errno = 0;
		off = strtoull(v, &end, 16);
		if (errno || end == v || *end || strchr(v, '-')) {
			json_decref(doc);
			return rvs_query_set_error(r, 400, "bad offset: hex, e.g. 0x1234");
		}
		switch (rvs_symbols_lookup(dir, bid, off, name, sizeof name)) {
		case 0: {
			json_t *js = json_string(name); /* NULL when not UTF-8 */
			json_object_set_new(doc, "function", js ? js : json_null());
			break;
		}
		case -ENOENT:
			json_object_set_new(doc, "function", json_null());
			break;
		default:
			json_decref(doc);
			return rvs_query_set_error(r, 500, "stored symbols unreadable");
		}
	}
	rvs_query_reply(r, 200, doc);
}

void rvs_symbols_put(struct rvs_call *c)
{
	_Static_assert(sizeof c->build_id == 2 * RVS_BUILD_ID_MAX + 1, "build-id buffer");
	c->build_id[0] = '\0';
	put(c->cfg->symbols_dir, c->body, c->body_len, c->q, c->build_id);
}

void rvs_symbols_list(struct rvs_call *c)
{
	list(c->cfg->symbols_dir, c->q);
}

void rvs_symbols_get(struct rvs_call *c)
{
	get_one(c->cfg->symbols_dir, c->arg, c->query, c->q);
}

void rvs_symbols_refuse(struct rvs_call *c)
{
	rvs_query_set_error(c->q, 405, "method not allowed");
}
