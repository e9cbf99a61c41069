/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_web_server.h — a real rearview-server for the web UI's test and
 * bench: `init` in a fresh temporary directory (keeping the admin password
 * it prints once), extra config lines, an optional step before the server
 * starts (the bench fills the database there), then the binary on a free
 * port with its stderr in DIR/server.log.
 */
#ifndef RVS_TEST_WEB_SERVER_H
#define RVS_TEST_WEB_SERVER_H

#include <stddef.h>
#include <sys/types.h>

struct web_server {
	char dir[64];	   /* the temporary directory */
	char data[128];	   /* dir/data, the server's data directory */
	char ca[192];	   /* data/ca.crt */
	char password[64]; /* the admin password */
	char api[128];	   /* the JSON API token */
	char secret[128];  /* the enrolment secret */
	char db[512];	   /* its database: data/rearview.db or a PostgreSQL URI */
	int port;
	pid_t pid;
};

/* Reads up to cap-1 bytes of path, NUL-terminated; the length or -1. */
int web_slurp(const char *path, char *buf, size_t cap);
/* 0 once the server listens (bounded wait: a minute), -1 otherwise.
 * before_start(data dir) may be NULL; it runs with s->db set and its
 * schema in place (init's sqlite file, or on PostgreSQL migrated by
 * `passwd`). */
int web_server_start(struct web_server *s, const char *conf_lines,
		     int (*before_start)(const char *data));
/* SIGTERM (so sanitizers report at exit), SIGKILL after 10 s; removes the
 * directory.  -1 when server.log holds a sanitizer report (printed). */
int web_server_stop(struct web_server *s);

#endif
