#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/test_package.sh — the Debian packages, end to end, in TAP
# (system tier: a full package build, lintian, and a clean Debian 12 root
# per package from Debian's mirror; tens of minutes).
#
#   test_package.sh VERSION
#
#   1. a clean clone of this checkout's HEAD (commit first: uncommitted
#      changes are not in it) builds with `dpkg-buildpackage -us -uc -b`
#      without network (unshare -n; the web assets from npm's cache), into
#      every package of debian/control but the build profiles' ones;
#   2. lintian finds no error, and each warning it gives is one
#      debian/README.source lists with its reason;
#   3. each package installs alone into a clean Debian 12 root made by
#      mmdebstrap (its dependencies from Debian's mirror, ours from a local
#      repository of the built packages; one root, unpacked afresh for each
#      package, apt run in it under chroot); every program it ships answers
#      --version there with "PROGRAM (Rearview) VERSION" and has its man
#      page;
#   4. rearviewd's root holds no GTK 4, libweston or libpq, and its
#      maintainer scripts made the rearview account (sysusers), the state
#      directory (tmpfiles) and enabled rearviewd.service.
# The work stays in build/package/ (packages, build log, lintian's report,
# the clean root's tarball) and apt's downloads in build/package-apt/ for
# the next run.  Without the
# tools every case is a visible skip; without the mirror, the root cases.
set -u
VERSION=${1:?usage: test_package.sh VERSION}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$ROOT/build/package
CACHE=$ROOT/build/package-apt
MIRROR=${RV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${RV_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
notok() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
	[ -s "$W/why" ] && tail -n 40 "$W/why" | sed 's/^/# /'
}

rm -rf "$W"
mkdir -p "$W" "$CACHE"
# The packages a plain build makes: debian/control's, without profiles.
PKGS=$(awk '/^Package:/ { p = $2 } /^Build-Profiles:/ { p = "" }
	/^$/ { if (p != "") print p; p = "" } END { if (p != "") print p }' "$ROOT/debian/control")
npkg=$(echo "$PKGS" | wc -w)
echo "1..$((2 + npkg + 1))"
for tool in dpkg-buildpackage lintian mmdebstrap dpkg-scanpackages; do
	if ! command -v $tool >/dev/null 2>&1; then
		while [ $n -lt $((2 + npkg + 1)) ]; do skip "$tool missing (deploy/install-deps.sh)"; done
		exit 0
	fi
done

# 1. Build from a clean clone, offline.
[ -z "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ] ||
	echo "# uncommitted changes are not in the clone: it builds HEAD $(git -C "$ROOT" rev-parse --short HEAD)"
offline=""
unshare -n true 2>/dev/null && offline="unshare -n"
built() {
	git clone --quiet "$ROOT" "$W/src" || return 1
	(cd "$W/src" && $offline dpkg-buildpackage -us -uc -b -j2) >"$W/build.log" 2>&1 ||
		{ tail -n 40 "$W/build.log"; return 1; }
	for p in $PKGS; do
		[ -f "$W/${p}_${VERSION}_"*.deb ] || { echo "no ${p}_${VERSION}_*.deb"; return 1; }
	done
}
if built >"$W/why" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b from a clean clone${offline:+, no network}: $npkg packages"
else
	notok "dpkg-buildpackage -us -uc -b from a clean clone${offline:+, no network}"
	while [ $n -lt $((2 + npkg + 1)) ]; do skip "no packages to check"; done
	exit 1
fi

# 2. lintian: no error; every warning explained in README.source.
lintian --tag-display-limit 0 --display-info "$W"/rearview_"$VERSION"_*.changes >"$W/lintian.txt" 2>&1
lintian_ok() {
	grep '^E: ' "$W/lintian.txt" && return 1
	bad=0
	for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' "$W/lintian.txt" | sort -u); do
		grep -q "\`$tag\`" "$ROOT/debian/README.source" ||
			{ echo "warning $tag is not in debian/README.source"; bad=1; }
	done
	return $bad
}
if lintian_ok >"$W/why" 2>&1; then
	ok "lintian: no error, $(grep -c '^W: ' "$W/lintian.txt") warnings (each in debian/README.source), $(grep -c '^I: ' "$W/lintian.txt") notes"
else
	notok "lintian: no error, every warning explained in debian/README.source"
fi

# 3. Each package alone in a clean root.
if ! curl -sfI --max-time 30 "$MIRROR/dists/bookworm/Release" >/dev/null 2>&1; then
	while [ $n -lt $((2 + npkg + 1)) ]; do skip "no Debian mirror ($MIRROR)"; done
	[ "$fails" -eq 0 ]
	exit
fi
mkdir -p "$W/repo"
cp "$W"/*.deb "$W/repo/"
(cd "$W/repo" && dpkg-scanpackages . /dev/null >Packages 2>/dev/null)
# One clean root (mmdebstrap's apt variant: Essential and apt, package lists
# kept), unpacked afresh for each package; apt's downloads shared through
# $CACHE.
base() {
	mmdebstrap --quiet --variant=apt --skip=cleanup/apt/lists \
		--aptopt='APT::Keep-Downloaded-Packages "true"' \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
		--setup-hook="sync-in $CACHE /var/cache/apt/archives/" \
		--customize-hook="sync-out /var/cache/apt/archives $CACHE" \
		bookworm "$W/base.tar" "deb $MIRROR bookworm main" \
		"deb $MIRROR bookworm-updates main" "deb $SECURITY bookworm-security main"
}
if ! base >"$W/why" 2>&1; then
	notok "a clean Debian 12 root from $MIRROR (mmdebstrap)"
	while [ $n -lt $((2 + npkg + 1)) ]; do skip "no clean root"; done
	exit 1
fi
R=$W/root
# Installs a package into a fresh copy of the clean root, as apt on a
# device would (our packages from a local repository, the rest from
# Debian): in a private mount namespace, so /proc and /dev mounted into the
# root vanish with it whatever happens.
in_root() { # package
	rm -rf "$R" && mkdir -p "$R" && tar -C "$R" -xf "$W/base.tar" || return 1
	cp -a "$W/repo" "$R/tmp/repo"
	echo 'deb [trusted=yes] file:/tmp/repo ./' >"$R/etc/apt/sources.list.d/rearview.list"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	cp -l "$CACHE"/*.deb "$R/var/cache/apt/archives/" 2>/dev/null
	R=$R P=$1 unshare -m sh -ec '
		mount --make-rprivate /
		mount -t proc proc "$R/proc"
		mount --rbind /dev "$R/dev"
		chroot "$R" apt-get update -qq -o Dir::Etc::SourceList=sources.list.d/rearview.list \
			-o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0
		DEBIAN_FRONTEND=noninteractive chroot "$R" apt-get install -y -qq \
			-o APT::Keep-Downloaded-Packages=true "$P"' || return 1
	cp -ln "$R"/var/cache/apt/archives/*.deb "$CACHE/" 2>/dev/null
	return 0
}
programs_answer() { # package
	[ "$(chroot "$R" dpkg-query -W -f='${Status}' "$1")" = "install ok installed" ] ||
		{ echo "$1 is not installed"; return 1; }
	for f in $(chroot "$R" dpkg -L "$1" | grep -E '^/usr/s?bin/'); do
		p=$(basename "$f")
		v=$(chroot "$R" "$f" --version 2>&1 | head -n 1)
		case $p in
		rvcc-*)
			# rvcc under a compiler's name answers as that compiler
			# (configure's probes must not see rvcc), when it is there.
			cc=${p#rvcc-}
			chroot "$R" sh -c "command -v $cc" >/dev/null 2>&1 || { echo "$p: no $cc here" >&2; continue; }
			want=$(chroot "$R" "$cc" --version 2>&1 | head -n 1)
			[ "$v" = "$want" ] || { echo "$p --version: '$v', not $cc's '$want'"; return 1; }
			;;
		*) [ "$v" = "$p (Rearview) $VERSION" ] || { echo "$p --version: '$v'"; return 1; } ;;
		esac
		ls "$R"/usr/share/man/man[18]/"$p".[18].gz >/dev/null 2>&1 ||
			{ echo "no man page for $p"; return 1; }
		echo "$p: $v"
	done
}
for p in $PKGS; do
	if in_root "$p" >"$W/why" 2>&1 && programs_answer "$p" >"$W/answers" 2>>"$W/why"; then
		progs=$(wc -l <"$W/answers")
		ok "$p installs into a clean Debian 12 root$([ "$progs" -gt 0 ] && echo "; its $progs programs answer --version and have man pages")"
	else
		cat "$W/answers" >>"$W/why" 2>/dev/null
		notok "$p installs into a clean Debian 12 root, its programs answer --version"
	fi
	# 4. The device package: nothing of the desktop or the server, and
	# its maintainer scripts ran.
	if [ "$p" = rearviewd ]; then
		device_root() {
			for heavy in libgtk-4-1 libweston-10-0 libpq5; do
				chroot "$R" dpkg-query -W "$heavy" >/dev/null 2>&1 &&
					{ echo "rearviewd pulled $heavy"; return 1; }
			done
			chroot "$R" getent passwd rearview >/dev/null || { echo "no rearview account"; return 1; }
			# The owner's name as the root knows it (its passwd, not this
			# machine's: the uid sysusers picked may be another account here).
			[ "$(chroot "$R" stat -c %U /var/lib/rearview 2>/dev/null)" = rearview ] ||
				{ echo "/var/lib/rearview missing or not rearview's"; return 1; }
			[ -L "$R/etc/systemd/system/multi-user.target.wants/rearviewd.service" ] ||
				{ echo "rearviewd.service not enabled"; return 1; }
		}
		if device_root >"$W/why" 2>&1; then
			ok "rearviewd: no GTK 4, libweston or libpq; sysusers, tmpfiles and the enabled unit applied by its maintainer scripts"
		else
			notok "rearviewd: no GTK 4, libweston or libpq; sysusers, tmpfiles and unit applied"
		fi
	fi
done
rm -rf "$R"
[ "$fails" -eq 0 ]
