/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvctl.c — the admin client of rearviewd (admin.sock, AdminRequest →
 * AdminResponse, one request per connection).
 *
 *   rvctl [-r RUN_DIR] [--json] COMMAND [ARGS]
 *
 * Exit status: 0 success; 1 the daemon answered with an error; 2 usage;
 * 3 the daemon is not running; 4 access denied.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "rearview/policy.pb-c.h"
#include <unistd.h>

#include "rearview/admin.pb-c.h"
#include "rearview/analysis.h"
#include "rearview/common.h"
#include "rearview/frame.h"

enum { EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_NOT_RUNNING = 3, EXIT_DENIED = 4 };

static const char *run_dir;
static int json;

static void usage(FILE *f)
{
	fputs("usage: rvctl [-r RUN_DIR] [--json] COMMAND\n"
	      "       rvctl --help | --version\n"
	      "  -r, --run-dir RUN_DIR  the daemon's sockets (admin.sock)\n"
	      "  -j, --json             JSON output (status, captures, show, policy)\n"
	      "  -h, --help             this help\n"
	      "commands:\n"
	      "  consent off|local|summary|full|status\n"
	      "  delete-all                   delete every capture, summary and jank count\n"
	      "  status                       processes, tracing, consent, spool\n"
	      "  captures                     every capture with its state\n"
	      "  show ID                      one capture and its summary\n"
	      "  export ID --format F -o OUT  export a capture: perfetto, chrome, folded,\n"
	      "                               speedscope, android, nanoscope, svg\n"
	      "  policy                       the policy being enforced\n"
	      "  push-policy FILE             apply a signed policy document\n"
	      "  capture PID                  capture PID's traced thread now\n"
	      "  foreground PID               PID is now the foreground app\n"
	      "  event frame PID TID DURATION_MS\n"
	      "  event jank PID [TID [SEVERITY]]\n"
	      "  event touch PID TID DETECTED_MS DELIVERED_MS RESPONDED_MS\n"
	      "  event thermal [SEVERITY]\n"
	      "  event anomaly NAME PID [TID [SEVERITY]]\n"
	      "  event metric NAME VALUE\n"
	      "RUN_DIR defaults to $RV_RUN_DIR, else /run/rearview.\n",
	      f);
}

static int parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "rvctl: bad number '%s'\n", s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int connect_admin(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, n;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/admin.sock", run_dir);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		fprintf(stderr, "rvctl: run directory path too long\n");
		return -EXIT_USAGE;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -EXIT_ERR;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		if (e == EACCES || e == EPERM) {
			fprintf(stderr,
				"rvctl: access denied to %s (root or the settings group only)\n",
				sa.sun_path);
			return -EXIT_DENIED;
		}
		fprintf(stderr, "rvctl: rearviewd is not running (%s: %s)\n", sa.sun_path,
			strerror(e));
		return -EXIT_NOT_RUNNING;
	}
	return fd;
}

/* Sends `q`, reads the answer into *out and, when rfd is not NULL, a
 * descriptor that rode with it into *rfd (-1 when none; the caller closes
 * it).  Returns 0 or an exit status. */
static int transact_fd(Rearview__AdminRequest *q, Rearview__AdminResponse **out, int *rfd)
{
	uint8_t *payload = NULL;
	size_t len = 0, nfds = 1;
	int fd = connect_admin(), rc, sent, fds[1] = {-1};

	if (rfd)
		*rfd = -1;
	if (fd < 0)
		return -fd;
	q->request_id = (uint64_t)getpid();
	/* Even when the send fails (the daemon refused us at once), read why. */
	sent = rv_frame_send(fd, RV_CHANNEL_ADMIN, &q->base, NULL, 0);
	rc = rv_frame_recv(fd, RV_CHANNEL_ADMIN, RV_FRAME_MAX_HARD, &payload, &len,
			   rfd ? fds : NULL, rfd ? &nfds : NULL);
	close(fd);
	if (rfd && rc > 0 && nfds == 1)
		*rfd = fds[0];
	if (rc <= 0) {
		fprintf(stderr, "rvctl: rearviewd closed the connection: %s\n",
			sent < 0  ? strerror(-sent)
			: rc == 0 ? "no answer"
				  : rv_frame_strerror(rc));
		return EXIT_ERR;
	}
	*out = rearview__admin_response__unpack(NULL, len, payload);
	free(payload);
	if (rfd && *rfd >= 0 &&
	    (!*out || (*out)->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_ERROR)) {
		close(*rfd);
		*rfd = -1;
	}
	if (!*out) {
		fprintf(stderr, "rvctl: undecodable answer from rearviewd\n");
		return EXIT_ERR;
	}
	if ((*out)->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_ERROR) {
		const Rearview__Error *e = (*out)->error;
		int denied = e->code == REARVIEW__ERROR__CODE__DENIED;

		fprintf(stderr, "rvctl: %s%s\n", denied ? "access denied: " : "",
			e->message ? e->message : "error");
		rearview__admin_response__free_unpacked(*out, NULL);
		*out = NULL;
		return denied ? EXIT_DENIED : EXIT_ERR;
	}
	return 0;
}

