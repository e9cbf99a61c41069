#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/zstd.sh — zstd from Debian's source (libzstd) as a real
# program for Rearview: built uninstrumented and through rvcc, with a planted
# slow function (zstd-planted.patch: zstd_planted_slow_scan, a checksum of
# each input chunk in the compression loop) that a capture must name at the
# top of self time.  The workload compresses a deterministic corpus (files
# under /usr/share concatenated in sorted order: text, man pages, gzip'd
# changelogs) at level 3 (check: level 1, 2 MiB) on one thread (no asynchronous I/O threads either) and
# decompresses it again.
#
#   tests/bench/real/zstd.sh build          (quiet; exit 77 without the source)
#   tests/bench/real/zstd.sh run MODE       plain | off | on | capture; one line
#                                           (common.sh run_line: wall, cpu, ...)
#   tests/bench/real/zstd.sh check          small and fast: the planted function
#                                           found by name, its call count exact,
#                                           the round trip exact; exit 0/1/77
# Run from the repository root.  Settings: see common.sh (BUILD, RV_FLAGS,
# RV_CC, RV_VARIANT); CORPUS_MB (default 20).  zstd.never is the hand-made
# never-list the bench used before the tracer's budget
# (RV_FLAGS=--rv-never=tests/bench/real/zstd.never RV_VARIANT=never).
set -eu
ROOT=$(pwd)
. "$ROOT/tests/bench/real/common.sh"
PLANTED=zstd_planted_slow_scan
W="$REAL/zstd"

build_one() { # name, CC
	out="$W/$1/zstd"
	up_to_date "$1" "$2" "$out" "$ROOT/tests/bench/real/zstd.sh" "$ROOT/tests/bench/real/zstd-planted.patch" \
		$([ "$1" != plain ] && rv_deps) && return 0
	rm -rf "$W/$1" && mkdir -p "$W/$1"
	cp -r "$SRC/lib" "$SRC/programs" "$W/$1/"
	(cd "$W/$1" && patch -s -p0 <"$ROOT/tests/bench/real/zstd-planted.patch")
	make -s -C "$W/$1/programs" -j2 zstd CC="$2" HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 \
		ZSTD_LEGACY_SUPPORT=0 MOREFLAGS=-g >"$W/$1.log" 2>&1 || {
		cat "$W/$1.log" >&2
		return 1
	}
	cp "$W/$1/programs/zstd" "$out"
	echo "$2" >"$out.cc"
}

# run_once MODE CORPUS TMP: compress + decompress; prints the fields (the
# capture's: compression's).
run_once() {
	mode=$1
	bin="$W/$RV_VARIANT/zstd"
	[ "$mode" = plain ] && bin="$W/plain/zstd"
	env_on=$(mode_env "$mode" "$3")
	timed "$3" env $env_on "$bin" -q -f -"${LEVEL:-3}" --single-thread --no-asyncio "$2" -o "$3/x.zst"
	[ "$mode" = capture ] && env_on="RV_TRACE=1 RV_TRACE_FILE=$3/d.rvt"
	timed "$3" env $env_on "$bin" -q -f -d --no-asyncio "$3/x.zst" -o "$3/x.out"
	cmp -s "$2" "$3/x.out" || {
		echo "zstd.sh: round trip differs" >&2
		exit 1
	}
	run_line "$mode" "$bin" "$3"
}

cmd=${1:-}
want_cmd "$cmd" "$0"
SRC=$(fetch_source libzstd zstd)
mkdir -p "$W"
build_one plain "$RV_CC"
build_one "$RV_VARIANT" "$(rv_cc)"
[ "$cmd" = build ] && exit 0
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if [ "$cmd" = run ]; then
	run_once "${2:?run MODE}" "$(corpus "$W" "${CORPUS_MB:-20}")" "$T"
	exit 0
fi

# check: 2 MiB, captured; the planted function on top, called once per
# 128 KiB input chunk (the compression loop reads ZSTD_CStreamInSize() bytes
# per turn and ends on the turn that reads the file's last byte).
c=$(corpus "$W" 2)
LEVEL=1
# Read the corpus once first: on a loaded machine its pages may have left the
# page cache, and a read from disk inside the capture (AIO_ReadPool_fillBuffer,
# blocked) once outweighed the planted function's self time.
cat "$c" >/dev/null
# Exact counts: the budget (on by default) could mute a hot callee and fold
# its time into a caller's self time (RV_TRACE_MUTE).
export RV_TRACE_MUTE=off
line=$(run_once capture "$c" "$T")
calls=$("$RVTRACE" summary --top 100 "$T/c.rvt" | awk -v p="$PLANTED" '$NF == p { print $1; exit }')
want=$((($(wc -c <"$c") + 131071) / 131072))
case "$line" in
*found=yes*) ;;
*)
	echo "zstd check: $PLANTED not at the top of self time: $line" >&2
	"$RVTRACE" summary --top 5 "$T/c.rvt" >&2
	exit 1
	;;
esac
[ "$calls" = "$want" ] || {
	echo "zstd check: $PLANTED called ${calls:-0} times in the capture, expected $want" >&2
	exit 1
}
echo "zstd check: ok ($line; $PLANTED calls $calls)"
