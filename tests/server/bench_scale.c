/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_scale.c — issue 15's scale bench: N = 1, 2, 4 rearview-server nodes
 * (the real binary) on one private PostgreSQL 15 (pg_harness.h) and one
 * blob directory they share, each node held to the same CPU share by a
 * cgroup v1 quota (cpu.cfs_quota_us, default 25 % of one core: four nodes
 * fit one core, PostgreSQL and this load generator have the other).  Not
 * pinned: the machine's other users run on both cores anyway.  A quota only
 * caps; so that the nodes get their share on a shared machine, the bench's
 * group (the nodes' groups, and a "db" group holding PostgreSQL and this
 * process) weighs CG_SHARES against the other tasks.
 *
 * The load generator (this process, libcurl multi, one keep-alive TLS
 * connection per simulated device) enrols DEV_PER_NODE devices per node,
 * device i on node i mod N (round-robin), then runs two phases one after
 * the other: summary-only uploads, then full captures (a real librvtrace
 * capture of server_workload.c, shuffled and zstd-compressed as a device
 * sends it, made distinct per upload by a zstd skippable frame carrying its
 * id).  A phase ends when every upload is acknowledged AND decoded and
 * indexed (PostgreSQL: the decode queue is empty; sqlite: the nodes'
 * rearview_decode_seconds_count sums to the uploads), or at its time limit:
 * X then counts what was indexed, and the backlog is dropped (TRUNCATE
 * decode_queue) so that the nodes can stop.
 * Per phase: X, uploads per second; CPU time per upload of the nodes
 * (/proc/PID/stat), of PostgreSQL (the postmaster with its reaped children
 * plus every live child) and of the generator (getrusage); lock waits (a
 * thread samples pg_stat_activity every SAMPLE_MS: the database's backends
 * waiting on a heavyweight Lock, and on an LWLock); empty decode runs
 * (rearview_decode_empty_runs_total, a decode job whose first dequeue found
 * nothing); the database's growth and the WAL written per upload.
 *
 * A round runs every configuration once, in an order rotated per round (a
 * shared machine: report medians over rounds and ratios): one node on
 * sqlite, PostgreSQL with N = 1, 2, 4, and one node without a quota on each
 * backend (single-node sqlite against PostgreSQL).  Every run gets a fresh
 * database and blob directory; uploads per run scale with N (with
 * UNLIMITED_SCALE for an unquota'd node), so runs last about as long.  Finally the Universal
 * Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) is fitted to every
 * quota'd PostgreSQL run by least squares on its linear form
 * N/X = a + b(N−1) + cN(N−1) (λ = 1/a, σ = b/a, κ = c/a).
 *   bench_scale [rounds] [summaries_per_node] [captures_per_node] [quota_pct]
 *               [ring_kib] [limit_s]
 * RVS_BENCH_BIN names another server binary (server_common.h).
 * Skips (exit 0, says why) without cgroup v1 rights or PostgreSQL 15.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libpq-fe.h>
#include <zstd.h>

#include "pg_harness.h"
#include "rearview/analysis.h"
#include "rearview/trace.h"
#include "rearview/upload.pb-c.h"
#include "server_common.h"

#define MAXN		4
#define DEV_PER_NODE	16
#define MAXROUNDS	15
#define SAMPLE_MS	20
#define UNLIMITED_SCALE 2 /* an unquota'd node gets this many nodes' uploads (2 cores) */
#define CG_ROOT		"/sys/fs/cgroup/cpu"
/* Our group's weight against the machine's other tasks (1024 = one task):
 * enough that the quota'd nodes, PostgreSQL and the generator get the CPU
 * they ask for on a shared machine; the quota still caps each node. */
#define CG_SHARES "20480"

uint64_t rvs_bench_workload(uint64_t iterations); /* server_workload.c */

struct conf {
	const char *backend; /* "sqlite" or "pg" */
	int n;		     /* nodes */
	int limited;	     /* each node in a quota'd cgroup */
};

static const struct conf g_confs[] = {
	{"sqlite", 1, 1}, {"pg", 1, 1}, {"pg", 2, 1}, {"pg", 4, 1}, {"sqlite", 1, 0}, {"pg", 1, 0},
};
#define NCONF  ((int)(sizeof g_confs / sizeof *g_confs))
#define PHASES 2 /* 0 summaries, 1 captures */

struct result {
	int ok, failed;
	int left;		       /* not indexed when the phase was cut at its time limit */
	double cut;		       /* the same, for the medians */
	double quarantined;	       /* acknowledged, then refused by the decoder or the index */
	double x;		       /* uploads acked and indexed per second */
	double node_us, pg_us, gen_us; /* CPU-µs per upload */
	double node_cores;	       /* CPU a node used, in cores (a quota caps it) */
	double lock, lwlock;	       /* mean waiters per sample: Lock, LWLock */
	double lock_frac;	       /* share of samples with a Lock wait */
	double empty, runs;	       /* decode jobs: empty ones, all */
	double db_bytes, wal_bytes;    /* PostgreSQL growth per upload */
};

