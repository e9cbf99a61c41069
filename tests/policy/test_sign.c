/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sign.c — signed policy documents: keys generated at test time, then
 * good documents, tampered bytes, a wrong key, rollback/replay, expiry,
 * not-yet-valid, oversized, unsigned and hostile envelopes/bodies, and the
 * store (last good kept across reopen, built-in default otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/policy.h"

#define NOW 1800000000

struct keys {
	char *priv, *pub, *priv2, *pub2;
	char dir[64];
};

static int keys_setup(void **state)
{
	struct keys *k = calloc(1, sizeof(*k));

	assert_non_null(k);
	assert_int_equal(rvp_keygen(&k->priv, &k->pub), 0);
	assert_int_equal(rvp_keygen(&k->priv2, &k->pub2), 0);
	snprintf(k->dir, sizeof(k->dir), "/tmp/rvp-sign-XXXXXX");
	assert_non_null(mkdtemp(k->dir));
	*state = k;
	return 0;
}

static int keys_teardown(void **state)
{
	struct keys *k = *state;
	char p[128];

	snprintf(p, sizeof(p), "%s/policy.signed", k->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/policy.version", k->dir);
	unlink(p);
	rmdir(k->dir);
	free(k->priv);
	free(k->pub);
	free(k->priv2);
	free(k->pub2);
	free(k);
	return 0;
}

static void body_init(Rearview__PolicyBody *b, uint64_t version)
{
	rearview__policy_body__init(b);
	b->version = version;
	b->issued_at_s = NOW - 10;
	b->expires_at_s = NOW + 86400;
	b->weekly_quota = 5;
	b->selection = REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE;
}

static uint8_t *sign(const Rearview__PolicyBody *b, const char *priv, size_t *len)
{
	uint8_t *doc = NULL;
	assert_int_equal(rvp_policy_sign(b, priv, &doc, len), 0);
	return doc;
}

static void test_sign_roundtrip_verifies_and_decodes(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b, *out = NULL;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT;
	Rearview__Campaign *cs[] = {&c};
	char kid[17], kid2[17];
	size_t len;

	body_init(&b, 7);
	c.id = (char *)"jank";
	c.sample_probability = 0.5;
	b.campaigns = cs;
	b.n_campaigns = 1;
	uint8_t *doc = sign(&b, k->priv, &len);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 6, NOW, &out), RVP_VERIFY_OK);
	assert_non_null(out);
	assert_int_equal(out->version, 7);
	assert_int_equal(out->weekly_quota, 5);
	assert_int_equal(out->n_campaigns, 1);
	assert_string_equal(out->campaigns[0]->id, "jank");
	rearview__policy_body__free_unpacked(out, NULL);
	/* Key ids: the same for both halves of a pair, different across pairs. */
	assert_int_equal(rvp_key_id(k->pub, kid), 0);
	assert_int_equal(rvp_key_id(k->priv, kid2), 0);
	assert_string_equal(kid, kid2);
	assert_int_equal(rvp_key_id(k->pub2, kid2), 0);
	assert_string_not_equal(kid, kid2);
	assert_int_equal(rvp_key_id("not a key", kid), -EINVAL);
	free(doc);
}

static void test_sign_tampered_bytes_are_rejected(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b;
	size_t len;

	body_init(&b, 3);
	uint8_t *doc = sign(&b, k->priv, &len);
	/* Flip every bit of every byte, one at a time: never accepted. */
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			doc[i] ^= (uint8_t)(1u << bit);
			int rc = rvp_policy_verify(doc, len, k->pub, 0, NOW, NULL);
			if (rc == RVP_VERIFY_OK)
				fail_msg("byte %zu bit %d flipped and accepted", i, bit);
			assert_true(rc > 0);
			doc[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* Every truncation. */
	for (size_t n = 0; n < len; n++)
		assert_int_not_equal(rvp_policy_verify(doc, n, k->pub, 0, NOW, NULL),
				     RVP_VERIFY_OK);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 0, NOW, NULL), RVP_VERIFY_OK);
	free(doc);
}

