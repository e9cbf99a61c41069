/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_symbols.c — the symbol store (symbols.h): debug files made with
 * `objcopy --only-keep-debug` from this test binary, their build-id and
 * functions; hostile files and keys; the HTTPS endpoints of the real server.
 */
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "rearview/upload.pb-c.h"
#include "rvs.h"
#include "server_common.h"
#include "symbols.h"

static char g_dir[64], g_exe[512], g_debug[128], g_nobid[128], g_stripped[128];

__attribute__((noinline)) int rvs_symbols_test_marker(int x);
__attribute__((noinline)) int rvs_symbols_test_marker(int x)
{
	return x * 7 + 3;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uintptr_t *)arg = (uintptr_t)info->dlpi_addr;
	return 1; /* the main program comes first */
}

/* The ELF virtual address of the marker: what a capture's module offset is. */
static uint64_t marker_offset(void)
{
	uintptr_t bias = 0;
	dl_iterate_phdr(first_object, &bias);
	return (uint64_t)((uintptr_t)&rvs_symbols_test_marker - bias);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	uint8_t *buf = NULL;
	assert_int_equal(rvs_read_file(path, 256u << 20, &buf, len), 0);
	return buf;
}

__attribute__((format(printf, 1, 2))) static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

static int group_setup(void **state)
{
	ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
	if (n <= 0)
		return -1;
	g_exe[n] = '\0';
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-sym-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_debug, sizeof g_debug, "%s/t.debug", g_dir);
	snprintf(g_nobid, sizeof g_nobid, "%s/nobid.debug", g_dir);
	snprintf(g_stripped, sizeof g_stripped, "%s/stripped", g_dir);
	if (run("objcopy --only-keep-debug '%s' '%s'", g_exe, g_debug) ||
	    run("objcopy --remove-section .note.gnu.build-id '%s' '%s'", g_debug, g_nobid) ||
	    run("objcopy --strip-all '%s' '%s'", g_exe, g_stripped))
		return -1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int group_teardown(void **state)
{
	curl_global_cleanup();
	return run("rm -rf '%s'", g_dir) == 0 ? 0 : -1;
}

static void test_symbols_debug_file_has_the_binary_build_id(void **state)
{
	char bid[129], bid2[129], reason[160];
	size_t len, len2, nf, nf2;
	uint8_t *dbg = slurp(g_debug, &len), *exe = slurp(g_exe, &len2);

	assert_int_equal(rvs_symbols_inspect(dbg, len, bid, &nf, reason, sizeof reason), 0);
	assert_int_equal(rvs_symbols_inspect(exe, len2, bid2, &nf2, reason, sizeof reason), 0);
	assert_string_equal(bid, bid2);
	assert_true(rvs_symbols_key_ok(bid));
	assert_true(nf > 10);
	free(dbg);
	free(exe);
}

static void test_symbols_lookup_names_the_function_at_an_offset(void **state)
{
	char bid[129], reason[160], path[256], name[256];
	size_t len, nf;
	uint8_t *dbg = slurp(g_debug, &len);
	uint64_t off = marker_offset();

	assert_int_equal(rvs_symbols_inspect(dbg, len, bid, &nf, reason, sizeof reason), 0);
	snprintf(path, sizeof path, "%s/%s.debug", g_dir, bid);
	assert_int_equal(rvs_write_file_atomic(path, dbg, len, 0600), 0);
	assert_int_equal(rvs_symbols_lookup(g_dir, bid, off, name, sizeof name), 0);
	assert_string_equal(name, "rvs_symbols_test_marker");
	assert_int_equal(rvs_symbols_lookup(g_dir, bid, off + 1, name, sizeof name), 0);
	assert_string_equal(name, "rvs_symbols_test_marker");
	assert_int_equal(rvs_symbols_lookup(g_dir, bid, 0, name, sizeof name), -ENOENT);
	assert_int_equal(rvs_symbols_lookup(g_dir, "00ff", off, name, sizeof name), -ENOENT);
	assert_int_equal(rvs_symbols_lookup(g_dir, "../t", off, name, sizeof name), -EINVAL);
	free(dbg);
}

