#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fetch.sh — unpacks Debian's lua5.4 source once into DIR (default
# build/real/src/lua) with `apt-get source`, adding a deb-src entry for
# bookworm when there is none (root only; then `apt-get update`).  Prints the
# unpacked top directory.  Exit 77 when the source cannot be had (not root
# and no deb-src entry, or no network): callers turn that into a visible skip.
#
#   tracer/runtimes/lua/fetch.sh [DIR]
set -eu
DIR=${1:-build/real/src/lua}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
top() { ls -d "$DIR"/lua5.4-*/ 2>/dev/null | head -n 1 | sed 's|/$||'; }
if [ -z "$(top)" ] || [ ! -f "$(top)/src/lua.c" ]; then
	if ! grep -rqs '^ *\(deb-src\|Types: *deb-src\)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "fetch.sh: no deb-src entry for apt-get source (run once as root)" >&2
			exit 77
		fi
		printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			>/etc/apt/sources.list.d/rearview-src.sources
		apt-get update -qq >/dev/null 2>&1 || true
	fi
	rm -rf "$DIR"/lua5.4-*
	if ! (cd "$DIR" && apt-get source -qq lua5.4 >/dev/null 2>&1) || [ -z "$(top)" ]; then
		echo "fetch.sh: apt-get source lua5.4 failed" >&2
		exit 77
	fi
fi
top
