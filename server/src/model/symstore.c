/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symstore.c — the symbol store's files (symstore.h): ELF debug files read
 * with libelf, kept as DIR/<build-id hex>.debug, and function lookups in
 * them.
 *
 * Invariants: a stored file's name is the hex of the build-id libelf read
 * from its NT_GNU_BUILD_ID note, so no request can name a path; keys are
 * checked to be bounded lowercase hex before they become paths.  Every ELF
 * is untrusted: libelf bounds-checks sections and notes, and a file without
 * a build-id or without .symtab functions is refused rather than kept.
 */
#include "model/symstore.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

int rvs_symbols_key_ok(const char *s)
{
	size_t n = strlen(s);
	return n >= 2 && n <= 2 * RVS_BUILD_ID_MAX && n % 2 == 0 &&
	       strspn(s, "0123456789abcdef") == n;
}

/* The build-id of a note section's data, 1 when found. */
static int note_build_id(Elf_Data *data, char bid[2 * RVS_BUILD_ID_MAX + 1])
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;
	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz >= 1 && nh.n_descsz <= RVS_BUILD_ID_MAX) {
			rvs_hex((const uint8_t *)data->d_buf + desc_off, nh.n_descsz, bid);
			return 1;
		}
		off = next;
	}
	return 0;
}

/* Walks e's sections: the build-id, the number of .symtab functions, and
 * (when want_name) the function containing offset. */
static int walk(Elf *e, char bid[2 * RVS_BUILD_ID_MAX + 1], size_t *nfuncs, uint64_t offset,
		char *name, size_t namelen)
{
	Elf_Scn *scn = NULL;
	int found = 0;

	bid[0] = '\0';
	*nfuncs = 0;
	if (elf_kind(e) != ELF_K_ELF)
		return -EINVAL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type != SHT_NOTE && sh.sh_type != SHT_SYMTAB)
			continue;
		if (sh.sh_type == SHT_NOTE && sh.sh_size == 0)
			continue;
		/* .symtab of a debug file is present; NOBITS sections are not. */
		if (!(data = elf_getdata(scn, NULL)))
			return -EINVAL;
		if (sh.sh_type == SHT_NOTE) {
			if (!bid[0])
				note_build_id(data, bid);
			continue;
		}
		if (!sh.sh_entsize)
			return -EINVAL;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym))
				return -EINVAL;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF)
				continue;
			(*nfuncs)++;
			if (name && !found && offset >= sym.st_value &&
			    (offset < sym.st_value + sym.st_size ||
			     (sym.st_size == 0 && offset == sym.st_value))) {
				const char *n = elf_strptr(e, sh.sh_link, sym.st_name);
				if (n && *n) {
					snprintf(name, namelen, "%s", n);
					found = 1;
				}
			}
		}
	}
	return name && !found ? -ENOENT : 0;
}

int rvs_symbols_inspect(const uint8_t *buf, size_t len, char bid[2 * RVS_BUILD_ID_MAX + 1],
			size_t *nfuncs, char *reason, size_t rlen)
{
	Elf *e;
	int rc;

	pthread_once(&elf_once, elf_init);
	bid[0] = '\0';
	if (len < 4 || memcmp(buf, "\177ELF", 4) != 0) {
		snprintf(reason, rlen, "not an ELF file");
		return -EINVAL;
	}
	/* libelf only reads through the image for ELF_C_READ (elf_memory). */
	if (!(e = elf_memory((char *)buf, len))) {
		snprintf(reason, rlen, "ELF: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	rc = walk(e, bid, nfuncs, 0, NULL, 0);
	elf_end(e);
	if (rc) {
		snprintf(reason, rlen, "ELF: damaged section or symbol table");
		return -EINVAL;
	}
	if (!bid[0]) {
		snprintf(reason, rlen, "no GNU build-id note");
		return -EINVAL;
	}
	if (!*nfuncs) {
		snprintf(reason, rlen, "no functions in .symtab (not a debug file?)");
		return -EINVAL;
	}
	return 0;
}

int rvs_symbols_path(const char *dir, const char *bid, char *out, size_t outlen)
{
	if (!rvs_symbols_key_ok(bid))
		return -EINVAL;
	return snprintf(out, outlen, "%s/%s.debug", dir, bid) >= (int)outlen ? -ENAMETOOLONG : 0;
}

int rvs_symbols_lookup(const char *dir, const char *bid, uint64_t offset, char *name,
		       size_t namelen)
{
	char path[1024], got[2 * RVS_BUILD_ID_MAX + 1];
	size_t nfuncs;
	Elf *e;
	int fd, rc;

	pthread_once(&elf_once, elf_init);
	if ((rc = rvs_symbols_path(dir, bid, path, sizeof path)))
		return rc;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ENOENT : -EIO;
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return -EIO;
	}
	rc = walk(e, got, &nfuncs, offset, name, namelen);
	elf_end(e);
	close(fd);
	return rc == -EINVAL ? -EIO : rc;
}
