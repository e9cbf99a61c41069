# SPDX-License-Identifier: Apache-2.0
# tests/bench/real/common.sh — shared by the real-program scripts (<prog>.sh):
# fetching a Debian source once, the rvcc build settings, timing a run in CPU
# time, and reading a capture.  Sourced, not run; expects ROOT (the repo
# root) set.
#
# Settings (environment):
#   BUILD          the build directory (default build)
#   RV_FLAGS       extra rvcc flags for the instrumented build (default none:
#                  rvcc's own defaults, threshold 200; e.g. --rv-never=FILE
#                  for a never-list row, --rv-threshold=0 for every function)
#   RV_CC          the compiler rvcc wraps (default gcc)
#   RV_VARIANT     a name for a build with other RV_FLAGS (default rv), so
#                  that both stay cached side by side

BUILD=${BUILD:-build}
RV_FLAGS=${RV_FLAGS:-}
RV_CC=${RV_CC:-gcc}
RV_VARIANT=${RV_VARIANT:-rv}
RVCC="$ROOT/$BUILD/bin/rvcc"
RVTRACE="$ROOT/$BUILD/bin/rvtrace"
CPURUN="$ROOT/$BUILD/tests/bench/cpurun"
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
		$(ls "$ROOT/$BUILD/lib/rearview/rvcc_gcc_plugin.so" 2>/dev/null)
}

# The compiler line of the instrumented build: rvcc, the compiler, RV_FLAGS
# (--rv-rpath: the programs run from the build tree, where the dynamic
# linker would not find librvtrace; it changes nothing else).
rv_cc() {
	echo "$RVCC $RV_CC --rv-rpath${RV_FLAGS:+ $RV_FLAGS}"
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

# corpus DIR MEGABYTES: prints the path of a deterministic corpus of that
# size in DIR (made once): the files under /usr/share/doc, common-licenses,
# man and perl concatenated in sorted order — text, man pages, gzip'd
# changelogs.
corpus() {
	c="$1/corpus-$2M"
	[ -s "$c" ] && {
		echo "$c"
		return 0
	}
	find /usr/share/doc /usr/share/common-licenses /usr/share/man /usr/share/perl -type f \
		2>/dev/null | LC_ALL=C sort | xargs cat 2>/dev/null | head -c "$(($2 << 20))" >"$c.tmp"
	mv "$c.tmp" "$c"
	echo "$c"
}

# configure_build NAME CC SRC OUT TARGET...: a copy of the autotools tree SRC
# in OUT, configured with CC and built (`make TARGET...`; the generated files
# are never remade: Debian's patches touch Makefile.am, and the build needs
# neither automake nor makeinfo); its log in OUT.log.
configure_build() {
	rm -rf "$4" && mkdir -p "$(dirname "$4")"
	cp -a "$3" "$4"
	# (cb_*: sh has no local variables, and the callers keep theirs in
	# out, n and cc.)
	cb_n=$1 cb_cc=$2 cb_dir=$4
	shift 4
	(cd "$cb_dir" && ./configure -q CC="$cb_cc" CFLAGS="-O2 -g" >"$cb_dir.log" 2>&1 &&
		make -s -j2 ACLOCAL=true AUTOMAKE=true AUTOCONF=true AUTOHEADER=true MAKEINFO=true \
			"$@" >>"$cb_dir.log" 2>&1) || {
		echo "$cb_n: build failed:" >&2
		tail -n 30 "$cb_dir.log" >&2
		return 1
	}
}

# mode_env MODE DIR: the environment a mode runs with (plain and off: none;
# on: the main thread traced into the default ring; capture: on, and a
# capture written at exit to DIR/c.rvt).
mode_env() {
	case "$1" in
	plain | off) ;;
	on) echo "RV_TRACE=1" ;;
	capture) echo "RV_TRACE=1 RV_TRACE_FILE=$2/c.rvt" ;;
	*)
		echo "unknown mode $1" >&2
		exit 2
		;;
	esac
}

# timed DIR CMD...: runs CMD through cpurun, adding its wall and CPU seconds
# to DIR/cost (several commands of one run add up).
timed() {
	d=$1
	shift
	"$CPURUN" "$d/cost" "$@"
}

# capture_fields CAPTURE PLANTED ONCPU: "events=<n> evrate=<events/s>
# ring=<s> muted=<n> top=<name> found=<yes|no>": n = entries + exits in the
# capture (the ring's last window when it wrapped), evrate = n over its span
# divided by ONCPU, the share of the run's wall time the program was on a
# CPU (so: events per second of its CPU time, what a quiet machine's wall
# clock would show); ring = the seconds the default 32 MiB ring holds at
# that rate; muted = functions the budget muted; top = the first named row
# of self time ("(unknown caller)", a frame open since before the ring's
# oldest slot, is passed over), found = it is PLANTED or a clone gcc made of
# it (PLANTED.isra.0, .constprop.N, .part.N: rvcc's late mode leaves gcc's
# cloning as it is without rvcc).
capture_fields() {
	info=$("$RVTRACE" info "$1" 2>/dev/null)
	calls=$(echo "$info" | sed -n 's/^calls: *\([0-9]*\).*/\1/p')
	span=$(echo "$info" | sed -n 's/^span:.*(\([0-9.]*\) \([a-z]*\)).*/\1 \2/p')
	# (grep -c exits 1 when it counts none: not an error under set -e)
	muted=$(echo "$info" | grep -c '^muted:' || true)
	top=$("$RVTRACE" summary --top 3 "$1" 2>/dev/null |
		awk '/^ *calls/ { on = 1; next } on && !/unknown caller/ && NF { print $NF; exit }')
	found=no
	case $top in "$2" | "$2".isra.* | "$2".constprop.* | "$2".part.*) found=yes ;; esac
	echo "$span" | awk -v c="${calls:-0}" -v m="$muted" -v t="${top:--}" -v f="$found" -v oc="$3" '{
		s = $1
		if ($2 == "us") s /= 1e6
		else if ($2 == "ms") s /= 1e3
		else if ($2 == "ns") s /= 1e9
		r = 0
		if (s > 0 && oc > 0) r = 2 * c / s / oc
		ring = "-"
		if (r > 0) ring = sprintf("%.3g", 4194304 / r)
		printf "events=%d evrate=%.0f ring=%s muted=%d top=%s found=%s", 2 * c, r, ring, m, t, f
	}'
}

# run_line MODE BIN DIR: the one line `run` prints (the shared interface):
# wall and CPU seconds summed over DIR/cost, the capture's fields (DIR/c.rvt,
# PLANTED) in capture mode, BIN's traced/total functions unless plain.
run_line() {
	cost=$(awk '{ w += $1; c += $2 } END { printf "wall=%.4f cpu=%.4f", w, c }' "$3/cost")
	cap="events=- evrate=- ring=- muted=- top=- found=-"
	oncpu=$(awk '{ w += $1; c += $2 } END { if (w > 0) printf "%.4f", c / w; else print 0 }' "$3/cost")
	[ "$1" = capture ] && cap=$(capture_fields "$3/c.rvt" "$PLANTED" "$oncpu")
	inst="-"
	[ "$1" != plain ] && inst=$(instrumented "$2")
	echo "$cost $cap instrumented=$inst"
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