static struct result g_res[NCONF][PHASES][MAXROUNDS];

static struct pgh g_pg;
static char g_cg[96]; /* our cgroup directory, "" when not made */
static unsigned g_quota_pct;
static struct rvsb g_node[MAXN];
static CURL *g_metrics[MAXN]; /* one kept-alive /metrics connection per node */
static int g_nnodes;
static char g_uri[512]; /* the run's PostgreSQL database; "" on sqlite */
static uint8_t *g_zcap; /* the compressed capture */
static size_t g_zlen, g_rawlen;
static unsigned g_nonce;
static double g_limit_s;	     /* a phase's time limit */
static volatile sig_atomic_t g_stop; /* SIGINT or SIGTERM: clean up and leave */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct dev {
	CURL *h;
	struct curl_slist *hdr;
	char token[128];
	uint8_t *body;
	size_t len;
	uint32_t seq;
	uint16_t id, tag; /* device number; round and configuration */
};

/* ---- CPU time and cgroups ------------------------------------------------- */

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -errno;
	rc = fputs(text, f) < 0 ? -EIO : 0;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* Our group (weight CG_SHARES), its unlimited "db" child and one child per
 * node slot with the quota: 0 or -errno. */
static int cg_make(void)
{
	char path[160], num[32];
	int rc;

	snprintf(g_cg, sizeof g_cg, CG_ROOT "/rvscale-%d", (int)getpid());
	if (mkdir(g_cg, 0755) < 0) {
		rc = -errno;
		g_cg[0] = '\0';
		return rc;
	}
	snprintf(path, sizeof path, "%s/cpu.shares", g_cg);
	if ((rc = write_text(path, CG_SHARES)))
		return rc;
	snprintf(path, sizeof path, "%s/db", g_cg);
	if (mkdir(path, 0755) < 0)
		return -errno;
	for (int k = 0; k < MAXN; k++) {
		snprintf(path, sizeof path, "%s/n%d", g_cg, k);
		if (mkdir(path, 0755) < 0)
			return -errno;
		snprintf(path, sizeof path, "%s/n%d/cpu.cfs_period_us", g_cg, k);
		if ((rc = write_text(path, "100000")))
			return rc;
		snprintf(path, sizeof path, "%s/n%d/cpu.cfs_quota_us", g_cg, k);
		snprintf(num, sizeof num, "%u", g_quota_pct * 1000);
		if ((rc = write_text(path, num)))
			return rc;
	}
	return 0;
}

/* Moves pid into node slot k's group, or the unlimited "db" group when k
 * is -1 (PostgreSQL and the generator). */
static int cg_join(int k, pid_t pid)
{
	char path[160], num[32];

	assert(g_cg[0] && k >= -1 && k < MAXN);
	if (k < 0)
		snprintf(path, sizeof path, "%s/db/cgroup.procs", g_cg);
	else
		snprintf(path, sizeof path, "%s/n%d/cgroup.procs", g_cg, k);
	snprintf(num, sizeof num, "%d", (int)pid);
	return write_text(path, num);
}

/* Removes the groups (empty once the nodes exited). */
static void cg_remove(void)
{
	char path[160];

	if (!g_cg[0])
		return;
	if (write_text(CG_ROOT "/cgroup.procs", "0") == 0) { /* "0": this process */
		snprintf(path, sizeof path, "%s/db", g_cg);
		rmdir(path);
	}
	for (int k = 0; k < MAXN; k++) {
		snprintf(path, sizeof path, "%s/n%d", g_cg, k);
		rmdir(path);
	}
	if (rmdir(g_cg) < 0)
		fprintf(stderr, "bench_scale: could not remove %s: %s\n", g_cg, strerror(errno));
}

/* A process's CPU seconds from /proc/PID/stat: utime + stime, plus its
 * waited-for children's when children; -1 when it is gone.  *ppid gets
 * its parent (may be NULL). */
static double proc_cpu(pid_t pid, int children, pid_t *ppid)
{
	char path[64], buf[1024], *p;
	unsigned long long v[15] = {0};
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command's closing parenthesis: state is field 3,
	 * ppid 4, utime 14, stime 15, cutime 16, cstime 17. */
	if (!(p = strrchr(buf, ')')))
		return -1;
	p += 2;
	for (int i = 0; i < 15 && *p; i++) {
		char *end;
		if (i == 0) {
			p = strchr(p, ' ');
			if (!p)
				return -1;
			p++;
			continue;
		}
		v[i] = strtoull(p, &end, 10);
		p = *end ? end + 1 : end;
	}
	if (ppid)
		*ppid = (pid_t)v[1];
	return (double)(v[11] + v[12] + (children ? v[13] + v[14] : 0)) /
	       (double)sysconf(_SC_CLK_TCK);
}

