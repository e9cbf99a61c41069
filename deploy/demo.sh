#!/bin/sh
# deploy/demo.sh — `make demo`: the whole Rearview path on one machine.
#
#   make demo                    run until Ctrl-C
#   make demo DEMO_ONESHOT=1     exit once the first capture is pending/uploaded
#
# Everything lives under var/demo (git-ignored):
#   server/          `rearview-server init` output (CA, keys, database, config)
#   server-init.txt  what init printed, admin password included (mode 0600)
#   rearviewd.conf   written here on every run
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
VAR=$ROOT/var/demo
SRV=$VAR/server
RUN=$VAR/run
STATE=$VAR/state
THERM=$VAR/thermal
LOG=$VAR/log
ONESHOT=${DEMO_ONESHOT:-0}
INTERVAL=${DEMO_INTERVAL:-3}
ONESHOT_GUARD=${DEMO_ONESHOT_TIMEOUT:-120}
URL=https://127.0.0.1:8443/

# Keys of the daemon's uploader.  Tried first; a rearviewd that does not know
# them refuses the config (unknown key, exit 2) and the demo runs without.
UPLOAD_CONF="[upload]
server_url = https://127.0.0.1:8443
ca_file = $SRV/ca.crt
enrollment_secret_file = $SRV/enrollment.secret
"

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

for b in rearview-server rearviewd rvctl rvtrace rearview-demo-app rearview-demo-thermal; do
	if [ ! -x "$BIN/$b" ]; then
		say "$BIN/$b is missing: run 'make demo' (it builds everything first)"
		exit 1
	fi
done
mkdir -p "$VAR" "$RUN" "$STATE" "$LOG"
chmod 0700 "$VAR"
rvctl() { "$BIN/rvctl" -r "$RUN" "$@"; }

# --- the server ------------------------------------------------------------
if [ ! -f "$SRV/rearview-server.conf" ]; then
	umask 077
	if ! "$BIN/rearview-server" init "$SRV" >"$VAR/server-init.txt" 2>"$LOG/server-init.log"; then
		say "rearview-server init $SRV failed"
		exit 1
	fi
	umask 022
	say "initialised the demo server in $SRV"
fi
"$BIN/rearview-server" --config "$SRV/rearview-server.conf" 2>"$LOG/server.log" &
SERVER=$!
PIDS="$PIDS $SERVER"
server_up=0
i=0
while [ $i -lt 50 ]; do
	if grep -q 'msg="listening"' "$LOG/server.log" 2>/dev/null; then
		server_up=1
		break
	fi
	kill -0 "$SERVER" 2>/dev/null || break
	sleep 0.2
	i=$((i + 1))
done
if [ $server_up -eq 1 ]; then
	say "rearview-server listening on $URL"
else
	say "rearview-server did not come up (is port 8443 in use?); its log:"
	tail -n 5 "$LOG/server.log" | sed 's/^/    /'
fi

# --- the thermal source ----------------------------------------------------
"$BIN/rearview-demo-thermal" --root "$THERM" --interval 500 --step 1000 --hold 10 \
	>"$LOG/thermal.log" 2>&1 &
PIDS="$PIDS $!"

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
$1
EOF
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
UPLOADS=1
write_conf "$UPLOAD_CONF"
if ! start_daemon; then
	wait "$DAEMON" 2>/dev/null
	if grep -q 'unknown key \[upload\]' "$LOG/rearviewd.log"; then
		UPLOADS=0
		write_conf ""
		start_daemon || {
			say "rearviewd did not start; its log:"
			tail -n 5 "$LOG/rearviewd.log" | sed 's/^/    /'
			exit 1
		}
	else
		say "rearviewd did not start; its log:"
		tail -n 5 "$LOG/rearviewd.log" | sed 's/^/    /'
		exit 1
	fi
fi
PIDS="$PIDS $DAEMON"
if [ $UPLOADS -eq 1 ]; then
	say "rearviewd running (run dir $RUN), uploading to $URL"
