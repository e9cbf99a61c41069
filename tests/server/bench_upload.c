/*
 * bench_upload.c — a load generator for rearview-server: the real binary in
 * a temporary directory, libcurl multi with C concurrent simulated devices
 * (one keep-alive TLS connection and one device token each) posting
 * UploadEnvelopes on loopback.  Reports sustained acknowledged uploads/s and
 * p50/p99 acknowledgement latency for summary-only uploads and for uploads
 * carrying a capture payload, then how fast the captures were decoded and
 * indexed (the server's /metrics decode counter reaching the upload count).
 *   bench_upload [concurrency] [summary_uploads] [capture_uploads] [ring_kib] [real|random]
 * "real" (the default) traces tests/bench/server_workload.c with librvtrace
 * until a ring of ring_kib is full, zstd-compresses the capture as a device
 * would, and makes each upload's blob distinct by appending a zstd skippable
 * frame carrying its upload id (same decode work, a new content address).
 * "random" posts ring_kib of uncompressed filler, which the decoder rejects.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zstd.h>

#include "rearview/trace.h"
#include "rearview/upload.pb-c.h"

uint64_t rvs_bench_workload(uint64_t iterations); /* server_workload.c */

static uint8_t *g_zcap; /* the compressed real capture; NULL in random mode */
static size_t g_zlen, g_rawlen;

static char g_dir[64], g_data[128], g_ca[160], g_secret[128];
static int g_port;

static int slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;
	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t sink(char *p, size_t sz, size_t n, void *u)
{
	return sz * n;
}

static pid_t start_server(void)
{
	char path[256], buf[32];
	FILE *f;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "init", g_data, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	snprintf(path, sizeof path, "%s/rearview-server.conf", g_data);
	f = fopen(path, "a");
	if (!f)
		return -1;
	fputs("listen = 127.0.0.1:0\nupload_rate_per_min = 1000000\nupload_burst = 1000000\n"
	      "max_connections = 1024\n",
	      f);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		/* RVS_BENCH_LOG=file keeps the server's log (per-decode timings). */
		const char *log = getenv("RVS_BENCH_LOG");
		int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
		if (fd < 0)
			fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "--config", path, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof path, "%s/server.port", g_data);
	for (int i = 0; i < 1200 && g_port <= 0; i++) {
		if (slurp(path, buf, sizeof buf) > 0)
			g_port = (int)strtol(buf, NULL, 10);
		else
			usleep(50000);
	}
	snprintf(path, sizeof path, "%s/enrollment.secret", g_data);
	slurp(path, g_secret, sizeof g_secret);
	snprintf(g_ca, sizeof g_ca, "%s/ca.crt", g_data);
	return pid;
}

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
	char url[128];
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", g_port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, g_ca);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
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
	q.enrollment_secret = g_secret;
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
	app.app_id = "com.example.bench";
	app.version = "1.0";
	e.app = &app;
	if (payload) {
		/* Distinct bytes per upload: distinct blobs, as in the field. */
		memcpy(g_zcap ? pl + g_zlen + 8 : pl, id, 16);
		e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
		e.payload.data = pl;
		e.payload.len = payload;
		if (g_zcap) {
			e.compression = REARVIEW__COMPRESSION__COMPRESSION_ZSTD;
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

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
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
	t0 = now_s();
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
	t0 = now_s() - t0;
	qsort(lat, (size_t)done, sizeof *lat, cmp);
	printf("%-28s %6d ok %4d failed  %8.0f uploads/s  p50 %7.2f ms  p99 %7.2f ms"
	       "  (%d concurrent, %zu B payload)\n",
	       label, done, failed, done / t0, done ? lat[done / 2] : 0.0,
	       done ? lat[(size_t)(done * 0.99)] : 0.0, conc, payload);
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

	snprintf(path, sizeof path, "%s/capture.rvt", g_dir);
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
	g_zcap = malloc(ZSTD_compressBound(g_rawlen));
	g_zlen = ZSTD_compress(g_zcap, ZSTD_compressBound(g_rawlen), raw, g_rawlen, 3);
	free(raw);
	if (ZSTD_isError(g_zlen))
		return -1;
	printf("capture: %zu KiB ring, %zu B capture, %zu B zstd\n", kib, g_rawlen, g_zlen);
	return 0;
}

static size_t grow(char *p, size_t sz, size_t n, void *u)
{
	char *buf = u;
	size_t have = strlen(buf), add = sz * n;
	if (have + add < 16384) {
		memcpy(buf + have, p, add);
		buf[have + add] = '\0';
	}
	return sz * n;
}

/* A counter from the server's /metrics, -1 when unreadable. */
static double metric(const char *name)
{
	static char text[16384];
	static CURL *h; /* one kept-alive connection: no TLS handshake per poll */
	char *p;
	size_t nl = strlen(name);
	text[0] = '\0';
	if (!h) {
		h = curl_easy_init();
		setup_common(h, "/metrics");
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, grow);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, text);
	}
	if (curl_easy_perform(h) != CURLE_OK)
		return -1;
	for (p = text; (p = strstr(p, name)); p += nl)
		if ((p == text || p[-1] == '\n') && p[nl] == ' ')
			return strtod(p + nl + 1, NULL);
	return -1;
}

/* Waits until the server has decoded `count` uploads in all. */
static void wait_decoded(double count)
{
	while (metric("rearview_decode_seconds_count") < count)
		usleep(100000);
}

int main(int argc, char **argv)
{
	int conc = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 32;
	int nsum = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 4000;
	int ncap = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 60;
	size_t kib = argc > 4 ? (size_t)strtol(argv[4], NULL, 10) : 32768;
	int real = !(argc > 5 && strcmp(argv[5], "random") == 0);
	double t0, failed0, sum0;
	struct dev *devs;
	pid_t pid;
	char cmd[128];
	int st;

	if (conc < 1 || nsum < 1 || ncap < 0)
		return 2;
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-bench-XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	snprintf(g_data, sizeof g_data, "%s/d", g_dir);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (ncap && real && make_capture(kib)) {
		fprintf(stderr, "cannot make a capture\n");
		return 1;
	}
	pid = start_server();
	if (pid < 0 || g_port <= 0)
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
	run(devs, conc, nsum, 0, "summary-only uploads");
	wait_decoded(nsum);
	if (ncap) {
		failed0 = metric("rearview_decode_failures_total");
		sum0 = metric("rearview_decode_seconds_sum");
		t0 = now_s();
		run(devs, conc, ncap, real ? g_zlen + 24 : kib * 1024,
		    real ? "zstd capture uploads" : "capture uploads");
		wait_decoded(nsum + ncap);
		t0 = now_s() - t0;
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
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	curl_global_cleanup();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