static double nodes_cpu(void)
{
	double s = 0;

	for (int k = 0; k < g_nnodes; k++)
		s += proc_cpu(g_node[k].pid, 0, NULL);
	return s;
}

/* The postmaster's pid from its pid file, -1 when unreadable. */
static pid_t postmaster(void)
{
	char path[128], line[32] = "";
	FILE *f;

	snprintf(path, sizeof path, "%s/data/postmaster.pid", g_pg.dir);
	if (!(f = fopen(path, "r")))
		return -1;
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	fclose(f);
	return line[0] ? (pid_t)strtol(line, NULL, 10) : -1;
}

/* PostgreSQL's CPU seconds: the postmaster with every child it reaped, and
 * every live child (backends, checkpointer, WAL writer …); -1 when
 * unreadable.  With join, moves the postmaster and its children into the
 * "db" group instead (backends forked later inherit it): 0 or -errno. */
static double pg_cpu_or_join(int join)
{
	pid_t pm = postmaster();
	double s;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (pm <= 0 || (s = proc_cpu(pm, 1, NULL)) < 0 || !(d = opendir("/proc")))
		return -1;
	if (join)
		rc = cg_join(-1, pm);
	while (!rc && (e = readdir(d))) {
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10), parent = 0;
		double c;
		if (pid <= 0 || pid == pm || (c = proc_cpu(pid, 0, &parent)) < 0 || parent != pm)
			continue;
		if (join)
			rc = cg_join(-1, pid);
		else
			s += c;
	}
	closedir(d);
	return join ? rc : s;
}

static double pg_cpu(void)
{
	return pg_cpu_or_join(0);
}

static double self_cpu(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* ---- PostgreSQL: lock-wait sampler and sizes ------------------------------ */

struct sampler {
	pthread_t t;
	atomic_int stop;
	long samples, lock, lwlock, any_lock;
};

static void *sample_loop(void *arg)
{
	struct sampler *s = arg;
	PGconn *c = PQconnectdb(g_uri);
	const struct timespec tick = {0, SAMPLE_MS * 1000000L};

	while (PQstatus(c) == CONNECTION_OK && !atomic_load(&s->stop)) {
		PGresult *r = PQexec(c, "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'),"
					" count(*) FILTER (WHERE wait_event_type = 'LWLock')"
					" FROM pg_stat_activity WHERE datname = current_database()"
					" AND pid <> pg_backend_pid()");
		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
			long l = strtol(PQgetvalue(r, 0, 0), NULL, 10);
			s->samples++;
			s->lock += l;
			s->lwlock += strtol(PQgetvalue(r, 0, 1), NULL, 10);
			s->any_lock += l > 0;
		}
		PQclear(r);
		nanosleep(&tick, NULL);
	}
	PQfinish(c);
	return NULL;
}

/* One number from a query on the run's database, -1 on error. */
static double pg_num(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	double v = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		v = strtod(PQgetvalue(r, 0, 0), NULL);
	PQclear(r);
	return v;
}

/* ---- the nodes ------------------------------------------------------------- */

