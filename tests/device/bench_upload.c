/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_upload.c — rearviewd's uploader against a local rearview-server:
 * for N captures taken one after another (rv_helper_app, ~4 KiB each), the
 * time from the capture request to the capture being `uploaded` in the
 * spool (store + gate + policy check + zstd + HTTPS POST + ack + commit),
 * the resulting rate, and the daemon's resident memory (VmHWM, VmRSS, and
 * Pss from smaps_rollup — shared library pages counted once per sharer).
 * The state is polled over admin.sock every 1 ms, which bounds the
 * resolution.
 *
 *   bench_upload [N]        (default 50)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upload_harness.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static long proc_kb(pid_t pid, const char *file, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	char top[64] = "/tmp/rvd-upbench-XXXXXX", conf[1024], ca[200], cmd[128];
	struct server s;
	struct rvh h;
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 50;
	double *lat, t0, total;
	pid_t app;
	int rc = 1;

	if (n < 1 || n > 10000 || !mkdtemp(top) || curl_global_init(CURL_GLOBAL_DEFAULT))
		return 2;
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat || server_setup(&s, top, "srv") < 0 || server_start(&s, 0) < 0) {
		fprintf(stderr, "bench_upload: cannot start rearview-server\n");
		goto out;
	}
	snprintf(ca, sizeof(ca), "%s/ca.crt", s.dir);
	upload_conf(conf, sizeof(conf), &s, ca);
	if (rvh_setup(&h, conf) < 0) {
		fprintf(stderr, "bench_upload: cannot start rearviewd\n");
		goto stop_server;
	}
	app = rvh_helper(&h, NULL);
	if (!rvh_wait_registered(&h, app, true))
		goto stop_daemon;
	/* One capture first: enrolment and the policy fetch are not measured. */
	capture_now(&h, app);
	if (!wait_uploaded(&h, 1))
		goto stop_daemon;
	t0 = rvh_now();
	for (long i = 0; i < n; i++) {
		double t = rvh_now();

		capture_now(&h, app);
		if (!wait_state_poll(&h, "uploaded", (size_t)i + 2, 1)) {
			fprintf(stderr, "bench_upload: capture %ld not uploaded\n", i);
			goto stop_daemon;
		}
		lat[i] = rvh_now() - t;
	}
	total = rvh_now() - t0;
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("captures:            %ld (helper_app, ~4 KiB each)\n", n);
	printf("request → uploaded:  median %.1f ms, p90 %.1f ms, max %.1f ms\n", lat[n / 2] * 1e3,
	       lat[n * 9 / 10] * 1e3, lat[n - 1] * 1e3);
	printf("sequential rate:     %.1f captures/s\n", (double)n / total);
	printf("rearviewd memory:    VmHWM %ld kB, VmRSS %ld kB, Pss %ld kB\n",
	       proc_kb(h.daemon, "status", "VmHWM"), proc_kb(h.daemon, "status", "VmRSS"),
	       proc_kb(h.daemon, "smaps_rollup", "Pss"));
	printf("server first deliveries: %ld\n", metric(&s, "rearview_uploads_total"));
	rc = 0;
stop_daemon:
	rvh_teardown(&h);
stop_server:
	server_stop(&s);
out:
	free(lat);
	curl_global_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_upload: could not remove %s\n", top);
	return rc;
}
