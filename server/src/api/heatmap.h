/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heatmap.h — GET /api/v1/heatmap (heatmap.c; API.md "Heatmap"): an app's
 * (or issue's) anomalies counted per time received and anomaly duration.
 */
#ifndef RVS_API_HEATMAP_H
#define RVS_API_HEATMAP_H

/* The endpoint (app/routes.c's table; work thread; fills c->q always). */
struct rvs_call;
void rvs_heatmap_api(struct rvs_call *c);

#endif
