/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_blob.c — put/get throughput of a blob backend (blob.h) from one
 * thread: N distinct blobs of SIZE KiB put, put again (deduplicated), read
 * back whole (verified), then deleted.
 *   bench_blob [count] [size_kib]
 * Runs the local backend in a temporary directory; with
 * RVS_BENCH_S3_ENDPOINT and RVS_BENCH_S3_SECRET (a 0600 file) set, the S3
 * backend on bucket "rv" of that endpoint (e.g. npm s3rver, access key
 * S3RVER) instead; with RVS_BENCH_PG_URI (a libpq URI), PostgreSQL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blob/blob.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *what, int n, size_t size, double s)
{
	printf("%-18s %5d blobs  %8.1f blobs/s  %8.1f MiB/s\n", what, n, n / s,
	       (double)n * (double)size / s / 1048576.0);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 200;
	size_t size = (argc > 2 ? (size_t)strtol(argv[2], NULL, 10) : 256) * 1024;
	const char *endpoint = getenv("RVS_BENCH_S3_ENDPOINT");
	const char *secret = getenv("RVS_BENCH_S3_SECRET");
	struct rvs_blob_s3_config s3 = {
		.endpoint = endpoint, .access_key = "S3RVER", .secret_file = secret};
	char dir[] = "/tmp/rvs-bblob-XXXXXX", spec[128], (*hex)[65];
	struct rvs_blobs *b;
	uint8_t *data, *got;
	size_t len;
	double t;
	int rc = 1;

	if (n <= 0 || size == 0 || !mkdtemp(dir))
		return 2;
	if (getenv("RVS_BENCH_PG_URI"))
		snprintf(spec, sizeof spec, "%s", getenv("RVS_BENCH_PG_URI"));
	else if (endpoint && secret)
		snprintf(spec, sizeof spec, "s3://rv/bench-%s", dir + strlen("/tmp/rvs-bblob-"));
	else
		snprintf(spec, sizeof spec, "%s/blobs", dir);
	data = malloc(size);
	hex = calloc((size_t)n, sizeof *hex);
	if (!data || !hex || rvs_blobs_open(spec, &s3, dir, &b))
		return 2;
	printf("backend %s, %d blobs of %zu KiB\n", b->ops->name, n, size / 1024);
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 131 + 7);
	t = now();
	for (int i = 0; i < n; i++) {
		memcpy(data, &i, sizeof i); /* distinct content, distinct name */
		if (b->ops->put(b, data, size, hex[i]))
			goto out;
	}
	report("put (new)", n, size, now() - t);
	t = now();
	for (int i = 0; i < n; i++) {
		char again[65];
		memcpy(data, &i, sizeof i);
		if (b->ops->put(b, data, size, again))
			goto out;
	}
	report("put (dedup)", n, size, now() - t);
	t = now();
	for (int i = 0; i < n; i++) {
		if (b->ops->get(b, hex[i], size, &got, &len) || len != size)
			goto out;
		free(got);
	}
	report("get (verified)", n, size, now() - t);
	t = now();
	for (int i = 0; i < n; i++)
		if (b->ops->del(b, hex[i], 0) != 1)
			goto out;
	report("delete", n, size, now() - t);
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "bench_blob: a blob operation failed\n");
	rvs_blobs_close(b);
	free(data);
	free(hex);
	snprintf(spec, sizeof spec, "rm -rf '%s'", dir);
	return system(spec) == 0 ? rc : 1;
}
