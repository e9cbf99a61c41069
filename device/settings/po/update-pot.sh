#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The panel's translation template: device/settings/po/rearview-settings.pot
# holds every string settings.c and errors.c mark with _() or N_().
#   update-pot.sh          rewrite the template
#   update-pot.sh --check  exit 1 (naming the difference) when the template
#                          and settings.c disagree on the set of strings
set -eu
cd "$(dirname "$0")/../../.."
pot=device/settings/po/rearview-settings.pot
extract() { # OUT
	xgettext --language=C --from-code=UTF-8 --keyword=_ --keyword=N_ --keyword=ngettext:1,2 \
		--add-comments=TRANSLATORS: --package-name=rearview-settings \
		--msgid-bugs-address=none --sort-by-file -o "$1" device/settings/settings.c \
		device/settings/errors.c
}
if [ "${1:-}" != "--check" ]; then
	extract "$pot"
	exit 0
fi
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
extract "$fresh"
# msgcmp A B: every msgid of B is in A.  Both ways: no string missing, none stale.
if ! msgcmp --use-untranslated "$pot" "$fresh" 2>/dev/null ||
	! msgcmp --use-untranslated "$fresh" "$pot" 2>/dev/null; then
	echo "lint: $pot: out of date with settings.c (run: sh device/settings/po/update-pot.sh)"
	exit 1
fi
echo "lint: $pot current"
