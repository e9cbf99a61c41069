#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/demo-fleet.sh — `make demo DEMO_FLEET=1`: the story of `make demo`
# (deploy/demo.sh) told by two rearview-server nodes that share one
# PostgreSQL 15 (index and decode queue) and one S3 server (capture blobs),
# behind haproxy (round-robin over TCP; each node terminates TLS with the
# same certificate) — all local, nothing installed as a service.
#
#   make demo DEMO_FLEET=1                  until Ctrl-C
#   make demo DEMO_FLEET=1 DEMO_ONESHOT=1   until the first jank is indexed
#
# PostgreSQL runs as a private cluster for the run (deploy/pg-private.sh:
# initdb + pg_ctl, Unix socket only, as the postgres user when run as root)
# in a directory made for it under /tmp, printed, and removed at the end:
# never under the checkout, which may sit where `postgres` cannot enter.
# Under var/demo-fleet (git-ignored): s3/ (npm s3rver's data), server/
# (`rearview-server init`: keys, CA, the nodes' configs), haproxy.cfg, log/
# (PostgreSQL's log copied there at the end).  At the end it prints where
# each node's work went: uploads it acknowledged and captures it decoded.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DEMO_BIN:-$ROOT/build/bin}
VAR=${DEMO_VAR:-$ROOT/var/demo-fleet}
S3RVER=${DEMO_S3RVER:-$ROOT/build/s3rver/node_modules/s3rver/bin/s3rver.js}
S3=$VAR/s3
SRV=$VAR/server
LOG=$VAR/log
PIDS=""
. "$ROOT/deploy/pg-private.sh"

say() { printf '%s\n' "demo-fleet: $*"; }
stop_all() {
	trap - INT TERM EXIT
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	PIDS=""
	pgp_stop "$LOG"
}
trap 'stop_all' EXIT
trap 'echo; say "stopping"; stop_all; exit 0' INT TERM

