/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_daemon_trip.c — the policy's thermal trip (DetectorThresholds.
 * thermal_trip_mc) overrides the thermal zones' own trip points once a
 * signed policy is applied.  The real rearviewd polls a fake sysfs tree
 * (a zone at 70 °C whose own passive trip is 90 °C: no throttling); a
 * pushed policy with a 60 °C trip makes the next poll enter throttling and
 * fire a thermal anomaly.  The built-in default policy (whose 85 °C trip is
 * only a documented default) leaves the zones' trip points in force.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "rearview/policy.h"

static uint64_t anomalies(struct rvh *h)
{
	Rearview__AdminResponse *r = rvh_status(h);
	uint64_t n;

	assert_non_null(r);
	n = r->status->anomalies;
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

struct trip {
	struct rvh h;
	char dir[32];
	char doc_path[200];
};

/* A fake thermal tree (one zone at 70 °C, passive trip 90 °C), a key pair,
 * a signed policy with a 60 °C trip, and the daemon polling the tree. */
static int setup(void **state)
{
	Rearview__PolicyBody body = REARVIEW__POLICY_BODY__INIT;
	Rearview__DetectorThresholds th = REARVIEW__DETECTOR_THRESHOLDS__INIT;
	struct trip *t = calloc(1, sizeof(*t));
	char zone[80], pub_path[200], p[200], extra[600];
	char *priv = NULL, *pub = NULL;
	uint8_t *doc = NULL;
	size_t doc_len;
	int rc;

	if (!t)
		return -1;
	*state = t;
	snprintf(t->dir, sizeof(t->dir), "/tmp/rvd-trip-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(zone, sizeof(zone), "%s/thermal_zone0", t->dir);
	if (mkdir(zone, 0755) < 0)
		return -1;
	if (rvh_write_file(zone, "temp", "70000\n", 6, p, sizeof(p)) ||
	    rvh_write_file(zone, "trip_point_0_type", "passive\n", 8, p, sizeof(p)) ||
	    rvh_write_file(zone, "trip_point_0_temp", "90000\n", 6, p, sizeof(p)) ||
	    rvp_keygen(&priv, &pub) < 0 ||
	    rvh_write_file(t->dir, "policy.pub", pub, strlen(pub), pub_path, sizeof(pub_path))) {
		free(priv);
		free(pub);
		return -1;
	}
	body.version = 1;
	body.issued_at_s = (uint64_t)time(NULL);
	th.thermal_trip_mc = 60000;
	body.thresholds = &th;
	rc = rvp_policy_sign(&body, priv, &doc, &doc_len);
	free(priv);
	free(pub);
	if (rc < 0)
		return -1;
	rc = rvh_write_file(t->dir, "trip.policy", doc, doc_len, t->doc_path, sizeof(t->doc_path));
	free(doc);
	if (rc)
		return -1;
	snprintf(extra, sizeof(extra),
		 "[thermal]\nsysfs_root = %s\npoll_ms = 20\n[policy]\npublic_key = %s\n", t->dir,
		 pub_path);
	return rvh_setup(&t->h, extra) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	struct trip *t = *state;
	char cmd[64];
	int rc = 0;

	rvh_teardown(&t->h);
	if (t->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
		rc = system(cmd) == 0 ? 0 : -1;
	}
	free(t);
	return rc;
}

static void test_daemon_trip_policy_trip_below_zone_trip_fires_thermal(void **state)
{
	struct trip *t = *state;
	double until;

	/* 25 polls at 70 °C under the zone's own 90 °C trip: nothing. */
	rvh_sleep_ms(500);
	assert_int_equal(anomalies(&t->h), 0);

	assert_int_equal(rvh_rvctl(&t->h, NULL, 0, "push-policy %s", t->doc_path), 0);
	until = rvh_now() + RVH_GUARD_S;
	while (anomalies(&t->h) == 0 && rvh_now() < until)
		rvh_sleep_ms(20);
	assert_int_equal(anomalies(&t->h), 1); /* entering throttling fires once */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_daemon_trip_policy_trip_below_zone_trip_fires_thermal, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
