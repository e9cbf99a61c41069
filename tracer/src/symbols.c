/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbols.c — method values to names, on the device (FORMAT.md MODULE and
 * SYMBOL records).
 *
 * Modules come from dl_iterate_phdr (path, load bias, mapped range, build-id
 * from the in-memory PT_NOTE); names from the ELF .symtab, else .dynsym, of
 * the module's file read with libelf.  C++ names are demangled with
 * __cxa_demangle when the process has it (it is looked up weakly: a C program
 * without libstdc++ keeps mangled names).  A value in no module is offered to
 * the manual-key resolver; a value nobody names keeps module + offset so the
 * server can symbolize it later from the build-id.
 *
 * Only modules that hold at least one value are emitted, renumbered 0..n-1.
 * Runs on the capturing thread, never in a trace point.
 *
 * Modules unloaded before the capture: dlclose() is interposed and keeps
 * what a capture needs of each module it unmapped (path, load bias, range,
 * build-id; the last RVT_CLOSED_MAX of them), so the values of a closed
 * library still get its MODULE record and, when its file on disk still has
 * the same build-id, their names.  A live module wins where a later load
 * reuses the addresses: a value names the module mapped there at the
 * capture.  A value inside a function (an EXIT_OF's return address, which
 * may lie in the function's cold part "f.cold") is named by that function.
 */
#include "tracer-int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
	__attribute__((weak));

struct mod {
	uint64_t bias, start, end;
	char *path;
	uint8_t id[64];
	uint32_t idlen;
	int used;   /* index in the output, or -1 */
	int loaded; /* symbols read */
	struct fsym *syms;
	size_t nsyms;
};

struct fsym {
	uint64_t addr, size;
	char *name;
};

struct mods {
	struct mod *v;
	size_t n, cap;
};

/* A module's path, load bias, mapped range and build-id from its program
 * headers.  0, -ENOENT (nothing mapped) or -ENOMEM. */
static int fill_mod(const struct dl_phdr_info *info, struct mod *m)
{
	memset(m, 0, sizeof(*m));
	m->used = -1;
	m->bias = info->dlpi_addr;
	m->start = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			uint64_t a = info->dlpi_addr + ph->p_vaddr;
			if (a < m->start)
				m->start = a;
			if (a + ph->p_memsz > m->end)
				m->end = a + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && m->idlen == 0) {
			const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
			const uint8_t *e = p + ph->p_memsz;
			while (p + 12 <= e) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
				size_t nsz = (nh->n_namesz + 3) & ~3u,
				       dsz = (nh->n_descsz + 3) & ~3u;
				const uint8_t *desc = p + 12 + nsz;
				if (desc + dsz > e)
					break;
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				    memcmp(p + 12, "GNU", 4) == 0 &&
				    nh->n_descsz <= sizeof(m->id)) {
					memcpy(m->id, desc, nh->n_descsz);
					m->idlen = nh->n_descsz;
					break;
				}
				p = desc + dsz;
			}
		}
	}
	if (m->start == UINT64_MAX)
		return -ENOENT;
	const char *name = info->dlpi_name;
	char exe[4096];
	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		name = exe;
	}
	m->path = strdup(name);
	return m->path ? 0 : -ENOMEM;
}

/* Room for one more module in ms; 0 or -ENOMEM. */
static int mods_grow(struct mods *ms)
{
	if (ms->n < ms->cap)
		return 0;
	size_t nc = ms->cap ? ms->cap * 2 : 32;
	struct mod *n = realloc(ms->v, nc * sizeof(*n));
	if (!n)
		return -ENOMEM;
	ms->v = n;
	ms->cap = nc;
	return 0;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct mods *ms = arg;
	if (mods_grow(ms))
		return 1;
	int rc = fill_mod(info, &ms->v[ms->n]);
	if (rc == -ENOMEM)
		return 1;
	if (rc == 0)
		ms->n++;
	return 0;
}

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* 1 if the ELF file `e` carries m's build-id (a GNU build-id note). */
static int same_build_id(Elf *e, const struct mod *m)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0)
				return nh.n_descsz == m->idlen &&
				       memcmp((const uint8_t *)data->d_buf + desc_off, m->id,
					      m->idlen) == 0;
		}
	}
	return 0;
}

