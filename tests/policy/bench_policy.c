/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_policy.c — what the daemon pays per policy call: a capture decision
 * (debounce, one sqlite transaction), an upload decision plus its commit
 * (two transactions), and a signature verification.  The ledger lives in
 * $TMPDIR (a real disk: fsync is part of the cost).  Prints one line each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rearview/policy.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[256], path[300];
	struct rvp_ledger *l;
	struct rvp_time t;
	Rearview__PolicyBody p = REARVIEW__POLICY_BODY__INIT;
	enum { N = 200 };
	double t0, t1;

	snprintf(dir, sizeof(dir), "%s/rvp-bench-XXXXXX", tmp);
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ledger.db", dir);
	if (rvp_ledger_new(path, &l) || rvp_time_now(&t))
		return 1;
	p.weekly_quota = 1000000;
	p.debounce_captures = 1000000;

	t0 = now_s();
	for (int i = 0; i < N; i++)
		rvp_ledger_decide_capture(l, &p, REARVIEW__CONSENT_LEVEL__CONSENT_FULL, "app",
					  REARVIEW__ANOMALY_KIND__ANOMALY_JANK, &t);
	t1 = now_s();
	printf("capture decision (debounce):  %8.1f us/op\n", (t1 - t0) / N * 1e6);

	t0 = now_s();
	for (int i = 0; i < N; i++) {
		struct rvp_event ev = {.item_id = "x", .app_id = "app", .severity = 50};
		struct rvp_decision d;
		if (rvp_ledger_decide(l, &p, REARVIEW__CONSENT_LEVEL__CONSENT_FULL, &ev, 1, &t,
				      &d) ||
		    rvp_ledger_commit(l, d.reservation, &t))
			return 1;
	}
	t1 = now_s();
	printf("upload decide + commit:       %8.1f us/op (%d rows in the window)\n",
	       (t1 - t0) / N * 1e6, N);
	rvp_ledger_free(l);

	char *priv, *pub;
	uint8_t *doc;
	size_t len;
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	b.version = 1;
	if (rvp_keygen(&priv, &pub) || rvp_policy_sign(&b, priv, &doc, &len))
		return 1;
	t0 = now_s();
	for (int i = 0; i < 50; i++)
		if (rvp_policy_verify(doc, len, pub, 0, t.wall_s, NULL) != 0)
			return 1;
	t1 = now_s();
	printf("policy verify (P-256):        %8.1f us/op\n", (t1 - t0) / 50 * 1e6);
	free(priv);
	free(pub);
	free(doc);

	static const char *const sfx[] = {"", "-wal", "-shm"};
	for (int i = 0; i < 3; i++) {
		char f[320];
		snprintf(f, sizeof(f), "%s%s", path, sfx[i]);
		unlink(f);
	}
	rmdir(dir);
	return 0;
}
