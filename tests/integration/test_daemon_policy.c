/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_policy.c — rearviewd enforcing librvpolicy, end to end: a
 * real daemon, rvctl and rv_helper_app in a mkdtemp directory.  The weekly
 * quota turns the 4th anomaly into a capture-less skipped(quota_exhausted)
 * row; lowering consent purges what the new level forbids; a signed policy
 * pushed through admin.sock changes the jank detector, and a document
 * signed by another key is refused with the verification error; a pushed
 * device-wide weekly capture budget refuses the capture past it, and rvctl
 * status shows it.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/policy.h"

/* Waits until capture row `i` (0-based) left the captured state. */
static Rearview__AdminResponse *wait_settled(struct rvh *h, size_t n)
{
	double until = rvh_now() + RVH_GUARD_S;
	Rearview__AdminResponse *r;

	for (;;) {
		bool settled = true;

		r = rvh_captures(h);
		assert_non_null(r);
		settled = r->captures->n_captures >= n;
		for (size_t i = 0; settled && i < r->captures->n_captures; i++)
			settled = strcmp(r->captures->captures[i]->state, "captured") != 0;
		if (settled || rvh_now() > until)
			return r;
		rearview__admin_response__free_unpacked(r, NULL);
		rvh_sleep_ms(10);
	}
}

static void test_daemon_policy_fourth_anomaly_quota_exhausted_skipped(void **state)
{
	struct rvh h;
	Rearview__AdminResponse *r;
	const Rearview__CaptureInfo *ci;
	char out[4096];
	pid_t a;

	(void)state;
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = full\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	/* Two kinds, so the debounce (3 per app and kind) never refuses first. */
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 1), 1);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 2), 2);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event anomaly one %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 3), 3);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event anomaly two %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 4), 4);
	r = wait_settled(&h, 4);
	assert_int_equal(r->captures->n_captures, 4);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(r->captures->captures[i]->state, "pending");
	ci = r->captures->captures[3];
	assert_string_equal(ci->state, "skipped");
	assert_string_equal(ci->reason, "quota_exhausted");
	assert_int_equal(ci->anomaly->kind, REARVIEW__ANOMALY_KIND__ANOMALY_GENERIC);
	assert_int_equal(ci->size, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	/* No capture file for the refused one. */
	assert_int_equal(rvh_spool_files(&h), 3);
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "captures"), 0);
	assert_non_null(strstr(out, "quota_exhausted"));
	r = rvh_status(&h);
	assert_non_null(r);
	assert_int_equal(r->status->quota_left, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	/* The reservations survive a restart: still exhausted. */
	rvh_stop_daemon(&h, SIGKILL);
	assert_int_equal(rvh_start_daemon(&h), 0);
	r = rvh_status(&h);
	assert_non_null(r);
	assert_int_equal(r->status->quota_left, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	rvh_teardown(&h);
}

static void test_daemon_policy_consent_off_nothing_decided(void **state)
{
	struct rvh h;
	Rearview__AdminResponse *r;
	pid_t a;

	(void)state;
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = off\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	for (int i = 0; i < 4; i++)
		assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	r = rvh_status(&h);
	assert_non_null(r);
	assert_int_equal(r->status->anomalies, 4);
	assert_int_equal(r->status->anomalies_not_captured, 4);
	/* Nothing reached the ledger: the whole quota is left. */
	assert_int_equal(r->status->quota_left, RVP_DEFAULT_WEEKLY_QUOTA);
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_captures(&h);
	assert_int_equal(r->captures->n_captures, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_spool_files(&h), 0);
	rvh_teardown(&h);
}

static void test_daemon_policy_consent_full_to_summary_keeps_pending_local_purges(void **state)
{
	struct rvh h;
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r;
	uint64_t id;
	pid_t a;

	(void)state;
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = full\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	r = wait_settled(&h, 1);
	assert_string_equal(r->captures->captures[0]->state, "pending");
	id = r->captures->captures[0]->id;
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_spool_files(&h), 1);
	r = rvh_status(&h);
	assert_int_equal(r->status->quota_left, RVP_DEFAULT_WEEKLY_QUOTA - 1);
	rearview__admin_response__free_unpacked(r, NULL);

	/* Issue 18 item 12: at summary the pending capture goes as its summary
	 * (it used to be purged): kept, file and reservation too. */
	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_SET_CONSENT;
	q.set_consent = REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY;
	assert_int_equal(rvh_admin(&h, &q, &r), 0);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_CONSENT);
	assert_int_equal(r->consent->n_purged, 0);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_spool_files(&h), 1);
	r = rvh_captures(&h);
	assert_string_equal(r->captures->captures[0]->state, "pending");
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_status(&h);
	assert_int_equal(r->status->quota_left, RVP_DEFAULT_WEEKLY_QUOTA - 1);
	rearview__admin_response__free_unpacked(r, NULL);

	/* No upload leaves at local: the pending capture is purged. */
	q.set_consent = REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL;
	assert_int_equal(rvh_admin(&h, &q, &r), 0);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_CONSENT);
	assert_int_equal(r->consent->n_purged, 1);
	assert_int_equal(r->consent->purged[0], id);
	rearview__admin_response__free_unpacked(r, NULL);
	/* Durable when answered: the file is gone, the row says why. */
	assert_int_equal(rvh_spool_files(&h), 0);
	r = rvh_captures(&h);
	assert_string_equal(r->captures->captures[0]->state, "skipped");
	assert_string_equal(r->captures->captures[0]->reason, "consent_purged");
	rearview__admin_response__free_unpacked(r, NULL);
	/* Its quota reservation was released. */
	r = rvh_status(&h);
	assert_int_equal(r->status->quota_left, RVP_DEFAULT_WEEKLY_QUOTA);
	rearview__admin_response__free_unpacked(r, NULL);

	rvh_teardown(&h);
}

