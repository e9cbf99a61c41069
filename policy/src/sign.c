/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sign.c — signed policy documents: P-256 key generation, signing (server)
 * and verification (device), with mbedTLS 2.28.
 *
 * Envelope: SignedPolicy{ body = serialized PolicyBody (signed as is, never
 * re-serialized), signature = DER ECDSA over SHA-256(body), key_id = hex of
 * SHA-256(SPKI DER)[0..8), algorithm = "ecdsa-p256-sha256" }.
 *
 * Invariants: the size limit is checked before any parsing; the signature is
 * checked before the body is decoded, so hostile bodies only ever reach
 * protobuf-c once authenticated — and are still validated structurally.
 */
#include "rearview/policy.h"
#include "policy_int.h"
#include "rearview/frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/asn1.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/md.h>
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/sha256.h>

#define NOT_YET_VALID_SKEW_S 300

static const char *const verify_names[RVP_VERIFY_COUNT_] = {
	[RVP_VERIFY_OK] = "ok",
	[RVP_VERIFY_OVERSIZED] = "oversized",
	[RVP_VERIFY_MALFORMED] = "malformed",
	[RVP_VERIFY_UNSIGNED] = "unsigned",
	[RVP_VERIFY_BAD_ALGORITHM] = "bad_algorithm",
	[RVP_VERIFY_WRONG_KEY] = "wrong_key",
	[RVP_VERIFY_BAD_SIGNATURE] = "bad_signature",
	[RVP_VERIFY_INVALID_BODY] = "invalid_body",
	[RVP_VERIFY_ROLLBACK] = "rollback",
	[RVP_VERIFY_EXPIRED] = "expired",
	[RVP_VERIFY_NOT_YET_VALID] = "not_yet_valid",
};

const char *rvp_verify_error_name(enum rvp_verify_error e)
{
	if ((unsigned)e >= RVP_VERIFY_COUNT_)
		return "unknown";
	return verify_names[e];
}

struct rng {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
};

static int rng_init(struct rng *r)
{
	static const char pers[] = "rearview-policy";

	mbedtls_entropy_init(&r->entropy);
	mbedtls_ctr_drbg_init(&r->drbg);
	if (mbedtls_ctr_drbg_seed(&r->drbg, mbedtls_entropy_func, &r->entropy,
				  (const unsigned char *)pers, sizeof(pers) - 1)) {
		mbedtls_ctr_drbg_free(&r->drbg);
		mbedtls_entropy_free(&r->entropy);
		return -EIO;
	}
	return 0;
}

static void rng_release(struct rng *r)
{
	mbedtls_ctr_drbg_free(&r->drbg);
	mbedtls_entropy_free(&r->entropy);
}

/* 1 when an mbedTLS return code says an allocation failed.  Codes combine
 * a high-level module's error with a low-level one (bignum, ASN.1), so
 * both parts are looked at. */
static int mbed_is_oom(int ret)
{
	int high = -(-ret & 0xff80), low = -(-ret & 0x007f);

	return ret < 0 &&
	       (low == MBEDTLS_ERR_MPI_ALLOC_FAILED || low == MBEDTLS_ERR_ASN1_ALLOC_FAILED ||
		high == MBEDTLS_ERR_ECP_ALLOC_FAILED || high == MBEDTLS_ERR_PK_ALLOC_FAILED ||
		high == MBEDTLS_ERR_PEM_ALLOC_FAILED || high == MBEDTLS_ERR_MD_ALLOC_FAILED);
}

/* Parse a PEM key (private when want_private) and insist on P-256:
 * 0, -ENOMEM or -EINVAL. */
static int load_key(mbedtls_pk_context *pk, const char *pem, int want_private)
{
	int rc;

	mbedtls_pk_init(pk);
	if (!pem)
		return -EINVAL;
	/* mbedTLS wants the PEM length including its NUL terminator. */
	if (want_private)
		rc = mbedtls_pk_parse_key(pk, (const unsigned char *)pem, strlen(pem) + 1, NULL, 0);
	else
		rc = mbedtls_pk_parse_public_key(pk, (const unsigned char *)pem, strlen(pem) + 1);
	if (rc != 0 || !mbedtls_pk_can_do(pk, MBEDTLS_PK_ECDSA) ||
	    mbedtls_pk_ec(*pk)->grp.id != MBEDTLS_ECP_DP_SECP256R1) {
		mbedtls_pk_free(pk);
		return mbed_is_oom(rc) ? -ENOMEM : -EINVAL;
	}
	return 0;
}