static int transact(Rearview__AdminRequest *q, Rearview__AdminResponse **out)
{
	return transact_fd(q, out, NULL);
}

static const char *const consent_names[] = {"unspecified", "off", "local", "summary", "full"};

static const char *consent_name(int c)
{
	return c >= 0 && c <= 4 ? consent_names[c] : "unknown";
}

/* A ConsentChange: the level in force and the captures purged. */
static void print_consent_change(const Rearview__ConsentChange *cc)
{
	printf("consent: %s\n", consent_name(cc->level));
	if (cc->n_purged) {
		printf("purged:");
		for (size_t i = 0; i < cc->n_purged; i++)
			printf(" %" PRIu64, cc->purged[i]);
		putchar('\n');
	}
}

static const char *const kind_names[] = {"unspecified", "jank",	   "touch_latency",
					 "thermal",	"generic", "manual"};

static const char *kind_name(int k)
{
	return k >= 0 && k <= 5 ? kind_names[k] : "unknown";
}

/* A slow touch's TouchAttribution: where the delay was spent, or NULL. */
static const char *attribution_name(const Rearview__Anomaly *a)
{
	if (a && a->touch_attribution == REARVIEW__TOUCH_ATTRIBUTION__TOUCH_ATTR_DELIVERY)
		return "delivery";
	if (a && a->touch_attribution == REARVIEW__TOUCH_ATTRIBUTION__TOUCH_ATTR_APP)
		return "app";
	return NULL;
}

/* Captures in state "uploaded" (a second request: Status has no such
 * counter), or -1 when the list could not be had. */
static long count_uploaded(void)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;
	long n = 0;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES;
	q.list_captures = true;
	if (transact(&q, &r) != 0)
		return -1;
	if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES)
		n = -1;
	else
		for (size_t i = 0; i < r->captures->n_captures; i++)
			n += !strcmp(r->captures->captures[i]->state, "uploaded");
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

static void print_status(const Rearview__Status *s, long uploaded)
{
	if (json) {
		printf("{\"consent\":\"%s\",\"buffer_bytes\":%" PRIu64
		       ",\"pending_uploads\":%u,\"uploaded\":%ld,\"quota_left\":%u,\"policy_"
		       "version\":%" PRIu64 ","
		       "\"last_freeze_latency_ns\":%" PRIu64 ",\"anomalies\":%" PRIu64
		       ",\"anomalies_not_captured\":%" PRIu64 ",\"identity_refused\":%" PRIu64
		       ",\"parser_failures\":%" PRIu64 ",\"captures_this_week\":%u,"
		       "\"device_weekly_captures\":%u,\"app_weekly_captures\":%u,\"processes\":[",
		       consent_name(s->consent), s->buffer_bytes, s->pending_uploads, uploaded,
		       s->quota_left, s->policy_version, s->last_freeze_latency_ns, s->anomalies,
		       s->anomalies_not_captured, s->identity_refused, s->parser_failures,
		       s->captures_this_week, s->device_weekly_captures, s->app_weekly_captures);
		for (size_t i = 0; i < s->n_processes; i++) {
			const Rearview__ProcessStatus *p = s->processes[i];

			printf("%s{\"pid\":%d,\"exe\":", i ? "," : "", p->pid);
			rvc_json_str(stdout, p->exe);
			printf(",\"app_id\":");
			rvc_json_str(stdout, p->app_id);
			printf(",\"uid\":%u,\"buffer_bytes\":%" PRIu64 ",\"traced_tids\":[", p->uid,
			       p->buffer_bytes);
			for (size_t k = 0; k < p->n_traced_tids; k++)
				printf("%s%d", k ? "," : "", p->traced_tids[k]);
			printf("]}");
		}
		printf("],\"last_errors\":[");
		for (size_t i = 0; i < s->n_last_errors; i++) {
			printf("%s", i ? "," : "");
			rvc_json_str(stdout, s->last_errors[i]);
		}
		printf("]}\n");
		return;
	}
	printf("consent:            %s\n", consent_name(s->consent));
	printf("buffer memory:      %" PRIu64 " bytes\n", s->buffer_bytes);
	printf("pending uploads:    %u\n", s->pending_uploads);
	if (uploaded >= 0)
		printf("uploaded:           %ld\n", uploaded);
	printf("quota left:         %u (this week)\n", s->quota_left);
	printf("captures this week: %u", s->captures_this_week);
	if (s->device_weekly_captures)
		printf(" of %u on the device", s->device_weekly_captures);
	if (s->app_weekly_captures)
		printf(", at most %u per app", s->app_weekly_captures);
	printf("\n");
	printf("policy version:     %" PRIu64 "\n", s->policy_version);
	printf("last freeze latency: %" PRIu64 " us\n", s->last_freeze_latency_ns / 1000);
	printf("anomalies:          %" PRIu64 " (%" PRIu64 " not captured)\n", s->anomalies,
	       s->anomalies_not_captured);
	printf("identity refused:   %" PRIu64 " (app ids not the speaker's own)\n",
	       s->identity_refused);
	printf("parser failures:    %" PRIu64 " (captures refused: the parser crashed or hung)\n",
	       s->parser_failures);
	printf("processes:          %zu\n", s->n_processes);
	for (size_t i = 0; i < s->n_processes; i++) {
		const Rearview__ProcessStatus *p = s->processes[i];

		printf("  pid %d %s (%s, uid %u) buffers %" PRIu64 " traced", p->pid, p->exe,
		       p->app_id, p->uid, p->buffer_bytes);
		if (!p->n_traced_tids)
			printf(" none");
		for (size_t k = 0; k < p->n_traced_tids; k++)
			printf(" %d", p->traced_tids[k]);
		putchar('\n');
	}
	for (size_t i = 0; i < s->n_last_errors; i++)
		printf("error: %s\n", s->last_errors[i]);
}

