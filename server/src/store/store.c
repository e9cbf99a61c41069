/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c — picks the storage backend a configured database names, and
 * shares one open store per database in the process (store.h).
 *
 * Invariants: the table of shared stores is only read or written under mu;
 * an entry is in use while refs > 0, and then dsn, ops and s are set; an
 * entry whose refs drop to 0 is closed and cleared under mu, so an acquirer
 * never sees a store being closed.
 */
#include "store/store.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHARED 8

struct shared {
	char *dsn;
	const struct rvs_store_ops *ops;
	struct rvs_store *s;
	unsigned refs;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct shared shared[MAX_SHARED];

const struct rvs_store_ops *rvs_store_for(const char *dsn)
{
	assert(dsn);
	if (strncmp(dsn, "postgresql://", 13) == 0 || strncmp(dsn, "postgres://", 11) == 0)
		return &rvs_store_pg;
	return &rvs_store_sqlite;
}

int rvs_store_acquire(const char *dsn, const struct rvs_store_ops **ops, struct rvs_store **out)
{
	struct shared *free_slot = NULL;
	int rc;

	assert(dsn && ops && out);
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < MAX_SHARED; i++) {
		struct shared *e = &shared[i];
		if (e->refs && strcmp(e->dsn, dsn) == 0) {
			e->refs++;
			*ops = e->ops;
			*out = e->s;
			pthread_mutex_unlock(&mu);
			return 0;
		}
		if (!e->refs && !free_slot)
			free_slot = e;
	}
	if (!free_slot) {
		pthread_mutex_unlock(&mu);
		return -ENOSPC;
	}
	if (!(free_slot->dsn = strdup(dsn))) {
		pthread_mutex_unlock(&mu);
		return -ENOMEM;
	}
	free_slot->ops = rvs_store_for(dsn);
	if ((rc = free_slot->ops->open(dsn, &free_slot->s))) {
		free(free_slot->dsn);
		memset(free_slot, 0, sizeof *free_slot);
		pthread_mutex_unlock(&mu);
		return rc;
	}
	free_slot->refs = 1;
	*ops = free_slot->ops;
	*out = free_slot->s;
	pthread_mutex_unlock(&mu);
	return 0;
}

void rvs_store_release(struct rvs_store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < MAX_SHARED; i++) {
		struct shared *e = &shared[i];
		if (!e->refs || e->s != s)
			continue;
		if (--e->refs == 0) {
			e->ops->close(e->s);
			free(e->dsn);
			memset(e, 0, sizeof *e);
		}
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_unlock(&mu);
	assert(!"rvs_store_release of a store not acquired");
}

/* ---- regressions and webhook deliveries ---- */

int rvs_store_regress_open(const char *dsn, const struct rvs_store_ops **ops, struct rvs_store **s,
			   struct rvs_regress_db **d)
{
	int rc = rvs_store_acquire(dsn, ops, s);

	if (rc)
		return rc;
	if ((rc = (*ops)->regress_open(*s, d)))
		rvs_store_release(*s);
	return rc;
}

void rvs_store_regress_close(const struct rvs_store_ops *ops, struct rvs_store *s,
			     struct rvs_regress_db *d)
{
	ops->regress_close(d);
	rvs_store_release(s);
}
