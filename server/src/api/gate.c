/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.c — the API gate (api.h's rvs_api_handle): every request routed
 * through the route table (http/route.h) on the loop thread, its bearer
 * token hashed and rate limited (cheap, bounded work: http/ratelimit.h),
 * then run as a job on the work queue (the entry's handler) and answered
 * from the job's after-work, which also updates the metrics.
 *
 * Invariants: everything that touches the store, the blob store, a file
 * or unpacks a protobuf body runs in the job, never on the loop; a job
 * counts in the server's work (work.h) from its queueing to its answer;
 * at most RVS_EXPORT_STREAMS requests hold a whole trace, at most
 * cfg->login_hashers sign-ins hash a password at once.  Device API error
 * bodies are rearview.Error messages (code + human reason); the JSON
 * API's are {"error": …}.
 */
#include "api/api_int.h"
#include "base/log.h"
#include "base/util.h"
#include "http/stream.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "rearview/common.pb-c.h"
#include "rearview/upload.pb-c.h"

static void respond_error(struct rvs_conn *c, int status, int code, const char *reason,
			  const struct rvs_header *hdrs, size_t nhdrs)
{
	struct rvs_query_resp r = {0};

	if (rvs_reply_pb_error(&r, status, code, reason)) {
		rvs_conn_respond(c, status, "text/plain", hdrs, nhdrs, reason, strlen(reason));
		return;
	}
	rvs_conn_respond(c, r.status, r.content_type, hdrs, nhdrs, r.body, r.len);
	free(r.body);
}

static struct rvs_bucket *token_bucket(struct rvs_api *a, const uint8_t key[32])
{
	uint64_t now = uv_now(a->loop);
	struct rvs_bucket *b = rvs_bucket_find(a->buckets, key, a->cfg->upload_burst, now);
	rvs_bucket_refill(b, a->cfg->upload_rate_per_min, a->cfg->upload_burst, now);
	return b;
}

static struct rvs_bucket *peer_bucket(struct rvs_api *a, struct rvs_conn *c)
{
	uint8_t key[32] = {0};
	uint64_t now = uv_now(a->loop);
	struct rvs_bucket *b;
	rvs_conn_peer(c, key);
	b = rvs_bucket_find(a->peers, key, a->cfg->auth_fail_burst, now);
	rvs_bucket_refill(b, a->cfg->auth_fail_per_min, a->cfg->auth_fail_burst, now);
	return b;
}

/* A failed authentication from this peer spends one unit of its budget. */
static void charge_auth_failure(struct rvs_api *a, struct rvs_conn *c)
{
	struct rvs_bucket *b = peer_bucket(a, c);
	b->tokens = b->tokens >= 1.0 ? b->tokens - 1.0 : 0.0;
}

static void mark_known(struct rvs_api *a, const uint8_t key[32])
{
	token_bucket(a, key)->known = 1;
}

/* A re-enrolled device's new token starts with what is left of its old
 * token's upload budget, not a fresh burst: re-enrolling does not reset the
 * device's rate limit. */
static void inherit_budget(struct rvs_api *a, const uint8_t old[32], const uint8_t key[32])
{
	struct rvs_bucket *o = rvs_bucket_peek(a->buckets, old), *n;
	double left;
	if (!o)
		return;
	rvs_bucket_refill(o, a->cfg->upload_rate_per_min, a->cfg->upload_burst, uv_now(a->loop));
	left = o->tokens;
	n = token_bucket(a, key);
	if (left < n->tokens)
		n->tokens = left;
}

/* "Bearer <token>", token of [A-Za-z0-9_-]{16,128}. */
static int bearer_hash(const char *auth, uint8_t out[32])
{
	size_t n;
	if (strncasecmp(auth, "Bearer ", 7) != 0)
		return -EACCES;
	auth += 7;
	while (*auth == ' ')
		auth++;
	n = strspn(auth, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");
	if (n < 16 || n > 128 || auth[n] != '\0')
		return -EACCES;
	rvs_sha256(auth, n, out);
	return 0;
}

/* Work thread: the personal token of j (token_hash), its owner into
 * j->user; 0 when it may call j's route, else nonzero with j->q the 401
 * (charged to the peer when done), 403 naming the role needed, or 503. */
static int personal_auth(struct job *j)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char msg[64];
	int rc, role = 0;

	if (rvs_store_acquire(j->a->cfg->database, &ops, &st)) {
		rvs_query_set_error(&j->q, 503, "database unavailable");
		return -1;
	}
	rc = ops->token_auth(st, j->token_hash, (int64_t)time(NULL), j->user, &role);
	rvs_store_release(st);
	if (rc == -ENOENT) {
		rvs_query_set_error(&j->q, 401, "missing or bad API token");
		j->q.auth_failed = 1;
		return -1;
	}
	if (rc) {
		rvs_query_set_error(&j->q, 503, "database unavailable");
		return -1;
	}
	if (role < j->route->role) {
		snprintf(msg, sizeof msg, "this needs the %s role", rvs_role_name(j->route->role));
		rvs_query_set_error(&j->q, 403, msg);
		return -1;
	}
	return 0;
}

static void job_work(uv_work_t *w)
{
	struct job *j = w->data;
	struct rvs_call c = {.cfg = j->a->cfg,
			     .method = j->req->method == HTTP_GET    ? RVS_M_GET
				       : j->req->method == HTTP_POST ? RVS_M_POST
								     : 0,
			     .path = j->req->path,
			     .query = j->req->query,
			     .body = j->req->body,
			     .body_len = j->req->body_len,
			     .arg = j->arg,
			     .arg_len = j->arg_len,
			     .q = &j->q,
			     .ctx = j,
			     .user = j->kind != JOB_QUERY ? NULL
				     : j->personal	  ? j->user
							  : "api.token"};

	if (j->personal && personal_auth(j))
		return;
	rvs_route_run(j->req, j->route, j->allow, &c);
	/* Traces that arrived before these symbols are decoded again. */
	if (c.build_id[0] && j->a->ops->requeue_build_id(j->a->store, c.build_id, &j->requeued) < 0)
		rvs_log("error", "requeue for symbols failed", "build_id=%s", c.build_id);
}

/* An export's slot is free again (its stream ended, or it never started). */
static void export_end(void *arg)
{
	struct rvs_api *a = arg;
	assert(a->exports > 0);
	a->exports--;
}

/* Answers j with its export streamed (taken), or 503 when no thread could
 * be started; the export slot is given back when the stream ends. */
static void respond_export(struct rvs_api *a, struct job *j, struct rvs_export *x,
			   const char *ctype, const struct rvs_header *h, size_t n)
{
	assert(j->export_slot);
	j->export_slot = 0;
	if (rvs_stream_export(a->loop, j->conn, x, ctype, h, n, export_end, a) == 0)
		return;
	export_end(a);
	rvs_log("error", "cannot start an export", "path=%s", j->req->path);
	rvs_conn_respond(j->conn, 503, "text/plain; charset=utf-8", NULL, 0,
			 "export failed to start; retry\n", 30);
}

/* Sends j's answer, j->q, with the headers it lists: an export streamed
 * (taken), any other body copied and freed. */
static void send_reply(struct rvs_api *a, struct job *j)
{
	struct rvs_header h[RVS_REPLY_HEADERS];
	size_t n = rvs_reply_headers(&j->q, h);

	rvs_metrics_count_reply(a->m, j->route->family, j->q.status);

	if (j->q.stream)
		respond_export(a, j, j->q.stream, j->q.content_type, h, n);
	else if (j->export_slot)
		export_end(a);
	if (!j->q.stream)
		rvs_conn_respond(j->conn, j->q.status, j->q.content_type, h, n, j->q.body,
				 j->q.len);
	free(j->q.body);
}

/* The web UI's answer with its security headers; a failed login spends the
 * peer's failed-authentication budget like a bad token does. */
static void web_respond(struct rvs_api *a, struct job *j)
{
	struct rvs_query_resp *w = &j->q;

	a->m->login_hashes += w->hashed != 0;
	if (w->auth_failed) {
		a->m->errors[RVS_ERR_UNAUTHORIZED]++;
		if (!j->login) /* a sign-in paid before its hash ran */
			charge_auth_failure(a, j->conn);
	} else if (j->login) {
		/* The password was right (or the form never got to the hash):
		 * give the unit back. */
		struct rvs_bucket *b = peer_bucket(a, j->conn);
		b->tokens = b->tokens + 1.0 > a->cfg->auth_fail_burst ? a->cfg->auth_fail_burst
								      : b->tokens + 1.0;
	}
	w->cache = "no-store";
	w->browser = 1;
	send_reply(a, j);
}

static void job_done(uv_work_t *w, int status)
{
	struct job *j = w->data;
	struct rvs_api *a = j->a;
	struct rvs_metrics *m = a->m;

	if (j->kind == JOB_WEB) {
		if (j->login) {
			assert(a->logins_hashing > 0);
			a->logins_hashing--;
		}
		web_respond(a, j);
		free(j);
		rvs_work_done(&a->work);
		return;
	}
	if (j->requeued) {
		rvs_log("info", "re-symbolizing", "traces=%" PRIu64, j->requeued);
		m->decode_queue_depth += j->requeued;
		rvs_lanes_pump(a->lanes);
	}
	if (j->kind == JOB_QUERY) {
		j->q.cache = "no-store";
		if (j->q.auth_failed) {
			a->m->errors[RVS_ERR_UNAUTHORIZED]++;
			charge_auth_failure(a, j->conn);
		}
		send_reply(a, j);
		free(j);
		rvs_work_done(&a->work);
		return;
	}
	if (j->kind != JOB_ENROLL) {
		if (j->q.status == 401)
			charge_auth_failure(a, j->conn);
		else if (j->q.status < 500)
			mark_known(a, j->token_hash);
	} else if (j->q.status == 200) {
		mark_known(a, j->token_hash);
		if (j->reenrolled)
			inherit_budget(a, j->old_token_hash, j->token_hash);
	}
	if (j->err) {
		m->errors[j->err - 1]++;
		if (j->q.status >= 500)
			rvs_log("error", "request failed", "path=%s status=%d reason=\"%s\"",
				j->req->path, j->q.status, j->reason);
		/* The refusal replaces whatever body the job had made. */
		free(j->q.body);
		j->q.body = NULL;
		j->q.len = 0;
		j->q.cache = "no-store";
		if (rvs_reply_pb_error(&j->q, j->q.status, j->code, j->reason)) {
			struct rvs_header h[RVS_REPLY_HEADERS];
			respond_error(j->conn, j->q.status, j->code, j->reason, h,
				      rvs_reply_headers(&j->q, h));
		} else {
			send_reply(a, j);
		}
	} else {
		if (j->kind == JOB_POLICY) {
			j->q.cache = "no-cache";
			m->policy_fetches++;
		}
		if (j->kind == JOB_ENROLL)
			m->enrollments++;
		if (j->new_upload) {
			m->uploads++;
			m->upload_bytes += j->req->body_len;
			m->decode_queue_depth++;
		}
		if (j->duplicate)
			m->upload_duplicates++;
		j->q.content_type = RVS_REPLY_PB;
		send_reply(a, j);
	}
	if (j->new_upload)
		rvs_lanes_pump(a->lanes);
	free(j);
	rvs_work_done(&a->work);
}

static struct job *queue_job(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
			     const struct rvs_route *r, unsigned allow, const char *arg,
			     size_t arg_len, const uint8_t *hash)
{
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		respond_error(c, 503, REARVIEW__ERROR__CODE__BUSY, "out of memory", NULL, 0);
		return NULL;
	}
	j->a = a;
	j->conn = c;
	j->req = req;
	j->route = r;
	j->allow = allow;
	j->arg = arg;
	j->arg_len = arg_len;
	j->kind = r->family == RVS_FAMILY_WEB	 ? JOB_WEB
		  : r->family == RVS_FAMILY_API	 ? JOB_QUERY
		  : r->auth == RVS_AUTH_ENROLL	 ? JOB_ENROLL
		  : r->handler == rvs_api_policy ? JOB_POLICY
						 : JOB_DEVICE;
	if (hash)
		memcpy(j->token_hash, hash, 32);
	/* An API job with a token hash carries a personal token. */
	j->personal = j->kind == JOB_QUERY && hash;
	j->login = r->auth == RVS_AUTH_LOGIN && !allow;
	rvs_work_queue(&a->work, a->loop, &j->w, j, job_work, job_done);
	return j;
}

static void api_json_error(struct rvs_api *a, struct rvs_conn *c, int status, const char *msg,
			   const struct rvs_header *h, size_t nh);

/* Trace loads at once are bounded (RVS_EXPORT_STREAMS): past it 503 with
 * Retry-After (JSON for the JSON API) and nonzero.  load: the request loads
 * a whole trace; family: its route's. */
static int admit_export(struct rvs_api *a, struct rvs_conn *c, int load,
			enum rvs_route_family family)
{
	struct rvs_header h = {"Retry-After", "1"};
	if (!load || a->exports < RVS_EXPORT_STREAMS)
		return 0;
	a->m->errors[RVS_ERR_RATE_LIMITED]++;
	if (family == RVS_FAMILY_API) {
		api_json_error(a, c, 503, "exports busy; retry in a second", &h, 1);
		return -EBUSY;
	}
	rvs_metrics_count_reply(a->m, family, 503);
	rvs_conn_respond(c, 503, "text/plain; charset=utf-8", &h, 1,
			 "exports busy; retry in a second\n", 32);
	return -EBUSY;
}

/* j (NULL when it could not be queued) holds an export slot if it is one. */
static void export_job(struct rvs_api *a, struct job *j, int load)
{
	if (!j || !load)
		return;
	j->export_slot = 1;
	a->exports++;
}

static void method_not_allowed(struct rvs_api *a, struct rvs_conn *c, const char *allow,
			       enum rvs_route_family family)
{
	struct rvs_header h = {"Allow", allow};
	char msg[64];

	a->m->errors[RVS_ERR_METHOD]++;
	snprintf(msg, sizeof msg, "method not allowed (allowed: %s)", allow);
	if (family == RVS_FAMILY_API)
		return api_json_error(a, c, 405, msg, &h, 1);
	rvs_metrics_count_reply(a->m, family, 405);
	respond_error(c, 405, REARVIEW__ERROR__CODE__UNSPECIFIED, "method not allowed", &h, 1);
}

/* Answers c 429 with the Retry-After of bucket b at per_min and a
 * rearview.Error saying why; counted as rate limited. */
static void too_many(struct rvs_api *a, struct rvs_conn *c, const struct rvs_bucket *b,
		     double per_min, const char *why)
{
	char secs[16];
	struct rvs_header h = {"Retry-After", secs};

	snprintf(secs, sizeof secs, "%u", rvs_bucket_retry_after(b, per_min));
	a->m->errors[RVS_ERR_RATE_LIMITED]++;
	respond_error(c, 429, REARVIEW__ERROR__CODE__BUSY, why, &h, 1);
}

/* Checks the bearer token's shape and charges the device's bucket; a token
 * not yet seen to authenticate also needs budget left on its peer address,
 * so guessing tokens cannot turn into unbounded database lookups.  Answers
 * 401 or 429 itself and returns nonzero then. */
static int admit(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req, uint8_t hash[32])
{
	struct rvs_header h[1];
	struct rvs_bucket *b, *p;

	if (bearer_hash(req->auth, hash)) {
		h[0] = (struct rvs_header){"WWW-Authenticate", "Bearer"};
		a->m->errors[RVS_ERR_UNAUTHORIZED]++;
		charge_auth_failure(a, c);
		respond_error(c, 401, REARVIEW__ERROR__CODE__DENIED, "missing or bad bearer token",
			      h, 1);
		return -1;
	}
	/* Peek first: a guessed token must not take (and evict) a table slot
	 * once its address has no budget left. */
	b = rvs_bucket_peek(a->buckets, hash);
	if (!b || !b->known) {
		p = peer_bucket(a, c);
		if (p->tokens < 1.0) {
			too_many(a, c, p, a->cfg->auth_fail_per_min,
				 "too many failed authentications from this address");
			return -1;
		}
	}
	b = token_bucket(a, hash);
	if (b->tokens < 1.0) {
		too_many(a, c, b, a->cfg->upload_rate_per_min, "rate limit exceeded");
		return -1;
	}
	b->tokens -= 1.0;
	return 0;
}

/* Charges an enrolment to its peer address and, when it presents the
 * enrolment secret, to the secret's budget (a wrong secret spends only the
 * address's: it gets 403, and cannot exhaust the real secret's budget);
 * when a budget is spent answers 429 with Retry-After and returns nonzero.
 * Charged before the job runs, so parallel enrolments cannot pass together. */
static int admit_enroll(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req)
{
	Rearview__EnrollRequest *r;
	uint8_t key[32] = {0};
	uint64_t now = uv_now(a->loop);
	struct rvs_bucket *p, *s = &a->enroll_secret;
	int presents_secret;

	rvs_conn_peer(c, key);
	p = rvs_bucket_find(a->enroll_peers, key, a->cfg->enroll_burst, now);
	rvs_bucket_refill(p, a->cfg->enroll_per_min, a->cfg->enroll_burst, now);
	if (p->tokens < 1.0) {
		too_many(a, c, p, a->cfg->enroll_per_min, "too many enrolments from this address");
		return -1;
	}
	r = rearview__enroll_request__unpack(NULL, req->body_len, req->body);
	presents_secret = r && r->enrollment_secret &&
			  rvs_ct_equal(r->enrollment_secret, strlen(r->enrollment_secret),
				       a->secret, a->secret_len);
	rearview__enroll_request__free_unpacked(r, NULL);
	if (presents_secret) {
		if (!s->used) {
			s->used = 1;
			s->tokens = a->cfg->enroll_secret_burst;
			s->last_ms = now;
		}
		rvs_bucket_refill(s, a->cfg->enroll_secret_per_min, a->cfg->enroll_secret_burst,
				  now);
		if (s->tokens < 1.0) {
			too_many(a, c, s, a->cfg->enroll_secret_per_min,
				 "too many enrolments with this secret");
			return -1;
		}
		s->tokens -= 1.0;
	}
	p->tokens -= 1.0;
	return 0;
}

/* The JSON API's refusal on the loop thread: {"error": msg}, as its
 * endpoints answer (reply.h). */
static void api_json_error(struct rvs_api *a, struct rvs_conn *c, int status, const char *msg,
			   const struct rvs_header *h, size_t nh)
{
	struct rvs_query_resp r = {0};

	rvs_metrics_count_reply(a->m, RVS_FAMILY_API, status);
	rvs_query_set_error(&r, status, msg);
	rvs_conn_respond(c, r.status, r.content_type, h, nh, r.body, r.len);
	free(r.body);
}

/* The JSON API's tokens.  api.token (an admin's, so it passes route r's
 * role) is compared by hash in constant time on the loop thread (no
 * database): 0.  Any other well-formed bearer token may be a personal one:
 * 1 with its SHA-256 in hash, checked on the work thread (personal_auth).
 * Failures spend the peer's failed-authentication budget; once it is gone
 * every token but api.token gets 429, so tokens cannot be guessed quickly.
 * -1: answered. */
static int admit_api(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
		     const struct rvs_route *r, uint8_t hash[32])
{
	struct rvs_header h[1];
	struct rvs_bucket *p;
	char secs[16];
	int shaped = bearer_hash(req->auth, hash) == 0;

	assert(r->role >= RVS_ROLE_VIEWER && r->role <= RVS_ROLE_ADMIN);
	if (shaped && a->api_enabled && rvs_ct_equal(hash, 32, a->api_hash, 32))
		return 0;
	p = peer_bucket(a, c);
	if (p->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u",
			 rvs_bucket_retry_after(p, a->cfg->auth_fail_per_min));
		h[0] = (struct rvs_header){"Retry-After", secs};
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		api_json_error(a, c, 429, "too many failed authentications", h, 1);
		return -1;
	}
	if (shaped)
		return 1;
	h[0] = (struct rvs_header){"WWW-Authenticate", "Bearer"};
	a->m->errors[RVS_ERR_UNAUTHORIZED]++;
	charge_auth_failure(a, c);
	api_json_error(a, c, 401, "missing or bad API token", h, 1);
	return -1;
}

