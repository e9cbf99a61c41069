/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — defaults, INI parsing through libinih, and value validation.
 * Every numeric value goes through strtoull/strtod with end and range checks;
 * group names are resolved to gids once, at load time.
 */
#include "config.h"
#include "rearview/common.h"

#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rearview/common.pb-c.h"

void rvd_config_defaults(struct rvd_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", "/run/rearview");
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", "/var/lib/rearview");
	c->log_level = RVD_LOG_INFO;
	c->control_mode = 0666;
	c->events_mode = 0660;
	c->admin_mode = 0660;
	c->events_gid = (gid_t)-1;
	c->settings_gid = (gid_t)-1;
	c->max_frame = 1u << 20;
	c->max_peers = 256;
	c->max_events_peers = 64;
	c->max_admin_peers = 32;
	c->max_peers_per_uid = 64;
	c->register_timeout_ms = 5000;
	c->traced_apps = 2;
	c->buffer_bytes = 32u << 20; /* = RVT_DEFAULT_BUFFER_BYTES (tracer/BENCHMARKS.md) */
	c->jank_frames = 3;
	c->jank_budget_ns = 16666667;
	c->touch_threshold_ns = 400000000;
	snprintf(c->thermal_root, sizeof(c->thermal_root), "%s", "/sys/class/thermal");
	c->thermal_poll_ms = 5000;
	c->jank_counts_flush_ms = 60000;
	snprintf(c->corr_metric, sizeof(c->corr_metric), "%s", "gpu_busy");
	c->corr_threshold = 0.8;
	c->corr_window_ns = 1000000000ull;
	c->capture_timeout_ms = 5000;
	c->capture_max_bytes = 64ull << 20;
	c->consent_default = REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL;
	c->spool_max_bytes = 256ull << 20;
	c->spool_max_files = 100;
	c->spool_history_rows = 100;
	c->backoff_initial_ms = 1000;
	c->backoff_max_ms = 300000;
	c->max_in_flight = 1;
	c->policy_interval_s = 3600;
	c->upload_timeout_s = 60;
	c->upload_metered = 0;
	c->zstd_level = 3;
	c->dbus_enabled = 1;
	snprintf(c->apps_dir, sizeof(c->apps_dir), "%s", "/etc/rearview/apps.d");
	c->unlisted = RVD_UNLISTED_QUALIFY;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (*v == '-' || *v == '\0')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end != '\0' || x < min || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

static int parse_u32(const char *v, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t x;
	int rc = parse_u64(v, min, max, &x);

	if (rc == 0)
		*out = (uint32_t)x;
	return rc;
}

static int parse_mode(const char *v, unsigned *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 8);
	if (errno || *v == '\0' || *end != '\0' || x > 0777)
		return -EINVAL;
	*out = (unsigned)x;
	return 0;
}

static int parse_group(const char *v, gid_t *out)
{
	struct group gr, *res = NULL;
	char buf[4096];

	if (*v == '\0') {
		*out = (gid_t)-1;
		return 0;
	}
	if (getgrnam_r(v, &gr, buf, sizeof(buf), &res) != 0 || !res) {
		uint64_t g;

		if (parse_u64(v, 0, UINT32_MAX - 1, &g) < 0)
			return -EINVAL;
		*out = (gid_t)g;
		return 0;
	}
	*out = res->gr_gid;
	return 0;
}

static int parse_path(const char *v, char *dst, size_t cap)
{
	if (v[0] != '/' || strlen(v) >= cap)
		return -EINVAL;
	snprintf(dst, cap, "%s", v);
	return 0;
}

static int parse_ms_ns(const char *v, uint64_t *out)
{
	uint64_t ms;

	if (parse_u64(v, 1, 3600000, &ms) < 0)
		return -EINVAL;
	*out = ms * 1000000ull;
	return 0;
}

int rvd_config_consent_parse(const char *v)
{
	if (!strcmp(v, "off"))
		return REARVIEW__CONSENT_LEVEL__CONSENT_OFF;
	if (!strcmp(v, "local"))
		return REARVIEW__CONSENT_LEVEL__CONSENT_LOCAL;
	if (!strcmp(v, "summary"))
		return REARVIEW__CONSENT_LEVEL__CONSENT_SUMMARY;
	if (!strcmp(v, "full"))
		return REARVIEW__CONSENT_LEVEL__CONSENT_FULL;
	return -EINVAL;
}

#define KEY(s, k) (!strcmp(section, s) && !strcmp(key, k))

