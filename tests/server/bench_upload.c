/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_upload.c — a load generator for rearview-server: the real binary in
 * a temporary directory, libcurl multi with C concurrent simulated devices
 * (one keep-alive TLS connection and one device token each) posting
 * UploadEnvelopes on loopback.  Reports sustained acknowledged uploads/s and
 * p50/p99 acknowledgement latency for summary-only uploads and for uploads
 * carrying a capture payload, then how fast the captures were decoded and
 * indexed (the server's /metrics decode counter reaching the upload count).
 *   bench_upload [concurrency] [summary_uploads] [capture_uploads] [ring_kib]
 *                [real|plain|random]
 * "real" (the default) traces tests/bench/server_workload.c with librvtrace
 * until a ring of ring_kib is full, compresses the capture as a device does
 * (its shuffled form, tracer/FORMAT.md §3, through zstd level 3), and makes
 * each upload's blob distinct by appending a zstd skippable frame carrying
 * its upload id (same decode work, a new content address).  "plain" is the
 * same capture zstd-compressed as it is (COMPRESSION_ZSTD, what devices sent
 * before the shuffled form).  "random" posts ring_kib of uncompressed
 * filler, which the decoder rejects.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zstd.h>

#include "rearview/analysis.h"
#include "rearview/trace.h"
#include "server_common.h"
#include "rearview/upload.pb-c.h"

uint64_t rvs_bench_workload(uint64_t iterations); /* server_workload.c */

static uint8_t *g_zcap; /* the compressed real capture; NULL in random mode */
static size_t g_zlen, g_rawlen;
static int g_plain; /* COMPRESSION_ZSTD instead of COMPRESSION_ZSTD_SHUFFLED */

static struct rvsb g_b;

struct dev {
	CURL *h;
	struct curl_slist *hdr;
	char token[128];
	uint8_t *body;
	size_t len;
	unsigned seq;
	int id;
};

static void setup_common(CURL *h, const char *path)
{
	rvsb_curl(&g_b, h, path);
}

static size_t grab(char *p, size_t sz, size_t n, void *u)
{
	struct dev *d = u;
	Rearview__EnrollResponse *r = rearview__enroll_response__unpack(NULL, sz * n, (uint8_t *)p);
	if (r) {
		snprintf(d->token, sizeof d->token, "%s", r->device_token);
		rearview__enroll_response__free_unpacked(r, NULL);
	}
	return sz * n;
}

static void enroll(struct dev *d)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	uint8_t buf[256];
	size_t n;
	CURL *h = curl_easy_init();
	q.enrollment_secret = g_b.secret;
	n = rearview__enroll_request__pack(&q, buf);
	setup_common(h, "/v1/enroll");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, buf);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)n);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, grab);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, d);
	curl_easy_perform(h);
	curl_easy_cleanup(h);
}

