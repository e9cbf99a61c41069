#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# unwind_lua.sh — for test_unwind: Lua 5.4 from Debian's source (the fetch
# of tests/bench/tracer_lua.sh, shared under BUILD/bench/lua), built once per
# build dir with gcc -O2 -finstrument-functions against BUILD's librvtrace.a
# (rebuilt when the library is newer), with the build's sanitizer flags.
# Prints the interpreter's path; exits 77 when the source cannot be had (the
# test then skips, saying so).
#
#   tests/tracer/unwind_lua.sh BUILD_DIR [SANFLAGS]   (run from the source root)
set -eu
BUILD=$1
SAN=${2:-}
ROOT=$(pwd)
WORK="$BUILD/bench/lua"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
if ! ls -d "$WORK"/lua5.4-*/src >/dev/null 2>&1; then
	if ! grep -rqs 'deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "unwind_lua: no deb-src entry for apt-get source lua5.4" >&2
		exit 77
	fi
	(cd "$WORK" && apt-get source -qq lua5.4 >/dev/null 2>&1) || {
		echo "unwind_lua: apt-get source lua5.4 failed" >&2
		exit 77
	}
fi
SRC=$(ls -d "$WORK"/lua5.4-*/src | head -n 1)
[ -f "$SRC/lua5.4-deb-multiarch.h" ] ||
	printf '#define DEB_HOST_MULTIARCH "%s"\n' "$(gcc -dumpmachine)" >"$SRC/lua5.4-deb-multiarch.h"
OUT="$ROOT/$BUILD/tests/tracer/lua-unwind"
LIB="$ROOT/$BUILD/lib/librvtrace.a"
if ! [ "$OUT" -nt "$LIB" ]; then
	CORE=$(ls "$SRC"/*.c | grep -v '/luac\.c$')
	# shellcheck disable=SC2086
	gcc $SAN -std=gnu99 -O2 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -finstrument-functions \
		-o "$OUT.tmp" $CORE -lm -ldl "$LIB" "$ROOT/$BUILD/lib/librvproto.a" \
		$(pkg-config --libs libprotobuf-c libelf) -lpthread >&2
	mv "$OUT.tmp" "$OUT"
fi
echo "$OUT"