static void test_symbols_malformed_files_refused_with_reason(void **state)
{
	static const uint8_t garbage[] = "this is not an ELF file at all";
	char bid[129], reason[160];
	size_t len, nf;
	uint8_t *dbg = slurp(g_debug, &len), *nobid, *stripped;

	assert_int_equal(
		rvs_symbols_inspect(garbage, sizeof garbage, bid, &nf, reason, sizeof reason),
		-EINVAL);
	assert_string_equal(reason, "not an ELF file");
	/* Truncated: the header promises sections that are not there. */
	for (size_t cut = 4; cut < 4096; cut = cut * 3 + 1) {
		reason[0] = '\0';
		assert_int_equal(rvs_symbols_inspect(dbg, cut, bid, &nf, reason, sizeof reason),
				 -EINVAL);
		assert_true(reason[0] != '\0');
	}
	nobid = slurp(g_nobid, &len);
	assert_int_equal(rvs_symbols_inspect(nobid, len, bid, &nf, reason, sizeof reason), -EINVAL);
	assert_string_equal(reason, "no GNU build-id note");
	stripped = slurp(g_stripped, &len);
	assert_int_equal(rvs_symbols_inspect(stripped, len, bid, &nf, reason, sizeof reason),
			 -EINVAL);
	assert_non_null(strstr(reason, "no functions"));
	free(dbg);
	free(nobid);
	free(stripped);
}

static void test_symbols_keys_are_bounded_lowercase_hex(void **state)
{
	char big[200];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_true(rvs_symbols_key_ok("00"));
	assert_true(rvs_symbols_key_ok("0123456789abcdef0123456789abcdef01234567"));
	assert_false(rvs_symbols_key_ok(""));
	assert_false(rvs_symbols_key_ok("0"));
	assert_false(rvs_symbols_key_ok("abc"));
	assert_false(rvs_symbols_key_ok("ABCD"));
	assert_false(rvs_symbols_key_ok("../etc/passwd"));
	assert_false(rvs_symbols_key_ok("aa/bb"));
	assert_false(rvs_symbols_key_ok("aa.."));
	assert_false(rvs_symbols_key_ok(big));
}

struct resp {
	char body[65536];
	size_t len;
	long code;
};

static size_t grab(char *p, size_t sz, size_t n, void *u)
{
	struct resp *r = u;
	size_t add = sz * n;
	if (r->len + add < sizeof r->body) {
		memcpy(r->body + r->len, p, add);
		r->len += add;
		r->body[r->len] = '\0';
	}
	return add;
}

/* One request; the response (body NUL-terminated) lives until the next. */
static struct resp *request(const struct rvsb *b, const char *method, const char *path,
			    const char *token, const uint8_t *body, size_t len, long want)
{
	static struct resp r;
	char auth[200];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	memset(&r, 0, sizeof r);
	rvsb_curl(b, c, path);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (r.code != want)
		fprintf(stderr, "%s %s: %ld %s\n", method, path, r.code, r.body);
	assert_int_equal(r.code, want);
	return &r;
}

static json_t *call(const struct rvsb *b, const char *method, const char *path, const char *token,
		    const uint8_t *body, size_t len, long want)
{
	json_t *j = json_loads(request(b, method, path, token, body, len, want)->body, 0, NULL);
	return j ? j : json_null();
}

