/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symstore.h — the symbol store's files (symstore.c): ELF debug files kept
 * content-addressed by their GNU build-id as DIR/<build-id hex>.debug, and
 * the function at a module offset in one.  Used by the symbols endpoints
 * (symbols.c) and the decoder's symbolization (decode.c).  Any thread;
 * lookups read files (work queue only).
 */
#ifndef RVS_SYMSTORE_H
#define RVS_SYMSTORE_H

#include <stddef.h>
#include <stdint.h>

#define RVS_BUILD_ID_MAX 64 /* bytes; the hex key is at most twice that */

/* Reads an ELF image: its GNU build-id (as lowercase hex into bid) and how
 * many functions its .symtab defines.  0, or -EINVAL with a reason for the
 * client (not ELF, damaged, no build-id note, no .symtab functions). */
int rvs_symbols_inspect(const uint8_t *buf, size_t len, char bid[2 * RVS_BUILD_ID_MAX + 1],
			size_t *nfuncs, char *reason, size_t rlen);

/* 1 when s is a well-formed build-id key: 2..128 lowercase hex digits, even. */
int rvs_symbols_key_ok(const char *s);

/* The path of debug file bid in dir into out: 0, -EINVAL (bid is not a
 * key, rvs_symbols_key_ok), -ENAMETOOLONG. */
int rvs_symbols_path(const char *dir, const char *bid, char *out, size_t outlen);

/* The function of debug file `bid` in dir containing offset (an ELF virtual
 * address, i.e. the module offset of FORMAT.md's SYMBOL record): its name
 * into name.  0, -EINVAL (bad key), -ENOENT (no such file or no function
 * there), -EIO (the stored file does not parse). */
int rvs_symbols_lookup(const char *dir, const char *bid, uint64_t offset, char *name,
		       size_t namelen);

#endif
