/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.c — the calls a script VM's integration needs beyond rvt_enter()
 * and rvt_exit() (trace.h, "Runtime integrations"): several exits at once
 * for unwound or suspended frames, and keys that are never reused.
 *
 * Keys live in an append-only arena of blocks of KEYS_PER_BLOCK entries; a
 * key is the address of its entry, so it is non-NULL, unique for the life of
 * the process (entries are never freed or reused) and outside every loaded
 * module (heap memory), which is what makes symbols.c offer it to the
 * resolver.  Names are copied into 64 KiB text blocks, bump-allocated: a
 * VM that names hundreds of thousands of functions must not scatter as many
 * permanent small mallocs through its own heap (measured with rvlua and
 * 200 000 load()ed functions named ~18 bytes each: +26 MB of peak RSS with
 * strdup'd names, +13 MB with text blocks).  Invariants,
 * under `lock`: blocks[0..nblocks) each hold `used` (≤ KEYS_PER_BLOCK)
 * initialised entries, only the last block is partly filled, and every
 * initialised entry points at a NUL-terminated name in a text block; text
 * blocks are never freed.
 *
 * A key can be muted (mute.c, the tracer's budget): its entry's first word
 * is the flag rvt_key_muted() (trace-runtime.h) loads, 0 until the budget
 * thread sets it to 1; it never goes back to 0.  A native function a
 * runtime traces by its address is muted by adding the address to an
 * append-only list (published with a release store of its count) and then
 * setting its bit in the bloom filter rvt_addr_muted() reads (release), so
 * whoever sees the bit sees the address.
 */
#include "tracer-int.h"
#include "rearview/trace-runtime.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_PER_BLOCK 1024u
#define KEY_NAME_MAX   511u
#define TEXT_BLOCK     (64u << 10)

struct key {
	_Atomic uint32_t muted; /* first: rvt_key_muted() reads it at the key's address */
	const char *name;	/* in a text block */
};

struct key_block {
	struct key keys[KEYS_PER_BLOCK];
	unsigned used;
};

static struct rvt_mu lock = RVT_MU_INIT; /* the budget thread mutes keys (bare.c) */
static struct key_block **blocks;	 /* owned, grows by doubling */
static size_t nblocks, cap_blocks;
static char *text;	 /* the current text block (owned, never freed) */
static size_t text_used; /* bytes of it taken */

void rvt_exit_n(unsigned n)
{
	while (n-- > 0)
		rvt_exit();
}

/* The block with a free entry, appending one if needed; NULL when out of memory. */
static struct key_block *block_with_room_locked(void)
{
	if (nblocks && blocks[nblocks - 1]->used < KEYS_PER_BLOCK)
		return blocks[nblocks - 1];
	if (nblocks == cap_blocks) {
		size_t cap = cap_blocks ? 2 * cap_blocks : 16;
		struct key_block **v = realloc(blocks, cap * sizeof(*v));
		if (!v)
			return NULL;
		blocks = v;
		cap_blocks = cap;
	}
	struct key_block *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	blocks[nblocks++] = b;
	return b;
}

/* A copy of `name` (at most KEY_NAME_MAX bytes) in a text block, or NULL. */
static const char *text_copy_locked(const char *name)
{
	size_t n = strnlen(name, KEY_NAME_MAX);
	if (!text || TEXT_BLOCK - text_used < n + 1) {
		char *b = malloc(TEXT_BLOCK);
		if (!b)
			return NULL;
		text = b;
		text_used = 0;
	}
	char *dst = text + text_used;
	memcpy(dst, name, n);
	dst[n] = '\0';
	text_used += n + 1;
	assert(text_used <= TEXT_BLOCK);
	return dst;
}

const void *rvt_key_new(const char *name)
{
	assert(name);
	struct key *k = NULL;
	rvt_mu_lock(&lock);
	struct key_block *b = block_with_room_locked();
	const char *copy = b ? text_copy_locked(name) : NULL;
	if (copy) {
		assert(b->used < KEYS_PER_BLOCK);
		k = &b->keys[b->used++];
		atomic_init(&k->muted, 0);
		k->name = copy;
	}
	rvt_mu_unlock(&lock);
	return k;
}

/* `key`'s entry if it is one from rvt_key_new(), else NULL. */
static struct key *key_find_locked(const void *key)
{
	uintptr_t a = (uintptr_t)key;
	for (size_t i = 0; i < nblocks; i++) {
		struct key_block *b = blocks[i];
		uintptr_t lo = (uintptr_t)b->keys;
		if (a < lo || a >= (uintptr_t)(b->keys + b->used) || (a - lo) % sizeof(struct key))
			continue;
		assert(b->keys[(a - lo) / sizeof(struct key)].name);
		return &b->keys[(a - lo) / sizeof(struct key)];
	}
	return NULL;
}

int rvt_key_resolve(const void *key, char *buf, size_t len, void *arg)
{
	(void)arg;
	int rc = -ENOENT;
	rvt_mu_lock(&lock);
	const struct key *k = key_find_locked(key);
	if (k) {
		if (len) {
			size_t n = strlen(k->name);
			n = n < len - 1 ? n : len - 1;
			memcpy(buf, k->name, n);
			buf[n] = '\0';
		}
		rc = 0;
	}
	rvt_mu_unlock(&lock);
	return rc;
}

/* ---- muted native addresses ---- */

/* Read and written only through __atomic built-ins (trace-runtime.h). */
RVT_API uint64_t rvt__addr_bloom[RVT__ADDR_BLOOM_WORDS];
static _Atomic uintptr_t addr_list[RVT_MUTED_MAX];
static _Atomic size_t addr_count;
static _Atomic int addr_checked;

void rvt_runtime_checks_addresses(void)
{
	atomic_store(&addr_checked, 1);
}

int rvt__addr_muted_slow(const void *fn)
{
	size_t n = atomic_load_explicit(&addr_count, memory_order_acquire);
	for (size_t i = 0; i < n; i++)
		if (atomic_load_explicit(&addr_list[i], memory_order_relaxed) == (uintptr_t)fn)
			return 1;
	return 0;
}

int rvt_addr_mute(const void *fn)
{
	if (!atomic_load(&addr_checked))
		return -ENOENT;
	/* Only the budget thread appends. */
	size_t n = atomic_load_explicit(&addr_count, memory_order_relaxed);
	if (rvt__addr_muted_slow(fn))
		return 0;
	if (n == RVT_MUTED_MAX)
		return -ENOSPC;
	atomic_store_explicit(&addr_list[n], (uintptr_t)fn, memory_order_relaxed);
	atomic_store_explicit(&addr_count, n + 1, memory_order_release);
	unsigned h = rvt__addr_hash(fn);
	__atomic_fetch_or(&rvt__addr_bloom[h >> 6], UINT64_C(1) << (h & 63), __ATOMIC_RELEASE);
	return 0;
}

int rvt_key_mute(const void *key)
{
	rvt_mu_lock(&lock);
	struct key *k = key_find_locked(key);
	if (k)
		atomic_store_explicit(&k->muted, 1, memory_order_relaxed);
	rvt_mu_unlock(&lock);
	return k ? 0 : -ENOENT;
}

void rvt_runtime_atfork_child(void)
{
	atomic_store(&lock.v, 0);
}
