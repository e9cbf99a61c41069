/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — the INI configuration file (libinih), section [server].
 * Unknown keys and bad numbers are errors, so a typo never silently falls
 * back to a default.  Relative paths are taken relative to data_dir.
 */

#include "base/config.h"
#include "base/text.h"
#include <errno.h>
#include <stddef.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct load {
	struct rvs_config *cfg;
	char *err;
	size_t errlen;
};

static int parse_u64(const char *v, uint64_t max, uint64_t *out)
{
	int64_t x;
	if (rvs_parse_i64(v, &x) || x < 0 || (uint64_t)x > max || v[0] == '-')
		return -1;
	*out = (uint64_t)x;
	return 0;
}

static int set_str(char *dst, size_t cap, const char *v)
{
	return snprintf(dst, cap, "%s", v) >= (int)cap ? -1 : 0;
}

/* The regression alerts' keys (rvs.h): 1 when name is one (bad set for a
 * bad value), else 0. */
static int regress_key(struct rvs_config *c, const char *name, const char *value, int *bad)
{
	static const struct {
		const char *key;
		size_t off;
		double min, max;
	} reals[] = {
		{"regress_margin", offsetof(struct rvs_config, regress_margin), 0, 100},
		{"regress_alert_ratio", offsetof(struct rvs_config, regress_alert_ratio), 1, 1e6},
		{"regress_alert_q", offsetof(struct rvs_config, regress_alert_q), 0, 1},
	};
	static const struct {
		const char *key;
		size_t off;
		uint64_t max;
	} nums[] = {
		{"regress_interval_ms", offsetof(struct rvs_config, regress_interval_ms), 86400000},
		{"regress_min_traces", offsetof(struct rvs_config, regress_min_traces), 1000000},
		{"webhook_max_attempts", offsetof(struct rvs_config, webhook_max_attempts), 100},
		{"webhook_backoff_ms", offsetof(struct rvs_config, webhook_backoff_ms), 3600000},
		{"webhook_timeout_ms", offsetof(struct rvs_config, webhook_timeout_ms), 600000},
	};
	uint64_t u;

	if (strcmp(name, "webhook_urls") == 0)
		*bad = set_str(c->webhook_urls, sizeof c->webhook_urls, value);
	else if (strcmp(name, "webhook_secret_file") == 0)
		*bad = set_str(c->webhook_secret_file, sizeof c->webhook_secret_file, value);
	else if (strcmp(name, "public_url") == 0)
		*bad = set_str(c->public_url, sizeof c->public_url, value);
	else {
		for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
			char *end;
			double d;
			if (strcmp(name, reals[i].key))
				continue;
			d = strtod(value, &end);
			*bad = end == value || *end || !(d >= reals[i].min) || d > reals[i].max;
			if (!*bad)
				memcpy((char *)c + reals[i].off, &d, sizeof d);
			return 1;
		}
		for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
			if (strcmp(name, nums[i].key))
				continue;
			*bad = parse_u64(value, nums[i].max, &u) || u == 0;
			if (!*bad) {
				uint32_t v = (uint32_t)u;
				memcpy((char *)c + nums[i].off, &v, sizeof v);
			}
			return 1;
		}
		return 0;
	}
	return 1;
}