/* Node k > 0: node 0's keys, CA, certificate and secrets (one fleet). */
static int copy_keys(int k)
{
	static const char *const files[] = {"ca.crt",
					    "ca.key",
					    "server.crt",
					    "server.key",
					    "enrollment.secret",
					    "api.token",
					    "policy-signing.key",
					    "policy-signing.pub"};
	char cmd[512];

	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		snprintf(cmd, sizeof cmd, "cp -p '%s/%s' '%s/%s'", g_node[0].data, files[i],
			 g_node[k].data, files[i]);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static int nodes_start(const struct conf *cf, const char *blobs)
{
	char conf[1024];
	int len;

	len = snprintf(conf, sizeof conf, "blob_dir = %s\ndecode_jobs = 1\n", blobs);
	if (cf->backend[0] == 'p')
		snprintf(conf + len, sizeof conf - (size_t)len, "database = %s\n", g_uri);
	for (int k = 0; k < cf->n; k++) {
		if (rvsb_init(&g_node[k]))
			return -1;
		g_nnodes = k + 1; /* nodes_stop removes its directory from now on */
		if ((k && copy_keys(k)) || rvsb_start(&g_node[k], conf)) {
			fprintf(stderr,
				"bench_scale: node %d did not start (RVS_BENCH_LOG=file"
				" keeps its log)\n",
				k);
			return -1;
		}
		if (cf->limited && cg_join(k, g_node[k].pid)) {
			fprintf(stderr, "bench_scale: cannot move node %d into %s\n", k, g_cg);
			return -1;
		}
		g_metrics[k] = curl_easy_init();
		rvsb_curl(&g_node[k], g_metrics[k], "/metrics");
	}
	return 0;
}

static int nodes_stop(void)
{
	int bad = 0;

	for (int k = 0; k < g_nnodes; k++) {
		curl_easy_cleanup(g_metrics[k]);
		g_metrics[k] = NULL;
		bad |= rvsb_stop(&g_node[k]);
	}
	g_nnodes = 0;
	return bad ? -1 : 0;
}

/* A /metrics value summed over its label sets and over the nodes; -1 when
 * a node did not answer. */
static double metric(const char *name)
{
	static char text[RVSB_TEXT_MAX];
	size_t nl = strlen(name);
	double sum = 0;

	for (int k = 0; k < g_nnodes; k++) {
		text[0] = '\0';
		curl_easy_setopt(g_metrics[k], CURLOPT_WRITEFUNCTION, rvsb_append_text);
		curl_easy_setopt(g_metrics[k], CURLOPT_WRITEDATA, text);
		if (curl_easy_perform(g_metrics[k]) != CURLE_OK)
			return -1;
		for (const char *p = text; (p = strstr(p, name)); p += nl) {
			const char *sp, *eol;
			if ((p != text && p[-1] != '\n') || (p[nl] != ' ' && p[nl] != '{'))
				continue;
			eol = strchr(p, '\n');
			for (sp = eol ? eol : p + strlen(p); sp > p && sp[-1] != ' '; sp--)
				;
			sum += strtod(sp, NULL);
		}
	}
	return sum;
}

/* ---- the simulated devices ------------------------------------------------- */

struct reply {
	uint8_t b[4096];
	size_t n;
};

static size_t collect(char *p, size_t sz, size_t n, void *u)
{
	struct reply *r = u;
	size_t k = sz * n;

	if (k > sizeof r->b - r->n)
		k = sizeof r->b - r->n;
	memcpy(r->b + r->n, p, k);
	r->n += k;
	return sz * n;
}

static int enroll(struct dev *d, const struct rvsb *node)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__EnrollResponse *r;
	struct reply out = {.n = 0};
	uint8_t buf[256];
	size_t n;
	CURL *h = curl_easy_init();

	q.enrollment_secret = g_node[0].secret;
	n = rearview__enroll_request__pack(&q, buf);
	rvsb_curl(node, h, "/v1/enroll");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, buf);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)n);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
	curl_easy_perform(h);
	curl_easy_cleanup(h);
	if (!(r = rearview__enroll_response__unpack(NULL, out.n, out.b)))
		return -1;
	snprintf(d->token, sizeof d->token, "%s", r->device_token);
	rearview__enroll_response__free_unpacked(r, NULL);
	return d->token[0] ? 0 : -1;
}

/* The device's next upload into d->body: a summary, or the capture with
 * the upload id in a trailing skippable frame (a distinct blob). */
