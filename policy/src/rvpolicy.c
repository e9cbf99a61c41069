/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rvpolicy — server-side authoring and device-side checking of signed
 * policy documents (librvpolicy on the command line).
 *
 *   rvpolicy keygen PRIV.pem PUB.pem
 *   rvpolicy sign PRIV.pem OUT [key=value ...] [campaign=SPEC ...]
 *   rvpolicy verify PUB.pem DOC [MIN_VERSION]
 *
 * sign keys: version, issued (unix s, default now), expires (unix s) or
 * ttl (seconds from issued), quota, selection (first-n|most-severe|targeted),
 * debounce, window, max-bytes, unmetered (0|1), jank-frames, frame-budget-us,
 * touch-ms, thermal-mc.  A campaign SPEC is comma-separated key=value:
 * id, prio, from, until, app (glob, repeatable), vmin, vmax, model, os,
 * kind (jank|touch|thermal|generic|manual, repeatable), sev, p, mode
 * (full|summary|stats), quota.
 * Exit: 0 ok, 1 refused/invalid, 2 usage.  Private keys are written 0600.
 */
#include "rearview/policy.h"
#include "rearview/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CAMPAIGNS 32
#define MAX_ITEMS     16

static const char usage_text[] =
	"usage: rvpolicy keygen PRIV.pem PUB.pem\n"
	"       rvpolicy sign PRIV.pem OUT [key=value ...] [campaign=SPEC ...]\n"
	"       rvpolicy verify PUB.pem DOC [MIN_VERSION]\n"
	"       rvpolicy --help | --version\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

static int write_file(const char *path, const void *p, size_t len, mode_t mode)
{
	int rc, fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	rc = rvc_write_all(fd, p, len);
	if (close(fd) && rc == 0)
		rc = -errno;
	return rc;
}

/* Reads at most max bytes (plus a NUL); -EFBIG beyond. */
static int read_file(const char *path, char **out, size_t *len, size_t max)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return -errno;
	buf = malloc(max + 2);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	fclose(f);
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || end == s || *end || *s == '-') ? -EINVAL : 0;
}

static int parse_kind(const char *s, Rearview__AnomalyKind *k)
{
	static const char *const names[] = {"", "jank", "touch", "thermal", "generic", "manual"};

	for (int i = 1; i < 6; i++)
		if (strcmp(s, names[i]) == 0) {
			*k = (Rearview__AnomalyKind)i;
			return 0;
		}
	return -EINVAL;
}

struct camp {
	Rearview__Campaign c;
	Rearview__VersionRange range, *ranges[1];
	char *apps[MAX_ITEMS], *models[MAX_ITEMS], *oses[MAX_ITEMS];
	Rearview__AnomalyKind kinds[MAX_ITEMS];
};