static void test_sign_wrong_key_is_rejected(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b;
	Rearview__SignedPolicy *env;
	size_t len;

	body_init(&b, 3);
	uint8_t *doc = sign(&b, k->priv2, &len);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 0, NOW, NULL), RVP_VERIFY_WRONG_KEY);
	/* Claiming the trusted key's id, the signature itself fails. */
	char kid[17];
	assert_int_equal(rvp_key_id(k->pub, kid), 0);
	env = rearview__signed_policy__unpack(NULL, len, doc);
	assert_non_null(env);
	char *own = env->key_id;
	env->key_id = kid;
	uint8_t buf[4096];
	size_t n = rearview__signed_policy__pack(env, buf);
	env->key_id = own;
	rearview__signed_policy__free_unpacked(env, NULL);
	assert_int_equal(rvp_policy_verify(buf, n, k->pub, 0, NOW, NULL), RVP_VERIFY_BAD_SIGNATURE);
	/* A public key is not a private key; garbage is neither. */
	uint8_t *out = NULL;
	size_t ol;
	assert_int_equal(rvp_policy_sign(&b, k->pub, &out, &ol), -EINVAL);
	assert_int_equal(rvp_policy_verify(doc, len, "garbage", 0, NOW, NULL), -EINVAL);
	free(doc);
}

static void test_sign_rollback_expiry_and_validity_are_rejected(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b;
	size_t len;
	uint8_t *doc;

	body_init(&b, 5);
	doc = sign(&b, k->priv, &len);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 5, NOW, NULL), RVP_VERIFY_ROLLBACK);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 6, NOW, NULL), RVP_VERIFY_ROLLBACK);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 4, NOW, NULL), RVP_VERIFY_OK);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 4, NOW + 86400, NULL),
			 RVP_VERIFY_EXPIRED);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 4, NOW - 10 - 301, NULL),
			 RVP_VERIFY_NOT_YET_VALID);
	free(doc);
	body_init(&b, 0); /* version 0 is the built-in default's */
	doc = sign(&b, k->priv, &len);
	assert_int_equal(rvp_policy_verify(doc, len, k->pub, 0, NOW, NULL), RVP_VERIFY_ROLLBACK);
	free(doc);
}

static void test_sign_hostile_envelopes_are_rejected(void **state)
{
	struct keys *k = *state;
	Rearview__SignedPolicy env = REARVIEW__SIGNED_POLICY__INIT;
	Rearview__PolicyBody b;
	uint8_t body[256], sig[8] = {0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01};
	static uint8_t big[RVP_MAX_DOCUMENT_BYTES + 1];
	uint8_t buf[1024];
	size_t n;

	assert_int_equal(rvp_policy_verify(big, sizeof(big), k->pub, 0, NOW, NULL),
			 RVP_VERIFY_OVERSIZED);
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	assert_int_equal(rvp_policy_verify(junk, sizeof(junk), k->pub, 0, NOW, NULL),
			 RVP_VERIFY_MALFORMED);
	assert_int_equal(rvp_policy_verify(NULL, 0, k->pub, 0, NOW, NULL), RVP_VERIFY_UNSIGNED);
	char kid[17];
	assert_int_equal(rvp_key_id(k->pub, kid), 0);
	env.key_id = kid;
	body_init(&b, 9);
	env.body.data = body;
	env.body.len = rearview__policy_body__pack(&b, body);
	env.algorithm = (char *)RVP_ALGORITHM;
	n = rearview__signed_policy__pack(&env, buf);
	assert_int_equal(rvp_policy_verify(buf, n, k->pub, 0, NOW, NULL), RVP_VERIFY_UNSIGNED);
	env.signature.data = sig;
	env.signature.len = sizeof(sig);
	env.algorithm = (char *)"rsa-sha1";
	n = rearview__signed_policy__pack(&env, buf);
	assert_int_equal(rvp_policy_verify(buf, n, k->pub, 0, NOW, NULL), RVP_VERIFY_BAD_ALGORITHM);
	env.algorithm = (char *)RVP_ALGORITHM;
	n = rearview__signed_policy__pack(&env, buf);
	assert_int_equal(rvp_policy_verify(buf, n, k->pub, 0, NOW, NULL), RVP_VERIFY_BAD_SIGNATURE);
	for (int e = 0; e < RVP_VERIFY_COUNT_; e++)
		assert_string_not_equal(rvp_verify_error_name((enum rvp_verify_error)e), "unknown");
}

