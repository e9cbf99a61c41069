#!/bin/sh
# Install the Debian 12 packages Rearview needs to build, test and run.
#
# Idempotent and quiet: checks first and does nothing when every package is
# present.  Works as root without sudo, and through sudo otherwise.
#   deploy/install-deps.sh          install what is missing
#   deploy/install-deps.sh --check  exit 1 (listing them) if anything is missing
set -eu

# Foundation: toolchain, protobuf, tests.
PACKAGES="build-essential pkg-config clang clang-format llvm
libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libcmocka-dev"

# tracer/ (librvtrace; aarch64 cross build tested under qemu-user).
PACKAGES="$PACKAGES libelf-dev libxxhash-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"

# tracer/ analysis (rvtrace).
PACKAGES="$PACKAGES libjansson-dev zlib1g-dev libzstd-dev uftrace"

# tracer/runtimes/lua (rvlua): `apt-get source lua5.4` unpacks with dpkg-dev,
# build.sh applies rvlua.patch with patch; its scripts read rvtrace's JSON
# with python3.
PACKAGES="$PACKAGES dpkg-dev patch python3"

# policy/.
PACKAGES="$PACKAGES libsqlite3-dev libmbedtls-dev"

# device/ (rearviewd, rvctl).
PACKAGES="$PACKAGES libuv1-dev libcurl4-openssl-dev libzstd-dev libinih-dev libsqlite3-dev"

# deploy/ (systemd-analyze verify and systemd-sysusers in the install test;
# curl and jq for the demo script).
PACKAGES="$PACKAGES systemd curl jq"

# server/ (rearview-server).
PACKAGES="$PACKAGES libhttp-parser-dev libuv1-dev libmbedtls-dev libsqlite3-dev libinih-dev libcurl4-openssl-dev libzstd-dev nodejs chromium"
# npm (the web UI's speedscope and the browser test's playwright-core):
# Debian's nodejs comes without it; a nodesource nodejs brings its own and
# conflicts with Debian's npm package, so ask for it only when it is missing.
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"

# server ops (symbol store: libelf; its tests use objcopy from binutils).
PACKAGES="$PACKAGES libelf-dev binutils"

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "${1:-}" = "--check" ]; then
	echo "missing packages:$missing" >&2
	exit 1
fi

echo "install-deps: installing$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "install-deps: need root or sudo to install:$missing" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# The package lists may be empty on a fresh machine or image.
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done" >&2