static void next_body(struct dev *d, int capture)
{
	static const uint8_t skip[8] = {0x50, 0x2a, 0x4d, 0x18, 16, 0, 0, 0};
	static char *frames[3] = {(char *)"main", (char *)"com.example.Activity.onResume",
				  (char *)"com.example.Json.parse"};
	static uint8_t *pl;
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	Rearview__MethodStat ms[5], *top[5];
	Rearview__Chain chain = REARVIEW__CHAIN__INIT, *chains[1] = {&chain};
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	char names[5][32];
	uint8_t id[16] = {0};

	memcpy(id, &g_nonce, 4);
	memcpy(id + 4, &d->id, 2);
	memcpy(id + 6, &d->tag, 2);
	memcpy(id + 8, &d->seq, 4);
	id[12] = (uint8_t)capture;
	d->seq++;
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)"com.example.bench";
	app.version = (char *)"1.0";
	e.app = &app;
	/* Manual captures: the weekly quota would refuse a device's fourth. */
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	e.anomaly = &an;
	if (capture) {
		if (!pl) {
			pl = malloc(g_zlen + 24);
			assert(pl);
			memcpy(pl, g_zcap, g_zlen);
			memcpy(pl + g_zlen, skip, sizeof skip);
		}
		memcpy(pl + g_zlen + 8, id, sizeof id);
		e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
		e.payload.data = pl;
		e.payload.len = g_zlen + 24;
		e.compression = REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED;
		e.payload_size = g_rawlen;
	} else {
		/* What a device sends under statistics-only consent: its top
		 * self-time methods and the chain at the anomaly. */
		for (int i = 0; i < 5; i++) {
			rearview__method_stat__init(&ms[i]);
			snprintf(names[i], sizeof names[i], "com.example.M%u",
				 (d->seq * 5 + (unsigned)i) % 500);
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
	free(d->body);
	d->len = rearview__upload_envelope__get_packed_size(&e);
	d->body = malloc(d->len);
	assert(d->body);
	rearview__upload_envelope__pack(&e, d->body);
	curl_easy_setopt(d->h, CURLOPT_POSTFIELDS, d->body);
	curl_easy_setopt(d->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->len);
}

static int devs_make(struct dev *devs, int ndev, uint16_t tag)
{
	for (int i = 0; i < ndev; i++) {
		const struct rvsb *node = &g_node[i % g_nnodes];
		char auth[192];

		devs[i].id = (uint16_t)i;
		devs[i].tag = tag;
		if (enroll(&devs[i], node)) {
			fprintf(stderr, "bench_scale: device %d could not enrol\n", i);
			return -1;
		}
		devs[i].h = curl_easy_init();
		rvsb_curl(node, devs[i].h, "/v1/uploads");
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", devs[i].token);
		devs[i].hdr = curl_slist_append(NULL, auth);
		devs[i].hdr = curl_slist_append(devs[i].hdr, "Expect:");
		curl_easy_setopt(devs[i].h, CURLOPT_HTTPHEADER, devs[i].hdr);
		curl_easy_setopt(devs[i].h, CURLOPT_PRIVATE, &devs[i]);
	}
	return 0;
}

static void devs_free(struct dev *devs, int ndev)
{
	for (int i = 0; i < ndev; i++) {
		curl_easy_cleanup(devs[i].h);
		curl_slist_free_all(devs[i].hdr);
		free(devs[i].body);
	}
}

/* ---- one phase -------------------------------------------------------------- */

/* Sends total uploads, every device keeping one in flight; counts answers. */
static void send_all(struct dev *devs, int ndev, int total, int capture, struct result *r)
{
	CURLM *m = curl_multi_init();
	int started = 0, running;

	for (int i = 0; i < ndev && started < total; i++, started++) {
		next_body(&devs[i], capture);
		curl_multi_add_handle(m, devs[i].h);
	}
	while (r->ok + r->failed < total && !g_stop) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct dev *d;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&d);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
			curl_multi_remove_handle(m, msg->easy_handle);
			if (msg->data.result == CURLE_OK && code == 200)
				r->ok++;
			else
				r->failed++;
			if (started < total) {
				next_body(d, capture);
				curl_multi_add_handle(m, d->h);
				started++;
			}
		}
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	curl_multi_cleanup(m);
}

/* Uploads of the phase not yet decoded: on PostgreSQL the rows left on the
 * decode queue (each acknowledgement queued one in its transaction), else
 * from the nodes' decode counters (merged when a decode job ends); -1 when
 * unreadable. */
static double to_index(PGconn *pg, double done0, int ok)
{
	double done;

	if (pg)
		return pg_num(pg, "SELECT count(*) FROM decode_queue");
	done = metric("rearview_decode_seconds_count");
	return done < 0 ? -1 : done >= done0 + ok ? 0 : done0 + ok - done;
}

