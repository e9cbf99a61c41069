# SPDX-License-Identifier: Apache-2.0
# deploy/pg-private.sh — a private PostgreSQL 15 cluster for one run, for the
# scripts that start one on the user's behalf (deploy/demo-fleet.sh,
# tests/with-pg.sh).  Sourced, not run:
#
#   . deploy/pg-private.sh
#   pgp_start NAME || { echo "$PGP_WHY"; exit 1; }   # PGP_DIR, PGP_PORT, PGP_DSN
#   ...
#   pgp_stop [KEEP_LOG_DIR]                          # also from an EXIT trap
#
# Where the cluster lives: a directory made for the run under /tmp
# (RV_PG_PARENT to choose another), mode 0700 and owned by the `postgres`
# user when run as root (initdb refuses root), holding data/, the Unix
# socket and the logs; removed by pgp_stop.  It is never under the
# checkout, which may sit below a directory `postgres` cannot enter (root's
# 0700 home, a mktemp -d directory), and nothing of the user's is chmod'ed.
# The cluster listens on no TCP address: PGP_PORT only names the socket
# file, so a fixed number cannot collide with another cluster's.
# When it cannot start, PGP_WHY holds one line: why, and what to do.
# PGP_OPTS: more server settings (`-c name=value …`) for the caller's use.

PGP_BIN=/usr/lib/postgresql/15/bin
PGP_PORT=5432
PGP_DIR=""
PGP_DSN=""
PGP_UP=0
PGP_WHY=""
PGP_OPTS=${PGP_OPTS:-}

# Runs "$@" as the postgres user when root, from / (the caller's working
# directory may be closed to that user).
pgp_as_pg() {
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# pgp_start NAME: initdb and pg_ctl start in a new /tmp/NAME.XXXXXX; 0, or 1
# with PGP_WHY set and nothing left behind.
pgp_start() {
	pgp_parent=${RV_PG_PARENT:-/tmp}
	PGP_WHY=""
	if [ ! -x "$PGP_BIN/initdb" ] || [ ! -x "$PGP_BIN/pg_ctl" ]; then
		PGP_WHY="PostgreSQL 15 is not installed ($PGP_BIN): run deploy/install-deps.sh"
		return 1
	fi
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		PGP_WHY="no postgres user to run PostgreSQL as (initdb refuses root): apt-get install --reinstall postgresql-15"
		return 1
	fi
	if ! PGP_DIR=$(mktemp -d "$pgp_parent/$1.XXXXXX" 2>/dev/null); then
		PGP_DIR=""
		PGP_WHY="cannot make a directory in $pgp_parent: set RV_PG_PARENT to a writable directory the postgres user can enter"
		return 1
	fi
	chmod 0700 "$PGP_DIR"
	if [ "$(id -u)" = 0 ]; then
		chown postgres:postgres "$PGP_DIR"
	fi
	if ! pgp_as_pg test -w "$PGP_DIR"; then
		PGP_WHY="the postgres user cannot reach $PGP_DIR ($pgp_parent is closed to it): set RV_PG_PARENT to a directory it can enter"
		pgp_stop
		return 1
	fi
	if ! pgp_as_pg "$PGP_BIN/initdb" -D "$PGP_DIR/data" -A trust -U postgres --no-sync \
		>"$PGP_DIR/initdb.log" 2>&1; then
		PGP_WHY="initdb failed: $(grep . "$PGP_DIR/initdb.log" | tail -n 1)"
		pgp_stop
		return 1
	fi
	if ! pgp_as_pg "$PGP_BIN/pg_ctl" -D "$PGP_DIR/data" -l "$PGP_DIR/server.log" -w -t 120 \
		-o "-p $PGP_PORT -k $PGP_DIR -c listen_addresses='' $PGP_OPTS" \
		start >"$PGP_DIR/pg_ctl.log" 2>&1; then
		PGP_WHY="PostgreSQL did not start: $(grep . "$PGP_DIR/server.log" 2>/dev/null | tail -n 1)"
		pgp_stop
		return 1
	fi
	PGP_UP=1
	PGP_DSN="postgresql:///postgres?host=$PGP_DIR&port=$PGP_PORT&user=postgres"
	return 0
}

# pgp_stop [DIR]: stops the cluster (fast: sessions are cut; immediate if that
# fails) and removes its
# directory, first copying its server log into DIR when one is given.
pgp_stop() {
	if [ "$PGP_UP" = 1 ]; then
		pgp_as_pg "$PGP_BIN/pg_ctl" -D "$PGP_DIR/data" -m fast -w -t 120 stop >/dev/null 2>&1 ||
			pgp_as_pg "$PGP_BIN/pg_ctl" -D "$PGP_DIR/data" -m immediate -w stop >/dev/null 2>&1
		PGP_UP=0
	fi
	if [ -n "${1:-}" ] && [ -f "$PGP_DIR/server.log" ]; then
		cp "$PGP_DIR/server.log" "$1/postgresql.log" 2>/dev/null
	fi
	if [ -n "$PGP_DIR" ]; then
		rm -rf "$PGP_DIR"
		PGP_DIR=""
	fi
}