static void load_syms(struct mod *m)
{
	m->loaded = 1;
	if (m->path[0] == '\0')
		return; /* the vDSO has no file; its open() below fails anyway */
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		goto out_fd;
	if (m->idlen && !same_build_id(e, m)) {
		elf_end(e); /* replaced on disk since it was loaded: no names */
		goto out_fd;
	}
	for (int pass = 0; pass < 2 && m->nsyms == 0; pass++) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			size_t cnt = sh.sh_size / sh.sh_entsize;
			struct fsym *v = realloc(m->syms, (m->nsyms + cnt) * sizeof(*v));
			if (!v)
				continue;
			m->syms = v;
			for (size_t i = 0; i < cnt; i++) {
				GElf_Sym s;
				if (!gelf_getsym(data, (int)i, &s))
					continue;
				int ty = GELF_ST_TYPE(s.st_info);
				if ((ty != STT_FUNC && ty != STT_GNU_IFUNC) ||
				    s.st_shndx == SHN_UNDEF)
					continue;
				const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
				if (!nm || !*nm)
					continue;
				char *dup = strdup(nm);
				if (!dup)
					continue;
				m->syms[m->nsyms++] = (struct fsym){s.st_value, s.st_size, dup};
			}
		}
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), cmp_fsym);
	elf_end(e);
out_fd:
	close(fd);
}

static const char *lookup(struct mod *m, uint64_t vaddr)
{
	if (!m->loaded)
		load_syms(m);
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) { /* the last symbol with addr ≤ vaddr */
		size_t mid = (lo + hi) / 2;
		if (m->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct fsym *s = &m->syms[lo - 1];
	if (s->size && vaddr >= s->addr + s->size)
		return NULL;
	return s->name;
}

/* ---- modules unloaded by dlclose() ---------------------------------------- */

/* The last RVT_CLOSED_MAX modules dlclose() unmapped, the oldest replaced;
 * path owned. */
#define RVT_CLOSED_MAX 64u
static pthread_mutex_t closed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mod closed[RVT_CLOSED_MAX];
static unsigned nclosed, closed_next;

struct find_mod {
	uintptr_t bias;
	const char *name;
	struct mod *out; /* filled when found (NULL: only look) */
	int found;
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find_mod *f = arg;
	if (info->dlpi_addr != f->bias || !info->dlpi_name || strcmp(info->dlpi_name, f->name))
		return 0;
	f->found = !f->out || fill_mod(info, f->out) == 0;
	return 1;
}

typedef int (*dlclose_fn)(void *handle);

struct rvt_mu rvt_modules_mu = RVT_MU_INIT;
_Atomic unsigned rvt_modules_gen;
static __thread int closing; /* dlclose() calls under way on this thread */

/*
 * dlclose(), interposed: what a capture needs of the module is taken before
 * the real dlclose() runs, and kept if the module is gone after it (a
 * library still referenced, or RTLD_NODELETE, stays mapped: nothing kept).
 */
RVT_API int dlclose(void *handle)
{
	static _Atomic(dlclose_fn) real_fn;
	int own = rvt_own_begin();
	dlclose_fn real = atomic_load(&real_fn);
	if (!real) {
		real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
		atomic_store(&real_fn, real);
	}
	struct link_map *lm = NULL;
	struct mod m;
	struct find_mod f = {0};
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) {
		f = (struct find_mod){(uintptr_t)lm->l_addr, lm->l_name, &m, 0};
		dl_iterate_phdr(find_loaded, &f);
	}
	if (closing++ == 0)
		rvt_mu_lock(&rvt_modules_mu);
	int rc = real ? real(handle) : -1;
	if (--closing == 0) {
		atomic_fetch_add(&rvt_modules_gen, 1);
		rvt_mu_unlock(&rvt_modules_mu);
	}
	if (f.found) {
		struct find_mod again = {f.bias, m.path, NULL, 0};
		if (rc == 0)
			dl_iterate_phdr(find_loaded, &again);
		if (rc == 0 && !again.found) {
			pthread_mutex_lock(&closed_lock);
			free(closed[closed_next].path);
			closed[closed_next] = m;
			closed_next = (closed_next + 1) % RVT_CLOSED_MAX;
			if (nclosed < RVT_CLOSED_MAX)
				nclosed++;
			pthread_mutex_unlock(&closed_lock);
		} else {
			free(m.path);
		}
	}
	rvt_own_end(own);
	return rc;
}

