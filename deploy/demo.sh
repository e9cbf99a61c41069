#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/demo.sh — `make demo`: the whole Rearview path on one machine.
#
#   make demo                    run until Ctrl-C
#   make demo DEMO_ONESHOT=1     exit once the first jank capture is indexed
#                                by the server, printing its summary
#
# Environment (all optional):
#   DEMO_VAR=DIR        state directory (default var/demo)
#   DEMO_PORT=N         server port (default 8443; 0 = any free port)
#   DEMO_E2E=1          with DEMO_ONESHOT=1, also wait until a thermal capture
#                       is indexed and an anomaly was skipped for quota
#                       (tests/integration/test_demo_e2e.c)
#   DEMO_SERVER_URL=U   use the server (or fleet) already running at U, with
#   DEMO_SERVER_DIR=D   its `rearview-server init` directory D (CA, secrets,
#                       api.token) instead of starting one (demo-fleet.sh)
#
# Order of events, so a run tells the same story every time: the app's
# first slow frames fire a jank (capture 1 of the policy's weekly quota of
# 3); only then does the fake thermal zone start heating, and it throttles
# about a second later (capture 2); the next jank or slow touch is capture
# 3, and the one after that is skipped with reason quota_exhausted.
#
# Everything lives under var/demo (git-ignored):
#   server/          `rearview-server init` output (CA, keys, database, config)
#   server-init.txt  what init printed, admin password included (mode 0600)
#   rearviewd.conf   written here on every run
#   apps.d/          rearviewd's app map: the demo app is the one who may
#                    speak as rearview-demo-app (device/README.md)
#   run/ state/      rearviewd's sockets and spool
#   thermal/         the fake sysfs tree of rearview-demo-thermal
#   log/             every child's stderr
#
# Children: rearview-server, rearviewd, rearview-demo-thermal and
# rearview-demo-app.  Each is stopped by its own pid (SIGTERM, then waited
# for) when the script ends, whatever the reason.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${DEMO_BIN:-$ROOT/build/bin}
VAR=${DEMO_VAR:-$ROOT/var/demo}
SRV=${DEMO_SERVER_DIR:-$VAR/server}
RUN=$VAR/run
STATE=$VAR/state
THERM=$VAR/thermal
LOG=$VAR/log
ONESHOT=${DEMO_ONESHOT:-0}
E2E=${DEMO_E2E:-0}
PORT=${DEMO_PORT:-8443}
INTERVAL=${DEMO_INTERVAL:-1}
ONESHOT_GUARD=${DEMO_ONESHOT_TIMEOUT:-180}

PIDS=""
say() { printf '%s\n' "demo: $*"; }

stop_children() {
	trap - INT TERM EXIT
	for p in $PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null
	done
	PIDS=""
}
trap 'stop_children' EXIT
trap 'echo; say "stopping"; stop_children; exit 0' INT TERM

for t in curl jq; do
	command -v $t >/dev/null 2>&1 || {
		say "$t is missing: run 'make demo' (it installs what the demo needs)"
		exit 1
	}
done
for b in rearview-server rearviewd rvctl rvtrace rearview-demo-app rearview-demo-thermal; do
	if [ ! -x "$BIN/$b" ]; then
		say "$BIN/$b is missing: run 'make demo' (it builds everything first)"
		exit 1
	fi
done
# Each run is a fresh device (new spool, new weekly quota, new enrolment);
# the server keeps every run's traces.
rm -rf "$RUN" "$STATE"
mkdir -p "$VAR" "$RUN" "$STATE" "$LOG"
chmod 0700 "$VAR"
rvctl() { "$BIN/rvctl" -r "$RUN" "$@"; }

# --- the server ------------------------------------------------------------
if [ -n "${DEMO_SERVER_URL:-}" ]; then
	URL=${DEMO_SERVER_URL%/}/
	say "using the server at $URL"
else
	if [ ! -f "$SRV/rearview-server.conf" ]; then
		umask 077
		if ! "$BIN/rearview-server" init "$SRV" >"$VAR/server-init.txt" 2>"$LOG/server-init.log"; then
			say "rearview-server init $SRV failed"
			exit 1
		fi
		umask 022
		say "initialised the demo server in $SRV"
	fi
	# The port can change between runs (DEMO_PORT); everything else init wrote.
	sed -i "s|^listen = .*|listen = 127.0.0.1:$PORT|" "$SRV/rearview-server.conf"
	"$BIN/rearview-server" --config "$SRV/rearview-server.conf" 2>"$LOG/server.log" &
	SERVER=$!
	PIDS="$PIDS $SERVER"
	URL=""
	i=0
	while [ $i -lt 100 ]; do
		URL=$(sed -n 's/.* url=\([^ ]*\) .*msg="listening"$/\1/p' "$LOG/server.log" 2>/dev/null | tail -n 1)
		[ -n "$URL" ] && break
		kill -0 "$SERVER" 2>/dev/null || break
		sleep 0.2
		i=$((i + 1))
	done
	if [ -z "$URL" ]; then
		say "rearview-server did not come up (is port $PORT in use?); its log:"
		tail -n 5 "$LOG/server.log" | sed 's/^/    /'
		exit 1
	fi
	URL=${URL%/}/
	say "rearview-server listening on $URL"
