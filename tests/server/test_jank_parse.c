/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jank_parse.c — the server's check of a JankReport (POST /v1/jank,
 * server/src/pipeline/jank.c): a good report passes whole; an undecodable
 * body, no counts, too many apps, absurd or impossible counts, days out of
 * range, bad names and a repeated key are refused with the rule named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/upload.h"
#include "rearview/upload.pb-c.h"

#define TODAY 20422

/* Packs counts c[0..n) as a JankReport into *len bytes (caller frees). */
static uint8_t *pack(Rearview__JankCount *c, size_t n, size_t *len)
{
	Rearview__JankReport r = REARVIEW__JANK_REPORT__INIT;
	Rearview__JankCount **pc = calloc(n ? n : 1, sizeof(*pc));
	uint8_t *buf;

	assert_non_null(pc);
	for (size_t i = 0; i < n; i++)
		pc[i] = &c[i];
	r.counts = pc;
	r.n_counts = n;
	*len = rearview__jank_report__get_packed_size(&r);
	buf = malloc(*len ? *len : 1);
	assert_non_null(buf);
	rearview__jank_report__pack(&r, buf);
	free(pc);
	return buf;
}

static void count(Rearview__JankCount *c, const char *app, const char *ver, uint32_t day,
		  uint64_t frames, uint64_t late)
{
	rearview__jank_count__init(c);
	c->app_id = (char *)app;
	c->app_version = (char *)ver;
	c->day = day;
	c->frames = frames;
	c->late = late;
}

static void expect(Rearview__JankCount *c, size_t n, int rc, const char *why)
{
	Rearview__JankReport *out = NULL;
	char reason[200] = "";
	size_t len;
	uint8_t *buf = pack(c, n, &len);

	assert_int_equal(rvs_jank_parse(buf, len, TODAY, &out, reason, sizeof reason), rc);
	if (rc == 0) {
		assert_non_null(out);
		assert_int_equal(out->n_counts, n);
		rearview__jank_report__free_unpacked(out, NULL);
	} else {
		assert_null(out);
		if (!strstr(reason, why))
			fail_msg("reason \"%s\" does not say \"%s\"", reason, why);
	}
	free(buf);
}

static void test_jank_parse_accepts_and_refuses(void **state)
{
	Rearview__JankCount c[RVS_JANK_MAX_COUNTS + 1];
	Rearview__JankReport *out = NULL;
	char reason[200], apps[RVS_JANK_MAX_COUNTS + 1][16];
	char big[300];
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};

	(void)state;
	count(&c[0], "org.ex.a", "1.0", TODAY, 1000, 100);
	count(&c[1], "org.ex.a", "", TODAY - 1, 0, 0);
	count(&c[2], "(other)", "", TODAY + 1, RVS_JANK_MAX_FRAMES, RVS_JANK_MAX_FRAMES);
	count(&c[3], "org.ex.b", "1.0", TODAY - RVS_JANK_DAYS_BACK, 5, 0);
	expect(c, 4, 0, NULL);

	assert_int_equal(rvs_jank_parse(junk, sizeof junk, TODAY, &out, reason, sizeof reason),
			 -EBADMSG);
	assert_non_null(strstr(reason, "malformed"));
	expect(c, 0, -EINVAL, "no counts");
	for (int i = 0; i <= RVS_JANK_MAX_COUNTS; i++) {
		snprintf(apps[i], sizeof apps[i], "app%d", i);
		count(&c[i], apps[i], "", TODAY, 1, 0);
	}
	expect(c, RVS_JANK_MAX_COUNTS, 0, NULL);
	expect(c, RVS_JANK_MAX_COUNTS + 1, -EINVAL, "at most 64");

	count(&c[1], "b", "", TODAY, RVS_JANK_MAX_FRAMES + 1, 0);
	expect(c, 2, -EINVAL, "frames");
	count(&c[1], "b", "", TODAY, UINT64_MAX, 1); /* a negative count, as sent */
	expect(c, 2, -EINVAL, "frames");
	count(&c[1], "b", "", TODAY, 10, 11);
	expect(c, 2, -EINVAL, "late frames above frames");
	count(&c[1], "b", "", TODAY - RVS_JANK_DAYS_BACK - 1, 1, 0);
	expect(c, 2, -EINVAL, "day");
	count(&c[1], "b", "", TODAY + RVS_JANK_DAYS_AHEAD + 1, 1, 0);
	expect(c, 2, -EINVAL, "day");
	count(&c[1], "", "", TODAY, 1, 0);
	expect(c, 2, -EINVAL, "app_id");
	count(&c[1], "a\x01", "", TODAY, 1, 0);
	expect(c, 2, -EINVAL, "app_id");
	memset(big, 'v', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	count(&c[1], "b", big, TODAY, 1, 0);
	expect(c, 2, -EINVAL, "app_version");
	count(&c[1], apps[0], "", TODAY, 3, 0);
	expect(c, 2, -EINVAL, "twice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jank_parse_accepts_and_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
