/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h — rearviewd configuration: defaults, the INI file (libinih) and
 * command-line overrides.  deploy/rearviewd.conf.example documents each key
 * with its default; rvd_config_defaults() is the single source of them.
 */
#ifndef RVD_CONFIG_H
#define RVD_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

#define RVD_PATH_MAX 256

/* [identity] unlisted: a non-root peer's unlisted app id is qualified with
 * its uid ("name@uid1000"), or refused. */
enum { RVD_UNLISTED_QUALIFY, RVD_UNLISTED_REFUSE };

struct rvd_config {
	/* [daemon] */
	char run_dir[RVD_PATH_MAX];
	char state_dir[RVD_PATH_MAX];
	int log_level;
	/* [sockets] */
	unsigned control_mode;
	unsigned events_mode;
	unsigned admin_mode;
	gid_t events_gid;   /* (gid_t)-1: no group configured */
	gid_t settings_gid; /* (gid_t)-1: no group configured */
	uint32_t max_frame;
	uint32_t max_peers; /* control.sock */
	uint32_t max_events_peers;
	uint32_t max_admin_peers;
	uint32_t max_peers_per_uid;   /* control.sock and events.sock each; 0: no limit */
	uint32_t register_timeout_ms; /* a control peer must Register within this */
	/* [tracing] */
	uint32_t traced_apps; /* N most recently foreground apps */
	uint64_t buffer_bytes;
	/* [jank] */
	uint32_t jank_frames;
	uint64_t jank_budget_ns;
	/* How often the per-app frame counts are written (and sent) when they
	 * changed: what a crash may lose of them. */
	uint32_t jank_counts_flush_ms;
	/* [touch] */
	uint64_t touch_threshold_ns;
	/* [thermal] */
	char thermal_root[RVD_PATH_MAX];
	uint32_t thermal_poll_ms; /* 0 disables the poll */
	/* [correlation] */
	char corr_metric[64];
	double corr_threshold;
	uint64_t corr_window_ns;
	/* [capture] */
	uint32_t capture_timeout_ms;
	uint64_t capture_max_bytes;
	int consent_default; /* a ConsentLevel value */
	/* [spool] */
	uint64_t spool_max_bytes; /* capture files kept, oldest evicted first */
	uint32_t spool_max_files;
	/* Rows of finished captures (uploaded, or skipped without a file) kept
	 * for rvctl and the panel; older ones are deleted into the totals. */
	uint32_t spool_history_rows;
	/* [policy] */
	char policy_key[RVD_PATH_MAX]; /* PEM public key; "" = built-in default only */
	/* [upload] */
	char server_url[RVD_PATH_MAX]; /* "" disables the uploader */
	char ca_file[RVD_PATH_MAX];    /* PEM CA the server must chain to; "" = system store */
	char enrollment_secret_file[RVD_PATH_MAX];
	uint32_t backoff_initial_ms;
	uint32_t backoff_max_ms;
	uint32_t max_in_flight;
	uint32_t policy_interval_s; /* 0: fetch only on the server's hint */
	uint32_t upload_timeout_s;
	int upload_metered; /* the network is metered (policies may forbid uploads then) */
	int zstd_level;
	/* [identity] */
	char apps_dir[RVD_PATH_MAX]; /* the operator's app map (identity.h) */
	int unlisted;		     /* RVD_UNLISTED_*: an app id the map does not list */
	/* [dbus] */
	int dbus_enabled; /* serve org.rearview.Daemon1 when a system bus exists */
};

/* Fills `c` with the built-in defaults. */
void rvd_config_defaults(struct rvd_config *c);

/*
 * Reads the INI file at `path` over the values already in `c`, then each
 * drop-in `path`.d/NAME.conf in byte order of their names (a later file's
 * value wins).  Unknown sections or keys and bad values are errors in a
 * drop-in as in the file (a typo must not silently leave a default in
 * place).  Returns 0, -ENOENT/-EACCES when `path` cannot be opened, or
 * -EINVAL (the offending file or line is logged).
 */
int rvd_config_load(struct rvd_config *c, const char *path);

/* Applies one "section.key=value"-style setting; used by the file loader.
 * Returns 0 or -EINVAL. */
int rvd_config_set(struct rvd_config *c, const char *section, const char *key, const char *value);

/* "off"|"local"|"summary"|"full" → a ConsentLevel value, or -EINVAL. */
int rvd_config_consent_parse(const char *v);

#endif
