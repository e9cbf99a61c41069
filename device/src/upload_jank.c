/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload_jank.c — the uploader's per-app frame counts (jankcount.h): POST
 * /v1/jank with the counts that changed since the server last stored them.
 *
 * Each count is the day's total so far and the server replaces its row
 * with it, so a retry, or a resend after a crash lost the "sent" marks,
 * never doubles a count.  At most one report is in flight; it is sent when
 * the daemon asks (rvd_upload_jank, every [jank] counts_flush_ms) under the
 * gate of skip reports (enrolled, consent summary or full: rvd_up_kick).
 *
 *     sent ─→ 200 JankAck: the rows sent are marked as sent
 *          ─→ 404: a server without POST /v1/jank — not sent again
 *          ─→ 401/408/429/5xx/transport: asked again, with backoff
 *          ─→ other 4xx: refused for good — marked as sent, logged
 */
#include "upload_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "rearview/upload.pb-c.h"

void rvd_up_jank_kick(struct rvd_uploader *u)
{
	struct rvd_jank_counts *c = u->env.jank;
	Rearview__JankReport rep = REARVIEW__JANK_REPORT__INIT;
	Rearview__JankCount cnt[RVD_JANKC_ROWS], *pc[RVD_JANKC_ROWS];
	struct req *r;

	if (!c || !u->jank_wanted || u->jank_sending || u->jank_refused || !rvd_jankc_due(c))
		return;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->jank = malloc(sizeof(*r->jank) * RVD_JANKC_ROWS))) {
		free(r);
		return;
	}
	r->u = u;
	r->kind = REQ_JANK;
	r->njank = rvd_jankc_snapshot(c, r->jank, RVD_JANKC_ROWS);
	for (unsigned i = 0; i < r->njank; i++) {
		rearview__jank_count__init(&cnt[i]);
		cnt[i].app_id = r->jank[i].app;
		cnt[i].app_version = r->jank[i].ver;
		cnt[i].day = r->jank[i].day;
		cnt[i].frames = r->jank[i].frames;
		cnt[i].late = r->jank[i].late;
		pc[i] = &cnt[i];
	}
	rep.counts = pc;
	rep.n_counts = r->njank;
	r->body_len = rearview__jank_report__get_packed_size(&rep);
	r->body_mem = malloc(r->body_len ? r->body_len : 1);
	if (!r->body_mem) {
		rvd_up_req_free(r);
		return;
	}
	r->body = r->body_mem;
	rearview__jank_report__pack(&rep, r->body);
	if (rvd_up_req_send(u, r, "/v1/jank", true) < 0) {
		rvd_up_msg(u, "jank report: cannot start the request");
		rvd_up_req_free(r);
		return;
	}
	u->jank_wanted = false;
	u->jank_sending = true;
}

void rvd_up_jank_done(struct rvd_uploader *u, struct req *r, CURLcode cc, long http)
{
	Rearview__JankAck *ack = NULL;
	curl_off_t retry_after = 0;
	char msg[96];

	u->jank_sending = false;
	if (cc == CURLE_OK && http == 200)
		ack = rearview__jank_ack__unpack(NULL, r->resp_len, r->resp);
	if (ack && ack->stored == r->njank) {
		rearview__jank_ack__free_unpacked(ack, NULL);
		rvd_jankc_acked(u->env.jank, r->jank, r->njank, rvd_jankc_day((int64_t)time(NULL)));
		rvd_debug("jank report: %u counts stored", r->njank);
		return;
	}
	if (ack)
		rearview__jank_ack__free_unpacked(ack, NULL);
	if (cc == CURLE_OK && http == 404) {
		u->jank_refused = true;
		rvd_info("jank report: the server has no POST /v1/jank: not sent again");
		return;
	}
	if (cc != CURLE_OK || http == 200 || http == 401 || http == 408 || http == 429 ||
	    http >= 500) {
		if (cc != CURLE_OK)
			snprintf(msg, sizeof(msg), "%.95s",
				 r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc));
		else
			rvd_up_error_message(r, msg, sizeof(msg));
		rvd_up_msg(u, "jank report: HTTP %ld: %s", http, msg);
		if (http == 401)
			u->token[0] = '\0';
		curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
		u->jank_wanted = true;
		rvd_up_backoff(u, (long)retry_after);
		return;
	}
	/* Refused for what it holds: sending it again would be refused too. */
	rvd_up_error_message(r, msg, sizeof(msg));
	rvd_up_error(u, "jank report refused: HTTP %ld: %s", http, msg);
	rvd_jankc_acked(u->env.jank, r->jank, r->njank, rvd_jankc_day((int64_t)time(NULL)));
}