/* The answer to `policy`: a SignedPolicy (unsigned for the built-in default). */
static int print_policy(const ProtobufCBinaryData *doc)
{
	Rearview__SignedPolicy *sp = rearview__signed_policy__unpack(NULL, doc->len, doc->data);
	Rearview__PolicyBody *b = NULL;
	const Rearview__DetectorThresholds *t;
	static const Rearview__DetectorThresholds none = REARVIEW__DETECTOR_THRESHOLDS__INIT;

	if (sp)
		b = rearview__policy_body__unpack(NULL, sp->body.len, sp->body.data);
	if (!b) {
		fprintf(stderr, "rvctl: the daemon sent an undecodable policy\n");
		rearview__signed_policy__free_unpacked(sp, NULL);
		return EXIT_ERR;
	}
	t = b->thresholds ? b->thresholds : &none;
	if (json) {
		printf("{\"version\":%" PRIu64 ",\"signed\":%s,\"key_id\":", b->version,
		       sp->signature.len ? "true" : "false");
		rvc_json_str(stdout, sp->key_id);
		printf(",\"issued_at_s\":%" PRIu64 ",\"expires_at_s\":%" PRIu64
		       ",\"weekly_quota\":%u,\"selection\":%d,\"unmetered_only\":%s,"
		       "\"debounce_captures\":%u,\"debounce_window_s\":%u,"
		       "\"max_upload_bytes\":%" PRIu64 ",\"jank_frames\":%u,"
		       "\"frame_budget_us\":%u,\"touch_latency_ms\":%u,\"thermal_trip_mc\":%d,"
		       "\"campaigns\":%zu,\"app_weekly_captures\":%u,"
		       "\"device_weekly_captures\":%u}\n",
		       b->issued_at_s, b->expires_at_s, b->weekly_quota, (int)b->selection,
		       b->unmetered_only ? "true" : "false", b->debounce_captures,
		       b->debounce_window_s, b->max_upload_bytes, t->jank_frames,
		       t->frame_budget_us, t->touch_latency_ms, t->thermal_trip_mc, b->n_campaigns,
		       b->app_weekly_captures, b->device_weekly_captures);
	} else {
		printf("version:            %" PRIu64 "%s\n", b->version,
		       sp->signature.len ? "" : " (built-in default)");
		if (sp->signature.len)
			printf("signed by key:      %s\n", sp->key_id);
		printf("expires:            %" PRIu64 "%s\n", b->expires_at_s,
		       b->expires_at_s ? " (unix s)" : " (never)");
		printf("weekly quota:       %u (0 = default)\n", b->weekly_quota);
		printf("capture budgets:    %u per app, %u per device a week (0 = none)\n",
		       b->app_weekly_captures, b->device_weekly_captures);
		printf("debounce:           %u captures / %u s (0 = default)\n",
		       b->debounce_captures, b->debounce_window_s);
		printf("unmetered only:     %s\n", b->unmetered_only ? "yes" : "no");
		printf("jank:               %u frames over %u us\n", t->jank_frames,
		       t->frame_budget_us);
		printf("touch latency:      %u ms\n", t->touch_latency_ms);
		printf("thermal trip:       %d mC\n", t->thermal_trip_mc);
		printf("campaigns:          %zu\n", b->n_campaigns);
		for (size_t i = 0; i < b->n_campaigns; i++)
			printf("  %s priority %u\n", b->campaigns[i]->id,
			       b->campaigns[i]->priority);
	}
	rearview__policy_body__free_unpacked(b, NULL);
	rearview__signed_policy__free_unpacked(sp, NULL);
	return 0;
}

