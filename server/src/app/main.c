/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — rearview-server's command line and process lifecycle.
 *
 *   rearview-server init DIR [--hostname NAME]...   create a data directory
 *   rearview-server cert --config FILE --hostname NAME...
 *                                     a new server certificate (init.c)
 *   rearview-server passwd --config FILE [USER]     a new password (init.c)
 *   rearview-server requeue --config FILE --reason SUBSTR | --all
 *                                                   quarantined uploads decoded again
 *   rearview-server reindex --config FILE [--all] [--after ID] [--batch N]
 *                                                   traces without aggregates indexed again
 *   rearview-server migrate --config FILE           apply pending migrations
 *   rearview-server --config FILE     run the server
 * A command's bad usage exits 2, its failure 1.
 *
 * Startup: config → default policy published if none (policy_pub.c) →
 * decoder (decode.c) → enrolment secret → store opened on
 * the work queue →
 * listener bound → bound port written to port_file and logged → READY=1 to
 * systemd (sd_notify, when NOTIFY_SOCKET is set).  SIGTERM or SIGINT:
 * STOPPING=1, stop accepting, let in-flight requests finish, close the
 * store on the work queue, exit 0.
 */
#include "rearview/common.h"

#include "api/api.h"
#include "pipeline/decode.h"
#include "http/net.h"
#include "base/log.h"
#include "base/util.h"
#include "base/metrics.h"
#include "blob/blob.h"
#include "base/config.h"
#include "app/init.h"
#include "model/policy.h"
#include "store/store.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

/* Allocations from this size up are mappings of their own. */
#define RVS_MMAP_THRESHOLD (1u << 20)

struct app {
	uv_loop_t *loop;
	struct rvs_config cfg;
	struct rvs_metrics metrics;
	struct rvs_api *api;
	struct rvs_decode *dec;
	struct rvs_decoder decoder;
	struct rvs_server *srv;
	uv_signal_t sigterm, sigint;
	int exit_code;
	int stopping;
};

/* Tells systemd (NOTIFY_SOCKET, sd_notify(3)) of a state change: nothing
 * when it is unset; a failure is logged, never fatal. */
static void notify(const char *state)
{
	int rc = sd_notify(0, state);

	if (rc < 0)
		rvs_log("warn", "sd_notify failed", "err=%d", rc);
}

static void on_sig_closed(uv_handle_t *h)
{
}

static void on_api_stopped(void *arg)
{
	struct app *a = arg;
	uv_close((uv_handle_t *)&a->sigterm, on_sig_closed);
	uv_close((uv_handle_t *)&a->sigint, on_sig_closed);
	rvs_log("info", "stopped", NULL);
}

static void on_drained(void *arg)
{
	struct app *a = arg;
	rvs_api_stop(a->api, on_api_stopped, a);
}

static void stop(struct app *a)
{
	if (a->stopping)
		return;
	a->stopping = 1;
	rvs_log("info", "draining", NULL);
	notify("STOPPING=1\nSTATUS=draining");
	if (a->srv)
		rvs_server_drain(a->srv, on_drained, a);
	else
		on_drained(a);
}

static void on_signal(uv_signal_t *s, int signum)
{
	stop(s->data);
}

static void on_ready(void *arg, int rc)
{
	struct app *a = arg;
	char port[16], status[320];
	int n;

	if (rc) {
		rvs_log("error", "cannot open store", "path=\"%s\" err=%d", a->cfg.database, rc);
		a->exit_code = 1;
		stop(a);
		return;
	}
	rc = rvs_server_new(a->loop, &a->cfg, &a->metrics, rvs_api_handle, a->api, &a->srv);
	if (rc) {
		a->exit_code = 1;
		stop(a);
		return;
	}
	n = snprintf(port, sizeof port, "%d\n", rvs_server_port(a->srv));
	/* Written once at startup, before any request is served. */
	if (rvs_write_file_atomic(a->cfg.port_file, port, (size_t)n, 0644))
		rvs_log("warn", "cannot write port file", "path=\"%s\"", a->cfg.port_file);
	rvs_log("info", "listening", "url=https://%s:%d/ store=%s", a->cfg.listen_host,
		rvs_server_port(a->srv), rvs_store_for(a->cfg.database)->name);
	/* Ready: the store is open and the listener accepts. */
	snprintf(status, sizeof status, "READY=1\nSTATUS=listening on https://%s:%d/",
		 a->cfg.listen_host, rvs_server_port(a->srv));
	notify(status);
}

