# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/common.sh — shared by the real-program scripts (zstd.sh,
# sqlite3.sh): fetching a Debian source once, the rvcc build settings, and
# reading a capture.  Sourced, not run; expects ROOT (the repo root) set.
#
# Settings (environment):
#   BUILD          the build directory (default build)
#   RV_THRESHOLD   rvcc --rv-threshold for the instrumented build (default 200,
#                  XRay's rule; 0 instruments every function)
#   RV_NEVER       a never-list for rvcc (rvtrace hotlist output); each script
#                  defaults to its own <prog>.never, RV_NEVER= turns it off
#   RV_CC          the compiler rvcc wraps (default gcc)

BUILD=${BUILD:-build}
RV_THRESHOLD=${RV_THRESHOLD:-200}
RV_NEVER=${RV_NEVER:-}
RV_CC=${RV_CC:-gcc}
RVCC="$ROOT/$BUILD/bin/rvcc"
RVTRACE="$ROOT/$BUILD/bin/rvtrace"
REAL="$ROOT/$BUILD/real"

# fetch_source PACKAGE NAME: unpacks PACKAGE's Debian source once into
# $REAL/src/NAME/ and prints its directory; exits 77 when it cannot be had.
fetch_source() {
	dir="$REAL/src/$2"
	found=$(ls -d "$dir"/*/debian 2>/dev/null | head -n 1)
	if [ -z "$found" ]; then
		if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
			[ "$(id -u)" -eq 0 ] || {
				echo "$2: no deb-src entry and not root" >&2
				exit 77
			}
			printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
				>/etc/apt/sources.list.d/rearview-src.sources
			apt-get update -qq >/dev/null 2>&1
		fi
		rm -rf "$dir" && mkdir -p "$dir"
		(cd "$dir" && apt-get source -qq "$1" >/dev/null 2>&1) || {
			echo "$2: apt-get source $1 failed" >&2
			rm -rf "$dir"
			exit 77
		}
		found=$(ls -d "$dir"/*/debian | head -n 1)
	fi
	dirname "$found"
}

# up_to_date NAME CC TARGET FILE...: true when TARGET exists, is newer than
# every FILE and was built with the same CC line (kept in TARGET.cc).
up_to_date() {
	[ "$(cat "$3.cc" 2>/dev/null)" = "$2" ] || return 1
	t=$3
	shift 3
	newer_than "$t" "$@"
}

# newer_than TARGET FILE...: true when TARGET exists and is newer than all.
newer_than() {
	t=$1
	shift
	[ -e "$t" ] || return 1
	for f in "$@"; do
		[ "$t" -nt "$f" ] || return 1
	done
}

# The instrumented build is redone when any of these change.
rv_deps() {
	echo "$RVCC" "$ROOT/$BUILD/lib/librvtrace.so" "$ROOT/tracer/include/rearview/trace-inline.h" \
		$(ls "$ROOT/$BUILD/lib/rearview/rvcc_gcc_plugin.so" 2>/dev/null) \
		$RV_NEVER
}

# rvcc's settings as flags, for CC="…" (--rv-rpath: the programs run from
# the build tree, where the dynamic linker would not find librvtrace).
rv_flags() {
	f="--rv-rpath --rv-threshold=$RV_THRESHOLD"
	[ -n "$RV_NEVER" ] && f="$f --rv-never=$RV_NEVER"
	echo "$f"
}

# instrumented BIN: "<traced>/<total>": total = the distinct function names
# of BIN's text symbols (clones such as foo.part.0 folded into foo) and of
# its .rearview_untraced section (which also names inline helpers that have
# no symbol of their own); traced = total minus the untraced names.
instrumented() {
	readelf -p .rearview_untraced "$1" 2>/dev/null | sed 's/\\n/\n/g' |
		sed -n 's/.*\(threshold\|never\) \([^ ]*\)$/\2/p' | sort -u >"$1.untraced"
	nm --defined-only "$1" | sed -n 's/.* [tT] \([^.]*\).*/\1/p' | sort -u |
		cat - "$1.untraced" | sort -u >"$1.names"
	echo "$(($(wc -l <"$1.names") - $(wc -l <"$1.untraced")))/$(wc -l <"$1.names")"
	rm -f "$1.untraced" "$1.names"
}

# capture_fields CAPTURE PLANTED SECONDS: "tracepoints=<n> found=<yes|no>
# tprate=<events/s>": n = entries + exits in the capture (the ring's last
# window when it wrapped); found = PLANTED is the first row of self time.
capture_fields() {
	info=$("$RVTRACE" info "$1" 2>/dev/null)
	calls=$(echo "$info" | sed -n 's/^calls: *\([0-9]*\).*/\1/p')
	span=$(echo "$info" | sed -n 's/^span:.*(\([0-9.]*\) \([a-z]*\)).*/\1 \2/p')
	top=$("$RVTRACE" summary --top 1 "$1" 2>/dev/null | awk '/^ *calls/ { getline; print $NF; exit }')
	found=no
	[ "$top" = "$2" ] && found=yes
	rate=$(echo "$span" | awk -v c="${calls:-0}" '{ s = $1; if ($2 == "us") s /= 1e6; else if ($2 == "ms") s /= 1e3; else if ($2 == "ns") s /= 1e9; if (s > 0) printf "%.0f", 2 * c / s; else print "-" }')
	echo "tracepoints=$((2 * ${calls:-0})) found=$found tprate=${rate:--}"
}

# run_line MODE BIN DIR T0 T1: the one line `run` prints (the shared
# interface): wall seconds from T0 to T1, the capture's fields (DIR/c.rvt,
# PLANTED) in capture mode, BIN's traced/total functions unless plain.
run_line() {
	secs=$(echo "$4 $5" | awk '{ printf "%.4f", $2 - $1 }')
	cap="tracepoints=- found=- tprate=-"
	[ "$1" = capture ] && cap=$(capture_fields "$3/c.rvt" "$PLANTED")
	inst="-"
	[ "$1" != plain ] && inst=$(instrumented "$2")
	set -- $cap
	echo "seconds=$secs $1 $2 instrumented=$inst $3"
}

# want_cmd CMD PROG: exits 2 with the usage unless CMD is build, run or check.
want_cmd() {
	case "$1" in
	build | run | check) ;;
	*)
		echo "usage: $2 build | run MODE | check" >&2
		exit 2
		;;
	esac
}

# now: seconds since the epoch with nanoseconds.
now() {
	date +%s.%N
}