static void next_body(struct dev *d, size_t payload)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	static uint8_t *pl;
	uint8_t id[16] = {0};
	static unsigned run;

	if (!run)
		run = (unsigned)getpid() ^ (unsigned)time(NULL);
	if (payload && g_zcap)
		payload = g_zlen + 24;
	if (payload && !pl) {
		pl = malloc(payload);
		if (g_zcap) {
			/* Skippable frame header: magic 0x184D2A50, 16-byte body. */
			static const uint8_t skip[8] = {0x50, 0x2a, 0x4d, 0x18, 16, 0, 0, 0};
			memcpy(pl, g_zcap, g_zlen);
			memcpy(pl + g_zlen, skip, 8);
		} else {
			for (size_t i = 0; i < payload; i++)
				pl[i] = (uint8_t)(i * 131);
		}
	}
	memcpy(id, &run, sizeof run);
	memcpy(id + 4, &d->id, sizeof d->id);
	memcpy(id + 8, &d->seq, sizeof d->seq);
	id[12] = payload ? 1 : 0;
	d->seq++;
	e.upload_id.data = id;
	e.upload_id.len = 16;
	app.app_id = (char *)"com.example.bench";
	app.version = (char *)"1.0";
	e.app = &app;
	/* Manual captures: the server's weekly quota (issue 18 item 11) would
	 * refuse a device's fourth charged upload and the bench would wait
	 * forever for the rest to be indexed. */
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	e.anomaly = &an;
	if (!payload) {
		/* What a device sends when consent allows statistics only: the
		 * top self-time methods and the chain at the anomaly. */
		static char *frames[3] = {(char *)"main", (char *)"com.example.Activity.onResume",
					  (char *)"com.example.Json.parse"};
		static Rearview__MethodStat ms[5];
		static Rearview__MethodStat *top[5];
		static Rearview__Chain chain = REARVIEW__CHAIN__INIT, *chains[1] = {&chain};
		static Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
		static char names[5][32];
		for (int i = 0; i < 5; i++) {
			rearview__method_stat__init(&ms[i]);
			snprintf(names[i], sizeof names[i], "com.example.M%u",
				 (d->seq * 5 + i) % 500);
			ms[i].name = names[i];
			ms[i].calls = 1 + (uint64_t)i;
			ms[i].self_ns = 1000000 / (1 + (uint64_t)i);
			ms[i].inclusive_ns = 2000000;
			top[i] = &ms[i];
		}
		chain.frames = frames;
		chain.n_frames = 3;
		chain.duration_ns = 120000000;
		chain.signature = 0x1234567890abcdefull + d->seq % 50;
		sum.top_self = top;
		sum.n_top_self = 5;
		sum.chains_at_anomaly = chains;
		sum.n_chains_at_anomaly = 1;
		sum.window_ns = 2000000000;
		e.summary = &sum;
	}
	if (payload) {
		/* Distinct bytes per upload: distinct blobs, as in the field. */
		memcpy(g_zcap ? pl + g_zlen + 8 : pl, id, 16);
		e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
		e.payload.data = pl;
		e.payload.len = payload;
		if (g_zcap) {
			e.compression = g_plain ? REARVIEW__COMPRESSION__COMPRESSION_ZSTD
						: REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED;
			e.payload_size = g_rawlen;
		}
	}
	free(d->body);
	d->len = rearview__upload_envelope__get_packed_size(&e);
	d->body = malloc(d->len);
	rearview__upload_envelope__pack(&e, d->body);
	curl_easy_setopt(d->h, CURLOPT_POSTFIELDS, d->body);
	curl_easy_setopt(d->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->len);
}

static void run(struct dev *devs, int conc, int total, size_t payload, const char *label)
{
	CURLM *m = curl_multi_init();
	double *lat = calloc((size_t)total, sizeof *lat), t0;
	int started = 0, done = 0, failed = 0, running;

	for (int i = 0; i < conc && started < total; i++, started++) {
		next_body(&devs[i], payload);
		curl_multi_add_handle(m, devs[i].h);
	}
	t0 = rvsb_now();
	while (done + failed < total) {
		CURLMsg *msg;
		int left;
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct dev *d;
			long code = 0;
			curl_off_t us = 0;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&d);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_TOTAL_TIME_T, &us);
			curl_multi_remove_handle(m, msg->easy_handle);
			if (msg->data.result == CURLE_OK && code == 200)
				lat[done++] = (double)us / 1000.0;
			else
				failed++;
			if (started < total) {
				next_body(d, payload);
				curl_multi_add_handle(m, d->h);
				started++;
			}
		}
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	t0 = rvsb_now() - t0;
	printf("%-28s %6d ok %4d failed  %8.0f uploads/s  p50 %7.2f ms  p99 %7.2f ms"
	       "  (%d concurrent, %zu B payload)\n",
	       label, done, failed, done / t0, rvsb_pct(lat, (size_t)done, 50),
	       rvsb_pct(lat, (size_t)done, 99), conc, payload);
	curl_multi_cleanup(m);
	free(lat);
}

/* Traces the workload until a ring of kib KiB has wrapped, zstd level 3. */
static int make_capture(size_t kib)
{
	char path[160];
	uint8_t *raw;
	FILE *f;
	long n;

	snprintf(path, sizeof path, "%s/capture.rvt", g_b.dir);
	if (rvt_set_config(kib << 10, 0) || rvt_start(0))
		return -1;
	/* About 14 bytes of ring per call: twice the ring's worth of calls. */
	rvs_bench_workload((uint64_t)kib * 1024 / 14 * 2 / 11);
	if (rvt_capture_to_path(0, path) || rvt_stop(0, 1))
		return -1;
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0)
		return -1;
	rewind(f);
	raw = malloc((size_t)n);
	g_rawlen = fread(raw, 1, (size_t)n, f);
	fclose(f);
	if (!g_plain) {
		uint8_t *form = malloc(g_rawlen);
		if (!form || rva_shuffle_buf(raw, g_rawlen, form))
			return -1;
		free(raw);
		raw = form;
	}
	g_zcap = malloc(ZSTD_compressBound(g_rawlen));
	g_zlen = ZSTD_compress(g_zcap, ZSTD_compressBound(g_rawlen), raw, g_rawlen, 3);
	free(raw);
	if (ZSTD_isError(g_zlen))
		return -1;
	printf("capture: %zu KiB ring, %zu B capture, %zu B zstd%s\n", kib, g_rawlen, g_zlen,
	       g_plain ? " (plain)" : " (shuffled form)");
	return 0;
}