static int run(const char *config_path)
{
	struct app a;
	char err[512];
	int rc;

	memset(&a, 0, sizeof a);
	rc = rvs_config_load(config_path, &a.cfg, err, sizeof err);
	if (rc) {
		rvs_log("error", err, "config=\"%s\"", config_path);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	rvs_store_pg_lease(a.cfg.decode_lease_s); /* before any store opens */
	a.loop = uv_default_loop();
	/* Before serving; a failure leaves GET /v1/policy answering "no policy". */
	rvs_policy_publish_default(&a.cfg);
	/* Temporary files of blob writes a killed server never finished: no
	 * writer runs yet, so every one of them is dead. */
	struct rvs_blob_sweep_stats swept;
	if (rvs_blob_sweep(a.cfg.blob_dir, 0, NULL, NULL, &swept) < 0)
		rvs_log("warn", "blob sweep failed", "dir=\"%s\"", a.cfg.blob_dir);
	else if (swept.temps)
		rvs_log("info", "blob temporary files removed", "count=%llu",
			(unsigned long long)swept.temps);
	if ((rc = rvs_decode_new(a.cfg.database, &a.decoder, &a.dec))) {
		rvs_log("error", "cannot open store", "path=\"%s\" err=%d", a.cfg.database, rc);
		return 1;
	}
	rvs_decode_set_symbols_dir(a.dec, a.cfg.symbols_dir);
	if (rvs_api_new(a.loop, &a.cfg, &a.metrics, rvs_store_for(a.cfg.database), &a.decoder,
			&a.api)) {
		rvs_decode_free(a.dec);
		return 1;
	}
	uv_signal_init(a.loop, &a.sigterm);
	uv_signal_init(a.loop, &a.sigint);
	a.sigterm.data = a.sigint.data = &a;
	uv_signal_start(&a.sigterm, on_signal, SIGTERM);
	uv_signal_start(&a.sigint, on_signal, SIGINT);
	rvs_api_start(a.api, on_ready, &a);
	uv_run(a.loop, UV_RUN_DEFAULT);
	rvs_server_free(a.srv);
	rvs_api_free(a.api);
	/* After the api: its stop waited for the decode job in flight. */
	rvs_decode_free(a.dec);
	uv_loop_close(a.loop);
	return a.exit_code;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rearview-server init DIR [--hostname NAME]...\n"
		   "       rearview-server cert --config FILE --hostname NAME...\n"
		   "       rearview-server passwd --config FILE [USER]\n"
		   "       rearview-server migrate --config FILE\n"
		   "       rearview-server requeue --config FILE --reason SUBSTR | --all\n"
		   "       rearview-server reindex --config FILE [--all] [--after ID] [--batch N]\n"
		   "       rearview-server --config FILE\n"
		   "       rearview-server --help | --version\n");
}

/* Collects `--hostname NAME` pairs of argv[from..argc); -1 on anything
 * else or too many. */
static int hostnames(int argc, char **argv, int from, const char **names, size_t *n)
{
	*n = 0;
	for (int i = from; i < argc; i += 2) {
		if (strcmp(argv[i], "--hostname") || i + 1 >= argc || *n == RVS_MAX_HOSTNAMES)
			return -1;
		names[(*n)++] = argv[i + 1];
	}
	return 0;
}

/* Loads `--config FILE` (argv[2..3]) for a command; exit status 0 or 1. */
static int command_config(char **argv, struct rvs_config *cfg)
{
	char err[256];

	if (rvs_config_load(argv[3], cfg, err, sizeof err)) {
		fprintf(stderr, "rearview-server: %s: %s\n", argv[3], err);
		return 1;
	}
	return 0;
}

/* `migrate`: opens the store, which applies what is pending (under an
 * advisory lock on PostgreSQL, so nodes may run it at once). */
static int migrate(const struct rvs_config *cfg)
{
	const struct rvs_store_ops *ops = rvs_store_for(cfg->database);
	struct rvs_store *st;
	int rc, version = 0;

	if ((rc = ops->open(cfg->database, &st)) == 0) {
		rc = ops->schema_version(st, &version);
		ops->close(st);
	}
	if (rc) {
		fprintf(stderr, "rearview-server: migrate (%s): %s\n", ops->name, strerror(-rc));
		return 1;
	}
	printf("%s store at schema version %d\n", ops->name, version);
	return 0;
}

