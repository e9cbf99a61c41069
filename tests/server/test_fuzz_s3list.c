/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fuzz_s3list.c — deterministic replay of the server_s3list fuzz
 * corpus (the S3 backend's ListObjectsV2 parser), every truncation of each
 * seed included.
 */
#include "../fuzz/server_s3list.c"
#include "fuzz_replay.h"

static char *seed(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof path, "%s/tests/fuzz/server_s3list_corpus/%s", RVS_SRCDIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

/* The seeds are what they say: a first page (two blobs and a key that is
 * not one, a continuation token), a last page, an S3 error document. */
static void test_fuzz_s3list_seeds_parse_as_documented(void **state)
{
	char names[RVS_S3_PAGE_MAX][65];
	int64_t mtimes[RVS_S3_PAGE_MAX];
	struct rvs_s3_page p = {.names = names, .mtimes = mtimes};
	size_t len;
	char *xml = seed("first-page.xml", &len);

	assert_int_equal(rvs_s3_list_parse(xml, len, "rv/", &p), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(names[1],
			    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_int_equal(mtimes[1], 1795248000); /* 2026-11-21T08:00:00Z */
	assert_string_equal(p.token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	/* Cut anywhere inside, it is not a document. */
	assert_int_equal(rvs_s3_list_parse(xml, len / 2, "rv/", &p), -EIO);
	assert_int_equal(p.n, 0);
	free(xml);
	xml = seed("last-page.xml", &len);
	assert_int_equal(rvs_s3_list_parse(xml, len, "rv/", &p), 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(mtimes[0], -1);
	assert_string_equal(p.token, "");
	free(xml);
	xml = seed("error.xml", &len);
	assert_int_equal(rvs_s3_list_parse(xml, len, "rv/", &p), -EIO);
	free(xml);
}

static void test_fuzz_s3list_corpus_replays_cleanly(void **state)
{
	assert_true(replay_dir(RVS_SRCDIR "/tests/fuzz/server_s3list_corpus") >= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_s3list_seeds_parse_as_documented),
		cmocka_unit_test(test_fuzz_s3list_corpus_replays_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