/* Structurally invalid bodies cannot even be signed; a validly signed body
 * that fails validation (hand-built here) is refused by the device. */
static void test_sign_invalid_body_is_refused_both_sides(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT;
	Rearview__Campaign *cs[] = {&c};
	uint8_t *doc = NULL;
	size_t len;

	body_init(&b, 4);
	c.id = (char *)"bad";
	c.sample_probability = 2.0;
	b.campaigns = cs;
	b.n_campaigns = 1;
	assert_int_equal(rvp_policy_sign(&b, k->priv, &doc, &len), -EINVAL);
	assert_null(doc);
}

static void test_sign_store_keeps_last_good_and_falls_back(void **state)
{
	struct keys *k = *state;
	struct rvp_store *s;
	Rearview__PolicyBody b;
	uint8_t *d5, *d6, *bad;
	size_t l5, l6, lb;
	int expired;

	assert_int_equal(rvp_store_new(k->dir, k->pub, &s), 0);
	/* Nothing received yet: the built-in default. */
	assert_ptr_equal(rvp_store_current(s, NOW, &expired), rvp_policy_default());
	assert_int_equal(expired, 0);
	assert_int_equal(rvp_store_version(s), 0);

	body_init(&b, 5);
	d5 = sign(&b, k->priv, &l5);
	body_init(&b, 6);
	b.expires_at_s = NOW + 100;
	d6 = sign(&b, k->priv, &l6);
	body_init(&b, 7);
	bad = sign(&b, k->priv2, &lb);

	assert_int_equal(rvp_store_apply(s, d6, l6, NOW), RVP_VERIFY_OK);
	assert_int_equal(rvp_store_version(s), 6);
	/* Replay of an older one, and a foreign one: refused, 6 stays. */
	assert_int_equal(rvp_store_apply(s, d5, l5, NOW), RVP_VERIFY_ROLLBACK);
	assert_int_equal(rvp_store_apply(s, d6, l6, NOW), RVP_VERIFY_ROLLBACK);
	assert_int_equal(rvp_store_apply(s, bad, lb, NOW), RVP_VERIFY_WRONG_KEY);
	assert_int_equal(rvp_store_current(s, NOW, NULL)->version, 6);
	rvp_store_free(s);

	/* Reopen: the last good one is back, and still refuses rollback. */
	assert_int_equal(rvp_store_new(k->dir, k->pub, &s), 0);
	assert_int_equal(rvp_store_version(s), 6);
	assert_int_equal(rvp_store_current(s, NOW, &expired)->weekly_quota, 5);
	assert_int_equal(rvp_store_apply(s, d5, l5, NOW), RVP_VERIFY_ROLLBACK);
	/* Once expired: the default applies, and the caller is told. */
	assert_ptr_equal(rvp_store_current(s, NOW + 100, &expired), rvp_policy_default());
	assert_int_equal(expired, 1);
	rvp_store_free(s);

	/* A corrupted file on disk is ignored: the default. */
	char p[128];
	snprintf(p, sizeof(p), "%s/policy.signed", k->dir);
	int fd = open(p, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, d6, l6 / 2), (ssize_t)(l6 / 2));
	close(fd);
	assert_int_equal(rvp_store_new(k->dir, k->pub, &s), 0);
	assert_int_equal(rvp_store_version(s), 0);
	assert_ptr_equal(rvp_store_current(s, NOW, NULL), rvp_policy_default());
	/* The document is lost, but replaying version 5 is still refused. */
	assert_int_equal(rvp_store_apply(s, d5, l5, NOW), RVP_VERIFY_ROLLBACK);
	/* A store trusting another key ignores the saved document too. */
	rvp_store_free(s);
	assert_int_equal(rvp_store_new(k->dir, "garbage", &s), -EINVAL);
	rvp_store_free(NULL);
	free(d5);
	free(d6);
	free(bad);
}

