/*
 * store_cases.h — the server test cases that do not run when the suite
 * runs on PostgreSQL (RVS_TEST_STORE=pg, store_env.h), in two lists, each
 * entry a case name (or a name ending in '*': every case it prefixes):
 *
 *   RVS_PG_PENDING      cases that need an issue-16 view (aggregates, diff,
 *                       chain search, worst traces, issues, regressions,
 *                       webhooks) which answers 501 on PostgreSQL until
 *                       the store16a/store16b work merges: the lead empties
 *                       this list then.
 *   RVS_PG_SQLITE_ONLY  cases about sqlite itself, each with its reason.
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

#define RVS_PG_PENDING_WHY "pending: issue-16 view not yet on PostgreSQL"

static const char *const RVS_PG_PENDING[] = {
	/* aggregates and their diff (agg.c) */
	"test_agg_*",
	"test_web_aggregate_and_diff_pages_draw_the_real_capture",
	/* the browser walk opens the aggregate page (tests/browser/web.spec.js) */
	"test_web_browser_signs_in_filters_opens_trace_and_exports",
	/* chain search, issues, sorted trace lists (search.c, issue.c) */
	"test_web_search_pages_find_real_capture_chain_marked",
	"test_search_sort_keys_give_exact_orders",
	"test_search_sort_keyset_pages_cover_list_once",
	"test_search_sort_unknown_key_is_400_naming_it",
	"test_search_kind_names_and_bad_values_named",
	"test_search_issues_ranked_by_impact_with_weekly_trend",
	"test_search_chain_wildcard_matches_zero_or_more_frames",
	"test_search_caller_callee_is_adjacent",
	"test_search_method_exact_and_substring",
	"test_search_cursor_pages_cover_hits_once",
	"test_search_empty_index_finds_nothing",
	"test_search_hostile_pattern_stops_at_budget_and_goes_on",
	"test_search_bad_patterns_are_400",
	/* the fleet views in the browser open the aggregate page */
	"test_regress_browser_fleet_views_show_the_planted_regression",
};

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
		for (size_t k = 0; k < sizeof RVS_PG_PENDING / sizeof *RVS_PG_PENDING; k++)
			if (rvt_case_matches(RVS_PG_PENDING[k], t[i].name))
				rvt_case_divert(&t[i], RVS_PG_PENDING_WHY);
		for (size_t k = 0; k < sizeof RVS_PG_SQLITE_ONLY / sizeof *RVS_PG_SQLITE_ONLY; k++)
			if (rvt_case_matches(RVS_PG_SQLITE_ONLY[k].name, t[i].name))
				rvt_case_divert(&t[i], RVS_PG_SQLITE_ONLY[k].why);
	}
}

#define rvt_store_cases(tests) rvt_store_cases_n(tests, sizeof(tests) / sizeof(tests)[0])

#endif