static int on_kv(void *user, const char *section, const char *name, const char *value)
{
	struct load *l = user;
	struct rvs_config *c = l->cfg;
	uint64_t u;
	int bad = 0;

	if (strcmp(section, "server") != 0 && strcmp(section, "store") != 0) {
		snprintf(l->err, l->errlen, "unknown section [%s]", section);
		return 0;
	}
	if (strcmp(section, "store") == 0) {
		/* The blob store (blob.h): backend and S3 settings. */
		if (strcmp(name, "blobs") == 0)
			bad = set_str(c->blobs, sizeof c->blobs, value);
		else if (strcmp(name, "s3_endpoint") == 0)
			bad = set_str(c->s3_endpoint, sizeof c->s3_endpoint, value);
		else if (strcmp(name, "s3_region") == 0)
			bad = set_str(c->s3_region, sizeof c->s3_region, value);
		else if (strcmp(name, "s3_access_key") == 0)
			bad = set_str(c->s3_access_key, sizeof c->s3_access_key, value);
		else if (strcmp(name, "s3_secret_file") == 0)
			bad = set_str(c->s3_secret_file, sizeof c->s3_secret_file, value);
		else {
			snprintf(l->err, l->errlen, "unknown key [store] %s", name);
			return 0;
		}
	} else if (strcmp(name, "listen") == 0) {
		const char *colon = strrchr(value, ':');
		char host[64];
		if (!colon || (size_t)(colon - value) >= sizeof host ||
		    parse_u64(colon + 1, 65535, &u))
			bad = 1;
		else {
			memcpy(host, value, (size_t)(colon - value));
			host[colon - value] = '\0';
			/* [::1]:8443 form */
			if (host[0] == '[') {
				size_t n = strlen(host);
				if (n < 2 || host[n - 1] != ']')
					bad = 1;
				host[n - 1] = '\0';
				memmove(host, host + 1, n - 1);
			}
			snprintf(c->listen_host, sizeof c->listen_host, "%s", host);
			c->listen_port = (int)u;
		}
	}
#define STR(key, field) \
	else if (strcmp(name, key) == 0) bad = set_str(c->field, sizeof c->field, value)
#define NUM(key, field, max)                     \
	else if (strcmp(name, key) == 0)         \
	{                                        \
		bad = parse_u64(value, max, &u); \
		if (!bad)                        \
			c->field = u;            \
	}
	STR("data_dir", data_dir);
	STR("tls_cert", tls_cert);
	STR("tls_key", tls_key);
	STR("enrollment_secret_file", enroll_secret_file);
	STR("policy_file", policy_file);
	STR("database", database);
	STR("blob_dir", blob_dir);
	STR("port_file", port_file);
	STR("symbols_dir", symbols_dir);
	NUM("max_body_bytes", max_body_bytes, (uint64_t)1 << 32)
	NUM("max_header_bytes", max_header_bytes, 1 << 20)
	NUM("max_connections", max_connections, 1 << 20)
	NUM("request_timeout_ms", request_timeout_ms, 3600000)
	NUM("idle_timeout_ms", idle_timeout_ms, 3600000)
	NUM("search_budget_ms", search_budget_ms, 600000)
	NUM("search_budget_rows", search_budget_rows, 100000000)
	NUM("upload_burst", upload_burst, 1 << 20)
	NUM("auth_fail_per_min", auth_fail_per_min, 1 << 20)
	NUM("auth_fail_burst", auth_fail_burst, 1 << 20)
	NUM("enroll_per_min", enroll_per_min, 1 << 20)
	NUM("enroll_burst", enroll_burst, 1 << 20)
	NUM("enroll_secret_per_min", enroll_secret_per_min, 1 << 20)
	NUM("enroll_secret_burst", enroll_secret_burst, 1 << 20)
	NUM("max_conns_per_addr", max_conns_per_addr, 1 << 20)
	NUM("handshake_pressure_ms", handshake_pressure_ms, 1 << 30)
	NUM("retention_interval_s", retention_interval_s, 86400 * 7)
	NUM("decode_jobs", decode_jobs, 4)
	NUM("decode_lease_s", decode_lease_s, 86400)
	NUM("decode_poll_s", decode_poll_s, 86400)
	NUM("login_hashers", login_hashers, 64)
	NUM("max_tokens_per_user", max_tokens_per_user, 1 << 16)
	NUM("trace_cache_mb", trace_cache_mb, 1 << 16)
	else if (strcmp(name, "retention_days") == 0)
	{
		char *end;
		double d = strtod(value, &end);
		if (end == value || *end || !(d >= 0) || d > 36500)
			bad = 1;
		else
			c->retention_days = d;
	}
	else if (regress_key(c, name, value, &bad))
	{
	}
	else if (strcmp(name, "upload_rate_per_min") == 0)
	{
		char *end;
		double d = strtod(value, &end);
		if (end == value || *end || !(d > 0) || d > 1e6)
			bad = 1;
		else
			c->upload_rate_per_min = d;
	}
	else
	{
		snprintf(l->err, l->errlen, "unknown key %s", name);
		return 0;
	}
#undef STR
#undef NUM
	if (bad) {
		snprintf(l->err, l->errlen, "bad value for %s: %s", name, value);
		return 0;
	}
	return 1;
}

static int resolve(const char *dir, char *path, size_t cap)
{
	char tmp[1024];
	if (path[0] == '/' || path[0] == '\0' || strstr(path, "://"))
		return 0; /* absolute, unset, or a URI (database = postgresql://…) */
	if (snprintf(tmp, sizeof tmp, "%s/%s", dir, path) >= (int)sizeof tmp)
		return -1;
	return set_str(path, cap, tmp);
}

unsigned rvs_default_decode_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 2 ? 1 : 2;
}