/* Reads a policy document of at most 256 KiB (the daemon refuses more). */
static int read_doc(const char *path, ProtobufCBinaryData *out)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 256 * 1024 + 1;

	if (!f) {
		fprintf(stderr, "rvctl: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	out->data = malloc(cap);
	if (!out->data) {
		fclose(f);
		return -ENOMEM;
	}
	out->len = fread(out->data, 1, cap, f);
	if (ferror(f) || out->len == cap) {
		fprintf(stderr, "rvctl: %s: unreadable or larger than 256 KiB\n", path);
		fclose(f);
		free(out->data);
		out->data = NULL;
		return -EFBIG;
	}
	fclose(f);
	return 0;
}

static void print_capture(const Rearview__CaptureInfo *c, int one)
{
	const Rearview__Anomaly *a = c->anomaly;
	bool uploaded = c->trace_id && *c->trace_id;

	if (json) {
		printf("{\"id\":%" PRIu64 ",\"state\":", c->id);
		rvc_json_str(stdout, c->state);
		printf(",\"reason\":");
		rvc_json_str(stdout, c->reason);
		if (uploaded) {
			printf(",\"trace_id\":");
			rvc_json_str(stdout, c->trace_id);
		}
		printf(",\"kind\":\"%s\",\"pid\":%d,\"tid\":%d,\"app\":",
		       kind_name(a ? a->kind : 0), a ? a->pid : 0, a ? a->tid : 0);
		rvc_json_str(stdout, c->app_id);
		printf(",\"size\":%" PRIu64 ",\"freeze_latency_ns\":%" PRIu64, c->size,
		       c->freeze_latency_ns);
		if (attribution_name(a))
			printf(",\"attribution\":\"%s\"", attribution_name(a));
		printf("}");
		return;
	}
	if (!one) {
		/* The REASON column: why it was skipped, or the server's trace id. */
		const char *col = uploaded		    ? c->trace_id
				  : c->reason && *c->reason ? c->reason
							    : "-";

		printf("%-6" PRIu64 " %-9s %-14s %-13s %-7d %-16s %10" PRIu64 " %8" PRIu64 "\n",
		       c->id, c->state, col, kind_name(a ? a->kind : 0), a ? a->pid : 0, c->app_id,
		       c->size, c->freeze_latency_ns / 1000);
		return;
	}
	printf("id:             %" PRIu64 "\nstate:          %s\n", c->id, c->state);
	if (uploaded)
		printf("trace:          %s\n", c->trace_id);
	else
		printf("reason:         %s\n", c->reason && *c->reason ? c->reason : "-");
	printf("app:            %s\nsize:           %" PRIu64 " bytes\n", c->app_id, c->size);
	printf("freeze latency: %" PRIu64 " us\n", c->freeze_latency_ns / 1000);
	if (a)
		printf("anomaly:        %s severity %u pid %d tid %d %s%s%s\n", kind_name(a->kind),
		       a->severity, a->pid, a->tid, a->name, *a->name ? " " : "", a->detail);
	if (attribution_name(a))
		printf("attribution:    %s\n", attribution_name(a));
}

static void print_chain_json(const Rearview__Chain *c)
{
	printf("{\"frames\":[");
	for (size_t i = 0; i < c->n_frames; i++) {
		if (i)
			putchar(',');
		rvc_json_str(stdout, c->frames[i]);
	}
	printf("],\"duration_ns\":%" PRIu64 ",\"signature\":\"%016" PRIx64 "\"}", c->duration_ns,
	       c->signature);
}

static void print_chains_json(const char *key, Rearview__Chain **v, size_t n)
{
	printf(",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		print_chain_json(v[i]);
	}
	putchar(']');
}

static void print_summary_json(const Rearview__Summary *s)
{
	printf("{\"window_ns\":%" PRIu64 ",\"total_calls\":%" PRIu64 ",\"top_self\":[",
	       s->window_ns, s->total_calls);
	for (size_t i = 0; i < s->n_top_self; i++) {
		const Rearview__MethodStat *m = s->top_self[i];

		printf("%s{\"name\":", i ? "," : "");
		rvc_json_str(stdout, m->name);
		printf(",\"calls\":%" PRIu64 ",\"self_ns\":%" PRIu64 ",\"inclusive_ns\":%" PRIu64,
		       m->calls, m->self_ns, m->inclusive_ns);
		if (s->n_offcpu_reasons)
			printf(",\"on_cpu_ns\":%" PRIu64 ",\"off_cpu_ns\":%" PRIu64, m->on_cpu_ns,
			       m->off_cpu_ns);
		putchar('}');
	}
	putchar(']');
	/* Captures with OFFCPU records only (summary.proto). */
	if (s->n_offcpu_reasons) {
		printf(",\"offcpu_reasons\":[");
		for (size_t i = 0; i < s->n_offcpu_reasons; i++) {
			printf("%s{\"reason\":", i ? "," : "");
			rvc_json_str(stdout, s->offcpu_reasons[i]->reason);
			printf(",\"ns\":%" PRIu64 "}", s->offcpu_reasons[i]->ns);
		}
		putchar(']');
	}
	print_chains_json("chains_at_anomaly", s->chains_at_anomaly, s->n_chains_at_anomaly);
	print_chains_json("longest_chains", s->longest_chains, s->n_longest_chains);
	printf(",\"matches\":[");
	for (size_t i = 0; i < s->n_matches; i++) {
		const Rearview__SignatureMatch *m = s->matches[i];

		printf("%s{\"model_id\":", i ? "," : "");
		rvc_json_str(stdout, m->model_id);
		printf(",\"signature\":\"%016" PRIx64 "\",\"duration_ns\":%" PRIu64
		       ",\"count\":%u}",
		       m->signature, m->duration_ns, m->count);
	}
	printf("]}");
}

static void print_chain_text(const Rearview__Chain *c)
{
	printf("  signature %016" PRIx64 ", %.3f ms in this path\n", c->signature,
	       (double)c->duration_ns / 1e6);
	for (size_t i = 0; i < c->n_frames; i++)
		printf("  %*s%s\n", (int)(2 * (i < 32 ? i : 32)), "", c->frames[i]);
}

static void print_summary_text(const Rearview__Summary *s)
{
	printf("\nsummary:        %" PRIu64 " calls over %.3f ms\n", s->total_calls,
	       (double)s->window_ns / 1e6);
	printf("\ntop self time:\n  %12s %12s %10s  %s\n", "SELF_MS", "INCL_MS", "CALLS", "METHOD");
	for (size_t i = 0; i < s->n_top_self; i++) {
		const Rearview__MethodStat *m = s->top_self[i];

		printf("  %12.3f %12.3f %10" PRIu64 "  %s\n", (double)m->self_ns / 1e6,
		       (double)m->inclusive_ns / 1e6, m->calls, m->name);
	}
	if (s->n_offcpu_reasons) {
		printf("\noff-CPU time by reason:\n");
		for (size_t i = 0; i < s->n_offcpu_reasons; i++)
			printf("  %12.3f ms  %s\n", (double)s->offcpu_reasons[i]->ns / 1e6,
			       s->offcpu_reasons[i]->reason);
		printf("\ntop methods on and off the CPU (inclusive):\n  %12s %12s  %s\n",
		       "ON_CPU_MS", "OFF_CPU_MS", "METHOD");
		for (size_t i = 0; i < s->n_top_self; i++)
			printf("  %12.3f %12.3f  %s\n", (double)s->top_self[i]->on_cpu_ns / 1e6,
			       (double)s->top_self[i]->off_cpu_ns / 1e6, s->top_self[i]->name);
	}
	printf("\nchain at the anomaly:\n");
	if (!s->n_chains_at_anomaly)
		printf("  (none: no traced method was running at that instant, or the capture "
		       "has no anomaly mark)\n");
	for (size_t i = 0; i < s->n_chains_at_anomaly; i++)
		print_chain_text(s->chains_at_anomaly[i]);
	printf("\nlongest-running chains (self time of the deepest frame):\n");
	for (size_t i = 0; i < s->n_longest_chains; i++) {
		const Rearview__Chain *c = s->longest_chains[i];

		printf("  %016" PRIx64 " %10.3f ms  ", c->signature, (double)c->duration_ns / 1e6);
		for (size_t k = 0; k < c->n_frames; k++)
			printf("%s%s", k ? ";" : "", c->frames[k]);
		putchar('\n');
	}
	if (s->n_matches)
		printf("\nsignature matches:\n");
	for (size_t i = 0; i < s->n_matches; i++)
		printf("  %-24s %016" PRIx64 " %6u calls, mean %.3f ms\n", s->matches[i]->model_id,
		       s->matches[i]->signature, s->matches[i]->count,
		       (double)s->matches[i]->duration_ns / 1e6);
}

/* `show ID`: the summary when the daemon has one, with the capture's
 * metadata from the capture list (admin.proto answers show_capture with
 * either a Summary or a CaptureInfo, not both). */
static int cmd_show(uint64_t id)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL, *list = NULL;
	const Rearview__CaptureInfo *ci = NULL;
	const Rearview__Summary *sum = NULL;
	int rc;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_SHOW_CAPTURE;
	q.show_capture = id;
	if ((rc = transact(&q, &r)) != 0)
		return rc;
	if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE) {
		ci = r->capture;
	} else if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_SUMMARY) {
		sum = r->summary;
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES;
		q.list_captures = true;
		if ((rc = transact(&q, &list)) != 0) {
			rearview__admin_response__free_unpacked(r, NULL);
			return rc;
		}
		for (size_t i = 0; list->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES &&
				   i < list->captures->n_captures;
		     i++)
			if (list->captures->captures[i]->id == id)
				ci = list->captures->captures[i];
	} else {
		fprintf(stderr, "rvctl: unexpected answer from rearviewd\n");
		rearview__admin_response__free_unpacked(r, NULL);
		return EXIT_ERR;
	}
	if (json) {
		printf("{\"capture\":");
		if (ci)
			print_capture(ci, 1);
		else
			printf("null");
		printf(",\"summary\":");
		if (sum)
			print_summary_json(sum);
		else
			printf("null");
		printf("}\n");
	} else {
		if (ci)
			print_capture(ci, 1);
		if (sum)
			print_summary_text(sum);
		else
			printf("summary:        none (computed at consent summary or full)\n");
	}
	if (list)
		rearview__admin_response__free_unpacked(list, NULL);
	rearview__admin_response__free_unpacked(r, NULL);
	return 0;
}

