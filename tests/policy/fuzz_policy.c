/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_policy.c — libFuzzer target for everything librvpolicy reads from
 * outside: the input is tried as a SignedPolicy envelope (rvp_policy_verify
 * with a key generated at start-up) and as a bare PolicyBody (decode,
 * rvp_policy_validate, then campaign matching and signature models on the
 * bodies that validate).  Built by `make fuzz` (clang, RV_FUZZ=1).
 */
#include <stdint.h>
#include <stdlib.h>

#include "rearview/policy.h"

static char *pub;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *priv;

	if (rvp_keygen(&priv, &pub) != 0)
		abort();
	free(priv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const chain[] = {"main", "ui_loop", "draw", "layout"};
	struct rvp_event ev = {.item_id = "i",
			       .app_id = "com.example.mail",
			       .app_version = "4.10.2",
			       .device_model = "m",
			       .os_build = "b",
			       .kind = REARVIEW__ANOMALY_KIND__ANOMALY_JANK,
			       .severity = 60};
	Rearview__PolicyBody *b;

	if (rvp_policy_verify(data, size, pub, 0, 1800000000, &b) == RVP_VERIFY_OK)
		abort(); /* a forged document verified */
	if (size > RVP_MAX_DOCUMENT_BYTES)
		return 0;
	b = rearview__policy_body__unpack(NULL, size, data);
	if (!b)
		return 0;
	if (rvp_policy_validate(b) == 0) {
		for (size_t i = 0; i < b->n_campaigns; i++) {
			const Rearview__Campaign *c = b->campaigns[i];
			(void)rvp_campaign_match(c, &ev, 1800000000, 7);
			for (size_t j = 0; j < c->n_signatures; j++)
				(void)rvp_signature_match(c->signatures[j], chain, 4, 1000);
		}
		(void)rvp_policy_weekly_quota(b);
		(void)rvp_policy_selection(b);
	}
	rearview__policy_body__free_unpacked(b, NULL);
	return 0;
}