static int phase(struct dev *devs, int ndev, int total, int capture, PGconn *pg, struct result *r)
{
	struct sampler s = {.samples = 0};
	double t0, cpu_n, cpu_p, cpu_g, done0, empty0, runs0, fail0, db0 = 0, left;
	char lsn[64] = "";
	int sampling = 0;

	memset(r, 0, sizeof *r);
	done0 = metric("rearview_decode_seconds_count");
	empty0 = metric("rearview_decode_empty_runs_total");
	runs0 = metric("rearview_decode_runs_total");
	fail0 = metric("rearview_decode_failures_total");
	if (pg) {
		PGresult *q = PQexec(pg, "SELECT pg_current_wal_lsn()");
		if (PQresultStatus(q) == PGRES_TUPLES_OK && PQntuples(q) == 1)
			snprintf(lsn, sizeof lsn, "%s", PQgetvalue(q, 0, 0));
		PQclear(q);
		db0 = pg_num(pg, "SELECT pg_database_size(current_database())");
		sampling = pthread_create(&s.t, NULL, sample_loop, &s) == 0;
	}
	cpu_n = nodes_cpu();
	cpu_p = pg ? pg_cpu() : 0;
	cpu_g = self_cpu();
	t0 = rvsb_now();
	send_all(devs, ndev, total, capture, r);
	while ((left = to_index(pg, done0, r->ok)) != 0 && rvsb_now() - t0 < g_limit_s && !g_stop)
		usleep(50000);
	/* Cut at the limit: X counts what was indexed by then, and the
	 * backlog is dropped so that the nodes' decoders stop (a decoder
	 * holding a lease finds it gone and lets its batch go). */
	r->left = left < 0 ? r->ok : (int)left;
	r->cut = r->left;
	r->x = (r->ok - r->left) / (rvsb_now() - t0);
	if (r->left && pg) {
		PGresult *q = PQexec(pg, "TRUNCATE decode_queue");
		if (PQresultStatus(q) != PGRES_COMMAND_OK)
			fprintf(stderr, "bench_scale: TRUNCATE decode_queue: %s",
				PQerrorMessage(pg));
		PQclear(q);
	}
	r->node_us = 1e6 * (nodes_cpu() - cpu_n) / r->ok;
	r->node_cores = r->node_us * r->x / g_nnodes / 1e6;
	r->pg_us = pg ? 1e6 * (pg_cpu() - cpu_p) / r->ok : 0;
	r->gen_us = 1e6 * (self_cpu() - cpu_g) / r->ok;
	if (sampling) {
		atomic_store(&s.stop, 1);
		pthread_join(s.t, NULL);
		if (s.samples) {
			r->lock = (double)s.lock / (double)s.samples;
			r->lwlock = (double)s.lwlock / (double)s.samples;
			r->lock_frac = (double)s.any_lock / (double)s.samples;
		}
	}
	r->empty = metric("rearview_decode_empty_runs_total") - empty0;
	r->runs = metric("rearview_decode_runs_total") - runs0;
	r->quarantined = metric("rearview_decode_failures_total") - fail0;
	if (pg) {
		char sql[160];
		r->db_bytes =
			(pg_num(pg, "SELECT pg_database_size(current_database())") - db0) / r->ok;
		snprintf(sql, sizeof sql, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '%s')",
			 lsn);
		r->wal_bytes = pg_num(pg, sql) / r->ok;
	}
	if (r->left && !pg) { /* sqlite has no deadlocks: something broke */
		fprintf(stderr, "bench_scale: %d of %d uploads not indexed after %.0f s\n", r->left,
			r->ok, g_limit_s);
		return -1;
	}
	return g_stop ? -1 : 0;
}

/* ---- the capture ------------------------------------------------------------- */

/* Traces the workload until a ring of kib KiB has wrapped; its shuffled
 * form through zstd level 3, as rearviewd sends it. */
static int make_capture(size_t kib, const char *dir)
{
	char path[160];
	uint8_t *raw, *form;
	FILE *f;
	long n;

	snprintf(path, sizeof path, "%s/capture.rvt", dir);
	if (rvt_set_config(kib << 10, 0) || rvt_start(0))
		return -1;
	/* About 14 bytes of ring per call: twice the ring's worth of calls. */
	rvs_bench_workload((uint64_t)kib * 1024 / 14 * 2 / 11);
	if (rvt_capture_to_path(0, path) || rvt_stop(0, 1))
		return -1;
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0) {
		if (f)
			fclose(f);
		return -1;
	}
	rewind(f);
	raw = malloc((size_t)n);
	form = malloc((size_t)n);
	g_rawlen = raw ? fread(raw, 1, (size_t)n, f) : 0;
	fclose(f);
	unlink(path);
	if (!form || !g_rawlen || rva_shuffle_buf(raw, g_rawlen, form))
		return -1;
	g_zcap = malloc(ZSTD_compressBound(g_rawlen));
	g_zlen = ZSTD_compress(g_zcap, ZSTD_compressBound(g_rawlen), form, g_rawlen, 3);
	free(raw);
	free(form);
	return ZSTD_isError(g_zlen) ? -1 : 0;
}

/* ---- one run: a configuration's nodes, devices, both phases ------------------ */

