/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload_int.h — the uploader's private parts (upload.h is its interface):
 * its state, one HTTP request, and the functions its files share:
 * upload.c (the uploads; it drives the others), enroll.c (enrolment and
 * policy fetches), upload_jank.c (the per-app frame counts) and
 * upload_req.c (the requests they send).  Loop thread only, except where a
 * function says otherwise.
 */
#ifndef RVD_UPLOAD_INT_H
#define RVD_UPLOAD_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/utsname.h>
#include <curl/curl.h>
#include <uv.h>

#include "curl_uv.h"
#include "jankcount.h"
#include "spool.h"
#include "upload.h"
#include "rearview/upload.pb-c.h"

#define TOKEN_FILE   "upload.token"
#define MAX_BUSY     16
#define MAX_RESPONSE (1u << 20) /* acks, tokens and policies are small */
#define SECRET_MAX   256

enum req_kind { REQ_ENROLL, REQ_UPLOAD, REQ_POLICY, REQ_SKIP, REQ_JANK };

struct req {
	struct rvd_uploader *u;
	struct req *next; /* on u->reqs while in the multi handle */
	enum req_kind kind;
	CURL *easy;
	struct curl_slist *hdrs;
	uint8_t *body; /* the request body, inside body_mem */
	size_t body_len;
	uint8_t *body_mem;
	uint8_t *resp;
	size_t resp_len;
	bool resp_overflow;
	char errbuf[CURL_ERROR_SIZE];
	char etag[80];
	/* REQ_UPLOAD */
	uint64_t id;
	struct rvd_capture_rec rec; /* copy taken when it became uploading */
	char path[400];
	int consent;
	bool plain;	  /* send the capture as plain zstd, not its shuffled form */
	bool shuffled;	  /* the body carries the shuffled form */
	int allowed;	  /* policy network check: 1 may upload */
	uint8_t *summary; /* the capture's local summary (serialized), NULL: none */
	size_t summary_len;
	int status; /* work-queue result */
	uv_work_t work;
	/* REQ_JANK: the counts sent (owned), to mark as sent on the ack */
	struct rvd_jank_row *jank;
	unsigned njank;
};

struct rvd_uploader {
	struct rvd_upload_env env;
	struct rvd_curl_uv cu; /* libcurl on the daemon's loop */
	uv_timer_t retry_timer, policy_timer;
	struct req *reqs;
	uint64_t busy[MAX_BUSY];
	unsigned nbusy;
	bool started, stopping, enrolling, fetching;
	bool reporting;	    /* a skip report is in flight */
	bool jank_wanted;   /* the jank counts are to be sent (rvd_upload_jank) */
	bool jank_sending;  /* a jank report is in flight */
	bool jank_refused;  /* the server has no POST /v1/jank (404): not again */
	bool net_blocked;   /* the policy forbids this network (reported once) */
	bool secret_logged; /* the missing-secret error was reported */
	bool plain_zstd;    /* the server refused the shuffled form: plain zstd */
	unsigned attempt;   /* consecutive failures */
	char token[160];
	char device_id[40]; /* DeviceInfo.device_id: random per install */
	char secret[SECRET_MAX];
	char etag[80];
	uint64_t hinted_version;
	char last_error[128];
	/* Starts whatever is due (upload.c's rvd_up_kick): what the enrolment
	 * and the backoff call to go on. */
	void (*kick)(struct rvd_uploader *u);
};

/* ---- upload_req.c ------------------------------------------------------ */

/* Sets the last upload error; the caller's rvd_up_backoff() then reports
 * it with the time of the next attempt. */
void rvd_up_msg(struct rvd_uploader *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets the last upload error and reports it (log, rvctl status). */
void rvd_up_error(struct rvd_uploader *u, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Frees a request that is in no queue any more.  NULL is a no-op. */
void rvd_up_req_free(struct req *r);

/* Sends r (body already set for POST) to server_url + path: adds it to the
 * multi handle and to u->reqs.  Returns 0, -ENOMEM or -EIO (r is then the
 * caller's to free). */
int rvd_up_req_send(struct rvd_uploader *u, struct req *r, const char *path, bool post);

/* The server's Error message from an error body, or "", into out (cap
 * bytes, NUL-terminated). */
void rvd_up_error_message(const struct req *r, char *out, size_t cap);

/* Exponential backoff with full jitter: uniform in [0, min(cap, base·2^n)],
 * at least the server's Retry-After; reports the last error with the time
 * of the next attempt. */
void rvd_up_backoff(struct rvd_uploader *u, long retry_after_s);

/* ---- upload.c ---------------------------------------------------------- */

/* Starts whatever is due: enrolment, uploads, skip reports. */
void rvd_up_kick(struct rvd_uploader *u);

/* ---- upload_jank.c ----------------------------------------------------- */

/* Sends the jank counts that changed since their last acknowledgement
 * when rvd_upload_jank asked for it and none is in flight (enrolled,
 * consent summary or full: the caller checked). */
void rvd_up_jank_kick(struct rvd_uploader *u);

/* The jank report r finished (cc, HTTP status http); r is the caller's
 * to free. */
void rvd_up_jank_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http);

/* ---- enroll.c ---------------------------------------------------------- */

/* Reads a small file into buf (cap bytes, NUL-terminated, trailing
 * newlines and spaces cut).  Returns its length or a negative errno.  Any
 * thread; blocking (before the loop runs). */
int rvd_up_read_small(const char *path, char *buf, size_t cap);

/* Reads <state_dir>/upload.token (token and device id) if there is one.
 * Before the loop runs. */
void rvd_up_load_token(struct rvd_uploader *u);

/* Fills *di (borrowing from *un, filled here, and device_id).  Any thread. */
void rvd_up_device_info(Rearview__DeviceInfo *di, struct utsname *un, const char *device_id);

/* Starts the enrolment when a secret is configured (drawing the device id
 * on first use). */
void rvd_up_enroll(struct rvd_uploader *u);

/* The enrolment request finished (cc, HTTP status http). */
void rvd_up_enroll_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http);

/* Starts a policy fetch (enrolled, none in flight). */
void rvd_up_fetch_policy(struct rvd_uploader *u);

/* The policy fetch finished (cc, HTTP status http). */
void rvd_up_policy_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http);

/* The policy_interval_s timer (t->data: the uploader). */
void rvd_up_policy_timer_cb(uv_timer_t *t);

#endif