void rvs_api_metrics(struct rvs_call *call)
{
	struct job *j = call->ctx;
	char *text;
	size_t len;

	if (rvs_metrics_render(j->a->m, &text, &len)) {
		respond_error(j->conn, 500, REARVIEW__ERROR__CODE__INTERNAL, "metrics", NULL, 0);
		return;
	}
	rvs_conn_respond(j->conn, 200, "text/plain; version=0.0.4", NULL, 0, text, len);
	free(text);
}

/* A sign-in: it shares the failed-authentication budget, so passwords
 * cannot be guessed faster than tokens.  Each attempt pays before its hash
 * runs (a right password gets the unit back), so parallel guesses cannot
 * all pass the check; and at most login_hashers hash at once. */
static void queue_login(struct rvs_api *a, struct rvs_conn *c, struct rvs_http_req *req,
			const struct rvs_route *r)
{
	struct rvs_bucket *b = peer_bucket(a, c);
	char secs[16];
	struct rvs_header h = {"Retry-After", secs};

	if (b->tokens < 1.0) {
		snprintf(secs, sizeof secs, "%u",
			 rvs_bucket_retry_after(b, a->cfg->auth_fail_per_min));
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		rvs_conn_respond(c, 429, "text/plain; charset=utf-8", &h, 1,
				 "too many failed sign-ins; retry later\n", 38);
		return;
	}
	if (a->logins_hashing >= a->cfg->login_hashers) {
		snprintf(secs, sizeof secs, "1");
		a->m->errors[RVS_ERR_RATE_LIMITED]++;
		rvs_conn_respond(c, 503, "text/plain; charset=utf-8", &h, 1,
				 "sign-ins busy; retry in a second\n", 33);
		return;
	}
	b->tokens -= 1.0;
	if (queue_job(a, c, req, r, 0, NULL, 0, NULL))
		a->logins_hashing++;
	else
		b->tokens += 1.0;
}