static int run_conf(int ci, int round, int nsum, int ncap)
{
	const struct conf *cf = &g_confs[ci];
	int scale = cf->limited ? cf->n : UNLIMITED_SCALE, ndev = DEV_PER_NODE * cf->n, rc = -1;
	char blobs[64], cmd[128];
	struct dev *devs = calloc((size_t)ndev, sizeof *devs);
	PGconn *pg = NULL;

	assert(devs && round < MAXROUNDS);
	g_uri[0] = '\0';
	snprintf(blobs, sizeof blobs, "/tmp/rvs-scale-blobs-XXXXXX");
	if (!mkdtemp(blobs))
		goto out;
	if (cf->backend[0] == 'p') {
		if (pgh_fresh_db(&g_pg, g_uri, sizeof g_uri) ||
		    PQstatus(pg = PQconnectdb(g_uri)) != CONNECTION_OK) {
			fprintf(stderr, "bench_scale: PostgreSQL: %s\n", g_pg.why);
			goto out;
		}
	}
	if (nodes_start(cf, blobs) || devs_make(devs, ndev, (uint16_t)(round * 16 + ci)))
		goto out;
	rc = 0;
	for (int p = 0; p < PHASES && !rc; p++) {
		struct result *r = &g_res[ci][p][round];
		rc = phase(devs, ndev, (p ? ncap : nsum) * scale, p, pg, r);
		printf("round %d %-6s N=%d %-9s %-9s %6d ok %3d failed %3.0f quarantined"
		       " %5d cut %8.1f/s  CPU-us/upload node %7.0f pg %6.0f gen %6.0f"
		       "  lock %.3f lwlock %.3f  empty %.0f/%.0f runs\n",
		       round + 1, cf->backend, cf->n, cf->limited ? "quota" : "unlimited",
		       p ? "captures" : "summaries", r->ok, r->failed, r->quarantined, r->left,
		       r->x, r->node_us, r->pg_us, r->gen_us, r->lock, r->lwlock, r->empty,
		       r->runs);
		fflush(stdout);
	}
out:
	devs_free(devs, ndev);
	free(devs);
	if (nodes_stop())
		rc = -1;
	PQfinish(pg);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", blobs);
	if (blobs[0] && system(cmd) != 0)
		rc = -1;
	return rc;
}

/* ---- the report --------------------------------------------------------------- */

static double median_of(int ci, int p, int rounds, size_t field)
{
	double v[MAXROUNDS];

	for (int r = 0; r < rounds; r++)
		memcpy(&v[r], (const char *)&g_res[ci][p][r] + field, sizeof v[r]);
	return rvsb_pct(v, (size_t)rounds, 50);
}
#define MED(ci, p, f) median_of(ci, p, rounds, offsetof(struct result, f))

/* Least squares of N/X = a + b(N-1) + cN(N-1) over every quota'd PostgreSQL
 * run of phase p (3x3 normal equations, Gaussian elimination); 0 or -1
 * when singular. */
static int usl_fit(int p, int rounds, double *lambda, double *sigma, double *kappa)
{
	double A[3][4] = {{0}};

	for (int ci = 0; ci < NCONF; ci++) {
		if (g_confs[ci].backend[0] != 'p' || !g_confs[ci].limited)
			continue;
		for (int r = 0; r < rounds; r++) {
			double n = g_confs[ci].n, f[3] = {1, n - 1, n * (n - 1)};
			double y = n / g_res[ci][p][r].x;
			for (int i = 0; i < 3; i++) {
				for (int j = 0; j < 3; j++)
					A[i][j] += f[i] * f[j];
				A[i][3] += f[i] * y;
			}
		}
	}
	for (int i = 0; i < 3; i++) {
		int best = i;
		for (int k = i + 1; k < 3; k++)
			if (fabs(A[k][i]) > fabs(A[best][i]))
				best = k;
		if (fabs(A[best][i]) < 1e-300)
			return -1;
		for (int j = 0; j < 4; j++) {
			double t = A[i][j];
			A[i][j] = A[best][j];
			A[best][j] = t;
		}
		for (int k = 0; k < 3; k++) {
			double f = A[k][i] / A[i][i];
			if (k == i)
				continue;
			for (int j = i; j < 4; j++)
				A[k][j] -= f * A[i][j];
		}
	}
	*lambda = A[0][0] / A[0][3];
	*sigma = (A[1][3] / A[1][1]) * *lambda;
	*kappa = (A[2][3] / A[2][2]) * *lambda;
	return 0;
}