/* Appends the closed modules, newest first, after the live ones.  0 or
 * -ENOMEM. */
static int add_closed(struct mods *ms)
{
	int rc = 0;
	pthread_mutex_lock(&closed_lock);
	for (unsigned k = 0; k < nclosed && rc == 0; k++) {
		const struct mod *c =
			&closed[(closed_next + RVT_CLOSED_MAX - 1 - k) % RVT_CLOSED_MAX];
		if ((rc = mods_grow(ms)) != 0)
			break;
		struct mod *m = &ms->v[ms->n];
		*m = *c;
		m->path = strdup(c->path);
		if (!m->path)
			rc = -ENOMEM;
		else
			ms->n++;
	}
	pthread_mutex_unlock(&closed_lock);
	return rc;
}

/* ---- the tables -------------------------------------------------------------- */

/* The length of a function's name without the suffix of a part the compiler
 * split off ("f.cold", "f.cold.3"; demangled "f() [clone .cold]"): a return
 * address there is inside f. */
static size_t name_len(const char *nm)
{
	size_t n = strlen(nm);
	static const char clone[] = " [clone .cold]";
	if (n > sizeof(clone) - 1 && strcmp(nm + n - (sizeof(clone) - 1), clone) == 0)
		return n - (sizeof(clone) - 1);
	const char *c = strstr(nm, ".cold");
	if (c && c > nm && (c[5] == '\0' || c[5] == '.'))
		return (size_t)(c - nm);
	return n;
}

/* Appends a string to the table's string pool; returns its offset or -1. */
static long pool_add(struct rvt_symtab *st, const char *s, size_t n)
{
	if (st->strings_len + n + 1 > st->strings_cap) {
		size_t nc = st->strings_cap ? st->strings_cap : 4096;
		while (nc < st->strings_len + n + 1)
			nc *= 2;
		char *p = realloc(st->strings, nc);
		if (!p)
			return -1;
		st->strings = p;
		st->strings_cap = nc;
	}
	long off = (long)st->strings_len;
	memcpy(st->strings + off, s, n);
	st->strings[off + (long)n] = '\0';
	st->strings_len += n + 1;
	return off;
}

