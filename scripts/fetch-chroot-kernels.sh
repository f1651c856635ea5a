#!/bin/bash
# Fetch the lab's newer kernels (Debian 13 backports 7.3, unstable 7.2),
# whose kbuild host tools (fixdep, modpost, ...) are linked against a newer
# glibc than the build host's Debian 12 one and whose headers name a newer
# compiler (gcc-14, gcc-15). For each kernel a debootstrap chroot of its
# suite is cached and its linux-headers package is installed *in* the chroot
# with apt (that brings the matching linux-kbuild and gcc); kmod/Makefile then
# builds the module inside the chroot (scripts/chroot-run.sh). Nothing of the
# build host is changed: no /boot, /lib/modules or apt sources.
#
#   $FXBLK_CACHE/chroot/<suite>/          minbase chroot + headers + compiler
#   $FXBLK_CACHE/k/<kver>/root            unpacked linux-image-<kver>-unsigned
#   $FXBLK_CACHE/k/<kver>/hdr -> chroot   so hdr/usr/src/linux-headers-<kver> exists
#   $FXBLK_CACHE/k/<kver>/chroot          the chroot path (kmod/Makefile reads it)
#   $FXBLK_CACHE/k/<kver>/vmlinux         ELF payload of the bzImage (PVH boot)
#   $FXBLK_CACHE/kernels.env              FXBLK_KVER_7_3, FXBLK_KVER_7_2 lines
#
# Why a chroot and not host tools rebuilt from the kernel source: the headers
# were configured by gcc-14/gcc-15 (CONFIG_CC_VERSION_TEXT, CONFIG_CC_HAS_*,
# CONFIG_GCC_VERSION); building with Debian 12's gcc-12 would make kbuild
# resync the config against a different compiler, and the module would not be
# built the way the distribution builds it. The chroot has the same compiler,
# kbuild and glibc as a user of that release.
#
# Versions are resolved with apt in the chroot at run time: the newest
# linux-image-<series>.N+debX-amd64 of the suite. If the suite's newest kernel
# series is newer than the one the lab tracks, that is said (not followed:
# the lab's kernel names stay 7.3 and 7.2). Pin with FXBLK_KVER_7_3=... or
# FXBLK_KVER_7_2=....
#
# 6.16, which issue 10 names as the newest backport, is not buildable from
# Debian's mirror any more: trixie-backports (2026-11-30) still has its
# signed image but no linux-headers-6.16.* (headers exist for 7.2.x and
# 7.3.4 only), so the lab tracks the newest backport with headers instead.
set -euo pipefail

CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
DEBS=$CACHE/debs
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
RUN=$TOP/scripts/chroot-run.sh
# series:suite-to-bootstrap:suite-the-kernel-comes-from
SERIES=${FXBLK_CHROOT_SERIES:-"7.3:trixie:trixie-backports 7.2:sid:sid"}
# scripts/fetch-chroot-kernels.sh [SERIES...]: only those (make deps runs
# each by itself, so that one suite's mirror being synced costs only its kernel)
if [ $# -gt 0 ]; then
	sel=
	for ent in $SERIES; do
		[[ " $* " != *" ${ent%%:*} "* ]] || sel+="$ent "
	done
	[ -n "$sel" ] || { echo "fetch-chroot-kernels: error: no series '$*' in '$SERIES'" >&2; exit 1; }
	SERIES=${sel% }
fi

# shellcheck source=scripts/lib-fetch.sh
. "$(dirname "$(readlink -f "$0")")/lib-fetch.sh"
log() { echo "fetch-chroot-kernels: $*" >&2; }
die() { echo "fetch-chroot-kernels: error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap not installed (make deps)"

# The Debian mirror the machine's apt already uses.
mirror() {
	local m
	m=$(apt-cache policy | awk '$2 ~ /^https?:\/\/.*\/debian\/?$/ {print $2; exit}')
	[ -n "$m" ] || die "no Debian mirror in the machine's apt sources"
	echo "${m%/}"
}

# make_chroot SUITE KSUITE: minbase chroot with apt sources for both suites
make_chroot() {
	local suite=$1 ksuite=$2 c=$CACHE/chroot/$1 m
	m=$(mirror)
	if [ ! -f "$c/.done" ]; then
		log "debootstrap $suite into $c (from $m)"
		rm -rf "$c.tmp"
		mkdir -p "$CACHE/chroot"
		fetch_retry "debootstrap $suite" debootstrap_clean "$c.tmp" --variant=minbase \
			--include=make,gcc,libc6-dev,ca-certificates "$suite" "$c.tmp" "$m" \
			> "$CACHE/chroot/$suite.debootstrap.log" 2>&1 ||
			die "debootstrap $suite failed, see $CACHE/chroot/$suite.debootstrap.log"
		rm -rf "$c"
		mv "$c.tmp" "$c"
		touch "$c/.done"
	fi
	{
		echo "deb $m $suite main"
		[ "$ksuite" = "$suite" ] || echo "deb $m $ksuite main"
	} > "$c/etc/apt/sources.list.new"
	# keep the downloaded .debs out of the chroot's cache
	echo 'APT::Keep-Downloaded-Packages "false";' > "$c/etc/apt/apt.conf.d/90fxblk"
	if ! cmp -s "$c/etc/apt/sources.list.new" "$c/etc/apt/sources.list" ||
		[ "${FXBLK_DEPS_REFRESH:-0}" = 1 ]; then
		mv "$c/etc/apt/sources.list.new" "$c/etc/apt/sources.list"
		fetch_retry "apt-get update in $c" "$RUN" "$c" -- apt-get -q "${APT_NET[@]}" update >/dev/null ||
			die "apt-get update in $c failed"
	else
		rm -f "$c/etc/apt/sources.list.new"
	fi
}

# resolve SERIES CHROOT: newest linux-headers-<series>.N+debX-amd64 in the
# chroot (headers, not images: a suite can keep a kernel's signed image after
# its headers are gone, as trixie-backports does with 6.16)
resolve() {
	local series=$1 c=$2 names kver newest
	names=$("$RUN" "$c" -- apt-cache pkgnames linux-headers- |
		sed -n 's/^linux-headers-\([0-9][0-9.]*+deb[0-9]*-amd64\)$/\1/p' | sort -V)
	kver=$(grep -E "^${series//./\\.}\.[0-9]+\+" <<< "$names" | tail -n1 || true)
	newest=$(tail -n1 <<< "$names")
	[ -n "$kver" ] || die "no linux-headers-$series.*-amd64 in $c's apt sources (newest: ${newest:-none})"
	[ "$newest" = "$kver" ] ||
		log "note: the newest kernel of $(basename "$c")'s sources is $newest; the lab tracks $series ($kver)"
	echo "$kver"
}

extract_vmlinux() {	# bzImage -> ELF vmlinux (XZ or ZSTD payload)
	python3 "$TOP/scripts/extract-vmlinux.py" "$1" "$2"
}

ready() {	# ready KVER: everything of KVER in place
	local d=$CACHE/k/$1 c
	c=$(cat "$d/chroot" 2>/dev/null) || return 1
	[ -f "$d/.done" ] && [ -f "$d/vmlinux" ] && [ -f "$c/.done" ] &&
		[ -f "$c/usr/src/linux-headers-$1/include/generated/autoconf.h" ] &&
		[ -x "$c/usr/bin/make" ]
}

fetch_one() {	# fetch_one KVER CHROOT
	local kver=$1 c=$2 d=$CACHE/k/$1 p pkgs vmlinuz
	if ready "$kver"; then
		log "$kver ready (headers in $c)"
		return
	fi
	log "installing linux-headers-$kver (+ kbuild, compiler) in $c"
	fetch_retry "apt-get install linux-headers-$kver in $c" "$RUN" "$c" -- \
		env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_NET[@]}" \
		--no-install-recommends install "linux-headers-$kver" pahole >/dev/null ||
		die "apt-get install linux-headers-$kver in $c failed"
	# The image: linux-image-<kver>-unsigned where it exists (Debian <= 6.x);
	# from 7.x linux-image-<kver> only depends on linux-binary-<kver> (the
	# signed vmlinuz), linux-modules-<kver> and linux-base-<kver>
	if "$RUN" "$c" -- apt-cache show "linux-image-$kver-unsigned" >/dev/null 2>&1; then
		pkgs=("linux-image-$kver-unsigned")
	else
		mapfile -t pkgs < <("$RUN" "$c" -- apt-cache depends "linux-image-$kver" |
			sed -n 's/^ *|\?Depends: //p' | grep -F -- "-$kver" | sort -u)
		pkgs+=("linux-image-$kver")
	fi
	mkdir -p "$DEBS"
	for p in "${pkgs[@]}"; do
		ls "$DEBS/${p}_"*.deb >/dev/null 2>&1 && continue
		log "downloading $p"
		rm -rf "$c/tmp/fxdl" && mkdir -p "$c/tmp/fxdl"
		fetch_retry "apt-get download $p in $c" "$RUN" "$c" --cwd /tmp/fxdl -- apt-get -q "${APT_NET[@]}" \
			-o APT::Sandbox::User=root download "$p" >/dev/null ||
			die "apt-get download $p failed"
		mv "$c/tmp/fxdl/${p}_"*.deb "$DEBS/"
		rm -rf "$c/tmp/fxdl"
	done
	rm -rf "$d"
	mkdir -p "$d/root"
	for p in "${pkgs[@]}"; do
		dpkg -x "$DEBS/${p}_"*.deb "$d/root"
	done
	# 7.x: the modules and vmlinuz are in /usr/lib/modules/<kver>; the lab
	# (mkbase.sh, depmod -b) looks in /lib/modules
	[ -e "$d/root/lib" ] || [ ! -d "$d/root/usr/lib/modules" ] || ln -s usr/lib "$d/root/lib"
	vmlinuz=$d/root/boot/vmlinuz-$kver
	[ -f "$vmlinuz" ] || vmlinuz=$d/root/usr/lib/modules/$kver/vmlinuz
	[ -f "$vmlinuz" ] || die "no vmlinuz in ${pkgs[*]}"
	extract_vmlinux "$vmlinuz" "$d/vmlinux"
	depmod -b "$d/root" "$kver"
	ln -s "$c" "$d/hdr"
	echo "$c" > "$d/chroot"
	touch "$d/.done"
	log "$kver unpacked in $d, headers in $c/usr/src/linux-headers-$kver"
}

# with_dkms CHROOT: the suite's own dkms in the chroot, so that the
# fxblk-dkms .deb's maintainer scripts run the real dkms against these
# kernels' headers (tests/packages.sh, step 8)
with_dkms() {
	[ -x "$1/usr/sbin/dkms" ] && return
	log "installing dkms in $1"
	fetch_retry "apt-get install dkms in $1" "$RUN" "$1" -- \
		env DEBIAN_FRONTEND=noninteractive apt-get -q -y "${APT_NET[@]}" \
		--no-install-recommends install dkms >/dev/null ||
		die "apt-get install dkms in $1 failed"
}

main() {
	local ent series suite ksuite c kver var lines=()
	for ent in $SERIES; do
		IFS=: read -r series suite ksuite <<< "$ent"
		c=$CACHE/chroot/$suite
		var=FXBLK_KVER_${series//./_}
		make_chroot "$suite" "$ksuite"
		# pinned, else what kernels.env records (unless refreshing), else apt
		kver=${!var:-}
		if [ -z "$kver" ] && [ "${FXBLK_DEPS_REFRESH:-0}" != 1 ]; then
			kver=$(sed -n "s/^$var=//p" "$CACHE/kernels.env" 2>/dev/null | tail -n1)
		fi
		[ -n "$kver" ] || kver=$(resolve "$series" "$c")
		fetch_one "$kver" "$c"
		with_dkms "$c"
		lines+=("$var=$kver")
	done
	# replace our lines in kernels.env, keep everything else
	touch "$CACHE/kernels.env"
	{
		grep -v -E "^FXBLK_KVER_($(for ent in $SERIES; do s=${ent%%:*}; printf '%s|' "${s//./_}"; done)x)=" \
			"$CACHE/kernels.env" || true
		printf '%s\n' "${lines[@]}"
	} > "$CACHE/kernels.env.tmp"
	mv "$CACHE/kernels.env.tmp" "$CACHE/kernels.env"
	printf '%s\n' "${lines[@]}"
}

main