void rvs_api_handle(void *ctx, struct rvs_conn *c, struct rvs_http_req *req)
{
	struct rvs_api *a = ctx;
	unsigned method = req->method == HTTP_GET    ? RVS_M_GET
			  : req->method == HTTP_POST ? RVS_M_POST
						     : 0;
	const struct rvs_route *r;
	const char *arg;
	size_t arg_len;
	unsigned allow;
	uint8_t hash[32];
	int load;

	r = rvs_route_find(method, req->path, &arg, &arg_len, &allow);
	if (a->work.stopping && r && r->family == RVS_FAMILY_API)
		return api_json_error(a, c, 503, "shutting down", NULL, 0);
	if (a->work.stopping) {
		respond_error(c, 503, REARVIEW__ERROR__CODE__BUSY, "shutting down", NULL, 0);
		return;
	}
	if (!r) {
		a->m->errors[RVS_ERR_NOT_FOUND]++;
		respond_error(c, 404, REARVIEW__ERROR__CODE__NOT_FOUND, "no such resource", NULL,
			      0);
		return;
	}
	/* The web UI answers its unserved methods itself, after the session
	 * check (web.c). */
	if (allow && r->family != RVS_FAMILY_WEB) {
		method_not_allowed(a, c, rvs_route_allow(allow), r->family);
		return;
	}
	if (r->thread == RVS_ON_LOOP) {
		struct job j = {.a = a, .conn = c, .req = req, .route = r};
		struct rvs_call call = {.cfg = a->cfg,
					.method = method,
					.path = req->path,
					.query = req->query,
					.arg = arg,
					.arg_len = arg_len,
					.ctx = &j};
		r->handler(&call);
		return;
	}
	load = !allow && (r->flags & RVS_ROUTE_TRACE_LOAD);
	switch (allow ? RVS_AUTH_NONE : r->auth) {
	case RVS_AUTH_ENROLL:
		if (admit_enroll(a, c, req) == 0)
			queue_job(a, c, req, r, 0, arg, arg_len, NULL);
		return;
	case RVS_AUTH_DEVICE:
		if (admit(a, c, req, hash) == 0)
			queue_job(a, c, req, r, 0, arg, arg_len, hash);
		return;
	case RVS_AUTH_API: {
		int who = admit_api(a, c, req, r, hash);
		if (who >= 0 && admit_export(a, c, load, r->family) == 0)
			export_job(a, queue_job(a, c, req, r, 0, arg, arg_len, who ? hash : NULL),
				   load);
		return;
	}
	case RVS_AUTH_LOGIN:
		queue_login(a, c, req, r);
		return;
	case RVS_AUTH_NONE:
	case RVS_AUTH_SESSION:
		if (admit_export(a, c, load, r->family) == 0)
			export_job(a, queue_job(a, c, req, r, allow, arg, arg_len, NULL), load);
		return;
	}
}
