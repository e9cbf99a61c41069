#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/test_cross.sh — the documented cross build, end to end, in
# TAP (system tier: it builds the device side for aarch64, and the first run
# makes the arm64 sysroot from Debian's archive).
#
#   test_cross.sh HOST_BUILD   (HOST_BUILD: this machine's build, for rvtrace)
#
#   1. `make CROSS=aarch64-linux-gnu` builds librvtrace, librvevents,
#      rearviewd, rvctl and rvtrace for aarch64 (build/aarch64-linux-gnu/);
#   2. each is an aarch64 ELF file that passes hardening-check (PIE, stack
#      protector, FORTIFY, RELRO, BIND_NOW; control flow integrity as in
#      test_install.sh, left out);
#   3. rearviewd, rvctl and rvtrace run under qemu-aarch64 (the sysroot's C
#      library) and print their --version;
#   4. tests/deploy/cross_app.c, built for aarch64 against that librvtrace in
#      call mode and in inline mode, runs under qemu-aarch64 with RV_TRACE=1,
#      and this machine's rvtrace decodes each capture with the exact call
#      counts: main 1, cross_outer 1, cross_mid 100, cross_leaf 1000.
# Without the cross compiler, qemu-user or mmdebstrap every case is a
# visible skip.
set -u
HOST=${1:?usage: test_cross.sh HOST_BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CROSS=aarch64-linux-gnu
B=$ROOT/build/$CROSS
S=$ROOT/build/sysroot-arm64
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
echo "1..7"
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	[ -s "$T/out" ] && tail -n 40 "$T/out" | sed 's/^/# /'
}
check() { # name, command...
	name=$1
	shift
	if "$@" >"$T/out" 2>&1; then ok "$name"; else notok "$name"; fi
}
for tool in $CROSS-gcc qemu-aarch64 mmdebstrap; do
	if ! command -v $tool >/dev/null 2>&1; then
		while [ $n -lt 7 ]; do n=$((n + 1)); echo "ok $n # skip $tool missing"; done
		exit 0
	fi
done

# As a user types it: not as a sub-make of `make check-system`, whose
# environment says RV_INNER=1 (the outer make, which makes the sysroot, would
# be skipped).
check "make CROSS=$CROSS builds the device side (sysroot: $S)" \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u RV_INNER make -C "$ROOT" --no-print-directory CROSS=$CROSS
LIBS="$B/lib/librvtrace.so $B/lib/librvevents.so $B/lib/librvtrace.a $B/lib/librvevents.a"
PROGS="rearviewd rvctl rvtrace"

aarch64_hardened() {
	for f in $B/lib/librvtrace.so $B/lib/librvevents.so $B/bin/rearviewd $B/bin/rvctl $B/bin/rvtrace; do
		file -L "$f" | grep -q 'ARM aarch64' || { file -L "$f"; return 1; }
		hardening-check --nocfprotection "$f" || return 1
	done
	for a in $B/lib/librvtrace.a $B/lib/librvevents.a; do
		[ -s "$a" ] || { echo "no $a"; return 1; }
	done
}
check "each is an aarch64 ELF file and passes hardening-check" aarch64_hardened

for p in $PROGS; do
	check "$p --version under qemu-aarch64" sh -c \
		"qemu-aarch64 -L '$S' '$B/bin/$p' --version | head -n 1 | grep -x '$p (Rearview) [0-9.]*'"
done

# The traced program, call mode and inline mode.
traced() { # mode
	extra=
	[ "$1" = inline ] && extra="-include rearview/trace-inline.h"
	# shellcheck disable=SC2086
	$CROSS-gcc --sysroot="$S" -O1 -finstrument-functions $extra -I"$ROOT/tracer/include" \
		-o "$T/app-$1" "$ROOT/tests/deploy/cross_app.c" -L"$B/lib" -lrvtrace || return 1
	out=$(RV_TRACE=1 RV_TRACE_FILE="$T/$1.rvt" LD_LIBRARY_PATH="$B/lib" \
		qemu-aarch64 -L "$S" "$T/app-$1" 100) || return 1
	# sum over i < 100 of sum over j < 10 of 3 (i + j) + 1
	[ "$out" = 163000 ] || { echo "cross_app printed '$out', not 163000"; return 1; }
	[ -s "$T/$1.rvt" ] || { echo "no capture written"; return 1; }
	"$HOST/bin/rvtrace" summary --json --top 50 "$T/$1.rvt" >"$T/$1.json" || return 1
	python3 - "$T/$1.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
calls = {row["method"]: row["calls"] for row in doc["top_self"]}
want = {"main": 1, "cross_outer": 1, "cross_mid": 100, "cross_leaf": 1000}
got = {m: calls.get(m) for m in want}
print("calls:", got, "format:", doc.get("format"))
sys.exit(0 if got == want and doc.get("format") == "rearview-capture" else 1)
PY
}
check "call mode: an aarch64 capture decoded here with exact counts (1, 1, 100, 1000)" traced call
check "inline mode: an aarch64 capture decoded here with exact counts (1, 1, 100, 1000)" traced inline

[ "$fails" -eq 0 ]
