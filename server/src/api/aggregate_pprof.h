/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aggregate_pprof.h — the call-path aggregates as pprof (aggregate_pprof.c;
 * API.md "Aggregates as pprof").
 */
#ifndef RVS_API_AGGREGATE_PPROF_H
#define RVS_API_AGGREGATE_PPROF_H

/* GET /api/v1/aggregate/pprof: /api/v1/aggregate's reply as a gzip'd
 * profile.proto (values: wall nanoseconds of self time over the set,
 * calls).  GET /api/v1/aggregate/diff/pprof: /api/v1/aggregate/diff's, per
 * trace, side=a or side=b (one set each: `pprof -diff_base=a b`) or
 * side=diff (the default: B − A, negative where B is faster).  Errors are
 * the JSON handlers' (app/routes.c's table; work thread; fill c->q
 * always). */
struct rvs_call;
void rvs_agg_api_pprof(struct rvs_call *c);
void rvs_agg_api_diff_pprof(struct rvs_call *c);

#endif