else
	say "rearviewd running (run dir $RUN)"
	say "NOTE: this rearviewd has no uploader yet ([upload] keys unknown):"
	say "      captures are kept in $STATE and stay 'pending'; nothing reaches the server"
fi
rvctl consent full >/dev/null && say "consent: $(rvctl consent status)"

# --- the demo app ----------------------------------------------------------
"$BIN/rearview-demo-app" --events "$RUN/events.sock" --slow-every 300 --slow-touch-every 7 \
	--seed $$ \
	--wait-traced 2>"$LOG/app.log" &
APP=$!
PIDS="$PIDS $APP"
say "rearview-demo-app pid $APP: 60 fps, 4 slow frames every 5 s, a 450 ms touch every ~10 s;"
say "  thermal zone +1 C every 0.5 s, throttles at 70 C"

if [ -f "$VAR/server-init.txt" ]; then
	say "web UI: $URL  (CA: $SRV/ca.crt)"
	grep -E 'admin (user|password)' "$VAR/server-init.txt" | sed 's/^ */demo:   /'
fi
say "logs in $LOG; Ctrl-C stops everything"

# --- watch the captures ----------------------------------------------------
# One line per new capture: what fired, and what became of it.
SEEN=""
report_new() {
	rvctl captures 2>/dev/null | awk 'NR > 1 { print $1, $2, $3, $4 }' >"$VAR/.captures"
	while read -r id st reason kind; do
		case " $SEEN " in *" $id:$st "*) continue ;; esac
		SEEN="$SEEN $id:$st"
		why=$(rvctl show "$id" 2>/dev/null | sed -n 's/^anomaly: *//p')
		if [ "$st" = skipped ]; then
			say "capture $id $kind: SKIPPED ($reason) — $why"
		else
			say "capture $id $kind: $st — $why"
		fi
	done <"$VAR/.captures"
}

first_ready() {
	awk -v base="$BASE" 'NR > 1 && $1 > base &&
		($2 == "pending" || $2 == "uploading" || $2 == "uploaded") { print $1; exit }' \
		<<EOF
$(rvctl captures 2>/dev/null)
EOF
}

# Captures of earlier runs stay in the spool: count them, report only new ones.
BASE=$(rvctl captures 2>/dev/null | awk 'NR > 1 && $1 > m { m = $1 } END { print m + 0 }')
report_new >/dev/null
[ "$BASE" -gt 0 ] && say "$BASE capture(s) of earlier runs in the spool (rvctl -r $RUN captures)"
touch "$VAR/.started"
started=$(date +%s)
while :; do
	if ! kill -0 "$DAEMON" 2>/dev/null; then
		say "rearviewd exited; its log:"
		tail -n 5 "$LOG/rearviewd.log" | sed 's/^/    /'
		exit 1
	fi
	report_new
	now=$(rvctl status 2>/dev/null | grep -E '^(anomalies|pending uploads):' | tr -s ' ')
	if [ "$now" != "${last_status:-}" ]; then
		printf '%s\n' "$now" | sed 's/^/demo:   /'
		last_status=$now
	fi
	if [ "$ONESHOT" = 1 ]; then
		id=$(first_ready)
		if [ -n "$id" ]; then
			say "first capture: $id"
			rvctl show "$id" | sed 's/^/    /'
			if [ $UPLOADS -eq 0 ]; then
				say "not uploaded: this rearviewd has no uploader yet; summary from the spool:"
			fi
			# This run's oldest capture file is the first capture's.
			f=$(find "$STATE/captures" -name 'c-*.rvc' -newer "$VAR/.started" \
				-exec ls -tr {} + 2>/dev/null | head -n 1)
			[ -n "$f" ] && "$BIN/rvtrace" summary "$f" | sed 's/^/    /'
			exit 0
		fi
		if [ $(($(date +%s) - started)) -ge "$ONESHOT_GUARD" ]; then
			say "no capture after ${ONESHOT_GUARD}s; see $LOG"
			exit 1
		fi
	fi
	sleep "$INTERVAL"
done
