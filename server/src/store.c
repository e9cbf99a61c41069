/*
 * store.c — picks the storage backend a configured database names
 * (store.h).  Pure string inspection: no I/O, no state.
 */
#include "store.h"

#include <assert.h>
#include <string.h>

const struct rvs_store_ops *rvs_store_for(const char *dsn)
{
	assert(dsn);
	if (strncmp(dsn, "postgresql://", 13) == 0 || strncmp(dsn, "postgres://", 11) == 0)
		return &rvs_store_pg;
	return &rvs_store_sqlite;
}