static char *pem_dup(const unsigned char *buf)
{
	size_t n = strlen((const char *)buf);
	char *s = malloc(n + 1);

	if (s)
		memcpy(s, buf, n + 1);
	return s;
}

int rvp_keygen(char **priv_pem, char **pub_pem)
{
	mbedtls_pk_context pk;
	unsigned char buf[1024];
	struct rng r;
	int rc;

	*priv_pem = *pub_pem = NULL;
	rc = rng_init(&r);
	if (rc)
		return rc;
	mbedtls_pk_init(&pk);
	rc = -EIO;
	if (mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) ||
	    mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk),
				mbedtls_ctr_drbg_random, &r.drbg))
		goto free_pk;
	if (mbedtls_pk_write_key_pem(&pk, buf, sizeof(buf)))
		goto free_pk;
	*priv_pem = pem_dup(buf);
	if (mbedtls_pk_write_pubkey_pem(&pk, buf, sizeof(buf)))
		goto free_pems;
	*pub_pem = pem_dup(buf);
	rc = (*priv_pem && *pub_pem) ? 0 : -ENOMEM;
	if (rc == 0)
		goto free_pk;
free_pems:
	free(*priv_pem);
	free(*pub_pem);
	*priv_pem = *pub_pem = NULL;
free_pk:
	mbedtls_platform_zeroize(buf, sizeof(buf));
	mbedtls_pk_free(&pk);
	rng_release(&r);
	return rc;
}

static int key_id_of(mbedtls_pk_context *pk, char out[17])
{
	unsigned char der[256], hash[32];
	int n = mbedtls_pk_write_pubkey_der(pk, der, sizeof(der));

	if (n <= 0)
		return mbed_is_oom(n) ? -ENOMEM : -EINVAL;
	/* write_pubkey_der writes at the end of the buffer. */
	if (mbedtls_sha256_ret(der + sizeof(der) - n, (size_t)n, hash, 0))
		return -EIO;
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", hash[i]);
	return 0;
}

int rvp_key_id(const char *pem, char out[17])
{
	mbedtls_pk_context pk;
	int rc = load_key(&pk, pem, 0);

	if (rc == -EINVAL)
		rc = load_key(&pk, pem, 1);
	if (rc)
		return rc;
	rc = key_id_of(&pk, out);
	mbedtls_pk_free(&pk);
	return rc;
}

int rvp_policy_sign_raw(const uint8_t *body, size_t body_len, const char *priv_pem, uint8_t **out,
			size_t *out_len)
{
	Rearview__SignedPolicy env = REARVIEW__SIGNED_POLICY__INIT;
	unsigned char hash[32], sig[MBEDTLS_ECDSA_MAX_LEN];
	char kid[17];
	uint8_t *doc = NULL;
	size_t slen = 0, dlen;
	mbedtls_pk_context pk;
	struct rng r;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (!body && body_len)
		return -EINVAL;
	rc = load_key(&pk, priv_pem, 1);
	if (rc)
		return rc;
	rc = rng_init(&r);
	if (rc)
		goto free_pk;
	rc = -EIO;
	if (mbedtls_sha256_ret(body, body_len, hash, 0) ||
	    mbedtls_pk_sign(&pk, MBEDTLS_MD_SHA256, hash, sizeof(hash), sig, &slen,
			    mbedtls_ctr_drbg_random, &r.drbg) ||
	    key_id_of(&pk, kid))
		goto free_rng;
	env.body.data = (uint8_t *)body;
	env.body.len = body_len;
	env.signature.data = sig;
	env.signature.len = slen;
	env.key_id = kid;
	env.algorithm = (char *)RVP_ALGORITHM;
	dlen = rearview__signed_policy__get_packed_size(&env);
	rc = -E2BIG;
	if (dlen > RVP_MAX_DOCUMENT_BYTES)
		goto free_rng;
	rc = -ENOMEM;
	doc = malloc(dlen);
	if (!doc)
		goto free_rng;
	rearview__signed_policy__pack(&env, doc);
	*out = doc;
	*out_len = dlen;
	rc = 0;
free_rng:
	rng_release(&r);
free_pk:
	mbedtls_pk_free(&pk);
	return rc;
}

