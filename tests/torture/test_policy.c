/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_policy.c — allocation-failure tests for signed policy documents
 * (policy/src/sign.c, store.c): verifying a document (protobuf-c unpacks
 * the envelope and the body, mbedTLS parses the key and checks the
 * signature) and applying one to a store.  A failed allocation must give
 * -ENOMEM — never a verdict about the document, which would make a device
 * short of memory reject a good policy as tampered — no crash, no leak.
 */
#include <errno.h>
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
#include "torture.h"

#define NOW 1800000000

struct doc {
	char *priv, *pub;
	uint8_t *b;
	size_t len;
};

static int doc_setup(void **state)
{
	struct doc *d = calloc(1, sizeof(*d));
	Rearview__PolicyBody body;

	assert_non_null(d);
	assert_int_equal(rvp_keygen(&d->priv, &d->pub), 0);
	rearview__policy_body__init(&body);
	body.version = 7;
	body.issued_at_s = NOW - 10;
	body.expires_at_s = NOW + 86400;
	body.weekly_quota = 5;
	body.selection = REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE;
	assert_int_equal(rvp_policy_sign(&body, d->priv, &d->b, &d->len), 0);
	*state = d;
	return 0;
}

static int doc_teardown(void **state)
{
	struct doc *d = *state;

	free(d->priv);
	free(d->pub);
	free(d->b);
	free(d);
	return 0;
}

static int run_verify(void *arg)
{
	const struct doc *d = arg;
	Rearview__PolicyBody *body = NULL;
	int rc = rvp_policy_verify(d->b, d->len, d->pub, 0, NOW, &body);

	if (rc == RVP_VERIFY_OK) {
		assert_non_null(body);
		assert_int_equal(body->version, 7);
		rearview__policy_body__free_unpacked(body, NULL);
	} else {
		assert_null(body);
	}
	return rc;
}

static void test_policy_verify_each_alloc_failing_fails_cleanly(void **state)
{
	assert_int_equal(run_verify(*state), 0);
	assert_true(torture_run(run_verify, *state, -ENOMEM) > 0);
}

/* A fresh store directory each run: the store keeps the highest version it
 * ever accepted, so a second apply into the same one would be a rollback. */
static int run_store(void *arg)
{
	const struct doc *d = arg;
	char dir[64], path[128];
	struct rvp_store *s;
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/rv-torture-XXXXXX");
	assert_non_null(mkdtemp(dir));
	rc = rvp_store_new(dir, d->pub, &s);
	if (rc == 0) {
		rc = rvp_store_apply(s, d->b, d->len, NOW);
		if (rc == 0)
			assert_int_equal(rvp_store_version(s), 7);
		rvp_store_free(s);
	}
	snprintf(path, sizeof(path), "%s/policy.signed", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/policy.version", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
	return rc;
}

static void test_policy_store_apply_each_alloc_failing_fails_cleanly(void **state)
{
	assert_int_equal(run_store(*state), 0);
	assert_true(torture_run(run_store, *state, -ENOMEM) > 0);
}

struct reopen {
	const struct doc *d;
	char dir[64];
};

/* Opening a store that holds the document must give it back, version and
 * floor, or fail: never the built-in default in its place. */
static int run_reopen(void *arg)
{
	const struct reopen *r = arg;
	struct rvp_store *s;
	int rc = rvp_store_new(r->dir, r->d->pub, &s);

	if (rc == 0) {
		assert_int_equal(rvp_store_version(s), 7);
		/* The floor came back too (the apply may itself be the one
		 * whose allocation fails). */
		int a = rvp_store_apply(s, r->d->b, r->d->len, NOW);

		assert_true(a == RVP_VERIFY_ROLLBACK || a == -ENOMEM);
		rvp_store_free(s);
	}
	return rc;
}

static void test_policy_store_reopen_each_alloc_failing_fails_cleanly(void **state)
{
	struct reopen r = {.d = *state};
	struct rvp_store *s;
	char path[128];

	snprintf(r.dir, sizeof(r.dir), "/tmp/rv-torture-XXXXXX");
	assert_non_null(mkdtemp(r.dir));
	assert_int_equal(rvp_store_new(r.dir, r.d->pub, &s), 0);
	assert_int_equal(rvp_store_apply(s, r.d->b, r.d->len, NOW), 0);
	rvp_store_free(s);
	assert_int_equal(run_reopen(&r), 0);
	assert_true(torture_run(run_reopen, &r, -ENOMEM) > 0);
	snprintf(path, sizeof(path), "%s/policy.signed", r.dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/policy.version", r.dir);
	unlink(path);
	assert_int_equal(rmdir(r.dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_verify_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_policy_store_apply_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_policy_store_reopen_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, doc_setup, doc_teardown);
}
