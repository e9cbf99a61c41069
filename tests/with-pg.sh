#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/with-pg.sh CMD... — runs CMD with one PostgreSQL 15 cluster for the
# whole run (deploy/pg-private.sh: a private directory under /tmp, printed),
# named to the tests by RVT_PG_HOST (its socket directory) and RVT_PG_PORT:
# tests/server/pg_harness.h then gives each test program databases of its
# own there instead of starting a server per program.  The cluster is
# stopped and its directory removed when CMD ends, whatever the reason.
# Without PostgreSQL it says why in one line and runs CMD anyway (a test
# that needs PostgreSQL then starts its own, or skips visibly).
# Exits with CMD's status.
#
# The cluster serves a whole parallel test run (every binary's servers at
# once: max_connections 300) and need not outlive the machine: fsync off
# (a test observes no difference short of a power cut; the durability of
# an acknowledgement across power loss is test_durable's, on sqlite).
set -u
PGP_OPTS="-c max_connections=300 -c fsync=off"
. "$(dirname "$0")/../deploy/pg-private.sh"

# The CPU time the cluster used (its server and the sessions that ended):
# what a run's own CPU time (time(1) sees only the processes it waits for)
# leaves out.
pg_cpu() {
	pid=$(head -n 1 "$PGP_DIR/data/postmaster.pid" 2>/dev/null) || return
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($12 + $13 + $14 + $15) / hz }' \
		"/proc/$pid/stat" 2>/dev/null
}
stop() {
	if [ "$PGP_UP" = 1 ]; then
		echo "with-pg: PostgreSQL used $(pg_cpu) CPU seconds; stopping it"
	fi
	pgp_stop
}
trap 'stop' EXIT
trap 'exit 130' INT TERM
if [ -n "${RVT_PG_HOST:-}" ]; then
	echo "with-pg: using the run's PostgreSQL in $RVT_PG_HOST"
elif pgp_start rearview-test-pg; then
	RVT_PG_HOST=$PGP_DIR
	RVT_PG_PORT=$PGP_PORT
	export RVT_PG_HOST RVT_PG_PORT
	echo "with-pg: PostgreSQL 15 for this run in $PGP_DIR (removed at the end)"
else
	echo "with-pg: no PostgreSQL for this run: $PGP_WHY"
fi
"$@"
