/*
 * symbols.c — the symbol store (symbols.h).
 *
 * Invariants: a stored file's name is the hex of the build-id libelf read
 * from its NT_GNU_BUILD_ID note, so no request can name a path; keys taken
 * from URLs are checked to be bounded lowercase hex before they become
 * paths.  Files are written atomically (temp, fsync, rename).  Every ELF is
 * untrusted: libelf bounds-checks sections and notes, and a file without a
 * build-id or without .symtab functions is refused (400) rather than kept.
 */
#include "symbols.h"
#include "route.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <jansson.h>
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

static int key_path(const char *dir, const char *bid, char *out, size_t outlen)
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
	if ((rc = key_path(dir, bid, path, sizeof path)))
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
	if (key_path(dir, bid, path, sizeof path))
		return rvs_query_set_error(r, 500, "symbol store path too long");
	if ((rc = rvs_write_file_atomic(path, body, len, 0640))) {
		rvs_log("error", "msg=\"symbol store write\" build_id=%s err=%d", bid, rc);
		return rvs_query_set_error(r, 500, "cannot store the file");
	}
	rvs_log("info", "msg=\"symbols stored\" build_id=%s bytes=%zu functions=%zu", bid, len,
		nfuncs);
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
		if (key_path(dir, key, path, sizeof path) || stat(path, &st) < 0)
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
	if (key_path(dir, bid, path, sizeof path) || stat(path, &st) < 0)
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