static void report(int rounds)
{
	static const char *const names[PHASES] = {"summary-only uploads", "full captures"};
	int pg1 = 1; /* g_confs index of PostgreSQL, one quota'd node */

	assert(g_confs[pg1].backend[0] == 'p' && g_confs[pg1].n == 1 && g_confs[pg1].limited);
	assert(g_confs[3].backend[0] == 'p' && g_confs[3].n == 4 && g_confs[3].limited);
	for (int p = 0; p < PHASES; p++) {
		double x1 = MED(pg1, p, x), l, s, k;

		printf("\n### %s: medians of %d rounds (each node %u %% of a core)\n\n", names[p],
		       rounds, g_quota_pct);
		printf("| backend | N | X(N) uploads/s | X/N per node | efficiency X(N)/(N·X(1))"
		       " | node CPU-µs/upload | node CPU used (cores) | PostgreSQL CPU-µs/upload | "
		       "generator CPU-µs/upload"
		       " | Lock waiters (mean; share of samples) | LWLock waiters | empty decode "
		       "runs"
		       " | quarantined | not indexed at the cut | PG bytes/upload (db; WAL) |\n");
		printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (int ci = 0; ci < NCONF; ci++) {
			const struct conf *cf = &g_confs[ci];
			double x = MED(ci, p, x);
			char eff[32] = "—";

			if (cf->backend[0] == 'p' && cf->limited)
				snprintf(eff, sizeof eff, "%.2f", x / (cf->n * x1));
			printf("| %s%s | %d | %.1f | %.1f | %s | %.0f | %.2f | %.0f | %.0f | %.3f;"
			       " %.0f %% | %.3f | %.0f of %.0f | %.0f | %.0f | %.0f; %.0f |\n",
			       cf->backend, cf->limited ? "" : " (no quota)", cf->n, x, x / cf->n,
			       eff, MED(ci, p, node_us), MED(ci, p, node_cores), MED(ci, p, pg_us),
			       MED(ci, p, gen_us), MED(ci, p, lock), 100 * MED(ci, p, lock_frac),
			       MED(ci, p, lwlock), MED(ci, p, empty), MED(ci, p, runs),
			       MED(ci, p, quarantined), MED(ci, p, cut), MED(ci, p, db_bytes),
			       MED(ci, p, wal_bytes));
		}
		if (usl_fit(p, rounds, &l, &s, &k) == 0)
			printf("\nUSL fit over the %d quota'd PostgreSQL runs: λ = %.1f uploads/s, "
			       "σ (contention) = %.4f, κ (coherency) = %.5f; predicted X(1,2,4) ="
			       " %.1f, %.1f, %.1f\n",
			       3 * rounds, l, s, k, l, 2 * l / (1 + s + 2 * k),
			       4 * l / (1 + 3 * s + 12 * k));
		if (p == 1)
			printf("captures/s per node-core (X/N ÷ %.2f core): N=1 %.1f, N=4 %.1f\n",
			       g_quota_pct / 100.0, MED(pg1, p, x) * 100.0 / g_quota_pct,
			       MED(3, p, x) / 4 * 100.0 / g_quota_pct);
	}
	printf("\ncapture: %zu B raw, %zu B zstd (shuffled form) per upload\n", g_rawlen, g_zlen);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 3;
	int nsum = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 1500;
	int ncap = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 40;
	long quota = argc > 4 ? strtol(argv[4], NULL, 10) : 25;
	size_t kib = argc > 5 ? (size_t)strtol(argv[5], NULL, 10) : 32768;
	long limit = argc > 6 ? strtol(argv[6], NULL, 10) : 60;
	struct sigaction sa = {.sa_handler = on_signal};
	char dir[] = "/tmp/rvs-scale-XXXXXX";
	int rc, bad = 0;

	if (rounds < 1 || rounds > MAXROUNDS || nsum < 1 || ncap < 1 || quota < 1 || quota > 100 ||
	    kib < 64 || limit < 1) {
		fprintf(stderr,
			"usage: bench_scale [rounds 1..%d] [summaries_per_node] "
			"[captures_per_node] [quota_pct 1..100] [ring_kib] [limit_s]\n",
			MAXROUNDS);
		return 2;
	}
	g_quota_pct = (unsigned)quota;
	g_limit_s = (double)limit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	g_nonce = (unsigned)getpid() ^ (unsigned)time(NULL);
	if ((rc = cg_make()) < 0) {
		printf("bench_scale: skipped: cannot make a CPU cgroup under " CG_ROOT
		       " (%s; cgroup v1 as root needed)\n",
		       strerror(-rc));
		cg_remove();
		return 0;
	}
	if ((rc = pgh_start(&g_pg)) < 0) {
		printf("bench_scale: %s: %s\n", rc == -ENOENT ? "skipped" : "failed", g_pg.why);
		pgh_stop(&g_pg);
		cg_remove();
		return rc == -ENOENT ? 0 : 1;
	}
	if (pg_cpu_or_join(1) != 0 || cg_join(-1, getpid())) {
		fprintf(stderr, "bench_scale: cannot move PostgreSQL and this process into %s/db\n",
			g_cg);
		pgh_stop(&g_pg);
		cg_remove();
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!mkdtemp(dir) || make_capture(kib, dir)) {
		fprintf(stderr, "bench_scale: cannot make a capture\n");
		bad = 1;
	}
	rmdir(dir);
	printf("bench_scale: %d rounds, %d summaries and %d captures per node per run, "
	       "%d devices per node, nodes at %u %% of a core (cgroup v1 cfs quota), "
	       "phases cut at %ld s\n",
	       rounds, nsum, ncap, DEV_PER_NODE, g_quota_pct, limit);
	for (int r = 0; r < rounds && !bad; r++)
		for (int i = 0; i < NCONF && !bad; i++)
			bad = run_conf((i + r) % NCONF, r, nsum, ncap) != 0;
	if (!bad)
		report(rounds);
	curl_global_cleanup();
	pgh_stop(&g_pg);
	cg_remove();
	return bad;
}
