/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf-lazy.c — libelf, loaded on first use (shared library only).
 *
 * librvtrace reads ELF files only to symbolise a capture and to read a
 * module's .rearview_untraced section, never at start and never on a trace
 * point.  Linking libelf (and, through it, libz) into librvtrace.so made
 * the dynamic linker map and relocate both in every process built with rvcc,
 * traced or not: on the measurement of tracer/BENCHMARKS.md about 40 % of
 * librvtrace's start-up.  So the shared library defines the libelf
 * functions it uses itself (hidden: nothing is exported, a program's own
 * libelf is untouched), each forwarding to libelf.so.1 opened with dlopen()
 * on the first call.  The static archive links libelf directly (rvcc
 * --rv-static adds -lelf) and does not contain this file.
 *
 * When libelf cannot be loaded, every function fails as libelf does for a
 * bad descriptor (NULL, -1, 0, EV_NONE): symbols then stay addresses and
 * the UNTRACED records are left out, as for an unreadable file.
 *
 * Invariants: the table is filled once (pthread_once) and read only after;
 * nothing here runs on a trace point or in a signal handler.
 */
#include <dlfcn.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stddef.h>

static struct {
	unsigned (*version)(unsigned);
	Elf *(*begin)(int, Elf_Cmd, Elf *);
	int (*end)(Elf *);
	Elf_Scn *(*nextscn)(Elf *, Elf_Scn *);
	int (*getshdrstrndx)(Elf *, size_t *);
	Elf_Data *(*getdata)(Elf_Scn *, Elf_Data *);
	char *(*strptr)(Elf *, size_t, size_t);
	GElf_Shdr *(*getshdr)(Elf_Scn *, GElf_Shdr *);
	GElf_Sym *(*getsym)(Elf_Data *, int, GElf_Sym *);
	size_t (*getnote)(Elf_Data *, size_t, GElf_Nhdr *, size_t *, size_t *);
} fn;
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* dlsym gives void *; POSIX lets it be stored as a function pointer. */
	void *h = dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
#define SYM(field, name)                  \
	do {                              \
		void *p = dlsym(h, name); \
		if (!p)                   \
			return;           \
		*(void **)&fn.field = p;  \
	} while (0)
	SYM(version, "elf_version");
	SYM(begin, "elf_begin");
	SYM(end, "elf_end");
	SYM(nextscn, "elf_nextscn");
	SYM(getshdrstrndx, "elf_getshdrstrndx");
	SYM(getdata, "elf_getdata");
	SYM(strptr, "elf_strptr");
	SYM(getshdr, "gelf_getshdr");
	SYM(getsym, "gelf_getsym");
	SYM(getnote, "gelf_getnote");
#undef SYM
	loaded = 1;
}

static int have(void)
{
	pthread_once(&once, load);
	return loaded;
}

unsigned elf_version(unsigned v)
{
	return have() ? fn.version(v) : EV_NONE;
}

Elf *elf_begin(int fd, Elf_Cmd cmd, Elf *ref)
{
	return have() ? fn.begin(fd, cmd, ref) : NULL;
}

int elf_end(Elf *e)
{
	return have() ? fn.end(e) : 0;
}

Elf_Scn *elf_nextscn(Elf *e, Elf_Scn *s)
{
	return have() ? fn.nextscn(e, s) : NULL;
}

int elf_getshdrstrndx(Elf *e, size_t *dst)
{
	return have() ? fn.getshdrstrndx(e, dst) : -1;
}

Elf_Data *elf_getdata(Elf_Scn *s, Elf_Data *d)
{
	return have() ? fn.getdata(s, d) : NULL;
}

char *elf_strptr(Elf *e, size_t index, size_t offset)
{
	return have() ? fn.strptr(e, index, offset) : NULL;
}

GElf_Shdr *gelf_getshdr(Elf_Scn *s, GElf_Shdr *dst)
{
	return have() ? fn.getshdr(s, dst) : NULL;
}

GElf_Sym *gelf_getsym(Elf_Data *d, int ndx, GElf_Sym *dst)
{
	return have() ? fn.getsym(d, ndx, dst) : NULL;
}

size_t gelf_getnote(Elf_Data *d, size_t off, GElf_Nhdr *nh, size_t *name_off, size_t *desc_off)
{
	return have() ? fn.getnote(d, off, nh, name_off, desc_off) : 0;
}