int rvt_symtab_build(struct rvt_symtab *st, const uint64_t *values, size_t n, uint64_t method_base)
{
	memset(st, 0, sizeof(*st));
	struct mods ms = {0};
	dl_iterate_phdr(collect, &ms);
	int rc = -ENOMEM;
	long *name_off = NULL, *path_off = NULL;
	if (add_closed(&ms))
		goto out;
	name_off = calloc(n ? n : 1, sizeof(*name_off));
	path_off = calloc(ms.n ? ms.n : 1, sizeof(*path_off));
	st->symbols = calloc(n ? n : 1, sizeof(*st->symbols));
	st->modules = calloc(ms.n ? ms.n : 1, sizeof(*st->modules));
	st->ids = malloc(ms.n * 64 + 1);
	if (!name_off || !path_off || !st->symbols || !st->modules || !st->ids)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = values[i] + method_base;
		struct rvt_symbol *sy = &st->symbols[i];
		sy->value = values[i];
		sy->module = 0xffffffffu;
		sy->offset = addr;
		name_off[i] = -1;
		struct mod *m = NULL;
		for (size_t k = 0; k < ms.n; k++)
			if (addr >= ms.v[k].start && addr < ms.v[k].end) {
				m = &ms.v[k];
				break;
			}
		const char *nm = NULL;
		char buf[512];
		if (m) {
			if (m->used < 0) {
				m->used = (int)st->nmodules;
				struct rvt_module *om = &st->modules[st->nmodules++];
				om->index = (uint32_t)m->used;
				om->load_bias = m->bias;
				om->start = m->start;
				om->end = m->end;
				om->build_id_len = m->idlen;
				path_off[m->used] = pool_add(st, m->path, strlen(m->path));
				memcpy(st->ids + st->ids_len, m->id, m->idlen);
				om->build_id =
					(const uint8_t *)(uintptr_t)st->ids_len; /* fixed below */
				st->ids_len += m->idlen;
			}
			sy->module = (uint32_t)m->used;
			sy->offset = addr - m->bias;
			nm = lookup(m, sy->offset);
		}
		if (!nm && rvt_resolve_key(addr, buf, sizeof(buf)) >= 0) {
			buf[sizeof(buf) - 1] = '\0';
			nm = buf;
		}
		char *dm = NULL;
		if (nm && nm[0] == '_' && nm[1] == 'Z' && __cxa_demangle) {
			int status = 0;
			dm = __cxa_demangle(nm, NULL, NULL, &status);
			if (dm && status == 0)
				nm = dm;
		}
		if (nm)
			name_off[i] = pool_add(st, nm, name_len(nm));
		free(dm);
	}
	/* The pools are final: turn offsets into pointers. */
	for (size_t i = 0; i < n; i++)
		st->symbols[i].name = name_off[i] >= 0 ? st->strings + name_off[i] : "";
	for (size_t k = 0; k < st->nmodules; k++) {
		st->modules[k].path = path_off[k] >= 0 ? st->strings + path_off[k] : "";
		st->modules[k].build_id = st->ids + (uintptr_t)st->modules[k].build_id;
	}
	st->nsymbols = n;
	rc = 0;
out:
	for (size_t k = 0; k < ms.n; k++) {
		for (size_t j = 0; j < ms.v[k].nsyms; j++)
			free(ms.v[k].syms[j].name);
		free(ms.v[k].syms);
		free(ms.v[k].path);
	}
	free(ms.v);
	free(name_off);
	free(path_off);
	if (rc)
		rvt_symtab_release(st);
	return rc;
}

void rvt_symtab_release(struct rvt_symtab *st)
{
	free(st->modules);
	free(st->symbols);
	free(st->strings);
	free(st->ids);
	memset(st, 0, sizeof(*st));
}

/* ---- the manual-key resolver (trace.h) ------------------------------------ */

static pthread_mutex_t resolver_lock = PTHREAD_MUTEX_INITIALIZER;
static rvt_resolve_fn resolver;
static void *resolver_arg;

void rvt_set_resolver(rvt_resolve_fn fn, void *arg)
{
	pthread_mutex_lock(&resolver_lock);
	resolver = fn;
	resolver_arg = arg;
	pthread_mutex_unlock(&resolver_lock);
}

int rvt_resolve_key(uint64_t addr, char *buf, size_t len)
{
	pthread_mutex_lock(&resolver_lock);
	rvt_resolve_fn fn = resolver;
	void *arg = resolver_arg;
	pthread_mutex_unlock(&resolver_lock);
	/* Called unlocked: the resolver may use the API itself. */
	return fn ? fn((const void *)(uintptr_t)addr, buf, len, arg) : -1;
}