/* `requeue --config FILE (--reason SUBSTR | --reason=SUBSTR | --all)`:
 * exit status 0, 1 (it failed) or 2 (bad usage: exactly one filter, and
 * a reason not empty, so that requeueing everything is said out loud). */
static int requeue(struct rvs_config *cfg, int argc, char **argv)
{
	const char *reason = NULL;
	int all = 0, rc;

	if (argc == 5 && strcmp(argv[4], "--all") == 0)
		all = 1;
	else if (argc == 6 && strcmp(argv[4], "--reason") == 0)
		reason = argv[5];
	else if (argc == 5 && strncmp(argv[4], "--reason=", 9) == 0)
		reason = argv[4] + 9;
	if (!all && (!reason || !*reason)) {
		usage(stderr);
		return 2;
	}
	if (command_config(argv, cfg))
		return 1;
	if ((rc = rvs_init_requeue(cfg, reason))) {
		fprintf(stderr, "rearview-server: requeue: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}

/* `reindex --config FILE [--all] [--after ID] [--batch N]`: exit status
 * 0, 1 (it failed) or 2 (bad usage). */
static int reindex(struct rvs_config *cfg, int argc, char **argv)
{
	const char *after = "";
	unsigned long batch = 500;
	int all = 0, rc;
	char *end;

	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "--all") == 0) {
			all = 1;
		} else if (strcmp(argv[i], "--after") == 0 && i + 1 < argc &&
			   strlen(argv[i + 1]) < 40) {
			after = argv[++i];
		} else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
			errno = 0;
			batch = strtoul(argv[++i], &end, 10);
			if (errno || *end || batch < 1 || batch > RVS_REINDEX_MAX) {
				fprintf(stderr, "rearview-server: --batch: 1..%d\n",
					RVS_REINDEX_MAX);
				return 2;
			}
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (command_config(argv, cfg))
		return 1;
	if ((rc = rvs_init_reindex(cfg, after, all, batch))) {
		fprintf(stderr, "rearview-server: reindex: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct rvs_config cfg;
	const char *names[RVS_MAX_HOSTNAMES];
	size_t n;
	int cmd_config = argc >= 4 && strcmp(argv[2], "--config") == 0;

	rvs_log_open();
	if (argc >= 3 && strcmp(argv[1], "init") == 0) {
		if (hostnames(argc, argv, 3, names, &n)) {
			usage(stderr);
			return 2;
		}
		return rvs_init_dir(argv[2], names, n) ? 1 : 0;
	}
	if (cmd_config && strcmp(argv[1], "cert") == 0) {
		if (hostnames(argc, argv, 4, names, &n) || n == 0) {
			usage(stderr);
			return 2;
		}
		return command_config(argv, &cfg) || rvs_init_cert(&cfg, names, n) ? 1 : 0;
	}
	if (cmd_config && strcmp(argv[1], "passwd") == 0 && argc <= 5)
		return command_config(argv, &cfg) ||
				       rvs_init_passwd(&cfg, argc == 5 ? argv[4] : "admin")
			       ? 1
			       : 0;
	if (cmd_config && strcmp(argv[1], "requeue") == 0)
		return requeue(&cfg, argc, argv);
	if (cmd_config && strcmp(argv[1], "reindex") == 0)
		return reindex(&cfg, argc, argv);
	if (cmd_config && strcmp(argv[1], "migrate") == 0 && argc == 4)
		return command_config(argv, &cfg) || migrate(&cfg) ? 1 : 0;
	if (argc == 3 && strcmp(argv[1], "--config") == 0) {
		/* A request's big buffers (a blob, a trace's calls, a tree) are
		 * mapped and unmapped whole, so memory a request freed goes back
		 * to the system: glibc's default raises the mapping threshold
		 * after each such free, after which the next ones stay in an
		 * arena and the server's resident size only grows (issue 18
		 * item 2: per-request memory bounded). */
		mallopt(M_MMAP_THRESHOLD, RVS_MMAP_THRESHOLD);
		return run(argv[2]);
	}
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0)
		return rvc_print_version("rearview-server");
	usage(stderr);
	return 2;
}
