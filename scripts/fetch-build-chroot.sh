#!/bin/bash
# The clean package-build chroot of tests/packages.sh (make deps runs this):
# a debootstrap --variant=buildd Debian 12 (bookworm) chroot, i.e. the
# build-essential set and apt and nothing of fxblk's Build-Depends, as
# sbuild/pbuilder start from. tests/packages.sh never writes into it: each
# run mounts an overlay over it, installs exactly the Build-Depends of
# debian/control there (apt-get build-dep), builds the packages and throws
# the overlay away.
#
#   $FXBLK_CACHE/chroot/bookworm-build/           the base chroot (.done when complete)
#   $FXBLK_CACHE/chroot/bookworm-build.archives/  the .debs apt downloads into
#                                                 the overlays, kept across runs
#
# A second run only refreshes apt's lists if FXBLK_DEPS_REFRESH=1, then
# downloads (never installs) the current Build-Depends into the archive
# cache, so that make check needs no network when debian/control is unchanged.
set -euo pipefail
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
SUITE=bookworm
C=$CACHE/chroot/$SUITE-build
A=$C.archives
# shellcheck source=scripts/lib-fetch.sh
. "$(dirname "$(readlink -f "$0")")/lib-fetch.sh"
log() { echo "fetch-build-chroot: $*" >&2; }
die() { echo "fetch-build-chroot: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
command -v debootstrap > /dev/null || die "debootstrap not installed (make deps)"

# The Debian mirror the machine's apt already uses (as fetch-chroot-kernels.sh).
m=$(apt-cache policy | awk '$2 ~ /^https?:\/\/.*\/debian\/?$/ {print $2; exit}')
[ -n "$m" ] || die "no Debian mirror in the machine's apt sources"
m=${m%/}
if [ ! -f "$C/.done" ]; then
	log "debootstrap --variant=buildd $SUITE into $C (from $m)"
	rm -rf "$C.tmp"
	mkdir -p "$CACHE/chroot"
	fetch_retry "debootstrap $SUITE (buildd)" debootstrap_clean "$C.tmp" --variant=buildd \
		"$SUITE" "$C.tmp" "$m" > "$C.debootstrap.log" 2>&1 ||
		die "debootstrap failed, see $C.debootstrap.log"
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://security.debian.org/debian-security %s-security main\n' \
		"$m" "$SUITE" "$m" "$SUITE" "$SUITE" > "$C.tmp/etc/apt/sources.list"
	# the overlays' downloads land in $A (bound to /var/cache/apt/archives)
	echo 'APT::Keep-Downloaded-Packages "true";' > "$C.tmp/etc/apt/apt.conf.d/90fxblk"
	echo 'APT::Install-Recommends "false";' >> "$C.tmp/etc/apt/apt.conf.d/90fxblk"
	fetch_retry "apt-get update in the build chroot" "$TOP/scripts/chroot-run.sh" "$C.tmp" -- \
		apt-get update -q "${APT_NET[@]}" > /dev/null ||
		die "apt-get update in the build chroot failed"
	"$TOP/scripts/chroot-run.sh" "$C.tmp" -- apt-get clean
	rm -rf "$C"
	mv "$C.tmp" "$C"
	touch "$C/.done"
elif [ "${FXBLK_DEPS_REFRESH:-0}" = 1 ]; then
	log "apt-get update in $C"
	fetch_retry "apt-get update in $C" "$TOP/scripts/chroot-run.sh" "$C" -- \
		apt-get update -q "${APT_NET[@]}" > /dev/null || die "apt-get update in $C failed"
fi
# dpkg without fsync in the throw-away overlays (as sbuild and pbuilder
# set up their chroots): installing the Build-Depends is minutes with it
echo force-unsafe-io > "$C/etc/dpkg/dpkg.cfg.d/90fxblk-unsafe-io"
mkdir -p "$A/partial"
# Download the Build-Depends (into an overlay: the base stays as it is).
# shellcheck source=scripts/build-chroot.sh
. "$TOP/scripts/build-chroot.sh"
fetch_retry "apt-get build-dep --download-only" build_chroot_run "$TOP" -- \
	apt-get build-dep -q -y "${APT_NET[@]}" --download-only /src > "$A.log" 2>&1 ||
	{ tail -n 20 "$A.log"; die "apt-get build-dep --download-only failed (log: $A.log)"; }

# Ubuntu 22.04's cmake (3.22.1, the oldest CMake fxblk supports): the .debs
# of jammy's cmake and cmake-data, unpacked into $CACHE/cmake-3.22.1 (it runs
# on Debian 12: same libarchive13, libcurl4, libjsoncpp25, librhash0, libuv1).
# tests/packages.sh configures the tree with it.
CM=$CACHE/cmake-3.22.1
if [ ! -x "$CM/usr/bin/cmake" ]; then
	log "fetching Ubuntu 22.04's cmake 3.22.1 into $CM"
	rm -rf "$CM.tmp" && mkdir -p "$CM.tmp"
	for d in cmake_3.22.1-1ubuntu1_amd64.deb cmake-data_3.22.1-1ubuntu1_all.deb; do
		fetch_retry "download $d" curl -fsSL --retry 3 -o "$CM.tmp/$d" \
			"http://archive.ubuntu.com/ubuntu/pool/main/c/cmake/$d" ||
			die "cannot download $d from archive.ubuntu.com"
		dpkg -x "$CM.tmp/$d" "$CM.tmp"
		rm -f "$CM.tmp/$d"
	done
	"$CM.tmp/usr/bin/cmake" --version | grep -q '^cmake version 3.22.1$' || die "the unpacked cmake is not 3.22.1"
	rm -rf "$CM" && mv "$CM.tmp" "$CM"
fi
log "$C ready, $(find "$A" -name '*.deb' | wc -l) .debs in $A"