/* Parses SPEC in place (it points into argv). */
static int parse_campaign(char *spec, struct camp *k)
{
	char *save = NULL;
	uint64_t v;

	rearview__campaign__init(&k->c);
	rearview__version_range__init(&k->range);
	k->c.app_patterns = k->apps;
	k->c.device_models = k->models;
	k->c.os_builds = k->oses;
	k->c.kinds = k->kinds;
	for (char *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *val = strchr(kv, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(kv, "id")) {
			k->c.id = val;
		} else if (!strcmp(kv, "app") && k->c.n_app_patterns < MAX_ITEMS) {
			k->apps[k->c.n_app_patterns++] = val;
		} else if (!strcmp(kv, "model") && k->c.n_device_models < MAX_ITEMS) {
			k->models[k->c.n_device_models++] = val;
		} else if (!strcmp(kv, "os") && k->c.n_os_builds < MAX_ITEMS) {
			k->oses[k->c.n_os_builds++] = val;
		} else if (!strcmp(kv, "kind") && k->c.n_kinds < MAX_ITEMS) {
			if (parse_kind(val, &k->kinds[k->c.n_kinds++]))
				return -EINVAL;
		} else if (!strcmp(kv, "vmin") || !strcmp(kv, "vmax")) {
			*(kv[1] == 'm' && kv[2] == 'i' ? &k->range.min : &k->range.max) = val;
			k->ranges[0] = &k->range;
			k->c.app_versions = k->ranges;
			k->c.n_app_versions = 1;
		} else if (!strcmp(kv, "p")) {
			char *end;
			k->c.sample_probability = strtod(val, &end);
			if (end == val || *end)
				return -EINVAL;
		} else if (!strcmp(kv, "mode")) {
			if (!strcmp(val, "full"))
				k->c.upload_mode = REARVIEW__UPLOAD_MODE__UPLOAD_FULL;
			else if (!strcmp(val, "summary"))
				k->c.upload_mode = REARVIEW__UPLOAD_MODE__UPLOAD_SUMMARY;
			else if (!strcmp(val, "stats"))
				k->c.upload_mode = REARVIEW__UPLOAD_MODE__UPLOAD_SIGNATURE_STATS;
			else
				return -EINVAL;
		} else if (parse_u64(val, &v) == 0 && v <= UINT32_MAX) {
			if (!strcmp(kv, "prio"))
				k->c.priority = (int32_t)v;
			else if (!strcmp(kv, "from"))
				k->c.valid_from_s = v;
			else if (!strcmp(kv, "until"))
				k->c.valid_until_s = v;
			else if (!strcmp(kv, "sev"))
				k->c.min_severity = (uint32_t)v;
			else if (!strcmp(kv, "quota"))
				k->c.quota = (uint32_t)v;
			else
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	return (k->c.id && *k->c.id) ? 0 : -EINVAL; /* init sets "" */
}

static int cmd_keygen(int argc, char **argv)
{
	char *priv, *pub, kid[17];
	int rc;

	if (argc != 4)
		return usage();
	rc = rvp_keygen(&priv, &pub);
	if (rc) {
		fprintf(stderr, "rvpolicy: keygen: %s\n", strerror(-rc));
		return 1;
	}
	rc = write_file(argv[2], priv, strlen(priv), 0600);
	if (!rc)
		rc = write_file(argv[3], pub, strlen(pub), 0644);
	if (!rc)
		rc = rvp_key_id(pub, kid);
	free(priv);
	free(pub);
	if (rc) {
		fprintf(stderr, "rvpolicy: keygen: %s\n", strerror(-rc));
		return 1;
	}
	printf("key_id %s\n", kid);
	return 0;
}

static int cmd_sign(int argc, char **argv)
{
	static struct camp camps[MAX_CAMPAIGNS];
	Rearview__Campaign *cptr[MAX_CAMPAIGNS];
	Rearview__PolicyBody b = REARVIEW__POLICY_BODY__INIT;
	Rearview__DetectorThresholds th = REARVIEW__DETECTOR_THRESHOLDS__INIT;
	const Rearview__DetectorThresholds *dth = rvp_policy_default()->thresholds;
	uint64_t ttl = 0, v;
	char *key = NULL;
	size_t keylen, dlen;
	uint8_t *doc = NULL;
	int rc;

	if (argc < 4)
		return usage();
	th.jank_frames = dth->jank_frames;
	th.frame_budget_us = dth->frame_budget_us;
	th.touch_latency_ms = dth->touch_latency_ms;
	th.thermal_trip_mc = dth->thermal_trip_mc;
	b.thresholds = &th;
	b.issued_at_s = (uint64_t)time(NULL);
	b.campaigns = cptr;
	for (int i = 4; i < argc; i++) {
		char *val = strchr(argv[i], '=');
		if (!val)
			return usage();
		*val++ = '\0';
		const char *k = argv[i];
		if (!strcmp(k, "campaign")) {
			if (b.n_campaigns == MAX_CAMPAIGNS ||
			    parse_campaign(val, &camps[b.n_campaigns])) {
				fprintf(stderr, "rvpolicy: bad campaign spec\n");
				return 2;
			}
			cptr[b.n_campaigns] = &camps[b.n_campaigns].c;
			b.n_campaigns++;
			continue;
		}
		if (!strcmp(k, "selection")) {
			if (!strcmp(val, "first-n"))
				b.selection = REARVIEW__SELECTION_MODE__SELECT_FIRST_N;
			else if (!strcmp(val, "most-severe"))
				b.selection = REARVIEW__SELECTION_MODE__SELECT_MOST_SEVERE;
			else if (!strcmp(val, "targeted"))
				b.selection = REARVIEW__SELECTION_MODE__SELECT_TARGETED;
			else
				return usage();
			continue;
		}
		if (!strcmp(k, "thermal-mc")) {
			char *end;
			long t = strtol(val, &end, 10);
			if (end == val || *end || t < -300000 || t > 300000)
				return usage();
			th.thermal_trip_mc = (int32_t)t;
			continue;
		}
		if (parse_u64(val, &v))
			return usage();
		if (!strcmp(k, "version"))
			b.version = v;
		else if (!strcmp(k, "issued"))
			b.issued_at_s = v;
		else if (!strcmp(k, "expires"))
			b.expires_at_s = v;
		else if (!strcmp(k, "ttl"))
			ttl = v;
		else if (!strcmp(k, "max-bytes"))
			b.max_upload_bytes = v;
		else if (v > UINT32_MAX)
			return usage();
		else if (!strcmp(k, "quota"))
			b.weekly_quota = (uint32_t)v;
		else if (!strcmp(k, "debounce"))
			b.debounce_captures = (uint32_t)v;
		else if (!strcmp(k, "window"))
			b.debounce_window_s = (uint32_t)v;
		else if (!strcmp(k, "unmetered"))
			b.unmetered_only = v != 0;
		else if (!strcmp(k, "jank-frames"))
			th.jank_frames = (uint32_t)v;
		else if (!strcmp(k, "frame-budget-us"))
			th.frame_budget_us = (uint32_t)v;
		else if (!strcmp(k, "touch-ms"))
			th.touch_latency_ms = (uint32_t)v;
		else
			return usage();
	}
	if (ttl)
		b.expires_at_s = b.issued_at_s + ttl;
	if (b.version == 0) {
		fprintf(stderr, "rvpolicy: version=N (N >= 1) is required\n");
		return 2;
	}
	rc = read_file(argv[2], &key, &keylen, 16384);
	if (!rc)
		rc = rvp_policy_sign(&b, key, &doc, &dlen);
	if (key) {
		memset(key, 0, keylen);
		free(key);
	}
	if (!rc)
		rc = write_file(argv[3], doc, dlen, 0644);
	free(doc);
	if (rc) {
		fprintf(stderr, "rvpolicy: sign: %s\n", strerror(-rc));
		return 1;
	}
	printf("signed version %llu, %zu bytes\n", (unsigned long long)b.version, dlen);
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	Rearview__PolicyBody *b = NULL;
	char *pub = NULL, *doc = NULL;
	size_t plen, dlen;
	uint64_t minv = 0;
	int rc;

	if (argc < 4 || argc > 5 || (argc == 5 && parse_u64(argv[4], &minv)))
		return usage();
	rc = read_file(argv[2], &pub, &plen, 16384);
	if (!rc) {
		rc = read_file(argv[3], &doc, &dlen, RVP_MAX_DOCUMENT_BYTES);
		if (rc == -EFBIG) {
			printf("refused: %s\n", rvp_verify_error_name(RVP_VERIFY_OVERSIZED));
			free(pub);
			return 1;
		}
	}
	if (!rc)
		rc = rvp_policy_verify((const uint8_t *)doc, dlen, pub, minv, (int64_t)time(NULL),
				       &b);
	free(pub);
	free(doc);
	if (rc < 0) {
		fprintf(stderr, "rvpolicy: verify: %s\n", strerror(-rc));
		return 1;
	}
	if (rc > 0) {
		printf("refused: %s\n", rvp_verify_error_name((enum rvp_verify_error)rc));
		return 1;
	}
	printf("ok version=%llu issued=%llu expires=%llu quota=%u campaigns=%zu\n",
	       (unsigned long long)b->version, (unsigned long long)b->issued_at_s,
	       (unsigned long long)b->expires_at_s, rvp_policy_weekly_quota(b), b->n_campaigns);
	rearview__policy_body__free_unpacked(b, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return rvc_print_version("rvpolicy");
	if (!strcmp(argv[1], "keygen"))
		return cmd_keygen(argc, argv);
	if (!strcmp(argv[1], "sign"))
		return cmd_sign(argc, argv);
	if (!strcmp(argv[1], "verify"))
		return cmd_verify(argc, argv);
	return usage();
}
