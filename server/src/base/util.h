/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.h — small helpers every layer of the server uses (util.c): hashing,
 * randomness, constant-time comparison, PBKDF2, whole-file reads and the
 * atomic file write.  Thread-safe: the work queue uses them as much as the
 * loop thread does.
 */
#ifndef RVS_UTIL_H
#define RVS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void rvs_sha256(const void *data, size_t len, uint8_t out[32]);
void rvs_hex(const uint8_t *in, size_t len, char *out); /* out: 2*len+1 bytes */
int rvs_random(void *buf, size_t len);			/* getrandom; 0 or -errno */
/* n (at most 64) random characters of an unambiguous alphabet (no 0/O,
 * 1/l/I) into out[0..n], NUL-terminated: passwords and secrets.  0 or
 * -EIO. */
int rvs_random_word(char *out, size_t n);
int rvs_ct_equal(const void *a, size_t alen, const void *b, size_t blen);
int rvs_pbkdf2(const char *pw, const uint8_t *salt, size_t saltlen, unsigned iter, uint8_t out[32]);
/* Reads a whole regular file (at most max bytes) into *out (caller frees),
 * NUL-terminated; a file that shrinks while read is -EIO. */
int rvs_read_file(const char *path, size_t max, uint8_t **out, size_t *len);
/* Reads a secret: the regular file path, which only its owner may read,
 * of 1 to cap bytes, into buf; *len its size.  0, -EPERM (group or
 * others may read it), -EINVAL (not a regular file, empty or over cap),
 * or the errno of open/read. */
int rvs_read_private_file(const char *path, void *buf, size_t cap, size_t *len);
/* rvc_write_file_atomic (rearview/common.h): temp file in the same dir,
 * fsync, rename, directory fsync. */
int rvs_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* 64-bit FNV-1a of p[0..n), continuing from h (RVS_FNV_BASIS to begin): the
 * server's one hash for hash tables, keys and name suffixes (not a defence
 * against input chosen to collide).  Values are stable: issue ids and cut
 * method names are made from them. */
#define RVS_FNV_BASIS UINT64_C(0xcbf29ce484222325)
static inline uint64_t rvs_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * UINT64_C(0x100000001b3);
	return h;
}

#endif
