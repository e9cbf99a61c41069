#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make lint`: every source file carries the project's licence tag,
# `SPDX-License-Identifier: Apache-2.0` (LICENSE is the whole text).
# Source means code, build fragments, scripts, schemas and installed
# configuration; test data written by other tools (fuzz corpora, importer
# corpora and fixtures) and JSON, which has no comments, are not.
# The tag is on one of the first lines, or anywhere in a test's Lua script,
# whose function names carry their line numbers.
#   tests/lint-spdx.sh            (lists the files with git itself)
set -u
cd "$(dirname "$0")/.." || exit 2
tag='SPDX-License-Identifier: Apache-2.0'
status=0
n=0
files=$(git ls-files --cached --others --exclude-standard 2>/dev/null) || {
	echo "lint-spdx: not a git checkout: nothing to check"
	exit 0
}
for f in $files; do
	case "$f" in
	tests/fuzz/* | tests/rvtrace/corpus/* | tests/rvtrace/fixtures/*) continue ;;
	*.c | *.h | *.cc | *.S | *.proto | *.js | *.go | *.sh | *.mk | *.py | *.in | \
		*.example | *.sysusers | *.tmpfiles | *.desktop | *.patch | *.lua | \
		*.xml | *.policy | *.conf | *.scd | *.map | Makefile | */Makefile | .ci/run | \
		debian/rules | debian/control) ;;
	*) continue ;;
	esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	case "$f" in
	tests/*.lua) grep -qF "$tag" "$f" && continue ;;
	*) head -n 5 "$f" | grep -qF "$tag" && continue ;;
	esac
	echo "lint: $f: no '$tag' in its first lines"
	status=1
done
[ -f LICENSE ] || { echo "lint: LICENSE is missing"; status=1; }
[ "$status" -eq 0 ] && echo "lint: $n files carry the licence tag"
exit "$status"