# A TCP port nobody holds now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Waits (generous deadline) until command "$@" succeeds; 1 on timeout.
wait_for() {
	i=0
	while [ $i -lt 300 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

for t in haproxy node python3 curl jq; do
	command -v $t >/dev/null 2>&1 || {
		say "$t is missing: run 'make demo DEMO_FLEET=1' (it installs what the demo needs)"
		exit 1
	}
done
for f in "$S3RVER" "$BIN/rearview-server"; do
	[ -e "$f" ] || {
		say "$f is missing: run 'make demo DEMO_FLEET=1' (it builds and installs what it needs)"
		exit 1
	}
done
mkdir -p "$VAR" "$LOG"
chmod 0755 "$VAR"

# --- PostgreSQL: a private cluster for the run, a Unix socket only ----------
if ! pgp_start rearview-demo-pg; then
	say "PostgreSQL cannot run: $PGP_WHY"
	exit 1
fi
if ! pgp_as_pg "$PGP_BIN/createdb" -h "$PGP_DIR" -p "$PGP_PORT" -U postgres rearview \
	>"$LOG/createdb.log" 2>&1; then
	say "createdb failed: $(tail -n 1 "$LOG/createdb.log")"
	exit 1
fi
DSN="postgresql:///rearview?host=$PGP_DIR&port=$PGP_PORT&user=postgres"
say "PostgreSQL 15 up: data and socket in $PGP_DIR (removed at the end)"

# --- the S3 server (npm s3rver) -----------------------------------------------
rm -rf "$S3"
mkdir -p "$S3/data"
: >"$LOG/s3rver.log"
node "$S3RVER" -d "$S3/data" -a 127.0.0.1 -p 0 --configure-bucket rearview-demo \
	>"$LOG/s3rver.log" 2>&1 &
PIDS="$PIDS $!"
s3_port() { sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$LOG/s3rver.log" | head -n 1 | grep .; }
if ! wait_for s3_port; then
	say "s3rver did not start; see $LOG/s3rver.log"
	exit 1
fi
S3PORT=$(s3_port)
say "S3 server (s3rver) on http://127.0.0.1:$S3PORT, bucket rearview-demo"

# --- two server nodes ---------------------------------------------------------
if [ ! -f "$SRV/rearview-server.conf" ]; then
	umask 077
	if ! "$BIN/rearview-server" init "$SRV" >"$VAR/server-init.txt" 2>"$LOG/server-init.log"; then
		say "rearview-server init failed; see $LOG/server-init.log"
		exit 1
	fi
	umask 022
fi
printf 'S3RVER\n' >"$SRV/s3.secret"
chmod 0600 "$SRV/s3.secret"
DSN_SED=$(printf '%s' "$DSN" | sed 's/[&|\\]/\\&/g') # sed's replacement specials
for n in 1 2; do
	sed -e "s|^listen = .*|listen = 127.0.0.1:0|" -e "s|^port_file = .*|port_file = node$n.port|" \
		-e "s|^database = .*|database = $DSN_SED|" "$SRV/rearview-server.conf" >"$SRV/node$n.conf"
	cat >>"$SRV/node$n.conf" <<EOF

[store]
blobs = s3://rearview-demo/captures
s3_endpoint = http://127.0.0.1:$S3PORT
s3_region = us-east-1
s3_access_key = S3RVER
s3_secret_file = s3.secret
EOF
done
# The admin account lives in the database: PostgreSQL's is new.
"$BIN/rearview-server" migrate --config "$SRV/node1.conf" 2>>"$LOG/migrate.log" | sed 's/^/demo-fleet: /'
"$BIN/rearview-server" passwd --config "$SRV/node1.conf" admin 2>>"$LOG/migrate.log" >"$VAR/admin.txt"
NODES=""
for n in 1 2; do
	rm -f "$SRV/node$n.port"
	"$BIN/rearview-server" --config "$SRV/node$n.conf" 2>"$LOG/node$n.log" &
	PIDS="$PIDS $!"
	NODES="$NODES $!"
done
for n in 1 2; do
	if ! wait_for test -s "$SRV/node$n.port"; then
		say "node $n did not come up; its log:"
		tail -n 5 "$LOG/node$n.log" | sed 's/^/    /'
		exit 1
	fi
	eval "P$n=\$(cat \"\$SRV/node$n.port\")"
done
say "node 1 on 127.0.0.1:$P1, node 2 on 127.0.0.1:$P2 (PostgreSQL + S3)"

# --- haproxy: one address for the devices ------------------------------------
HPORT=$(free_port)
cat >"$VAR/haproxy.cfg" <<EOF
# Written by deploy/demo-fleet.sh.
global
    maxconn 256
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend rearview
    bind 127.0.0.1:$HPORT
    default_backend nodes
backend nodes
    balance roundrobin
    server node1 127.0.0.1:$P1 check
    server node2 127.0.0.1:$P2 check
EOF
haproxy -f "$VAR/haproxy.cfg" -db >"$LOG/haproxy.log" 2>&1 &
PIDS="$PIDS $!"
if ! wait_for curl -sf --cacert "$SRV/ca.crt" "https://127.0.0.1:$HPORT/metrics"; then
	say "haproxy did not come up; see $LOG/haproxy.log"
	exit 1
fi
say "haproxy on https://127.0.0.1:$HPORT/ (round-robin over both nodes)"
sed 's/^/demo-fleet: web UI /' "$VAR/admin.txt"

# --- the device's story, against the fleet's address -------------------------
DEMO_SERVER_URL="https://127.0.0.1:$HPORT/" DEMO_SERVER_DIR=$SRV DEMO_VAR="$VAR/device" \
	sh "$ROOT/deploy/demo.sh"
rc=$?

# --- where each node's work went ---------------------------------------------
for n in 1 2; do
	eval "p=\$P$n"
	up=$(curl -sf --cacert "$SRV/ca.crt" "https://127.0.0.1:$p/metrics" |
		sed -n 's/^rearview_uploads_total \([0-9]*\)$/\1/p')
	dec=$(grep -c 'msg="decoded"' "$LOG/node$n.log")
	say "node $n (127.0.0.1:$p): acknowledged ${up:-?} upload(s), decoded $dec capture(s)"
done
exit $rc