static void test_symbols_https_upload_list_lookup_and_refusals(void **state)
{
	struct rvsb b;
	char bid[129], reason[160], path[300];
	size_t len, nf;
	uint8_t *dbg = slurp(g_debug, &len);
	json_t *j, *o;
	size_t i;
	int listed = 0;

	assert_int_equal(rvs_symbols_inspect(dbg, len, bid, &nf, reason, sizeof reason), 0);
	assert_int_equal(rvsb_init(&b), 0);
	assert_int_equal(rvsb_start(&b, NULL), 0);

	json_decref(call(&b, "POST", "/api/v1/symbols", NULL, dbg, len, 401));
	j = call(&b, "POST", "/api/v1/symbols", b.api_token, dbg, len, 201);
	assert_string_equal(json_string_value(json_object_get(j, "build_id")), bid);
	assert_int_equal(json_integer_value(json_object_get(j, "functions")), (json_int_t)nf);
	json_decref(j);

	j = call(&b, "GET", "/api/v1/symbols", b.api_token, NULL, 0, 200);
	json_array_foreach(json_object_get(j, "symbols"), i, o)
	{
		if (strcmp(json_string_value(json_object_get(o, "build_id")), bid) == 0 &&
		    json_integer_value(json_object_get(o, "bytes")) == (json_int_t)len)
			listed = 1;
	}
	assert_true(listed);
	json_decref(j);

	snprintf(path, sizeof path, "/api/v1/symbols/%s?offset=0x%" PRIx64, bid, marker_offset());
	j = call(&b, "GET", path, b.api_token, NULL, 0, 200);
	assert_string_equal(json_string_value(json_object_get(j, "function")),
			    "rvs_symbols_test_marker");
	json_decref(j);

	j = call(&b, "POST", "/api/v1/symbols", b.api_token, (const uint8_t *)"garbage", 7, 400);
	assert_string_equal(json_string_value(json_object_get(j, "error")), "not an ELF file");
	json_decref(j);
	json_decref(call(&b, "GET", "/api/v1/symbols/../../etc/passwd", b.api_token, NULL, 0, 400));
	json_decref(call(&b, "GET", "/api/v1/symbols/..%2F..%2Fetc", b.api_token, NULL, 0, 400));
	json_decref(call(&b, "GET", "/api/v1/symbols/ABCD", b.api_token, NULL, 0, 400));
	json_decref(call(&b, "GET", "/api/v1/symbols/00ff", b.api_token, NULL, 0, 404));
	snprintf(path, sizeof path, "/api/v1/symbols/%s?offset=zz", bid);
	json_decref(call(&b, "GET", path, b.api_token, NULL, 0, 400));
	json_decref(call(&b, "DELETE", "/api/v1/symbols", b.api_token, NULL, 0, 405));
	/* Nothing but <build-id>.debug files was written into the store. */
	assert_int_equal(run("test \"$(ls '%s/d/symbols')\" = '%s.debug'", b.dir, bid), 0);
	assert_int_equal(rvsb_stop(&b), 0);
	free(dbg);
}

/* The trace's top self-time method names, ';'-joined, once it is decoded
 * and `want` is among them (or the guard runs out: then what it has). */
static void wait_top_self(const struct rvsb *b, const char *trace_id, const char *want, char *out,
			  size_t cap)
{
	char path[128];
	double until = rvsb_now() + 60;

	snprintf(path, sizeof path, "/api/v1/traces/%s", trace_id);
	do {
		json_t *j = call(b, "GET", path, b->api_token, NULL, 0, 200), *o;
		size_t i, n = 0;

		out[0] = '\0';
		if (!strcmp(json_string_value(json_object_get(j, "state")) ?: "", "decoded"))
			json_array_foreach(json_object_get(j, "top_self"), i, o) n +=
				(size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s;",
						 json_string_value(json_object_get(o, "method")));
		json_decref(j);
		if (out[0] && strstr(out, want))
			return;
		usleep(50 * 1000);
	} while (rvsb_now() < until);
}

