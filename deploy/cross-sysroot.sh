#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cross-sysroot.sh — a Debian 12 sysroot for cross-building Rearview's
# device side (deploy/cross.mk): the -dev packages of librvtrace,
# librvevents, rearviewd, rvctl and rvtrace for ARCH, unpacked from
# Debian's archive by mmdebstrap (--variant=extract: no maintainer script
# runs, so no emulator is needed, and the build machine's own package set
# is left alone; `dpkg --add-architecture` would work too, but changes the
# machine for everyone on it).  Absolute symbolic links (libz.so ->
# /lib/…) are made to point inside the sysroot, so the linker follows
# them there.
#
#   deploy/cross-sysroot.sh ARCH DIR     (RV_DEBIAN_MIRROR: the mirror)
set -eu
ARCH=${1:?usage: cross-sysroot.sh ARCH DIR}
DIR=${2:?usage: cross-sysroot.sh ARCH DIR}
MIRROR=${RV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PKGS=libc6-dev,libprotobuf-c-dev,libelf-dev,libxxhash-dev,libjansson-dev,libyajl-dev,zlib1g-dev
PKGS=$PKGS,libzstd-dev,libsqlite3-dev,libmbedtls-dev,libuv1-dev,libcurl4-openssl-dev,libinih-dev
PKGS=$PKGS,libsystemd-dev,libseccomp-dev
command -v mmdebstrap >/dev/null 2>&1 || {
	echo "cross-sysroot.sh: mmdebstrap is missing (apt-get install mmdebstrap)" >&2
	exit 1
}
mkdir -p "$(dirname "$DIR")"
DIR=$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")
rm -rf "$DIR.tmp"
mmdebstrap --quiet --variant=extract --architectures="$ARCH" --include="$PKGS" \
	bookworm "$DIR.tmp" "$MIRROR"
find "$DIR.tmp" -type l -lname '/*' | while read -r l; do
	ln -sfn "$DIR$(readlink "$l")" "$l"
done
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
echo "cross-sysroot.sh: $ARCH sysroot in $DIR"