/* rvtrace's export formats, by the same names. */
static int export_as(FILE *f, const rva_trace *t, const char *fmt, const char *title)
{
	if (!strcmp(fmt, "folded"))
		return rva_export_folded(f, t);
	if (!strcmp(fmt, "chrome"))
		return rva_export_chrome(f, t);
	if (!strcmp(fmt, "nanoscope"))
		return rva_export_nanoscope(f, t, 0);
	if (!strcmp(fmt, "speedscope"))
		return rva_export_speedscope(f, t);
	if (!strcmp(fmt, "android"))
		return rva_export_android(f, t);
	if (!strcmp(fmt, "perfetto"))
		return rva_export_perfetto(f, t);
	if (!strcmp(fmt, "svg"))
		return rva_export_svg(f, t, title);
	return -EINVAL;
}

struct export_job {
	const rva_trace *t;
	const char *fmt, *title;
};

/* Writes the export into rvc_write_file_atomic_fn's temporary file through a
 * stdio stream on a duplicate of it (the helper closes the original). */
static int fill_export(int fd, void *arg)
{
	const struct export_job *x = arg;
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0), rc;
	FILE *f;

	if (dfd < 0)
		return -errno;
	if (!(f = fdopen(dfd, "w"))) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	rc = export_as(f, x->t, x->fmt, x->title);
	if (fclose(f) != 0 && rc >= 0)
		rc = -EIO;
	return rc < 0 ? rc : 0;
}

