/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_store.c — the store backends side by side, through their function
 * table only (no HTTP, no decoder): T work threads acknowledging N
 * summary-only uploads with upload_add (each durable on return, as the
 * server acknowledges them), then D decoder threads draining the decode
 * queue with decode_next_batch + decode_finish (batches of 64, the
 * decoder's own work left out).  sqlite (a file in a temporary directory)
 * and PostgreSQL (a private server, tests/server/pg_harness.h) run
 * interleaved, R rounds each on a fresh database; prints every round and
 * the median per backend.  Until the whole server runs on PostgreSQL this
 * is the measure of its storage cost; bench_upload measures the server.
 *   bench_store [threads] [uploads] [decoders] [rounds]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "pg_harness.h"

static const struct rvs_store_ops *ops;

struct job {
	struct rvs_store *s;
	int first, count;      /* upload numbers [first, first + count) */
	unsigned part, nparts; /* a decoder's queue partition */
	atomic_int *failed;
	atomic_long *drained;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *uploader(void *arg)
{
	struct job *j = arg;
	static const uint8_t summary[600] = {1};

	for (int i = j->first; i < j->first + j->count; i++) {
		struct rvs_upload_rec u = {0};
		snprintf(u.trace_id, sizeof u.trace_id, "t-%08d", i);
		u.device_id = "d-bench";
		memcpy(u.upload_id, &i, sizeof i);
		u.app_id = "bench";
		u.app_version = "1.0";
		u.anomaly_kind = 1;
		u.summary = summary;
		u.summary_len = sizeof summary;
		if (ops->upload_add(j->s, &u))
			atomic_fetch_add(j->failed, 1);
	}
	return NULL;
}

static void *decoder(void *arg)
{
	struct job *j = arg;
	struct rvs_decode_item it[64];
	int n;

	while ((n = ops->decode_next_batch(j->s, j->part, j->nparts, it, 64)) > 0) {
		if (ops->decode_finish(j->s, it, (size_t)n)) {
			atomic_fetch_add(j->failed, 1);
			return NULL;
		}
		atomic_fetch_add(j->drained, n);
	}
	if (n < 0)
		atomic_fetch_add(j->failed, 1);
	return NULL;
}

/* Runs threads copies of fn over s (decoders: one queue partition each,
 * as the server runs them; sqlite needs that to hand an upload to one
 * decoder only); seconds taken. */
static double run(void *(*fn)(void *), struct rvs_store *s, int threads, int uploads,
		  atomic_int *failed, atomic_long *drained)
{
	pthread_t t[64];
	struct job j[64];
	double t0 = now_s();

	for (int i = 0; i < threads; i++) {
		int per = uploads / threads;
		j[i] = (struct job){
			s,	     i * per,		i == threads - 1 ? uploads - i * per : per,
			(unsigned)i, (unsigned)threads, failed,
			drained};
		if (pthread_create(&t[i], NULL, fn, &j[i]))
			exit(1);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return now_s() - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* argv[i] as a number, def when absent; -1 when it is not one. */
static int arg(int argc, char **argv, int i, int def)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	v = strtol(argv[i], &end, 10);
	return *end || end == argv[i] || v < 0 || v > 10000000 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
	int threads = arg(argc, argv, 1, 4), uploads = arg(argc, argv, 2, 4000);
	int decoders = arg(argc, argv, 3, 2), rounds = arg(argc, argv, 4, 3);
	static const struct rvs_store_ops *const backends[2] = {&rvs_store_sqlite, &rvs_store_pg};
	double acked[2][16], drained_s[2][16];
	struct pgh pg;
	int rc = 1;

	if (threads < 1 || threads > 64 || decoders < 1 || decoders > 16 || uploads < threads ||
	    rounds < 1 || rounds > 16) {
		fprintf(stderr, "usage: bench_store [threads 1-64] [uploads] [decoders 1-16]"
				" [rounds 1-16]\n");
		return 2;
	}
	if ((rc = pgh_start(&pg))) {
		fprintf(stderr, "bench_store: no PostgreSQL (%s)\n", pg.why);
		pgh_stop(&pg);
		return rc == -ENOENT ? 0 : 1;
	}
	rc = 1;
	printf("bench_store: %d upload threads, %d summary-only uploads of 600 B, %d decode"
	       " threads (batches of 64), %d rounds interleaved\n",
	       threads, uploads, decoders, rounds);
	for (int r = 0; r < rounds; r++) {
		for (int b = 0; b < 2; b++) {
			char dir[64] = "/tmp/rvs-bench-store-XXXXXX", dsn[256], cmd[128];
			struct rvs_store *s;
			struct rvs_device_rec d = {0};
			atomic_int failed = 0;
			atomic_long drained = 0;
			double up, dec;

			ops = backends[b];
			if (!mkdtemp(dir))
				goto out;
			if (ops == &rvs_store_pg) {
				if (pgh_fresh_db(&pg, dsn, sizeof dsn))
					goto out;
			} else {
				snprintf(dsn, sizeof dsn, "%s/bench.db", dir);
			}
			if (ops->open(dsn, &s))
				goto out;
			snprintf(d.device_id, sizeof d.device_id, "d-bench");
			memset(d.token_hash, 7, sizeof d.token_hash);
			if (ops->device_add(s, &d))
				goto out;
			up = run(uploader, s, threads, uploads, &failed, &drained);
			dec = run(decoder, s, decoders, uploads, &failed, &drained);
			ops->close(s);
			snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
			if (system(cmd) != 0 || failed || drained != uploads) {
				fprintf(stderr, "bench_store: %s: %d failed, %ld of %d drained\n",
					ops->name, (int)failed, (long)drained, uploads);
				goto out;
			}
			acked[b][r] = uploads / up;
			drained_s[b][r] = uploads / dec;
			printf("round %d %-10s acked %8.0f uploads/s   dequeued+finished %8.0f/s\n",
			       r + 1, ops->name, acked[b][r], drained_s[b][r]);
			fflush(stdout);
		}
	}
	for (int b = 0; b < 2; b++) {
		qsort(acked[b], (size_t)rounds, sizeof acked[b][0], cmp);
		qsort(drained_s[b], (size_t)rounds, sizeof drained_s[b][0], cmp);
		printf("median %-10s acked %8.0f uploads/s   dequeued+finished %8.0f/s\n",
		       backends[b]->name, acked[b][rounds / 2], drained_s[b][rounds / 2]);
	}
	rc = 0;
out:
	pgh_stop(&pg);
	return rc;
}
