/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enroll.c — the uploader's enrolment and policy fetch (see upload.h and
 * upload_int.h): the device token (read at start, obtained with
 * POST /v1/enroll, made durable before anything is uploaded under it) and
 * GET /v1/policy (at start, on a timer, when an ack names a newer version;
 * with If-None-Match).
 *
 * Invariants:
 *  - at most one enrolment and one policy fetch are in flight
 *    (u->enrolling, u->fetching);
 *  - a token is used only once stored durably: until token_saved_cb says
 *    so nothing is uploaded (u->enrolling), and a failed save forgets it;
 *  - a 401 to a policy fetch forgets the token, so the next kick enrols
 *    again.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "upload_int.h"

/* ---- small files, read before the loop runs ------------------------------ */

int rvd_up_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* Trailing newlines and spaces are editing artefacts, not secret. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

void rvd_up_load_token(struct rvd_uploader *u)
{
	char path[RVD_PATH_MAX + 32], buf[256], *nl;

	snprintf(path, sizeof(path), "%s/" TOKEN_FILE, u->env.cfg->state_dir);
	if (rvd_up_read_small(path, buf, sizeof(buf)) <= 0)
		return;
	/* "<device token>\n<device id>" */
	nl = strchr(buf, '\n');
	if (!nl)
		return;
	*nl = '\0';
	size_t tl = strlen(buf), il = strlen(nl + 1);
	if (tl < sizeof(u->token) && il < sizeof(u->device_id)) {
		memcpy(u->token, buf, tl + 1);
		memcpy(u->device_id, nl + 1, il + 1);
	}
}

/* ---- enrolment ------------------------------------------------------------ */

void rvd_up_device_info(Rearview__DeviceInfo *di, struct utsname *un, const char *device_id)
{
	rearview__device_info__init(di);
	if (uname(un) < 0)
		memset(un, 0, sizeof(*un));
	di->device_id = (char *)device_id;
	di->os_build = un->release;
	di->arch = un->machine;
}

static void token_saved_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct rvd_uploader *u = data;

	(void)sp;
	(void)id;
	assert(u->enrolling);
	u->enrolling = false;
	if (status < 0) {
		/* Not durable: do not upload under a token a restart would forget. */
		u->token[0] = '\0';
		rvd_up_msg(u, "upload: saving the device token: %s", strerror(-status));
		rvd_up_backoff(u, 0);
		return;
	}
	rvd_info("uploader: enrolled as %s", u->device_id);
	u->attempt = 0;
	rvd_up_fetch_policy(u);
	u->kick(u);
}

void rvd_up_enroll_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http)
{
	Rearview__EnrollResponse *er;
	char buf[sizeof(u->token) + sizeof(u->device_id) + 2], msg[96];
	int n;

	if (cc != CURLE_OK || http != 200) {
		u->enrolling = false;
		if (cc != CURLE_OK)
			rvd_up_msg(u, "upload: enrolment: %s",
				   r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
		else {
			rvd_up_error_message(r, msg, sizeof(msg));
			rvd_up_msg(u, "upload: enrolment refused (%ld): %s", http, msg);
		}
		rvd_up_backoff(u, 0);
		return;
	}
	er = rearview__enroll_response__unpack(NULL, r->resp_len, r->resp);
	if (!er || !er->device_token || !er->device_token[0] ||
	    strlen(er->device_token) >= sizeof(u->token) || strchr(er->device_token, '\n')) {
		if (er)
			rearview__enroll_response__free_unpacked(er, NULL);
		u->enrolling = false;
		rvd_up_msg(u, "upload: enrolment: malformed answer");
		rvd_up_backoff(u, 0);
		return;
	}
	snprintf(u->token, sizeof(u->token), "%s", er->device_token);
	rearview__enroll_response__free_unpacked(er, NULL);
	n = snprintf(buf, sizeof(buf), "%s\n%s\n", u->token, u->device_id);
	if (rvd_spool_write_setting(u->env.spool, TOKEN_FILE, buf, (size_t)n, token_saved_cb, u) <
	    0) {
		u->token[0] = '\0';
		u->enrolling = false;
		rvd_up_msg(u, "upload: saving the device token: out of memory");
		rvd_up_backoff(u, 0);
	}
}

void rvd_up_enroll(struct rvd_uploader *u)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo di;
	struct utsname un;
	struct req *r;

	if (!u->secret[0]) {
		if (!u->secret_logged)
			rvd_up_error(u, "upload: no enrolment secret (enrollment_secret_file)");
		u->secret_logged = true;
		return;
	}
	if (!u->device_id[0]) {
		uint8_t rnd[16];

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return;
		for (int i = 0; i < 16; i++)
			snprintf(u->device_id + 2 * i, 3, "%02x", rnd[i]);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->u = u;
	r->kind = REQ_ENROLL;
	rvd_up_device_info(&di, &un, u->device_id);
	q.enrollment_secret = u->secret;
	q.device = &di;
	r->body_len = rearview__enroll_request__get_packed_size(&q);
	r->body = r->body_mem = malloc(r->body_len ? r->body_len : 1);
	if (!r->body) {
		rvd_up_req_free(r);
		return;
	}
	rearview__enroll_request__pack(&q, r->body);
	if (rvd_up_req_send(u, r, "/v1/enroll", true) < 0) {
		rvd_up_req_free(r);
		rvd_up_msg(u, "upload: cannot start the enrolment request");
		rvd_up_backoff(u, 0);
		return;
	}
	u->enrolling = true;
}

/* ---- policy fetch ---------------------------------------------------------- */

void rvd_up_policy_timer_cb(uv_timer_t *t)
{
	rvd_up_fetch_policy(t->data);
}

void rvd_up_fetch_policy(struct rvd_uploader *u)
{
	struct req *r;

	if (u->stopping || u->fetching || !u->token[0])
		return;
	r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->u = u;
	r->kind = REQ_POLICY;
	if (rvd_up_req_send(u, r, "/v1/policy", false) < 0) {
		rvd_up_req_free(r);
		return;
	}
	u->fetching = true;
}

void rvd_up_policy_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http)
{
	char msg[96];
	int rc;

	u->fetching = false;
	if (cc != CURLE_OK) {
		rvd_up_error(u, "policy fetch: %s",
			     r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
		return;
	}
	switch (http) {
	case 200:
		rc = u->env.apply_policy(u->env.ctx, r->resp, r->resp_len);
		if (rc < 0)
			rvd_up_error(u, "policy fetch: %s", strerror(-rc));
		else
			snprintf(u->etag, sizeof(u->etag), "%s", r->etag);
		/* A new policy may allow what the old one held back. */
		u->net_blocked = false;
		u->kick(u);
		break;
	case 304: /* unchanged */
	case 404: /* nothing published yet */
		break;
	case 401:
		u->token[0] = '\0';
		rvd_up_error(u, "policy fetch: device token refused; enrolling again");
		u->kick(u);
		break;
	default:
		rvd_up_error_message(r, msg, sizeof(msg));
		rvd_up_error(u, "policy fetch: HTTP %ld: %s", http, msg);
	}
}