static const char *const export_formats[] = {"perfetto", "chrome",    "folded", "speedscope",
					     "android",	 "nanoscope", "svg"};

/*
 * `export ID --format F -o OUT`: the daemon hands over the capture file's
 * descriptor (SCM_RIGHTS); decoding and exporting happen here, with the
 * caller's CPU and memory, never in the daemon.  OUT is written under a
 * temporary name and renamed, so a failed export leaves no partial file.
 */
static int cmd_export(uint64_t id, const char *fmt, const char *out)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;
	rva_trace *t = NULL;
	rva_error err = {{0}};
	struct stat stb;
	char title[64];
	struct export_job x = {NULL, fmt, title};
	void *map = MAP_FAILED;
	mode_t um;
	int rc, fd = -1, ok = 0;

	for (size_t i = 0; i < sizeof(export_formats) / sizeof(export_formats[0]); i++)
		ok |= !strcmp(fmt, export_formats[i]);
	if (!ok) {
		fprintf(stderr,
			"rvctl: unknown export format '%s' (perfetto, chrome, folded, "
			"speedscope, android, nanoscope, svg)\n",
			fmt);
		return EXIT_USAGE;
	}
	if (strlen(out) + sizeof(".tmp.XXXXXX") > PATH_MAX) {
		fprintf(stderr, "rvctl: output path too long\n");
		return EXIT_USAGE;
	}
	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_EXPORT_CAPTURE;
	q.export_capture = id;
	if ((rc = transact_fd(&q, &r, &fd)) != 0)
		return rc;
	rc = EXIT_ERR;
	if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_CAPTURE_FILE || fd < 0) {
		fprintf(stderr, "rvctl: rearviewd sent no capture file\n");
		goto free_resp;
	}
	if (fstat(fd, &stb) < 0 || !S_ISREG(stb.st_mode) || stb.st_size <= 0) {
		fprintf(stderr, "rvctl: the capture file is not readable\n");
		goto free_resp;
	}
	map = mmap(NULL, (size_t)stb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "rvctl: mapping the capture: %s\n", strerror(errno));
		goto free_resp;
	}
	if (rva_capture_decode(map, (size_t)stb.st_size, &t, &err) < 0) {
		fprintf(stderr, "rvctl: capture %" PRIu64 " does not decode: %s\n", id, err.msg);
		goto unmap;
	}
	close(fd);
	fd = -1;
	/* An export is an ordinary file of the user: 0666 less the umask. */
	um = umask(0);
	umask(um);
	snprintf(title, sizeof(title), "capture %" PRIu64, id);
	x.t = t;
	rc = rvc_write_file_atomic_fn(out, 0666 & ~um, fill_export, &x);
	if (rc < 0) {
		fprintf(stderr, "rvctl: export to %s failed: %s\n", out, strerror(-rc));
		rc = EXIT_ERR;
	}
	rva_trace_free(t);
