#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/test_demo_fleet.sh — `make demo DEMO_FLEET=1 DEMO_ONESHOT=1`
# from a checkout the `postgres` user cannot enter, in TAP
# (tests/run-tests.sh counts it like a cmocka binary).
#
#   test_demo_fleet.sh SRC_DIR
#
# Clones SRC_DIR's committed tree (git clone, as a new user would) into a
# mode-0700 directory, so neither the checkout nor anything under it is
# reachable by `postgres`, and runs the fleet demo there to its end, with
# TMPDIR pointed at a directory of the test's own.  Then:
#   1. the demo ran to the end (exit 0) from the closed checkout;
#   2. its private PostgreSQL lived in a directory of its own under /tmp,
#      printed, and the checkout's modes were left alone (still 0700);
#   3. both nodes are named with the uploads they acknowledged and the
#      captures they decoded, and the first jank capture was acknowledged,
#      decoded and indexed;
#   4. nothing the demo started is still running;
#   5. nothing is left behind: its PostgreSQL directory is gone, TMPDIR is
#      empty, and no new /tmp/rearview-demo-pg.* exists.
# The clone builds the whole tree (`make demo` does), so this is a system
# test: minutes, the network for npm's packages.
set -u
SRC=$(cd "${1:?usage: test_demo_fleet.sh SRC_DIR}" && pwd)
W=$(mktemp -d /tmp/rv-demo-fleet-test.XXXXXX)
chmod 0700 "$W"
trap 'rm -rf "$W"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	shift
	for f in "$@"; do [ -s "$f" ] && tail -n 40 "$f" | sed 's/^/# /'; done
}

echo "1..5"
before=$(ls -d /tmp/rearview-demo-pg.* 2>/dev/null | sort)
CLONE=$W/closed/rearview
mkdir -p "$W/closed" "$W/tmp"
chmod 0700 "$W/closed"
if ! git clone -q "$SRC" "$CLONE" >"$W/clone.log" 2>&1; then
	notok "git clone $SRC" "$W/clone.log"
	exit 1
fi
if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1 &&
	runuser -u postgres -- test -x "$CLONE" 2>/dev/null; then
	echo "# warning: postgres can enter $CLONE: the test proves less"
fi
(cd "$CLONE" && TMPDIR=$W/tmp make -j"$(nproc)" demo DEMO_FLEET=1 DEMO_ONESHOT=1) >"$W/demo.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then ok "the fleet demo ran to its end from a mode-0700 checkout"; else
	notok "the fleet demo exited $rc" "$W/demo.log" "$CLONE/var/demo-fleet/log/node1.log"
fi

pgdir=$(sed -n 's/^demo-fleet: PostgreSQL 15 up: data and socket in \([^ ]*\) .*/\1/p' "$W/demo.log")
case $pgdir in
/tmp/rearview-demo-pg.*)
	if [ "$(stat -c %a "$W/closed")" = 700 ]; then
		ok "PostgreSQL ran in $pgdir; the checkout stayed mode 0700"
	else
		notok "the checkout's directory changed mode to $(stat -c %a "$W/closed")"
	fi
	;;
*) notok "no PostgreSQL directory under /tmp printed" "$W/demo.log" ;;
esac

nodes=$(grep -cE '^demo-fleet: node [12] \(127\.0\.0\.1:[0-9]+\): acknowledged [0-9]+ upload\(s\), decoded [0-9]+ capture\(s\)$' "$W/demo.log")
acked=$(sed -n 's/^demo-fleet: node [12] .*acknowledged \([0-9]*\) upload.*/\1/p' "$W/demo.log" |
	awk '{ s += $1 } END { print s + 0 }')
decoded=$(sed -n 's/^demo-fleet: node [12] .*decoded \([0-9]*\) capture.*/\1/p' "$W/demo.log" |
	awk '{ s += $1 } END { print s + 0 }')
if [ "$nodes" = 2 ] && [ "$acked" -ge 1 ] && [ "$decoded" -ge 1 ] &&
	grep -q '^demo: the server indexed the first jank capture:' "$W/demo.log" &&
	grep -q '^    trace .*, jank (' "$W/demo.log"; then
	ok "both nodes named; the jank capture acknowledged ($acked), decoded ($decoded) and indexed"
else
	notok "nodes named: $nodes, acknowledged $acked, decoded $decoded" "$W/demo.log"
fi

# Every process the demo started ran from the clone or on its PostgreSQL
# directory; none may be left.
left=""
for p in /proc/[0-9]*; do
	cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")
	case $cmd in
	*"$CLONE"* | *"${pgdir:-/nonexistent}"*) left="$left${p#/proc/} $cmd
" ;;
	esac
done
if [ -z "$left" ]; then ok "nothing the demo started is still running"; else
	printf '%s' "$left" >"$W/left"
	notok "still running after the demo" "$W/left"
fi

after=$(ls -d /tmp/rearview-demo-pg.* 2>/dev/null | sort)
if [ -n "$pgdir" ] && [ ! -e "$pgdir" ] && [ -z "$(ls -A "$W/tmp")" ] && [ "$after" = "$before" ]; then
	ok "nothing left behind in /tmp or TMPDIR"
else
	ls -la "$W/tmp" >"$W/tmpls" 2>&1
	echo "PostgreSQL dir: ${pgdir:-none} $([ -e "${pgdir:-/nonexistent}" ] && echo still there)" >>"$W/tmpls"
	notok "left behind" "$W/tmpls"
fi
