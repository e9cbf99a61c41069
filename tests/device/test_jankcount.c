/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jankcount.c — rearviewd's per-app frame and late-frame counts
 * (device/src/jankcount.c): exact counts per (app, version, day), the
 * fixed table's bound with the "other" row, old days dropped, the text
 * file round trip and the refusal of hostile files, and the upload
 * snapshot / acknowledgement that never sends a count twice.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "jankcount.h"

#define DAY 20000u

static const struct rvd_jank_row *row(const struct rvd_jank_counts *c, const char *app,
				      const char *ver, uint32_t day)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->rows[i].day == day && strcmp(c->rows[i].app, app) == 0 &&
		    strcmp(c->rows[i].ver, ver) == 0)
			return &c->rows[i];
	return NULL;
}

static void test_jankc_counts_per_app_version_day(void **state)
{
	struct rvd_jank_counts c;
	const struct rvd_jank_row *r;

	(void)state;
	rvd_jankc_init(&c);
	for (int i = 0; i < 100; i++)
		rvd_jankc_add(&c, "org.ex.a", "1.2", DAY, i % 10 == 0);
	for (int i = 0; i < 7; i++)
		rvd_jankc_add(&c, "org.ex.a", NULL, DAY, true);
	rvd_jankc_add(&c, "org.ex.a", "1.2", DAY + 1, false);
	rvd_jankc_add(&c, "bad name\n", "", DAY + 1, true);
	assert_int_equal(c.n, 4);
	r = row(&c, "org.ex.a", "1.2", DAY);
	assert_non_null(r);
	assert_int_equal(r->frames, 100);
	assert_int_equal(r->late, 10);
	r = row(&c, "org.ex.a", "", DAY);
	assert_non_null(r);
	assert_int_equal(r->frames, 7);
	assert_int_equal(r->late, 7);
	r = row(&c, "org.ex.a", "1.2", DAY + 1);
	assert_non_null(r);
	assert_int_equal(r->frames, 1);
	assert_int_equal(r->late, 0);
	/* Characters outside the id alphabet become '_'; no spoofed "other". */
	assert_non_null(row(&c, "bad_name_", "", DAY + 1));
	rvd_jankc_add(&c, "(other)", "", DAY + 1, false);
	assert_non_null(row(&c, "_other_", "", DAY + 1));
	assert_int_equal(rvd_jankc_day(86400 * 3 + 5), 3);
}

static void test_jankc_table_is_bounded_with_other_row(void **state)
{
	struct rvd_jank_counts c;
	char app[32];
	uint64_t total = 0;

	(void)state;
	rvd_jankc_init(&c);
	/* Far more apps than rows, over all the days kept: every frame is
	 * counted somewhere, the table never grows past its rows. */
	for (uint32_t d = 0; d < RVD_JANKC_DAYS; d++) {
		for (int a = 0; a < 500; a++) {
			snprintf(app, sizeof(app), "app%d", a);
			rvd_jankc_add(&c, app, "1", DAY + d, a % 2);
		}
	}
	assert_true(c.n <= RVD_JANKC_ROWS);
	for (unsigned i = 0; i < c.n; i++)
		total += c.rows[i].frames;
	assert_int_equal(total, 500 * RVD_JANKC_DAYS);
	assert_int_equal(c.dropped, 0);
	for (uint32_t d = 0; d < RVD_JANKC_DAYS; d++)
		assert_non_null(row(&c, RVD_JANKC_OTHER, "", DAY + d));
	/* The first day's named apps came first: they have their own rows. */
	assert_int_equal(row(&c, "app0", "1", DAY)->frames, 1);
	/* A day older than the window is not counted; a newer one drops the
	 * oldest day. */
	rvd_jankc_add(&c, "app0", "1", DAY - 1, true);
	assert_int_equal(c.dropped, 1);
	rvd_jankc_add(&c, "app0", "1", DAY + RVD_JANKC_DAYS, true);
	assert_null(row(&c, "app0", "1", DAY));
	assert_null(row(&c, RVD_JANKC_OTHER, "", DAY));
	assert_int_equal(row(&c, "app0", "1", DAY + RVD_JANKC_DAYS)->late, 1);
}

static void test_jankc_file_round_trip(void **state)
{
	struct rvd_jank_counts c, back;
	char buf[RVD_JANKC_FILE_MAX], err[128];
	char app[32];
	long len;

	(void)state;
	rvd_jankc_init(&c);
	for (int a = 0; a < 200; a++) {
		snprintf(app, sizeof(app), "org.example.application%d", a);
		rvd_jankc_add(&c, app, "10.20.30-beta+build.7", DAY + (uint32_t)(a % 8),
			      a % 3 == 0);
	}
	assert_true(c.dirty);
	len = rvd_jankc_format(&c, buf, sizeof(buf));
	assert_true(len > 0);
	assert_false(c.dirty);
	assert_int_equal(rvd_jankc_format(&c, buf, 16), -ENOSPC);
	len = rvd_jankc_format(&c, buf, sizeof(buf));
	rvd_jankc_init(&back);
	assert_int_equal(rvd_jankc_parse(&back, buf, (size_t)len, err, sizeof(err)), 0);
	assert_int_equal(back.n, c.n);
	assert_int_equal(back.newest, c.newest);
	assert_memory_equal(back.rows, c.rows, sizeof(c.rows));
}

