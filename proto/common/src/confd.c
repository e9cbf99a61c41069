/* SPDX-License-Identifier: Apache-2.0 */
/*
 * confd.c — configuration drop-in directories (rearview/common.h's
 * rvc_conf_dropins): for a file FILE, the "*.conf" files in FILE.d/, read
 * after FILE in byte order of their names, as systemd and most daemons
 * order theirs, so a later file's value for a key wins.
 *
 * Invariants: at most RVC_CONF_DROPINS_MAX files are taken (more is an
 * error, never a silent cut); names starting with "." are skipped; the
 * caller's callback sees each full path once, in strcmp order, and nothing
 * is left allocated when it returns.
 */
#include "rearview/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rvc_conf_dropins(const char *path, int (*fn)(const char *path, void *ctx), void *ctx)
{
	char dir[4096], file[4096 + 256];
	char *names[RVC_CONF_DROPINS_MAX];
	size_t n = 0;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if ((size_t)snprintf(dir, sizeof(dir), "%s.d", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (!(d = opendir(dir)))
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".conf"))
			continue;
		if (n == RVC_CONF_DROPINS_MAX) {
			rc = -E2BIG;
			break;
		}
		if (!(names[n] = strdup(de->d_name))) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (rc)
			break;
		snprintf(file, sizeof(file), "%s/%s", dir, names[i]);
		/* A directory or a socket named *.conf is not a drop-in. */
		if (stat(file, &st) == 0 && !S_ISREG(st.st_mode))
			continue;
		rc = fn(file, ctx);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return rc;
}