/* A counter from the server's /metrics, -1 when unreadable. */
static double metric(const char *name)
{
	static char text[RVSB_TEXT_MAX];
	static CURL *h; /* one kept-alive connection: no TLS handshake per poll */
	char *p;
	size_t nl = strlen(name);
	double sum = -1;
	text[0] = '\0';
	if (!h) {
		h = curl_easy_init();
		setup_common(h, "/metrics");
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, rvsb_append_text);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, text);
	}
	if (curl_easy_perform(h) != CURLE_OK)
		return -1;
	/* The sum over the metric's label sets; -1 when it is absent. */
	for (p = text; (p = strstr(p, name)); p += nl) {
		const char *sp, *eol;
		if ((p != text && p[-1] != '\n') || (p[nl] != ' ' && p[nl] != '{'))
			continue;
		eol = strchr(p, '\n');
		for (sp = eol ? eol : p + strlen(p); sp > p && sp[-1] != ' '; sp--)
			;
		sum = (sum < 0 ? 0 : sum) + strtod(sp, NULL);
	}
	return sum;
}

/* Waits until the server has decoded `count` uploads in all.  A server
 * without the decode histogram (an older build run side by side) is done
 * when its queue is empty, all uploads being acknowledged by then. */
static void wait_decoded(double count)
{
	double n;
	while ((n = metric("rearview_decode_seconds_count")) < count) {
		if (n < 0 && metric("rearview_decode_queue_depth") == 0)
			return;
		usleep(100000);
	}
}

int main(int argc, char **argv)
{
	int conc = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 32;
	int nsum = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 4000;
	int ncap = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 60;
	size_t kib = argc > 4 ? (size_t)strtol(argv[4], NULL, 10) : 32768;
	int real = !(argc > 5 && strcmp(argv[5], "random") == 0);

	g_plain = argc > 5 && strcmp(argv[5], "plain") == 0;
	double t0, failed0, sum0;
	struct dev *devs;

	if (conc < 1 || nsum < 1 || ncap < 0)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (rvsb_init(&g_b))
		return 1;
	if (ncap && real && make_capture(kib)) {
		fprintf(stderr, "cannot make a capture\n");
		return 1;
	}
	if (rvsb_start(&g_b, NULL))
		return 1;
	devs = calloc((size_t)conc, sizeof *devs);
	for (int i = 0; i < conc; i++) {
		char auth[160];
		devs[i].id = i;
		enroll(&devs[i]);
		devs[i].h = curl_easy_init();
		setup_common(devs[i].h, "/v1/uploads");
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", devs[i].token);
		devs[i].hdr = curl_slist_append(NULL, auth);
		devs[i].hdr = curl_slist_append(devs[i].hdr, "Expect:");
		curl_easy_setopt(devs[i].h, CURLOPT_HTTPHEADER, devs[i].hdr);
		curl_easy_setopt(devs[i].h, CURLOPT_PRIVATE, &devs[i]);
	}
	t0 = rvsb_now();
	run(devs, conc, nsum, 0, "summary-only uploads");
	wait_decoded(nsum);
	printf("%-28s %6d indexed            %8.0f uploads/s (upload start to last decode)\n",
	       "summaries decoded+indexed", nsum, nsum / (rvsb_now() - t0));
	if (ncap) {
		failed0 = metric("rearview_decode_failures_total");
		sum0 = metric("rearview_decode_seconds_sum");
		t0 = rvsb_now();
		run(devs, conc, ncap, real ? g_zlen + 24 : kib * 1024,
		    real ? "zstd capture uploads" : "capture uploads");
		wait_decoded(nsum + ncap);
		t0 = rvsb_now() - t0;
		printf("%-28s %6d indexed %4.0f quarantined  %6.1f captures/s (upload start to"
		       " last decode; decode mean %.0f ms)\n",
		       "captures decoded+indexed",
		       ncap - (int)(metric("rearview_decode_failures_total") - failed0),
		       metric("rearview_decode_failures_total") - failed0, ncap / t0,
		       1000 * (metric("rearview_decode_seconds_sum") - sum0) / ncap);
	}
	for (int i = 0; i < conc; i++) {
		curl_easy_cleanup(devs[i].h);
		curl_slist_free_all(devs[i].hdr);
		free(devs[i].body);
	}
	free(devs);
	curl_global_cleanup();
	return rvsb_stop(&g_b) ? 1 : 0;
}
