/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.h — the engineer's fleet questions 3 and 4 (issue 16; server/
 * API.md): the worst traces (GET /api/v1/traces with sort=), the top issues
 * ranked by impact with a weekly trend (GET /api/v1/issues) and chain
 * search (GET /api/v1/search).  Work thread only; each request reads
 * through the shared store (store.h: traces_sorted, issues_read,
 * search_scan; sqlite or PostgreSQL).  Every request value is bound as an
 * SQL parameter or checked against a fixed list; SQL text is assembled
 * from fixed fragments only.  Every search does bounded work:
 * a row budget and a time budget, after which it answers with what it
 * found and a cursor to go on.
 */
#ifndef RVS_SEARCH_H
#define RVS_SEARCH_H

#include <stddef.h>

struct rvs_call;

/* GET /api/v1/traces when the query has `sort` or `issue` (query.c hands
 * such requests over): the filtered trace list ordered by the sort key,
 * keyset-paginated.  Fills c->q always; 400 naming an unknown sort key. */
void rvs_search_traces(struct rvs_call *c);

/* GET /api/v1/issues and GET /api/v1/search (route.c's table). */
void rvs_search_issues(struct rvs_call *c);
void rvs_search_chains(struct rvs_call *c);

/* The web pages /issues and /search (web_search.c; route.c's table, signed
 * in): HTML renderings of the two documents above. */
void rvs_web_issues(struct rvs_call *c);
void rvs_web_search(struct rvs_call *c);

/* A chain pattern: frames separated by " > " (a '>' with whitespace on
 * both sides, so "std::map<int>" stays one name); each element is a method
 * name matched whole, or "*": any run of frames, zero included.  The
 * pattern matches anywhere in a chain (unanchored at both ends). */
#define RVS_PAT_MAX	 16  /* elements */
#define RVS_PAT_NAME_MAX 512 /* bytes of one name */
struct rvs_chain_pat {
	size_t n;		     /* elements, consecutive stars merged */
	const char *el[RVS_PAT_MAX]; /* into buf; NULL for "*" */
	size_t len[RVS_PAT_MAX];     /* name lengths */
	char buf[RVS_PAT_MAX * (RVS_PAT_NAME_MAX + 1)];
};

/* Parses text into *p.  0, or -EINVAL: empty element, a name over
 * RVS_PAT_NAME_MAX, more than RVS_PAT_MAX elements, or no name at all
 * (a pattern of stars only). */
int rvs_chain_pattern_parse(const char *text, struct rvs_chain_pat *p);

/* Whether p matches frames[0..n) (names of lens[i] bytes, root first): 1
 * with [*from, *to) the frames matched (the leftmost match: each run of
 * names between stars at its earliest place after the previous one), else
 * 0.  Time O(n × elements): no backtracking beyond one run. */
int rvs_chain_match(const struct rvs_chain_pat *p, const char *const *frames, const size_t *lens,
		    size_t n, size_t *from, size_t *to);

#endif