unmap:
	munmap(map, (size_t)stb.st_size);
free_resp:
	if (fd >= 0)
		close(fd);
	rearview__admin_response__free_unpacked(r, NULL);
	return rc;
}

/* Builds an event request from argv.  Returns 0 or EXIT_USAGE. */
static int build_event(int argc, char **argv, Rearview__EventMessage *e, Rearview__FrameReport *fr,
		       Rearview__TouchReport *tr, Rearview__MetricSample *ms, Rearview__Anomaly *an)
{
	long long v[5] = {0};
	const char *what = argv[0];
	char *end;

	if (!strcmp(what, "frame") && argc == 4) {
		for (int i = 0; i < 3; i++)
			if (parse_int(argv[i + 1], 0, INT32_MAX, &v[i]) < 0)
				return EXIT_USAGE;
		fr->pid = (int32_t)v[0];
		fr->tid = (int32_t)v[1];
		fr->frame_end_ns = now_ns();
		fr->frame_start_ns = fr->frame_end_ns - (uint64_t)v[2] * 1000000ull;
		e->msg_case = REARVIEW__EVENT_MESSAGE__MSG_FRAME;
		e->frame = fr;
		return 0;
	}
	if (!strcmp(what, "touch") && argc == 6) {
		for (int i = 0; i < 5; i++)
			if (parse_int(argv[i + 1], 0, INT32_MAX, &v[i]) < 0)
				return EXIT_USAGE;
		tr->pid = (int32_t)v[0];
		tr->tid = (int32_t)v[1];
		tr->detected_ns = (uint64_t)v[2] * 1000000ull;
		tr->delivered_ns = (uint64_t)v[3] * 1000000ull;
		tr->responded_ns = (uint64_t)v[4] * 1000000ull;
		e->msg_case = REARVIEW__EVENT_MESSAGE__MSG_TOUCH;
		e->touch = tr;
		return 0;
	}
	if (!strcmp(what, "metric") && argc == 3) {
		errno = 0;
		ms->value = strtod(argv[2], &end);
		if (errno || end == argv[2] || *end != '\0')
			return EXIT_USAGE;
		ms->name = argv[1];
		ms->monotonic_ns = now_ns();
		e->msg_case = REARVIEW__EVENT_MESSAGE__MSG_METRIC;
		e->metric = ms;
		return 0;
	}
	an->monotonic_ns = now_ns();
	an->severity = 50;
	if (!strcmp(what, "thermal") && argc <= 2) {
		an->kind = REARVIEW__ANOMALY_KIND__ANOMALY_THERMAL;
		if (argc == 2 && parse_int(argv[1], 0, 100, &v[0]) == 0)
			an->severity = (uint32_t)v[0];
		else if (argc == 2)
			return EXIT_USAGE;
	} else if ((!strcmp(what, "jank") && argc >= 2 && argc <= 4) ||
		   (!strcmp(what, "anomaly") && argc >= 3 && argc <= 5)) {
		int base = 1;

		an->kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK;
		if (!strcmp(what, "anomaly")) {
			an->kind = REARVIEW__ANOMALY_KIND__ANOMALY_GENERIC;
			an->name = argv[1];
			base = 2;
		}
		for (int i = base; i < argc; i++)
			if (parse_int(argv[i], 0, i == base + 2 ? 100 : INT32_MAX, &v[i - base]) <
			    0)
				return EXIT_USAGE;
		an->pid = (int32_t)v[0];
		an->tid = (int32_t)v[1];
		if (argc > base + 2)
			an->severity = (uint32_t)v[2];
	} else {
		return EXIT_USAGE;
	}
	e->msg_case = REARVIEW__EVENT_MESSAGE__MSG_ANOMALY;
	e->anomaly = an;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"run-dir", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;
	Rearview__EventMessage e = REARVIEW__EVENT_MESSAGE__INIT;
	Rearview__FrameReport fr = REARVIEW__FRAME_REPORT__INIT;
	Rearview__TouchReport tr = REARVIEW__TOUCH_REPORT__INIT;
	Rearview__MetricSample ms = REARVIEW__METRIC_SAMPLE__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	const char *cmd;
	long long v;
	int opt, rc, nargs;
	char **args;

	/* A daemon that hangs up on us must yield an error message, not SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	run_dir = getenv("RV_RUN_DIR");
	if (!run_dir || !*run_dir)
		run_dir = "/run/rearview";
	while ((opt = getopt_long(argc, argv, "+r:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			run_dir = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return rvc_print_version("rvctl");
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	args = &argv[optind + 1];
	nargs = argc - optind - 1;

	if (!strcmp(cmd, "consent") && nargs == 1) {
		static const char *const lv[] = {"off", "local", "summary", "full"};
		int level = -1;

		for (int i = 0; i < 4; i++)
			if (!strcmp(args[0], lv[i]))
				level = i + 1;
		if (level < 0 && strcmp(args[0], "status")) {
			usage(stderr);
			return EXIT_USAGE;
		}
		if (level < 0) {
			q.req_case = REARVIEW__ADMIN_REQUEST__REQ_GET_STATUS;
			q.get_status = true;
		} else {
			q.req_case = REARVIEW__ADMIN_REQUEST__REQ_SET_CONSENT;
			q.set_consent = (Rearview__ConsentLevel)level;
		}
		if ((rc = transact(&q, &r)) != 0)
			return rc;
		if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS)
			printf("%s\n", consent_name(r->status->consent));
		else if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CONSENT)
			print_consent_change(r->consent);
	} else if (!strcmp(cmd, "delete-all") && nargs == 0) {
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_DELETE_ALL;
		q.delete_all = true;
		if ((rc = transact(&q, &r)) != 0)
			return rc;
		if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_CONSENT)
			goto unexpected;
		printf("deleted\n");
		print_consent_change(r->consent);
	} else if (!strcmp(cmd, "policy") && nargs == 0) {
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_GET_POLICY;
		q.get_policy = true;
		if ((rc = transact(&q, &r)) != 0)
			return rc;
		if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_POLICY)
			goto unexpected;
		rc = print_policy(&r->policy);
		rearview__admin_response__free_unpacked(r, NULL);
		return rc;
	} else if (!strcmp(cmd, "push-policy") && nargs == 1) {
		if (read_doc(args[0], &q.push_policy) < 0)
			return EXIT_USAGE;
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_PUSH_POLICY;
		rc = transact(&q, &r);
		free(q.push_policy.data);
		if (rc != 0)
			return rc;
		printf("policy applied\n");
	} else if (!strcmp(cmd, "status") && nargs == 0) {
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_GET_STATUS;
		q.get_status = true;
		if ((rc = transact(&q, &r)) != 0)
			return rc;
		if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_STATUS)
			goto unexpected;
		print_status(r->status, count_uploaded());
	} else if (!strcmp(cmd, "captures") && nargs == 0) {
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_LIST_CAPTURES;
		q.list_captures = true;
		if ((rc = transact(&q, &r)) != 0)
			return rc;
		if (r->resp_case != REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES)
			goto unexpected;
		if (json)
			putchar('[');
		else
			printf("%-6s %-9s %-14s %-13s %-7s %-16s %10s %8s\n", "ID", "STATE",
			       "REASON", "KIND", "PID", "APP", "BYTES", "FRZ_US");
		for (size_t i = 0; i < r->captures->n_captures; i++) {
			if (json && i)
				putchar(',');
			print_capture(r->captures->captures[i], 0);
		}
		if (json)
			printf("]\n");
	} else if (!strcmp(cmd, "show") && nargs == 1) {
		if (parse_int(args[0], 1, INT64_MAX, &v) < 0)
			return EXIT_USAGE;
		return cmd_show((uint64_t)v);
	} else if (!strcmp(cmd, "export") && nargs == 5) {
		/* --format F and -o OUT, in either order, after the id. */
		const char *fmt = NULL, *out = NULL;

		for (int i = 1; i + 1 < nargs; i += 2) {
			if (!strcmp(args[i], "--format") || !strcmp(args[i], "-f"))
				fmt = args[i + 1];
			else if (!strcmp(args[i], "-o") || !strcmp(args[i], "--output"))
				out = args[i + 1];
		}
		if (!fmt || !out) {
			usage(stderr);
			return EXIT_USAGE;
		}
		if (parse_int(args[0], 1, INT64_MAX, &v) < 0)
			return EXIT_USAGE;
		return cmd_export((uint64_t)v, fmt, out);
	} else if ((!strcmp(cmd, "capture") || !strcmp(cmd, "foreground")) && nargs == 1) {
		if (parse_int(args[0], 1, INT32_MAX, &v) < 0)
			return EXIT_USAGE;
		if (!strcmp(cmd, "capture")) {
			q.req_case = REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID;
			q.capture_pid = (int32_t)v;
		} else {
			q.req_case = REARVIEW__ADMIN_REQUEST__REQ_FOREGROUND_PID;
			q.foreground_pid = (int32_t)v;
		}
		if ((rc = transact(&q, &r)) != 0)
			return rc;
	} else if (!strcmp(cmd, "event") && nargs >= 1) {
		if (build_event(nargs, args, &e, &fr, &tr, &ms, &an) != 0) {
			usage(stderr);
			return EXIT_USAGE;
		}
		q.req_case = REARVIEW__ADMIN_REQUEST__REQ_EVENT;
		q.event = &e;
		if ((rc = transact(&q, &r)) != 0)
			return rc;
	} else {
		usage(stderr);
		return EXIT_USAGE;
	}
	rearview__admin_response__free_unpacked(r, NULL);
	return 0;
unexpected:
	fprintf(stderr, "rvctl: unexpected answer from rearviewd\n");
	rearview__admin_response__free_unpacked(r, NULL);
	return EXIT_ERR;
}