int rvs_config_load(const char *path, struct rvs_config *c, char *err, size_t errlen)
{
	struct load l = {c, err, errlen};
	int line;

	memset(c, 0, sizeof *c);
	snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
	c->listen_port = 8443;
	snprintf(c->tls_cert, sizeof c->tls_cert, "server.crt");
	snprintf(c->tls_key, sizeof c->tls_key, "server.key");
	snprintf(c->enroll_secret_file, sizeof c->enroll_secret_file, "enrollment.secret");
	snprintf(c->policy_file, sizeof c->policy_file, "policy/current.spb");
	snprintf(c->database, sizeof c->database, "rearview.db");
	snprintf(c->blob_dir, sizeof c->blob_dir, "blobs");
	snprintf(c->port_file, sizeof c->port_file, "server.port");
	snprintf(c->symbols_dir, sizeof c->symbols_dir, "symbols");
	c->max_body_bytes = 64ull << 20;
	c->max_header_bytes = 16384;
	c->max_connections = 256;
	c->request_timeout_ms = 30000;
	c->idle_timeout_ms = 60000;
	c->search_budget_ms = 400;
	c->search_budget_rows = 400000;
	c->upload_rate_per_min = 60;
	c->retention_days = RVS_DEFAULT_RETENTION_DAYS;
	c->retention_interval_s = 3600;
	c->decode_jobs = rvs_default_decode_jobs();
	c->decode_lease_s = 300;
	c->decode_poll_s = 30;
	c->upload_burst = 30;
	c->trace_cache_mb = 256;
	c->auth_fail_per_min = 10;
	c->auth_fail_burst = 20;
	c->enroll_per_min = 10;
	c->enroll_burst = 20;
	c->enroll_secret_per_min = 600;
	c->enroll_secret_burst = 200;
	c->max_conns_per_addr = 32;
	c->handshake_pressure_ms = 2000;
	c->login_hashers = 1;
	c->max_tokens_per_user = 20;
	c->regress_interval_ms = 60000;
	c->regress_min_traces = 20;
	c->regress_margin = 0.25;
	c->regress_alert_ratio = 1.5;
	c->regress_alert_q = 0.01;
	snprintf(c->webhook_secret_file, sizeof c->webhook_secret_file, "webhook.secret");
	c->webhook_max_attempts = 8;
	c->webhook_backoff_ms = 1000;
	c->webhook_timeout_ms = 10000;
	err[0] = '\0';
	errno = 0;
	line = ini_parse(path, on_kv, &l);
	/* -1: fopen failed (errno says why); -2: inih's own allocation failed. */
	if (line == -2 || (line < 0 && errno == ENOMEM)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (line < 0) {
		snprintf(err, errlen, "cannot read %s", path);
		return -ENOENT;
	}
	if (line > 0) {
		if (!err[0])
			snprintf(err, errlen, "syntax error");
		char msg[256];
		snprintf(msg, sizeof msg, "%s:%d: %s", path, line, err);
		snprintf(err, errlen, "%s", msg);
		return -EINVAL;
	}
	if (!c->data_dir[0]) {
		snprintf(err, errlen, "%s: data_dir is required", path);
		return -EINVAL;
	}
	if (resolve(c->data_dir, c->tls_cert, sizeof c->tls_cert) ||
	    resolve(c->data_dir, c->tls_key, sizeof c->tls_key) ||
	    resolve(c->data_dir, c->enroll_secret_file, sizeof c->enroll_secret_file) ||
	    resolve(c->data_dir, c->policy_file, sizeof c->policy_file) ||
	    resolve(c->data_dir, c->database, sizeof c->database) ||
	    resolve(c->data_dir, c->blob_dir, sizeof c->blob_dir) ||
	    resolve(c->data_dir, c->port_file, sizeof c->port_file) ||
	    resolve(c->data_dir, c->symbols_dir, sizeof c->symbols_dir) ||
	    resolve(c->data_dir, c->webhook_secret_file, sizeof c->webhook_secret_file) ||
	    (c->s3_secret_file[0] &&
	     resolve(c->data_dir, c->s3_secret_file, sizeof c->s3_secret_file)) ||
	    (c->blobs[0] && strncmp(c->blobs, "s3://", 5) != 0 &&
	     resolve(c->data_dir, c->blobs, sizeof c->blobs))) {
		snprintf(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	if (c->max_connections == 0 || c->max_header_bytes < 256 || c->request_timeout_ms == 0 ||
	    c->idle_timeout_ms == 0 || c->upload_burst == 0 || c->retention_interval_s == 0 ||
	    c->decode_jobs == 0 || c->decode_lease_s == 0 || c->auth_fail_per_min == 0 ||
	    c->auth_fail_burst == 0 || c->login_hashers == 0 || c->enroll_per_min == 0 ||
	    c->enroll_burst == 0 || c->enroll_secret_per_min == 0 || c->enroll_secret_burst == 0 ||
	    c->max_conns_per_addr == 0 || c->handshake_pressure_ms == 0 || c->decode_poll_s == 0) {
		snprintf(err, errlen, "%s: a limit is zero or too small", path);
		return -EINVAL;
	}
	return 0;
}
