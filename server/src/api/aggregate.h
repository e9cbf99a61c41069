/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate.h — the JSON API's call-path aggregates (aggregate.c; API.md
 * "Aggregates"): GET /api/v1/aggregate, GET /api/v1/aggregate/diff and
 * GET /api/v1/aggregate/callers (a method's callers and callees across
 * the set) and GET /api/v1/aggregate/heaviest (the captures where a frame
 * is heaviest).
 */
#ifndef RVS_API_AGGREGATE_H
#define RVS_API_AGGREGATE_H

/* The endpoints (app/routes.c's table; work thread; fill c->q always). */
struct rvs_call;
void rvs_agg_api(struct rvs_call *c);
void rvs_agg_api_diff(struct rvs_call *c);
void rvs_agg_api_callers(struct rvs_call *c);
/* GET /api/v1/aggregate/heaviest: the traces of an aggregate's set where
 * one frame (node) is heaviest. */
void rvs_agg_api_heaviest(struct rvs_call *c);

#endif
