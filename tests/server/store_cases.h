/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_cases.h — the server test cases that do not run when the suite
 * runs on PostgreSQL (RVS_TEST_STORE=pg, store_env.h): RVS_PG_SQLITE_ONLY,
 * the cases about sqlite itself, each entry a case name (or a name ending
 * in '*': every case it prefixes) with its reason.
 *
 * A test program calls rvt_store_cases(tests) in main before running its
 * group: on pg the listed cases become a visible skip printing the reason;
 * on sqlite nothing changes.  Header-only (static functions), for files
 * that include cmocka.h.
 */
#ifndef RVT_STORE_CASES_H
#define RVT_STORE_CASES_H

#include <string.h>

#include "store_env.h"

static const struct {
	const char *name, *why;
} RVS_PG_SQLITE_ONLY[] = {
	{"test_ckpt_*", "sqlite-specific: the WAL checkpointer (checkpoint.c)"},
	{"test_durable_*", "sqlite-specific: power loss through a fault-injecting sqlite VFS"},
	{"test_issue_migration_backfills_folded_issue",
	 "sqlite-specific: a sqlite migration's backfill"},
};

/* 1 when name is pattern or pattern ends in '*' and prefixes name. */
static int rvt_case_matches(const char *pattern, const char *name)
{
	size_t n = strlen(pattern);

	if (n && pattern[n - 1] == '*')
		return strncmp(pattern, name, n - 1) == 0;
	return strcmp(pattern, name) == 0;
}

/* The skipped case: its initial state is the reason. */
static void rvt_case_skip(void **state)
{
	print_message("%s\n", (const char *)*state);
	skip();
}

static void rvt_case_divert(struct CMUnitTest *t, const char *why)
{
	t->test_func = rvt_case_skip;
	t->setup_func = NULL;
	t->teardown_func = NULL;
	t->initial_state = (void *)why;
}

/* On pg, turns the listed cases of t[0..n) into skips; else nothing. */
static void rvt_store_cases_n(struct CMUnitTest *t, size_t n)
{
	if (!rvt_store_is_pg())
		return;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof RVS_PG_SQLITE_ONLY / sizeof *RVS_PG_SQLITE_ONLY; k++)
			if (rvt_case_matches(RVS_PG_SQLITE_ONLY[k].name, t[i].name))
				rvt_case_divert(&t[i], RVS_PG_SQLITE_ONLY[k].why);
	}
}

#define rvt_store_cases(tests) rvt_store_cases_n(tests, sizeof(tests) / sizeof(tests)[0])

#endif
