/*
 * store_env.c — the server test suite's store switch (store_env.h).
 *
 * Invariants: at most one PostgreSQL per test program, started by the
 * process that first asks for a database and stopped by that same process
 * at exit (a forked child that calls exit() leaves it running); the switch
 * is read once.
 */
#include "store_env.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_harness.h"

static struct pgh g_pg;
static pid_t g_owner; /* the process that started g_pg; 0: not started */
static char g_why[300];

int rvt_store_is_pg(void)
{
	static int pg = -1;

	if (pg < 0) {
		const char *v = getenv("RVS_TEST_STORE");
		pg = v && strcmp(v, "pg") == 0;
	}
	return pg;
}

const char *rvt_store_why(void)
{
	return g_why;
}

static void stop_pg(void)
{
	if (g_owner == getpid())
		pgh_stop(&g_pg);
}

int rvt_store_dsn(const char *sqlite_path, char *out, size_t len)
{
	int rc;

	if (!rvt_store_is_pg()) {
		if ((size_t)snprintf(out, len, "%s", sqlite_path) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (!g_owner) {
		if ((rc = pgh_start(&g_pg)) < 0) {
			snprintf(g_why, sizeof g_why, "RVS_TEST_STORE=pg: %s", g_pg.why);
			pgh_stop(&g_pg);
			return rc;
		}
		g_owner = getpid();
		atexit(stop_pg);
	}
	assert(g_owner == getpid());
	if (pgh_fresh_db(&g_pg, out, len) < 0) {
		snprintf(g_why, sizeof g_why, "RVS_TEST_STORE=pg: %s", g_pg.why);
		return -EIO;
	}
	return 0;
}
