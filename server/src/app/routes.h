/* SPDX-License-Identifier: Apache-2.0 */
/*
 * routes.h — the application's route table (routes.c), for the tests that
 * check what describes it (server/openapi.json against every entry).
 */
#ifndef RVS_APP_ROUTES_H
#define RVS_APP_ROUTES_H

#include "http/route.h"

/* The table the dispatcher runs (constant, static; never NULL). */
const struct rvs_route_table *rvs_app_routes(void);

#endif
