/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob.h — the blob interface: content-addressed capture payloads behind one
 * function table, with a local-directory backend (blob_local.c, the default,
 * the layout of rvs_blob_put below), an S3-compatible one (blob_s3.c) and
 * PostgreSQL bytea (blob_pg.c).
 *
 * A blob is named by the lowercase hex SHA-256 of its content, so a put of a
 * blob already stored is a no-op success (it refreshes the blob's age, which
 * retention's grace window relies on) and a name can never address anything
 * but a blob.  Reads verify the content against its name: a mismatch is
 * -EBADMSG, never the wrong bytes.
 *
 * Threads: every function blocks (disk or network) and runs on the work
 * queue; one handle may be used by several work threads at once.
 * Errors: 0 or a negative errno — -ENOENT no such blob, -EFBIG over the
 * caller's cap, -EBADMSG content does not match its name, -EINVAL a name
 * that is not 64 lowercase hex digits, -EIO a backend failure (after the
 * backend's retries), and the transient ones of store.h's contract
 * (rvs_store_transient): -ETIMEDOUT the backend did not answer in time,
 * -EAGAIN it is away for now (S3: connection refused or reset, a 5xx
 * answer, after the retries; PostgreSQL: as the store), -ENOSPC a full disk.
 */
#ifndef RVS_BLOB_H
#define RVS_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include <mbedtls/sha256.h>

#include "base/config.h"

/* ---- the local directory's layout (blob_local.c) ---- */
/* Content-addressed: DIR/ab/abcdef… named by the SHA-256 of the content. */
int rvs_blob_put(const char *dir, const void *data, size_t len, char hex_out[65]);
int rvs_blob_path(const char *dir, const char *hex, char *out, size_t outlen);
struct rvs_blob_sweep_stats {
	uint64_t temps;	  /* temporary files of unfinished writes removed */
	uint64_t orphans; /* blobs no upload references, removed */
};
/* Walks DIR and unlinks the regular files at least min_age_s old that are
 * leftovers of an unfinished write (not named like a blob, or in DIR/tmp)
 * and, when `referenced` is given, the blobs it says nobody references
 * (it returns 1 referenced, 0 not, <0 error — which stops the walk).
 * Symlinks and directories are never touched.  *out (may be NULL) gets the
 * counts.  0 or a negative errno. */
int rvs_blob_sweep(const char *dir, int64_t min_age_s,
		   int (*referenced)(const char *hex, void *arg), void *arg,
		   struct rvs_blob_sweep_stats *out);

struct rvs_blobs;

struct rvs_blob_ops {
	const char *name;
	/* Stores data under its SHA-256 (hex_out gets the name) durably: when
	 * it returns 0 the blob survives a crash of the server and its host. */
	int (*put)(struct rvs_blobs *b, const void *data, size_t len, char hex_out[65]);
	/* Reads the whole blob into *out (malloc'd, the caller frees; *len its
	 * size); -EFBIG when it is larger than max. */
	int (*get)(struct rvs_blobs *b, const char *hex, size_t max, uint8_t **out, size_t *len);
	/* Streams the blob into the file descriptor fd (at its offset) in
	 * bounded memory; -EFBIG when larger than max (fd then holds a part). */
	int (*get_fd)(struct rvs_blobs *b, const char *hex, uint64_t max, int fd);
	/* 1 stored, 0 not, or a negative errno. */
	int (*exists)(struct rvs_blobs *b, const char *hex);
	/* Removes the blob if it is at least min_age_s old (its last put):
	 * 1 removed, 0 not there or younger.  Retention's grace window: a
	 * concurrent put of the same content renews the age first. */
	int (*del)(struct rvs_blobs *b, const char *hex, int64_t min_age_s);
	/* Lists every blob and removes what is at least min_age_s old and is
	 * either the leftover of an unfinished write or, when referenced is
	 * given, a blob it says nobody references (1 referenced, 0 not, < 0 an
	 * error that stops the walk).  *out (may be NULL) gets the counts. */
	int (*sweep)(struct rvs_blobs *b, int64_t min_age_s,
		     int (*referenced)(const char *hex, void *arg), void *arg,
		     struct rvs_blob_sweep_stats *out);
	/* The blob's own file path, for a backend that keeps blobs in files;
	 * NULL for the others (rvs_blobs_file then makes a copy). */
	int (*path)(struct rvs_blobs *b, const char *hex, char *out, size_t outlen);
	/* Frees the handle (NULL is fine). */
	void (*close)(struct rvs_blobs *b);
};

/* What every backend's handle starts with. */
struct rvs_blobs {
	const struct rvs_blob_ops *ops;
	char tmp_dir[512]; /* where rvs_blobs_file makes its temporary copies */
};

/* The S3 backend's settings ([store] keys, server/README.md). */
struct rvs_blob_s3_config {
	const char *endpoint; /* "http://127.0.0.1:9000" or "https://s3.eu-west-1.amazonaws.com" */
	const char *region;   /* "us-east-1" when NULL or "" */
	const char *access_key;	 /* the access key id */
	const char *secret_file; /* a file holding the secret key: owner-only (mode & 077 == 0) */
	uint32_t timeout_ms;	 /* connect timeout and the longest stall of a transfer; 0: 10 s */
};

/* Opens the blob store `spec`: "s3://BUCKET/PREFIX" (PREFIX may be empty)
 * with the settings in s3; a libpq URI "postgresql://…" or "postgres://…"
 * (table rv_blobs, created on first use; nothing connects before the first
 * call, which must be on a work thread); or otherwise a local directory
 * path (created on the first put).  tmp_dir is where rvs_blobs_file copies a remote blob for
 * the decoder (NULL: the system's temporary directory).  *out to be freed
 * with rvs_blobs_close.  -EINVAL a malformed spec or missing S3 settings,
 * -EPERM a secret file others can read, -ENOMEM.  Loop or work thread. */
int rvs_blobs_open(const char *spec, const struct rvs_blob_s3_config *s3, const char *tmp_dir,
		   struct rvs_blobs **out);
int rvs_blobs_open_local(const char *dir, struct rvs_blobs **out);
int rvs_blobs_open_s3(const char *bucket, const char *prefix, const struct rvs_blob_s3_config *s3,
		      struct rvs_blobs **out);
int rvs_blobs_open_pg(const char *conninfo, struct rvs_blobs **out);
void rvs_blobs_close(struct rvs_blobs *b);
/* rvs_blobs_open for the server's config: [store] blobs (or [server]
 * blob_dir when empty) with the s3_* keys; a remote backend's temporary
 * copies go to blob_dir/tmp (made here), which the startup sweep (main.c)
 * empties of what a killed server left.  Same errors, or -errno of mkdir.
 * Loop or work thread; nothing connects before the first call. */
int rvs_blobs_open_config(const struct rvs_config *cfg, struct rvs_blobs **out);

/* A file holding blob hex for a reader that needs one (the decoder): the
 * local backend's own file, or for a remote backend a private temporary
 * copy in tmp_dir, streamed (bounded memory) and verified.  *is_temp says
 * which: the caller unlinks path when it is set.  -EFBIG over max. */
int rvs_blobs_file(struct rvs_blobs *b, const char *hex, uint64_t max, char *path, size_t pathlen,
		   int *is_temp);

/* 1 when hex is a blob name: 64 lowercase hex digits. */
int rvs_blob_name_ok(const char *hex);

/* ---- for the backends: checking content against its name ---------------- */
/* 1 when data's SHA-256 is hex. */
int rvs_blob_matches(const char *hex, const void *data, size_t len);
/* An incremental SHA-256 of a streamed blob: init, update per chunk, then
 * matches (which ends it: 1 the content is hex's, 0 not). */
struct rvs_blob_hasher {
	mbedtls_sha256_context ctx;
};
void rvs_blob_hasher_init(struct rvs_blob_hasher *h);
void rvs_blob_hasher_update(struct rvs_blob_hasher *h, const void *data, size_t len);
int rvs_blob_hasher_matches(struct rvs_blob_hasher *h, const char *hex);

/* One ListObjectsV2 answer of the S3 backend (blob_s3.c), parsed on its
 * own so it can be tested and fuzzed without a server.  The caller gives
 * names and mtimes room for RVS_S3_PAGE_MAX entries (S3's page size). */
#define RVS_S3_PAGE_MAX 1000
struct rvs_s3_page {
	char (*names)[65]; /* blob-named keys under the prefix, the prefix cut */
	int64_t *mtimes;   /* their LastModified, unix s; -1 unparsable */
	size_t n;
	char token[1024]; /* the next page's continuation token, "" on the last */
};
/* Parses the XML answer xml[0..len) (untrusted: it comes off the network)
 * into *p, keeping the keys that start with prefix and name a blob; others
 * are not ours and skipped.  0; -EIO when it is not a ListBucketResult, is
 * larger than the backend ever reads (16 MiB), or says it is truncated
 * without a continuation token; -ENOMEM.  On error p->n is 0. */
int rvs_s3_list_parse(const char *xml, size_t len, const char *prefix, struct rvs_s3_page *p);

#endif
