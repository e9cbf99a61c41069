/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — rearviewd: command line, configuration, and the loop.
 *
 *   rearviewd [--config FILE] [--run-dir DIR] [--state-dir DIR] [-v|-vv] [-q]
 *   rearviewd --help | --version
 *
 * Command-line values override the configuration file, which overrides the
 * built-in defaults.  Exit status: 0 after a clean shutdown, 1 on a runtime
 * failure, 2 on a usage or configuration error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <curl/curl.h>

#include "rearview/common.h"

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "sandbox.h"

static void usage(FILE *f)
{
	fputs("usage: rearviewd [--config FILE] [--run-dir DIR] [--state-dir DIR] [-v]... [-q]\n"
	      "       rearviewd --help | --version\n"
	      "  -c, --config FILE     INI configuration (see rearviewd.conf.example)\n"
	      "  -r, --run-dir DIR     sockets: control.sock, events.sock, admin.sock\n"
	      "  -s, --state-dir DIR   spool database, capture files, settings\n"
	      "  -v, --verbose         more logging (repeat for debug)\n"
	      "  -q, --quiet           errors and warnings only\n"
	      "  -h, --help            this help\n"
	      "      --version         the version\n",
	      f);
}

int main(int argc, char **argv)
{
	/* The sandboxed capture parser (sandbox.h): the daemon started again. */
	if (argc == 2 && !strcmp(argv[1], RVD_SANDBOX_WORKER_ARG))
		rvd_sandbox_worker_main(3);
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"run-dir", required_argument, NULL, 'r'},
		{"state-dir", required_argument, NULL, 's'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *config = NULL, *run_dir = NULL, *state_dir = NULL;
	struct rvd_config cfg;
	struct rvd_daemon *d;
	int verbose = 0, quiet = 0, opt, rc;
	uv_loop_t *loop;

	rvd_log_open();
	while ((opt = getopt_long(argc, argv, "c:r:s:vqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'r':
			run_dir = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return rvc_print_version("rearviewd");
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	rvd_config_defaults(&cfg);
	if (config && (rc = rvd_config_load(&cfg, config)) < 0) {
		if (rc != -EINVAL)
			rvd_err("%s: %s", config, strerror(-rc));
		return 2;
	}
	if ((run_dir && rvd_config_set(&cfg, "daemon", "run_dir", run_dir) < 0) ||
	    (state_dir && rvd_config_set(&cfg, "daemon", "state_dir", state_dir) < 0)) {
		rvd_err("--run-dir and --state-dir take absolute paths");
		return 2;
	}
	if (quiet)
		cfg.log_level = RVD_LOG_WARN;
	else if (verbose)
		cfg.log_level =
			verbose > 1 || cfg.log_level >= RVD_LOG_INFO ? RVD_LOG_DEBUG : RVD_LOG_INFO;
	rvd_log_set_level(cfg.log_level);
	/* A peer that vanishes mid-write must not kill us; sends use MSG_NOSIGNAL too. */
	signal(SIGPIPE, SIG_IGN);

	/* Once, before any thread exists (the uploader's TLS library state). */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rvd_err("libcurl initialisation failed");
		return 1;
	}
	d = rvd_daemon_new();
	if (!d) {
		rvd_err("out of memory");
		curl_global_cleanup();
		return 1;
	}
	loop = uv_default_loop();
	rc = rvd_daemon_start(d, loop, &cfg);
	uv_run(loop, UV_RUN_DEFAULT);
	if (rvd_daemon_exit_status(d))
		rc = -EIO;
	rvd_daemon_free(d);
	curl_global_cleanup();
	if (uv_loop_close(loop) != 0)
		rvd_warn("loop closed with handles still open");
	rvd_info("stopped");
	return rc < 0 ? 1 : 0;
}
