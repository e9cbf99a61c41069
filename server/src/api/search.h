/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.h — the engineer's fleet questions 3 and 4 (server/API.md): the
 * worst traces (GET /api/v1/traces with sort=), the top issues ranked by
 * impact with a weekly trend (GET /api/v1/issues) and chain search (GET
 * /api/v1/search).  Work thread only; each request reads through the
 * shared store (store.h: traces_sorted, issues_read, search_scan; sqlite
 * or PostgreSQL).  Every request value is bound as an SQL parameter or
 * checked against a fixed list; SQL text is assembled from fixed fragments
 * only.  Every search does bounded work: a row budget and a time budget,
 * after which it answers with what it found and a cursor to go on.
 */
#ifndef RVS_API_SEARCH_H
#define RVS_API_SEARCH_H

struct rvs_call;

/* GET /api/v1/traces when the query has `sort` or `issue` (query.c hands
 * such requests over): the filtered trace list ordered by the sort key,
 * keyset-paginated.  Fills c->q always; 400 naming an unknown sort key. */
void rvs_search_traces(struct rvs_call *c);

/* GET /api/v1/issues and GET /api/v1/search (app/routes.c's table). */
void rvs_search_issues(struct rvs_call *c);
void rvs_search_chains(struct rvs_call *c);

#endif
