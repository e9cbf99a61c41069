#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# build.sh — builds Lua 5.4 from Debian's unpacked lua5.4 source, plain or as
# rvlua (tracer/runtimes/lua/README.md).  Incremental: does nothing when the
# output is newer than everything it is built from.  Prints only errors.
#
#   build.sh plain SRC OUT      OUT/lua: the uninstrumented interpreter
#   build.sh rv SRC OUT BUILD   OUT/rvlua: a patched copy of SRC (OUT/src,
#                               rvlua.patch + rvlua.c) linked with BUILD's
#                               librvtrace.a and librvproto.a
#
# SRC is the unpacked source's top directory (lua5.4-5.4.4, Debian's patches
# applied by `apt-get source`).  Both builds use the same compiler and flags
# (LUA_CFLAGS, default -O2 -g; LUA_LDFLAGS, default none), so their
# difference is the trace points alone.
set -eu
MODE=${1:?usage: build.sh plain|rv SRC OUT [BUILD]}
SRC=${2:?source directory}
OUT=${3:?output directory}
HERE=$(cd "$(dirname "$0")" && pwd)
CC=${LUA_CC:-gcc}
CFLAGS=${LUA_CFLAGS:--O2 -g}
LDFLAGS=${LUA_LDFLAGS:-}
DEFS="-DLUA_COMPAT_5_3 -DLUA_USE_LINUX"
mkdir -p "$OUT"

newer_than_all() { # target, inputs...: 0 when target exists and is newer than every input
	t=$1
	shift
	[ -e "$t" ] || return 1
	for f in "$@"; do
		[ "$t" -nt "$f" ] || return 1
	done
}

# Debian's module-path patch includes this generated header (debian/rules makes it).
multiarch() { # dir
	[ -f "$1/lua5.4-deb-multiarch.h" ] ||
		printf '#define DEB_HOST_MULTIARCH "%s"\n' "$($CC -dumpmachine)" >"$1/lua5.4-deb-multiarch.h"
}

core() { # dir: the interpreter's C files (not luac)
	ls "$1"/*.c | grep -v '/luac\.c$'
}

case $MODE in
plain)
	newer_than_all "$OUT/lua" "$SRC/src/lua.c" "$HERE/build.sh" && exit 0
	multiarch "$SRC/src"
	# shellcheck disable=SC2046,SC2086
	$CC -std=gnu99 $CFLAGS $DEFS -o "$OUT/lua.tmp" $(core "$SRC/src") -Wl,-E -lm -ldl
	mv "$OUT/lua.tmp" "$OUT/lua"
	;;
rv)
	BUILD=${4:?build directory}
	LIBS="$BUILD/lib/librvtrace.a $BUILD/lib/librvproto.a"
	INC=$HERE/../../include/rearview
	newer_than_all "$OUT/rvlua" "$SRC/src/lua.c" "$HERE/build.sh" "$HERE/rvlua.patch" \
		"$HERE/rvlua.c" "$HERE/rvlua.h" "$INC/trace.h" "$INC/trace-inline.h" \
		"$INC/trace-runtime.h" "$BUILD/gen/rv_version.h" $LIBS && exit 0
	rm -rf "$OUT/src"
	cp -R "$SRC/src" "$OUT/src"
	patch -s -d "$OUT/src" -p1 <"$HERE/rvlua.patch"
	cp "$HERE/rvlua.c" "$HERE/rvlua.h" "$OUT/src/"
	multiarch "$OUT/src"
	# shellcheck disable=SC2046,SC2086
	$CC -std=gnu99 $CFLAGS $DEFS -I"$HERE/../../include" -I"$BUILD/gen" -o "$OUT/rvlua.tmp" \
		$(core "$OUT/src") $LDFLAGS -Wl,-E $LIBS $(pkg-config --libs libprotobuf-c libelf) \
		-lpthread -lm -ldl
	mv "$OUT/rvlua.tmp" "$OUT/rvlua"
	;;
*)
	echo "build.sh: unknown mode $MODE" >&2
	exit 2
	;;
esac