static void expect_refused(const char *text, const char *why)
{
	struct rvd_jank_counts c;
	char err[128] = "";

	rvd_jankc_init(&c);
	rvd_jankc_add(&c, "keep", "", DAY, true);
	assert_int_equal(rvd_jankc_parse(&c, text, strlen(text), err, sizeof(err)), -EINVAL);
	if (!strstr(err, why))
		fail_msg("\"%s\": error \"%s\" does not say \"%s\"", text, err, why);
	/* Untouched. */
	assert_int_equal(c.n, 1);
	assert_int_equal(c.rows[0].frames, 1);
}

static void test_jankc_hostile_files_refused(void **state)
{
	char *big;
	size_t off = 0, cap = 64 * 1024;

	(void)state;
	expect_refused("", "empty");
	expect_refused("rvjank 2\n", "header");
	expect_refused("rvjank 1\n20000 10 11 0 0 a -\n", "impossible");
	expect_refused("rvjank 1\n20000 -10 1 0 0 a -\n", "impossible");
	expect_refused("rvjank 1\n20000 10 1 11 0 a -\n", "impossible");
	expect_refused("rvjank 1\n20000 2000000000 1 0 0 a -\n", "impossible");
	expect_refused("rvjank 1\n20000 99999999999999999999999 1 0 0 a -\n", "line 2");
	expect_refused("rvjank 1\n20000 10 1 0 0 a\n", "not \"day");
	expect_refused("rvjank 1\n20000 10 1 0 0 a - extra\n", "not \"day");
	expect_refused("rvjank 1\n20000 10 1 0 0 a;b -\n", "bad app id");
	expect_refused("rvjank 1\n20000 10 1 0 0 a -\n20000 1 1 0 0 a -\n", "duplicate");
	big = malloc(cap);
	assert_non_null(big);
	off += (size_t)snprintf(big, cap, "rvjank 1\n");
	for (int i = 0; i < 100; i++)
		off += (size_t)snprintf(big + off, cap - off, "20000 1 0 0 0 app%d -\n", i);
	expect_refused(big, "more than");
	memset(big, 'x', 1000);
	memcpy(big, "rvjank 1\n", 9);
	big[1000] = '\0';
	expect_refused(big, "too long");
	free(big);
}

static void test_jankc_ack_never_sends_twice(void **state)
{
	struct rvd_jank_counts c;
	struct rvd_jank_row snap[RVD_JANKC_ROWS];
	unsigned n;

	(void)state;
	rvd_jankc_init(&c);
	assert_false(rvd_jankc_due(&c));
	for (int i = 0; i < 30; i++)
		rvd_jankc_add(&c, "a", "1", DAY, i < 3);
	rvd_jankc_add(&c, "b", "1", DAY + 1, true);
	n = rvd_jankc_snapshot(&c, snap, RVD_JANKC_ROWS);
	assert_int_equal(n, 2);
	/* Frames counted while the upload is in flight stay due after the
	 * acknowledgement. */
	rvd_jankc_add(&c, "b", "1", DAY + 1, false);
	rvd_jankc_acked(&c, snap, n, DAY + 1);
	/* Yesterday's row, all sent, is gone; today's still counts. */
	assert_null(row(&c, "a", "1", DAY));
	assert_int_equal(row(&c, "b", "1", DAY + 1)->frames, 2);
	assert_int_equal(row(&c, "b", "1", DAY + 1)->sent_frames, 1);
	assert_true(rvd_jankc_due(&c));
	n = rvd_jankc_snapshot(&c, snap, RVD_JANKC_ROWS);
	assert_int_equal(n, 1);
	assert_int_equal(snap[0].frames, 2);
	assert_int_equal(snap[0].late, 1);
	rvd_jankc_acked(&c, snap, n, DAY + 1);
	assert_false(rvd_jankc_due(&c));
	assert_int_equal(rvd_jankc_snapshot(&c, snap, RVD_JANKC_ROWS), 0);
}

static void test_jankc_app_of_reads_comm_once(void **state)
{
	struct rvd_jank_pids pc;
	char want[32];
	FILE *f;

	(void)state;
	memset(&pc, 0, sizeof(pc));
	f = fopen("/proc/self/comm", "r");
	assert_non_null(f);
	assert_non_null(fgets(want, sizeof(want), f));
	fclose(f);
	want[strcspn(want, "\n")] = '\0';
	assert_string_equal(rvd_jankc_app_of(&pc, getpid()), want);
	assert_int_equal(pc.next, 1);
	assert_string_equal(rvd_jankc_app_of(&pc, getpid()), want);
	assert_int_equal(pc.next, 1);
	rvd_jankc_forget(&pc, getpid());
	assert_string_equal(rvd_jankc_app_of(&pc, getpid()), want);
	assert_int_equal(pc.next, 2);
	assert_string_equal(rvd_jankc_app_of(&pc, -1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jankc_counts_per_app_version_day),
		cmocka_unit_test(test_jankc_table_is_bounded_with_other_row),
		cmocka_unit_test(test_jankc_file_round_trip),
		cmocka_unit_test(test_jankc_hostile_files_refused),
		cmocka_unit_test(test_jankc_ack_never_sends_twice),
		cmocka_unit_test(test_jankc_app_of_reads_comm_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