int rvd_config_set(struct rvd_config *c, const char *section, const char *key, const char *v)
{
	if (KEY("daemon", "run_dir"))
		return parse_path(v, c->run_dir, sizeof(c->run_dir));
	if (KEY("daemon", "state_dir"))
		return parse_path(v, c->state_dir, sizeof(c->state_dir));
	if (KEY("daemon", "log_level")) {
		int l = rvd_log_level_parse(v);

		if (l < 0)
			return l;
		c->log_level = l;
		return 0;
	}
	if (KEY("sockets", "control_mode"))
		return parse_mode(v, &c->control_mode);
	if (KEY("sockets", "events_mode"))
		return parse_mode(v, &c->events_mode);
	if (KEY("sockets", "admin_mode"))
		return parse_mode(v, &c->admin_mode);
	if (KEY("sockets", "events_group"))
		return parse_group(v, &c->events_gid);
	if (KEY("sockets", "settings_group"))
		return parse_group(v, &c->settings_gid);
	if (KEY("sockets", "max_frame"))
		return parse_u32(v, 4096, 16u << 20, &c->max_frame);
	if (KEY("sockets", "max_peers"))
		return parse_u32(v, 1, 65536, &c->max_peers);
	if (KEY("sockets", "max_events_peers"))
		return parse_u32(v, 1, 65536, &c->max_events_peers);
	if (KEY("sockets", "max_admin_peers"))
		return parse_u32(v, 1, 65536, &c->max_admin_peers);
	if (KEY("sockets", "max_peers_per_uid"))
		return parse_u32(v, 0, 65536, &c->max_peers_per_uid);
	if (KEY("sockets", "register_timeout_ms"))
		return parse_u32(v, 10, 600000, &c->register_timeout_ms);
	if (KEY("spool", "max_bytes"))
		return parse_u64(v, 0, 1ull << 40, &c->spool_max_bytes);
	if (KEY("spool", "max_files"))
		return parse_u32(v, 0, 1000000, &c->spool_max_files);
	if (KEY("spool", "history_rows"))
		return parse_u32(v, 0, 1000000, &c->spool_history_rows);
	if (KEY("tracing", "traced_apps"))
		return parse_u32(v, 0, 64, &c->traced_apps);
	if (KEY("tracing", "buffer_bytes"))
		return parse_u64(v, 4096, 1ull << 30, &c->buffer_bytes);
	if (KEY("jank", "frames"))
		return parse_u32(v, 1, 1000, &c->jank_frames);
	if (KEY("jank", "counts_flush_ms"))
		return parse_u32(v, 100, 3600000, &c->jank_counts_flush_ms);
	if (KEY("jank", "budget_us")) {
		uint64_t us;

		if (parse_u64(v, 1, 10000000, &us) < 0)
			return -EINVAL;
		c->jank_budget_ns = us * 1000;
		return 0;
	}
	if (KEY("touch", "threshold_ms"))
		return parse_ms_ns(v, &c->touch_threshold_ns);
	if (KEY("thermal", "sysfs_root"))
		return parse_path(v, c->thermal_root, sizeof(c->thermal_root));
	if (KEY("thermal", "poll_ms"))
		return parse_u32(v, 0, 3600000, &c->thermal_poll_ms);
	if (KEY("correlation", "metric")) {
		if (*v == '\0' || strlen(v) >= sizeof(c->corr_metric))
			return -EINVAL;
		snprintf(c->corr_metric, sizeof(c->corr_metric), "%s", v);
		return 0;
	}
	if (KEY("correlation", "threshold")) {
		char *end;
		double x;

		errno = 0;
		x = strtod(v, &end);
		if (errno || *v == '\0' || *end != '\0' || !(x >= 0.0))
			return -EINVAL;
		c->corr_threshold = x;
		return 0;
	}
	if (KEY("correlation", "window_ms"))
		return parse_ms_ns(v, &c->corr_window_ns);
	if (KEY("capture", "timeout_ms"))
		return parse_u32(v, 10, 600000, &c->capture_timeout_ms);
	if (KEY("capture", "max_bytes"))
		return parse_u64(v, 4096, 1ull << 32, &c->capture_max_bytes);
	if (KEY("policy", "public_key")) {
		if (strlen(v) >= sizeof(c->policy_key))
			return -EINVAL;
		snprintf(c->policy_key, sizeof(c->policy_key), "%s", v);
		return 0;
	}
	if (KEY("upload", "server_url")) {
		/* HTTPS only: the device token and the traces never travel in clear. */
		if (*v && strncmp(v, "https://", 8) != 0)
			return -EINVAL;
		if (strlen(v) >= sizeof(c->server_url))
			return -EINVAL;
		snprintf(c->server_url, sizeof(c->server_url), "%s", v);
		return 0;
	}
	if (KEY("upload", "ca_file")) {
		if (*v == '\0') {
			c->ca_file[0] = '\0';
			return 0;
		}
		return parse_path(v, c->ca_file, sizeof(c->ca_file));
	}
	if (KEY("upload", "enrollment_secret_file"))
		return parse_path(v, c->enrollment_secret_file, sizeof(c->enrollment_secret_file));
	if (KEY("upload", "backoff_initial_ms"))
		return parse_u32(v, 1, 3600000, &c->backoff_initial_ms);
	if (KEY("upload", "backoff_max_ms"))
		return parse_u32(v, 1, 86400000, &c->backoff_max_ms);
	if (KEY("upload", "max_in_flight"))
		return parse_u32(v, 1, 16, &c->max_in_flight);
	if (KEY("upload", "policy_interval_s"))
		return parse_u32(v, 0, 604800, &c->policy_interval_s);
	if (KEY("upload", "timeout_s"))
		return parse_u32(v, 1, 3600, &c->upload_timeout_s);
	if (KEY("upload", "metered")) {
		if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
			c->upload_metered = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
			c->upload_metered = 0;
		else
			return -EINVAL;
		return 0;
	}
	if (KEY("upload", "zstd_level")) {
		uint32_t l = 0;

		if (parse_u32(v, 1, 19, &l) < 0)
			return -EINVAL;
		c->zstd_level = (int)l;
		return 0;
	}
	if (KEY("dbus", "enabled")) {
		if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1"))
			c->dbus_enabled = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0"))
			c->dbus_enabled = 0;
		else
			return -EINVAL;
		return 0;
	}
	if (KEY("identity", "apps_dir"))
		return parse_path(v, c->apps_dir, sizeof(c->apps_dir));
	if (KEY("identity", "unlisted")) {
		if (!strcmp(v, "qualify"))
			c->unlisted = RVD_UNLISTED_QUALIFY;
		else if (!strcmp(v, "refuse"))
			c->unlisted = RVD_UNLISTED_REFUSE;
		else
			return -EINVAL;
		return 0;
	}
	if (KEY("capture", "consent_default")) {
		int l = rvd_config_consent_parse(v);

		if (l < 0)
			return l;
		c->consent_default = l;
		return 0;
	}
	return -ENOENT;
}

