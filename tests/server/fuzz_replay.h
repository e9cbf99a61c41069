/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_replay.h — replays a libFuzzer target over its seed corpus directory
 * plus every truncation of each seed, deterministically, as a cmocka test.
 * Included by test_fuzz_*.c after the target's source.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

static size_t replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *ent;
	size_t files = 0;

	assert_non_null(d);
	while ((ent = readdir(d))) {
		char path[1024];
		FILE *f;
		uint8_t *buf;
		long n;
		if (ent->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc((size_t)n + 1);
		assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		for (long cut = 0; cut <= n; cut++)
			LLVMFuzzerTestOneInput(buf, (size_t)cut);
		free(buf);
		files++;
	}
	closedir(d);
	return files;
}
