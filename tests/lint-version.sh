#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make lint`: one version.  The top Makefile's RV_VERSION is the only place
# the version is written; what repeats it must agree:
#   - debian/changelog's newest entry (the package version; native, so the
#     whole version is RV_VERSION);
#   - the shared-library packages of debian/control and their symbols files,
#     named after the SONAME's major (librvtrace<MAJOR>, librvevents<MAJOR>,
#     MAJOR = RV_VERSION's first number).
#   tests/lint-version.sh
set -u
cd "$(dirname "$0")/.." || exit 2
version=$(sed -n 's/^RV_VERSION *:= *//p' Makefile)
major=${version%%.*}
status=0
bad() {
	echo "lint: $*"
	status=1
}
[ -n "$version" ] || bad "Makefile: no RV_VERSION"
changelog=$(sed -n '1s/^[a-z0-9.+-]* (\([^)]*\)).*/\1/p' debian/changelog 2>/dev/null)
[ "$changelog" = "$version" ] ||
	bad "debian/changelog's newest version is '$changelog', the Makefile's RV_VERSION '$version' (add a changelog entry: dch -v $version)"
for lib in librvtrace librvevents; do
	grep -qx "Package: $lib$major" debian/control ||
		bad "debian/control: no package $lib$major (SONAME $lib.so.$major)"
	[ -f "debian/$lib$major.symbols" ] || bad "no debian/$lib$major.symbols"
	for f in debian/"$lib"[0-9]*.*; do
		[ -e "$f" ] || continue
		case $f in debian/"$lib$major".*) ;; *) bad "$f names another SONAME than $lib.so.$major" ;; esac
	done
done
[ "$status" -eq 0 ] && echo "lint: version $version everywhere (Makefile, debian/changelog, SONAME $major)"
exit "$status"