/* Enrols, uploads capture[0..len) uncompressed; the server's trace id. */
static void upload_capture(const struct rvsb *b, const uint8_t *capture, size_t len, uint8_t seed,
			   char trace_id[40])
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__EnrollResponse *er;
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__UploadAck *ack;
	struct resp *r;
	uint8_t id[16], small[512], *body;
	size_t n;
	char token[160];

	q.enrollment_secret = (char *)b->secret;
	n = rearview__enroll_request__pack(&q, small);
	r = request(b, "POST", "/v1/enroll", NULL, small, n, 200);
	er = rearview__enroll_response__unpack(NULL, r->len, (const uint8_t *)r->body);
	assert_non_null(er);
	snprintf(token, sizeof token, "%s", er->device_token);
	rearview__enroll_response__free_unpacked(er, NULL);
	memset(id, seed, sizeof id);
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)"symfix";
	e.app = &app;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = (uint8_t *)capture;
	e.payload.len = len;
	e.payload_size = len;
	n = rearview__upload_envelope__get_packed_size(&e);
	body = malloc(n);
	assert_non_null(body);
	rearview__upload_envelope__pack(&e, body);
	r = request(b, "POST", "/v1/uploads", token, body, n, 200);
	ack = rearview__upload_ack__unpack(NULL, r->len, (const uint8_t *)r->body);
	assert_non_null(ack);
	snprintf(trace_id, 40, "%s", ack->trace_id);
	rearview__upload_ack__free_unpacked(ack, NULL);
	free(body);
}

/* A stripped program's capture is indexed with "module+0x…" names; when
 * its debug file reaches the symbol store the trace is decoded again and
 * indexed with the function names, and a later capture is named at once. */
static void test_symbols_traces_are_resymbolized_when_their_symbols_arrive(void **state)
{
	struct rvsb b;
	char cap_path[160], trace[40], later[40], names[4096];
	size_t caplen, dbglen;
	uint8_t *capture, *dbg;
	json_t *j;

	(void)state;
	snprintf(cap_path, sizeof cap_path, "%s/symfix.rvc", g_dir);
	assert_int_equal(
		run("RV_TRACE=1 RV_TRACE_FILE='%s' '%s.stripped' >/dev/null", cap_path, RVS_SYMFIX),
		0);
	capture = slurp(cap_path, &caplen);
	dbg = slurp(RVS_SYMFIX ".debug", &dbglen);
	assert_int_equal(rvsb_init(&b), 0);
	assert_int_equal(rvsb_start(&b, NULL), 0);

	upload_capture(&b, capture, caplen, 0x61, trace);
	wait_top_self(&b, trace, "symfix.stripped+0x", names, sizeof names);
	assert_non_null(strstr(names, "symfix.stripped+0x"));
	assert_null(strstr(names, "symfix_hot_leaf"));

	j = call(&b, "POST", "/api/v1/symbols", b.api_token, dbg, dbglen, 201);
	json_decref(j);
	wait_top_self(&b, trace, "symfix_hot_leaf", names, sizeof names);
	assert_non_null(strstr(names, "symfix_hot_leaf;"));
	assert_non_null(strstr(names, "symfix_outer;"));
	assert_null(strstr(names, "symfix.stripped+0x"));

	/* With the symbols stored, the next capture is named at its decode. */
	upload_capture(&b, capture, caplen, 0x62, later);
	wait_top_self(&b, later, "symfix_hot_leaf", names, sizeof names);
	assert_non_null(strstr(names, "symfix_hot_leaf;"));
	assert_int_equal(rvsb_stop(&b), 0);
	free(capture);
	free(dbg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbols_debug_file_has_the_binary_build_id),
		cmocka_unit_test(test_symbols_lookup_names_the_function_at_an_offset),
		cmocka_unit_test(test_symbols_malformed_files_refused_with_reason),
		cmocka_unit_test(test_symbols_keys_are_bounded_lowercase_hex),
		cmocka_unit_test(test_symbols_https_upload_list_lookup_and_refusals),
		cmocka_unit_test(test_symbols_traces_are_resymbolized_when_their_symbols_arrive),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