struct load_ctx {
	struct rvd_config *c;
	const char *path;
	int error;
};

static int config_line_cb(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *ctx = user;
	int rc = rvd_config_set(ctx->c, section, name, value);

	if (rc == -ENOENT)
		rvd_err("%s: unknown key [%s] %s", ctx->path, section, name);
	else if (rc < 0)
		rvd_err("%s: bad value for [%s] %s: '%s'", ctx->path, section, name, value);
	if (rc < 0 && !ctx->error)
		ctx->error = -EINVAL;
	/* Keep going so every bad line is reported at once. */
	return 1;
}

/* Reads one INI file over c; 0, -errno when it cannot be opened, -EINVAL. */
static int load_file(struct rvd_config *c, const char *path)
{
	struct load_ctx ctx = {c, path, 0};
	FILE *f = fopen(path, "re");
	int rc;

	if (!f)
		return -errno;
	rc = ini_parse_file(f, config_line_cb, &ctx);
	fclose(f);
	if (rc > 0) {
		rvd_err("%s:%d: syntax error", path, rc);
		return -EINVAL;
	}
	if (rc < 0)
		return -ENOMEM;
	return ctx.error;
}

static int load_dropin(const char *path, void *c)
{
	int rc = load_file(c, path);

	if (rc < 0 && rc != -EINVAL)
		rvd_err("%s: %s", path, strerror(-rc));
	return rc < 0 ? -EINVAL : 0;
}

int rvd_config_load(struct rvd_config *c, const char *path)
{
	int rc = load_file(c, path);

	if (rc < 0)
		return rc;
	rc = rvc_conf_dropins(path, load_dropin, c);
	if (rc < 0 && rc != -EINVAL) {
		rvd_err("%s.d: %s", path, strerror(-rc));
		return -EINVAL;
	}
	return rc;
}