fi
TOKEN=$(cat "$SRV/api.token")
# GET on the engineer JSON API, trusting only the demo CA.
api() { curl -sf --cacert "$SRV/ca.crt" -H "Authorization: Bearer $TOKEN" "${URL}api/v1/$1"; }

# --- the thermal source ----------------------------------------------------
# rearviewd polls $THERM from the start; the zone appears, already warm, only
# after the first capture and throttles about a second later.
rm -rf "$THERM"
mkdir -p "$THERM"
HEATING=0
start_heating() {
	[ $HEATING -eq 1 ] && return
	HEATING=1
	"$BIN/rearview-demo-thermal" --root "$THERM" --interval 500 --step 1000 --hold 10 \
		--start 68000 --trip 70000 >"$LOG/thermal.log" 2>&1 &
	PIDS="$PIDS $!"
	say "thermal zone heating from 68 C; it throttles at 70 C"
}

# --- rearviewd -------------------------------------------------------------
write_conf() {
	cat >"$VAR/rearviewd.conf" <<EOF
# Written by deploy/demo.sh on every run.
[daemon]
run_dir = $RUN
state_dir = $STATE
[thermal]
sysfs_root = $THERM
poll_ms = 500
[capture]
consent_default = full
[policy]
public_key = $SRV/policy-signing.pub
[upload]
server_url = ${URL%/}
ca_file = $SRV/ca.crt
enrollment_secret_file = $SRV/enrollment.secret
[identity]
apps_dir = $VAR/apps.d
EOF
	# The map must be writable by its owner only, whatever the umask.
	mkdir -p "$VAR/apps.d"
	chmod 0755 "$VAR/apps.d"
	cat >"$VAR/apps.d/demo.conf" <<EOF
# Written by deploy/demo.sh on every run.
[rearview-demo-app]
user = $(id -u)
exe = $(readlink -f "$BIN/rearview-demo-app")
EOF
	chmod 0644 "$VAR/apps.d/demo.conf"
}

start_daemon() {
	"$BIN/rearviewd" --config "$VAR/rearviewd.conf" -v 2>>"$LOG/rearviewd.log" &
	DAEMON=$!
	i=0
	while [ $i -lt 50 ]; do
		if rvctl status >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$DAEMON" 2>/dev/null || return 1
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

: >"$LOG/rearviewd.log"
write_conf
if ! start_daemon; then
	say "rearviewd did not start; its log:"
	tail -n 5 "$LOG/rearviewd.log" | sed 's/^/    /'
	exit 1
fi
PIDS="$PIDS $DAEMON"
say "rearviewd running (run dir $RUN), uploading to $URL"
rvctl consent full >/dev/null && say "consent: $(rvctl consent status)"

# --- the demo app ----------------------------------------------------------
HOLD=$VAR/.thermal-taken
rm -f "$HOLD"
HOLDING=$([ "$E2E" = 1 ] && echo 1)
"$BIN/rearview-demo-app" --events "$RUN/events.sock" --slow-every 300 --slow-touch-every 7 \
	--seed $$ ${HOLDING:+--hold "$HOLD"} \
	--wait-traced 2>"$LOG/app.log" &
APP=$!
PIDS="$PIDS $APP"
say "rearview-demo-app pid $APP: 60 fps, 4 slow frames (85 ms each) every 5 s,"
say "  a 450 ms touch every ~10 s; weekly upload quota 3 (the server's default policy)"

if [ -f "$VAR/server-init.txt" ]; then
	say "web UI: $URL  (CA: $SRV/ca.crt)"
	grep -E 'admin (user|password)' "$VAR/server-init.txt" | sed 's/^ */demo:   /'
fi
say "logs in $LOG; Ctrl-C stops everything"

# --- watch the captures ----------------------------------------------------
# One line per capture and per change of its state: what fired, and what
# became of it.
SEEN=""
report_new() {
	rvctl --json captures 2>/dev/null |
		jq -r '.[] | "\(.id) \(.state) \(if .reason == "" then "-" else .reason end) \(.kind)"' \
			>"$VAR/.captures" 2>/dev/null || return
	# The thermal zone starts heating once the first capture exists; in the
	# end-to-end run the app holds its next anomaly until the daemon took
	# the thermal capture (--hold), so the quota ends at the same point of
	# the story however slow the machine.
	[ -s "$VAR/.captures" ] && start_heating
	if [ "$E2E" = 1 ] && grep -q ' thermal$' "$VAR/.captures"; then
		: >"$HOLD"
	fi
	while read -r id st reason kind; do
		case " $SEEN " in *" $id:$st "*) continue ;; esac
		SEEN="$SEEN $id:$st"
		why=$(rvctl show "$id" 2>/dev/null | sed -n 's/^anomaly: *//p' | head -n 1)
		if [ "$st" = skipped ]; then
			say "capture $id ($kind): SKIPPED, reason $reason${why:+ — $why}"
		else
			say "capture $id ($kind): $st${why:+ — $why}"
		fi
	done <"$VAR/.captures"
}

