#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make lint`: every package debian/control's Build-Depends names is one
# deploy/install-deps.sh installs, so that `make check` on a fresh Debian 12
# machine builds what the package builds (a man page's scdoc was once only
# in debian/control, and a fresh machine's build failed on it).  The
# packaging-only helpers (debhelper and its sequences) are left out: only
# tests/deploy/test_package.sh uses them, and it skips visibly without them.
# npm is asked for only where no npm came with nodejs (install-deps.sh says
# why), so it is not in the list either.
set -eu
cd "$(dirname "$0")/.."
have=$(sh deploy/install-deps.sh --list)
# Build-Depends: from its line to the next field; one name per entry,
# without version, architecture or profile restrictions.
want=$(awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, "") }
	on && /^[A-Za-z-]+:/ && !/^Build-Depends:/ { on = 0 }
	on && !/^#/ { print }' debian/control |
	tr ',' '\n' | sed -e 's/[(<\[].*//' -e 's/[[:space:]]//g' |
	grep -v -e '^$' -e '^debhelper' -e '^dh-sequence-' -e '^npm$' | sort -u)
status=0
for p in $want; do
	printf '%s\n' "$have" | grep -qx "$p" && continue
	echo "lint: debian/control builds with $p, which deploy/install-deps.sh does not install"
	status=1
done
[ "$status" -eq 0 ] && echo "lint: install-deps.sh installs every Build-Depends of debian/control"
exit "$status"