/* Correctly signed but hostile bodies: random bytes, mutations and
 * truncations of a real body.  Each is refused or decodes to a valid body;
 * none crashes (run under ASan by `make asan`). */
static void test_sign_hostile_signed_bodies_never_crash(void **state)
{
	struct keys *k = *state;
	Rearview__PolicyBody b, *out;
	Rearview__Campaign c = REARVIEW__CAMPAIGN__INIT;
	Rearview__Campaign *cs[] = {&c};
	char *pats[] = {(char *)"com.*"};
	uint8_t good[512], body[512];
	uint64_t x = 88172645463325252ull;
	size_t glen;
	int refused = 0;

	body_init(&b, 9);
	c.id = (char *)"camp";
	c.app_patterns = pats;
	c.n_app_patterns = 1;
	b.campaigns = cs;
	b.n_campaigns = 1;
	glen = rearview__policy_body__pack(&b, good);
	for (int i = 0; i < 300; i++) {
		size_t len = glen;
		memcpy(body, good, glen);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (i % 3 == 0) {
			len = x % sizeof(body);
			for (size_t j = 0; j < len; j++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				body[j] = (uint8_t)x;
			}
		} else if (i % 3 == 1) {
			body[x % glen] ^= (uint8_t)(1 + (x >> 8) % 255);
			body[(x >> 16) % glen] = (uint8_t)(x >> 24);
		} else {
			len = x % glen;
		}
		uint8_t *doc = NULL;
		size_t dlen;
		assert_int_equal(rvp_policy_sign_raw(body, len, k->priv, &doc, &dlen), 0);
		out = NULL;
		int rc = rvp_policy_verify(doc, dlen, k->pub, 0, NOW, &out);
		if (rc == RVP_VERIFY_OK) {
			assert_non_null(out);
			assert_int_equal(rvp_policy_validate(out), 0);
			rearview__policy_body__free_unpacked(out, NULL);
		} else {
			assert_null(out);
			assert_true(rc == RVP_VERIFY_MALFORMED || rc == RVP_VERIFY_INVALID_BODY ||
				    rc == RVP_VERIFY_ROLLBACK || rc == RVP_VERIFY_EXPIRED ||
				    rc == RVP_VERIFY_NOT_YET_VALID);
			refused++;
		}
		free(doc);
	}
	assert_true(refused > 100);
	/* A body with a huge claimed string length inside: malformed. */
	static const uint8_t lie[] = {0x3a, 0xff, 0xff, 0xff, 0xff, 0x07, 0x0a};
	uint8_t *doc = NULL;
	size_t dlen;
	assert_int_equal(rvp_policy_sign_raw(lie, sizeof(lie), k->priv, &doc, &dlen), 0);
	assert_int_equal(rvp_policy_verify(doc, dlen, k->pub, 0, NOW, NULL), RVP_VERIFY_MALFORMED);
	free(doc);
	/* Too big to sign at all. */
	static uint8_t huge[RVP_MAX_DOCUMENT_BYTES];
	assert_int_equal(rvp_policy_sign_raw(huge, sizeof(huge), k->priv, &doc, &dlen), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_roundtrip_verifies_and_decodes),
		cmocka_unit_test(test_sign_tampered_bytes_are_rejected),
		cmocka_unit_test(test_sign_wrong_key_is_rejected),
		cmocka_unit_test(test_sign_rollback_expiry_and_validity_are_rejected),
		cmocka_unit_test(test_sign_hostile_envelopes_are_rejected),
		cmocka_unit_test(test_sign_invalid_body_is_refused_both_sides),
		cmocka_unit_test(test_sign_store_keeps_last_good_and_falls_back),
		cmocka_unit_test(test_sign_hostile_signed_bodies_never_crash),
	};
	return cmocka_run_group_tests(tests, keys_setup, keys_teardown);
}