int rvp_policy_sign(const Rearview__PolicyBody *body, const char *priv_pem, uint8_t **out,
		    size_t *out_len)
{
	uint8_t *bytes;
	size_t blen;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (!body || rvp_policy_validate(body))
		return -EINVAL;
	blen = rearview__policy_body__get_packed_size(body);
	if (blen > RVP_MAX_DOCUMENT_BYTES)
		return -E2BIG;
	bytes = malloc(blen ? blen : 1);
	if (!bytes)
		return -ENOMEM;
	rearview__policy_body__pack(body, bytes);
	rc = rvp_policy_sign_raw(bytes, blen, priv_pem, out, out_len);
	free(bytes);
	return rc;
}

int rvp_policy_verify(const uint8_t *doc, size_t len, const char *pub_pem, uint64_t min_version,
		      int64_t now_s, Rearview__PolicyBody **body_out)
{
	return rvp_verify_doc(doc, len, pub_pem, min_version, now_s, 1, body_out);
}

int rvp_verify_doc(const uint8_t *doc, size_t len, const char *pub_pem, uint64_t min_version,
		   int64_t now_s, int check_time, Rearview__PolicyBody **body_out)
{
	Rearview__SignedPolicy *env = NULL;
	Rearview__PolicyBody *body = NULL;
	ProtobufCMessage *pm = NULL;
	unsigned char hash[32];
	mbedtls_pk_context pk;
	char kid[17];
	int rc, ret;

	if (body_out)
		*body_out = NULL;
	if (len > RVP_MAX_DOCUMENT_BYTES)
		return RVP_VERIFY_OVERSIZED;
	if (!doc && len)
		return RVP_VERIFY_MALFORMED;
	rc = load_key(&pk, pub_pem, 0);
	if (rc)
		return rc;
	/* rv_frame_unpack tells a failed allocation (-ENOMEM) from bytes that
	 * do not decode: running out of memory is never a verdict. */
	rc = rv_frame_unpack(&rearview__signed_policy__descriptor, doc, len, &pm);
	if (rc) {
		rc = rc == -ENOMEM ? rc : RVP_VERIFY_MALFORMED;
		goto free_pk;
	}
	env = (Rearview__SignedPolicy *)pm;
	rc = RVP_VERIFY_UNSIGNED;
	if (env->signature.len == 0 || !env->signature.data)
		goto free_env;
	rc = RVP_VERIFY_BAD_ALGORITHM;
	if (!env->algorithm || strcmp(env->algorithm, RVP_ALGORITHM) != 0)
		goto free_env;
	rc = key_id_of(&pk, kid);
	if (rc) {
		rc = rc == -ENOMEM ? rc : -EIO;
		goto free_env;
	}
	/* The key id is required, so that a document for another key is told
	 * apart ("wrong key", not "tampered") and no envelope field can be
	 * dropped unnoticed. */
	rc = RVP_VERIFY_WRONG_KEY;
	if (!env->key_id || strcmp(env->key_id, kid) != 0)
		goto free_env;
	rc = -EIO;
	if (mbedtls_sha256_ret(env->body.data, env->body.len, hash, 0))
		goto free_env;
	ret = mbedtls_pk_verify(&pk, MBEDTLS_MD_SHA256, hash, sizeof(hash), env->signature.data,
				env->signature.len);
	rc = mbed_is_oom(ret) ? -ENOMEM : RVP_VERIFY_BAD_SIGNATURE;
	if (ret)
		goto free_env;
	pm = NULL;
	rc = rv_frame_unpack(&rearview__policy_body__descriptor, env->body.data, env->body.len,
			     &pm);
	if (rc) {
		rc = rc == -ENOMEM ? rc : RVP_VERIFY_MALFORMED;
		goto free_env;
	}
	body = (Rearview__PolicyBody *)pm;
	rc = RVP_VERIFY_INVALID_BODY;
	if (rvp_policy_validate(body))
		goto free_body;
	rc = RVP_VERIFY_ROLLBACK;
	if (body->version == 0 || body->version <= min_version)
		goto free_body;
	rc = RVP_VERIFY_EXPIRED;
	if (check_time && body->expires_at_s && now_s >= (int64_t)body->expires_at_s)
		goto free_body;
	rc = RVP_VERIFY_NOT_YET_VALID;
	if (check_time && body->issued_at_s &&
	    (int64_t)body->issued_at_s > now_s + NOT_YET_VALID_SKEW_S)
		goto free_body;
	rc = RVP_VERIFY_OK;
	if (body_out) {
		*body_out = body;
		body = NULL;
	}
free_body:
	rearview__policy_body__free_unpacked(body, NULL);
free_env:
	rearview__signed_policy__free_unpacked(env, NULL);
free_pk:
	mbedtls_pk_free(&pk);
	return rc;
}
