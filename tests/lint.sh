#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make lint`: formatting (clang-format, .clang-format at the top), calls
# that are banned in Rearview's C because safer forms exist (snprintf,
# strtol with end checks, strtok_r, memcpy with known sizes …), and the
# server's folder rule (tests/lint-layers.py).
#   tests/lint.sh FILE...   (the Makefile passes every tracked .c/.h)
set -u
status=0

banned='\b(strcpy|strcat|strncpy|strncat|sprintf|vsprintf|gets|strtok|atoi|atol|atoll|atof|tmpnam|mktemp|asctime|ctime|gmtime|localtime)[[:space:]]*\('

for f in "$@"; do
	shift
	case "$f" in build/*) ;; *) set -- "$@" "$f" ;; esac
done
# One clang-format for every file (its start-up is most of its cost); only
# when that fails, one per file to name the ones that are not clean.
cf_all=0
[ $# -eq 0 ] || clang-format --dry-run -Werror "$@" >/dev/null 2>&1 || cf_all=1
for f in "$@"; do
	if [ "$cf_all" -ne 0 ] && ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		echo "lint: $f: not clang-format clean (run: clang-format -i $f)"
		status=1
	fi
	# Strip // comments and string literals crudely before matching.
	hits=$(sed -e 's://.*$::' -e 's/"[^"]*"//g' "$f" | grep -nE "$banned" || true)
	if [ -n "$hits" ]; then
		echo "$hits" | sed "s|^|lint: $f:banned call: |"
		status=1
	fi
done
# Storage is reached only through the store (server/src/store/store.h): only
# its backends (store/sqlite/, store/pg/, blob/blob_pg.c) include a database
# client's header.
for f in "$@"; do
	case "$f" in server/src/*) ;; *) continue ;; esac
	grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](sqlite3|libpq-fe)\.h[>"]' "$f" ||
		continue
	b=${f#server/src/}
	case "$b" in
	store/sqlite/* | store/pg/* | blob/blob_pg.c) continue ;;
	esac
	echo "lint: $f: includes a database client header; SQL belongs behind server/src/store/store.h"
	status=1
done
# The server's folders run one way and no two files lean on each other
# (HACKING.md "The server's folders"): tests/lint-layers.py.
python3 "$(dirname "$0")/lint-layers.py" || status=1
[ "$status" -eq 0 ] && echo "lint: $# files clean"
exit "$status"
