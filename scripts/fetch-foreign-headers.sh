#!/bin/bash
# Fetch Debian 12's kernel headers of other architectures for the lab's
# kernels, for builds that need no boot:
#
#   i386   6.1 (686-pae flavour): make check proves that the module build
#          refuses a 32-bit kernel with a message (kmod/Kbuild, kmod/Makefile)
#   arm64  6.12 (bookworm-backports/-security, arm64 flavour): make check
#          cross-builds fxblk.ko with gcc-aarch64-linux-gnu (ARCH=arm64)
#
#   scripts/fetch-foreign-headers.sh [i386|arm64]...   (default: both)
#
# Nothing is installed and the machine's apt architectures stay as they are:
# a private apt state per architecture downloads the one package.
#
#   $FXBLK_CACHE/k/<release>/hdr   headers; the -common tree (arch all) and
#       linux-kbuild are the amd64 ones of the same source version (the
#       kbuild package of the other architecture would need its libc to run)
#   $FXBLK_CACHE/kernels.env       FXBLK_KVER_I386=..., FXBLK_KVER_ARM64=...
#
# Debian 13 ships no i386 kernel at all (its i386 archive has only the
# arch-independent linux-headers-*-common), so 6.1 is the newest there is.
set -euo pipefail
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
DEBS=$CACHE/debs
# shellcheck source=scripts/lib-fetch.sh
. "$(dirname "$(readlink -f "$0")")/lib-fetch.sh"
log() { echo "fetch-foreign-headers: $*" >&2; }
die() { echo "fetch-foreign-headers: error: $*" >&2; exit 1; }

# shellcheck source=/dev/null
. "$CACHE/kernels.env" 2>/dev/null || die "no $CACHE/kernels.env: run scripts/fetch-kernels.sh first"

record() {	# record VAR VALUE in kernels.env
	grep -v "^$1=" "$CACHE/kernels.env" > "$CACHE/kernels.env.tmp" || true
	echo "$1=$2" >> "$CACHE/kernels.env.tmp"
	mv "$CACHE/kernels.env.tmp" "$CACHE/kernels.env"
}
deb_uri() {	# the machine's URI for an archive: debian or debian-security
	apt-cache policy | awk -v a="$1" '{ u = $2; sub(/\/$/, "", u); n = split(u, p, "/") }
		u ~ /^https?:/ && p[n] == a { print u; exit }'
}

fetch() {	# fetch ARCH
	local arch=$1 k64 kver var cfg a d kdir deb sec kr common kbuild f
	case $arch in
	i386)  k64=${FXBLK_KVER_6_1:?no FXBLK_KVER_6_1 in kernels.env}; kver=${k64%-amd64}-686-pae
	       var=FXBLK_KVER_I386 cfg=CONFIG_X86_32 ;;
	arm64) k64=${FXBLK_KVER_6_12:?no FXBLK_KVER_6_12 in kernels.env}; kver=${k64%-amd64}-arm64
	       var=FXBLK_KVER_ARM64 cfg=CONFIG_ARM64 ;;
	*) die "unknown architecture '$arch' (i386, arm64)" ;;
	esac
	d=$CACHE/k/$kver
	kdir=$d/hdr/usr/src/linux-headers-$kver
	if [ -f "$d/.done" ] && [ -f "$kdir/include/config/auto.conf" ]; then
		log "$kver ready"
		grep -qx "$var=$kver" "$CACHE/kernels.env" || record "$var" "$kver"
		return
	fi
	a=$CACHE/apt-$arch
	fapt() {
		apt-get -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
			-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
			-o APT::Architecture="$arch" -o APT::Architectures::="$arch" "$@"
	}
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$DEBS"
	deb=$(deb_uri debian) sec=$(deb_uri debian-security)
	[ -n "$deb" ] && [ -n "$sec" ] || die "no debian and debian-security archives in the machine's apt sources"
	kr=/usr/share/keyrings/debian-archive-keyring.gpg
	printf 'deb [signed-by=%s] %s bookworm main\ndeb [signed-by=%s] %s bookworm-security main\n' \
		"$kr" "$deb" "$kr" "$sec" > "$a/sources.list"
	fetch_retry "apt-get update ($arch)" fapt "${APT_NET[@]}" update >/dev/null || die "apt update ($arch) failed"
	# the amd64 packages of the same kernel: -common (arch all) and kbuild
	dep() { apt-cache depends "linux-headers-$k64" | sed -n 's/^ *|\?Depends: //p' | grep -E "$1" | head -n1; }
	common=$(dep 'linux-headers-.*-common$') kbuild=$(dep '^linux-kbuild-')
	[ -n "$common" ] && [ -n "$kbuild" ] || die "cannot resolve the header packages of $k64"
	for f in "$common" "$kbuild"; do
		ls "$DEBS/${f}_"*.deb >/dev/null 2>&1 ||
			(cd "$DEBS" && fetch_retry "apt-get download $f" apt-get -q "${APT_NET[@]}" \
				-o APT::Sandbox::User=root download "$f" >/dev/null) ||
			die "apt download $f failed"
	done
	if ! ls "$DEBS/linux-headers-${kver}_"*_"$arch".deb >/dev/null 2>&1; then
		log "downloading linux-headers-$kver ($arch)"
		(cd "$DEBS" && fetch_retry "apt-get download linux-headers-$kver:$arch" fapt "${APT_NET[@]}" \
			-o APT::Sandbox::User=root download "linux-headers-$kver:$arch" >/dev/null) ||
			die "apt download linux-headers-$kver:$arch failed (not in bookworm(-security) any more?)"
	fi
	rm -rf "$d"
	mkdir -p "$d/hdr"
	for f in "$DEBS/linux-headers-${kver}_"*_"$arch".deb "$DEBS/${common}_"*.deb "$DEBS/${kbuild}_"*.deb; do
		dpkg -x "$f" "$d/hdr"
	done
	sed -i "s#^include /usr/src/#include $d/hdr/usr/src/#" "$kdir/Makefile"
	grep -q "^$cfg=y" "$kdir/include/config/auto.conf" || die "$kver headers do not have $cfg=y"
	touch "$d/.done"
	record "$var" "$kver"
	log "$kver unpacked in $d"
}

for arch in "${@:-i386 arm64}"; do
	# shellcheck disable=SC2086
	for x in $arch; do fetch "$x"; done
done