/* Consent off forbids even keeping captures: a local-only one is removed. */
static void test_daemon_policy_consent_off_purges_local_capture(void **state)
{
	struct rvh h;
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r;
	uint64_t id;
	pid_t a;

	(void)state;
	assert_int_equal(rvh_setup(&h, "[capture]\nconsent_default = local\n"), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	r = wait_settled(&h, 1);
	assert_int_equal(r->captures->n_captures, 1);
	id = r->captures->captures[0]->id;
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_spool_files(&h), 1);

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_SET_CONSENT;
	q.set_consent = REARVIEW__CONSENT_LEVEL__CONSENT_OFF;
	assert_int_equal(rvh_admin(&h, &q, &r), 0);
	assert_int_equal(r->resp_case, REARVIEW__ADMIN_RESPONSE__RESP_CONSENT);
	assert_int_equal(r->consent->n_purged, 1);
	assert_int_equal(r->consent->purged[0], id);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_spool_files(&h), 0);
	r = rvh_captures(&h);
	assert_string_equal(r->captures->captures[0]->reason, "consent_purged");
	rearview__admin_response__free_unpacked(r, NULL);

	rvh_teardown(&h);
}

static void test_daemon_policy_pushed_policy_changes_jank_threshold(void **state)
{
	Rearview__PolicyBody body = REARVIEW__POLICY_BODY__INIT;
	Rearview__DetectorThresholds th = REARVIEW__DETECTOR_THRESHOLDS__INIT;
	char keydir[] = "/tmp/rvd-key-XXXXXX", pub_path[200], doc_path[200], bad_path[200];
	char extra[400], out[4096], errs[4096];
	static char logbuf[1 << 16];
	char *priv = NULL, *pub = NULL, *priv2 = NULL, *pub2 = NULL;
	uint8_t *doc = NULL, *bad = NULL;
	size_t doc_len, bad_len;
	Rearview__AdminResponse *r;
	struct rvh h;
	FILE *f;
	pid_t a;

	(void)state;
	assert_non_null(mkdtemp(keydir));
	assert_int_equal(rvp_keygen(&priv, &pub), 0);
	assert_int_equal(rvp_keygen(&priv2, &pub2), 0);
	assert_int_equal(
		rvh_write_file(keydir, "policy.pub", pub, strlen(pub), pub_path, sizeof(pub_path)),
		0);
	body.version = 7;
	body.issued_at_s = (uint64_t)time(NULL);
	th.jank_frames = 2;
	th.frame_budget_us = 16667;
	th.touch_latency_ms = 400;
	body.thresholds = &th;
	assert_int_equal(rvp_policy_sign(&body, priv, &doc, &doc_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "good.policy", doc, doc_len, doc_path, sizeof(doc_path)), 0);
	body.version = 8;
	assert_int_equal(rvp_policy_sign(&body, priv2, &bad, &bad_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "bad.policy", bad, bad_len, bad_path, sizeof(bad_path)), 0);

	snprintf(extra, sizeof(extra),
		 "[capture]\nconsent_default = full\n[policy]\npublic_key = %s\n", pub_path);
	assert_int_equal(rvh_setup(&h, extra), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "policy"), 0);
	assert_non_null(strstr(out, "built-in default"));
	/* Default K = 3: two late frames are no jank. */
	for (int i = 0; i < 2; i++)
		assert_int_equal(rvh_rvctl(&h, NULL, 0, "event frame %d %d 40", (int)a, (int)a), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event frame %d %d 5", (int)a, (int)a), 0);
	r = rvh_status(&h);
	assert_int_equal(r->status->anomalies, 0);
	rearview__admin_response__free_unpacked(r, NULL);

	/* Another key's document: refused with the verification error. */
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", bad_path), 1);
	snprintf(out, sizeof(out), "%s/rvctl.err", h.dir);
	f = fopen(out, "r");
	assert_non_null(f);
	errs[fread(errs, 1, sizeof(errs) - 1, f)] = '\0';
	fclose(f);
	assert_non_null(strstr(errs, "wrong_key"));
	r = rvh_status(&h);
	assert_int_equal(r->status->policy_version, 0);
	rearview__admin_response__free_unpacked(r, NULL);

	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "push-policy %s", doc_path), 0);
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "policy"), 0);
	assert_non_null(strstr(out, "version:            7"));
	assert_non_null(strstr(out, "jank:               2 frames"));
	/* K = 2 now: two late frames are a jank, captured. */
	for (int i = 0; i < 2; i++)
		assert_int_equal(rvh_rvctl(&h, NULL, 0, "event frame %d %d 40", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 1), 1);
	r = rvh_captures(&h);
	assert_int_equal(r->captures->captures[0]->anomaly->kind,
			 REARVIEW__ANOMALY_KIND__ANOMALY_JANK);
	rearview__admin_response__free_unpacked(r, NULL);

	/* The policy survives a restart; the same document again is the one in
	 * force (as every start's fetch brings it), an older one a rollback. */
	rvh_stop_daemon(&h, SIGTERM);
	assert_int_equal(rvh_start_daemon(&h), 0);
	r = rvh_status(&h);
	assert_int_equal(r->status->policy_version, 7);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", doc_path), 0);
	free(bad);
	bad = NULL;
	body.version = 6;
	assert_int_equal(rvp_policy_sign(&body, priv, &bad, &bad_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "bad.policy", bad, bad_len, bad_path, sizeof(bad_path)), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", bad_path), 1);
	r = rvh_status(&h);
	assert_int_equal(r->status->policy_version, 7);
	rearview__admin_response__free_unpacked(r, NULL);

	/* A device clock an hour behind the issue time takes the document (the
	 * old 5-minute allowance refused it, and campaigns never arrived); a
	 * month behind is refused, and both are said in the log. */
	free(bad);
	bad = NULL;
	body.version = 9;
	body.issued_at_s = (uint64_t)time(NULL) + 3600;
	assert_int_equal(rvp_policy_sign(&body, priv, &bad, &bad_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "bad.policy", bad, bad_len, bad_path, sizeof(bad_path)), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", bad_path), 0);
	r = rvh_status(&h);
	assert_int_equal(r->status->policy_version, 9);
	rearview__admin_response__free_unpacked(r, NULL);
	free(bad);
	bad = NULL;
	body.version = 10;
	body.issued_at_s = (uint64_t)time(NULL) + 30 * 86400;
	assert_int_equal(rvp_policy_sign(&body, priv, &bad, &bad_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "bad.policy", bad, bad_len, bad_path, sizeof(bad_path)), 0);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", bad_path), 1);
	r = rvh_status(&h);
	assert_int_equal(r->status->policy_version, 9);
	rearview__admin_response__free_unpacked(r, NULL);
	snprintf(out, sizeof(out), "%s/daemon.log", h.dir);
	f = fopen(out, "r");
	assert_non_null(f);
	logbuf[fread(logbuf, 1, sizeof(logbuf) - 1, f)] = '\0';
	fclose(f);
	assert_non_null(strstr(logbuf, "behind the document's issue time: taken"));
	assert_non_null(strstr(logbuf, "behind the document's issue time: refused"));

	rvh_teardown(&h);
	unlink(pub_path);
	unlink(doc_path);
	unlink(bad_path);
	rmdir(keydir);
	free(doc);
	free(bad);
	free(priv);
	free(pub);
	free(priv2);
	free(pub2);
}

static void test_daemon_policy_device_capture_budget(void **state)
{
	Rearview__PolicyBody body = REARVIEW__POLICY_BODY__INIT;
	char keydir[] = "/tmp/rvd-key-XXXXXX", pub_path[200], doc_path[200];
	char extra[400], out[4096];
	char *priv = NULL, *pub = NULL;
	uint8_t *doc = NULL;
	size_t doc_len;
	Rearview__AdminResponse *r;
	struct rvh h;
	pid_t a;

	(void)state;
	assert_non_null(mkdtemp(keydir));
	assert_int_equal(rvp_keygen(&priv, &pub), 0);
	assert_int_equal(
		rvh_write_file(keydir, "policy.pub", pub, strlen(pub), pub_path, sizeof(pub_path)),
		0);
	body.version = 3;
	body.issued_at_s = (uint64_t)time(NULL);
	body.device_weekly_captures = 2;
	body.weekly_quota = 10;
	assert_int_equal(rvp_policy_sign(&body, priv, &doc, &doc_len), 0);
	assert_int_equal(
		rvh_write_file(keydir, "budget.policy", doc, doc_len, doc_path, sizeof(doc_path)),
		0);
	snprintf(extra, sizeof(extra),
		 "[capture]\nconsent_default = full\n[policy]\npublic_key = %s\n", pub_path);
	assert_int_equal(rvh_setup(&h, extra), 0);
	a = rvh_helper(&h, NULL);
	assert_true(rvh_wait_registered(&h, a, true));
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "push-policy %s", doc_path), 0);
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "policy"), 0);
	assert_non_null(strstr(out, "capture budgets:    0 per app, 2 per device a week"));
	/* Kinds differ, so the debounce never refuses: the budget does. */
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event jank %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 1), 1);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event anomaly one %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 2), 2);
	assert_int_equal(rvh_rvctl(&h, NULL, 0, "event anomaly two %d %d", (int)a, (int)a), 0);
	assert_int_equal(rvh_wait_captures(&h, 3), 3);
	r = wait_settled(&h, 3);
	assert_int_equal(r->captures->n_captures, 3);
	assert_string_equal(r->captures->captures[2]->state, "skipped");
	assert_string_equal(r->captures->captures[2]->reason, "device_budget_exhausted");
	rearview__admin_response__free_unpacked(r, NULL);
	r = rvh_status(&h);
	assert_non_null(r);
	assert_int_equal(r->status->device_weekly_captures, 2);
	assert_int_equal(r->status->captures_this_week, 2);
	rearview__admin_response__free_unpacked(r, NULL);
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "status"), 0);
	assert_non_null(strstr(out, "captures this week: 2 of 2 on the device"));
	assert_int_equal(rvh_rvctl(&h, out, sizeof(out), "--json status"), 0);
	assert_non_null(strstr(out, "\"captures_this_week\":2,\"device_weekly_captures\":2"));
	rvh_teardown(&h);
	unlink(pub_path);
	unlink(doc_path);
	rmdir(keydir);
	free(doc);
	free(priv);
	free(pub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_policy_fourth_anomaly_quota_exhausted_skipped),
		cmocka_unit_test(test_daemon_policy_consent_off_nothing_decided),
		cmocka_unit_test(
			test_daemon_policy_consent_full_to_summary_keeps_pending_local_purges),
		cmocka_unit_test(test_daemon_policy_consent_off_purges_local_capture),
		cmocka_unit_test(test_daemon_policy_pushed_policy_changes_jank_threshold),
		cmocka_unit_test(test_daemon_policy_device_capture_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