# The server's oldest decoded trace of anomaly kind $1 received since this
# run began, or nothing (the list is newest first; a run makes three).
indexed() {
	api "traces?kind=$1&since=$T0&limit=500" 2>/dev/null | jq -r '.traces[-1].trace_id // empty'
}

# What the server made of a trace: its anomaly and top self-time methods.
print_trace() {
	api "traces/$1" | jq -r '
		"    trace \(.trace_id): \(.app_id)\(if (.app_version // "") != "" then " " + .app_version else "" end), \(["unspecified", "jank", "touch latency", "thermal", "generic", "manual"][.anomaly_kind] // "anomaly") (\(.anomaly_name // "")), severity \(.severity)",
		"    top self time:",
		(.top_self[:5][] | "      \(.self_ns / 1000000 | floor) ms  \(.calls) calls  \(.method)"),
		"    chain at the anomaly:",
		([.chains[] | select(.kind == "anomaly")][:1][] | "      \(.chain)")'
	say "web UI: ${URL}  trace page: ${URL}traces/$1"
}

T0=$(date +%s)
started=$T0
JANK=""
THERMAL=""
while :; do
	if ! kill -0 "$DAEMON" 2>/dev/null; then
		say "rearviewd exited; its log:"
		tail -n 5 "$LOG/rearviewd.log" | sed 's/^/    /'
		exit 1
	fi
	report_new
	now=$(rvctl status 2>/dev/null | grep -E '^(anomalies|pending uploads|quota left):' | tr -s ' ')
	if [ "$now" != "${last_status:-}" ]; then
		printf '%s\n' "$now" | sed 's/^/demo:   /'
		last_status=$now
	fi
	if [ -z "$JANK" ]; then
		JANK=$(indexed 1)
		if [ -n "$JANK" ]; then
			say "the server indexed the first jank capture:"
			print_trace "$JANK"
		fi
	fi
	[ -z "$THERMAL" ] && THERMAL=$(indexed 3) && [ -n "$THERMAL" ] &&
		say "the server indexed the thermal capture $THERMAL"
	if [ "$ONESHOT" = 1 ] && [ -n "$JANK" ]; then
		if [ "$E2E" != 1 ]; then
			exit 0
		fi
		# Done when nothing is left in flight and the server indexed every
		# capture the device uploaded.
		uploaded=$(grep -c ' uploaded ' "$VAR/.captures")
		inflight=$(grep -cE ' (captured|pending|uploading) ' "$VAR/.captures")
		ntraces=$(api "traces?since=$T0&limit=500" | jq '.traces | length')
		# The device reports its quota skip to the server (consent full).
		quota_skips=$(api "skips?since=$T0" |
			jq '[.reasons[] | select(.reason == "quota_exhausted") | .count] | add // 0')
		if [ -n "$THERMAL" ] && [ "$quota_skips" -gt 0 ] &&
			grep -q ' skipped quota_exhausted ' "$VAR/.captures" &&
			[ "$inflight" -eq 0 ] && [ "$ntraces" = "$uploaded" ]; then
			say "end to end: $uploaded captures uploaded and indexed (jank $JANK, thermal $THERMAL);"
			say "  the server heard of $quota_skips anomaly(ies) skipped for quota"
			exit 0
		fi
	fi
	if [ "$ONESHOT" = 1 ] && [ $(($(date +%s) - started)) -ge "$ONESHOT_GUARD" ]; then
		say "not done after ${ONESHOT_GUARD}s; see $LOG"
		exit 1
	fi
	sleep "$INTERVAL"
done
