/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_concurrent.c — a finished trace analysed and exported by several
 * threads at once gives every thread the same answers (run under
 * ThreadSanitizer by `make tsan`).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capbuild.h"
#include "rearview/analysis.h"

typedef struct job {
	const rva_trace *t;
	uint32_t top[4];
	uint64_t sig;
	size_t folded_len;
	int rc;
} job;

static void *work(void *arg)
{
	job *j = arg;
	rva_mstat *st;
	rva_chains ch;
	char *buf = NULL;
	size_t len = 0;
	if (rva_method_stats(j->t, &st) < 0 || rva_chains_collect(j->t, 1, &ch) < 0) {
		j->rc = -1;
		return NULL;
	}
	rva_top_self(j->t, st, j->top, 4);
	j->sig = ch.n ? ch.v[0].signature : 0;
	FILE *f = open_memstream(&buf, &len);
	rva_export_folded(f, j->t);
	rva_export_svg(f, j->t, NULL);
	fclose(f);
	j->folded_len = len;
	free(buf);
	free(st);
	rva_chains_release(&ch);
	return NULL;
}

static void test_concurrent_readers_agree(void **state)
{
	capbuf c = {0};
	cb_header(&c, 1000000, 1000000000, 0, 1000000, 0x400000, 0);
	for (uint32_t i = 0; i < 500; i++) {
		cb_entry(&c, 0x1000 + 16 * (i % 7), i * 1000);
		cb_entry(&c, 0x2000 + 16 * (i % 3), i * 1000 + 10);
		cb_exit(&c, i * 1000 + 10 + i % 17);
		cb_exit(&c, i * 1000 + 900);
	}
	cb_end_slots(&c);
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	free(c.b);
	job jobs[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].t = t;
		assert_int_equal(pthread_create(&th[i], NULL, work, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 1; i < 4; i++) {
		assert_int_equal(jobs[i].rc, 0);
		assert_memory_equal(jobs[i].top, jobs[0].top, sizeof(jobs[0].top));
		assert_true(jobs[i].sig == jobs[0].sig);
		assert_int_equal(jobs[i].folded_len, jobs[0].folded_len);
	}
	assert_true(jobs[0].folded_len > 0);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_readers_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
