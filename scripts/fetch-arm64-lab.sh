#!/bin/bash
# Fetch what the arm64 lab and the arm64 fxctl cross build need, from
# Debian 12's arm64 archive, into the cache. Nothing is installed and the
# machine's apt architectures stay as they are.
#
#   scripts/fetch-arm64-lab.sh          (make deps runs it; idempotent)
#
#   $FXBLK_CACHE/arm64/kernel/<kver>/root    unpacked linux-image-<kver>-unsigned
#       (the same release as the arm64 headers, FXBLK_KVER_ARM64 in kernels.env;
#       modules with depmod output)
#   $FXBLK_CACHE/arm64/kernel/<kver>/Image   the kernel image (Debian 12's arm64
#       vmlinuz is an uncompressed Image; a gzip'd one is unpacked), booted by
#       qemu-system-aarch64 -M virt
#   $FXBLK_CACHE/arm64/sysroot               an arm64 Debian 12 tree made with
#       `mmdebstrap --variant=extract`: packages unpacked, no maintainer script
#       run (so no qemu-user), absolute symlinks made relative. It is the
#       sysroot of the fxctl cross build (cmake/aarch64-linux-gnu.cmake) and
#       the source of the arm64 lab VM's userspace (tests/lab/mkbase-arm64.sh)
#
# A second run checks the stamps and does nothing (about a second).
# Env: FXBLK_ARM64_REFRESH=1  fetch both again.
set -euo pipefail
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
DEBS=$CACHE/debs
A64=$CACHE/arm64
# shellcheck source=scripts/lib-fetch.sh
. "$(dirname "$(readlink -f "$0")")/lib-fetch.sh"
log() { echo "fetch-arm64-lab: $*" >&2; }
die() { echo "fetch-arm64-lab: error: $*" >&2; exit 1; }

# The lab VM's userspace (mirrors tests/lab/mkbase.sh's tools; perf is left
# out: the lab's perf is the host's amd64 linux-perf) and the -dev packages
# fxctl and the lab tools build against (nlohmann-json3-dev is arch all).
# Changing this list rebuilds the tree (the stamp is a hash of it).
PKGS=(
	busybox-static bash coreutils util-linux mount fdisk kmod iproute2 nvme-cli fio
	dmsetup mdadm jq xfsprogs e2fsprogs diffutils udev ibverbs-utils
	ibverbs-providers libc-bin
	libc6-dev libstdc++-12-dev libnl-3-dev libnl-genl-3-dev libnvme-dev
	libboost-program-options-dev libfmt-dev libudev-dev libblkid-dev
	libibverbs-dev librdmacm-dev nlohmann-json3-dev
)

# shellcheck source=/dev/null
. "$CACHE/kernels.env" 2>/dev/null || die "no $CACHE/kernels.env: run make deps"
KVER=${FXBLK_KVER_ARM64:-}
[ -n "$KVER" ] || die "no FXBLK_KVER_ARM64 in kernels.env: run scripts/fetch-foreign-headers.sh arm64 first"
[ -x /usr/bin/mmdebstrap ] || die "mmdebstrap not installed: run make deps"

# the machine's URI for an archive (debian, debian-security)
deb_uri() {
	apt-cache policy | awk -v a="$1" '{ u = $2; sub(/\/$/, "", u); n = split(u, p, "/") }
		u ~ /^https?:/ && p[n] == a { print u; exit }'
}
KR=/usr/share/keyrings/debian-archive-keyring.gpg
DEB=$(deb_uri debian) SEC=$(deb_uri debian-security)
[ -n "$DEB" ] && [ -n "$SEC" ] || die "no debian and debian-security archives in the machine's apt sources"

# 1. kernel image + modules (the private arm64 apt state of fetch-foreign-headers.sh)
kernel() {
	local d=$A64/kernel/$KVER a=$CACHE/apt-arm64 pkg=linux-image-$KVER-unsigned
	if [ "${FXBLK_ARM64_REFRESH:-0}" != 1 ] && [ -f "$d/.done" ] && [ -f "$d/Image" ]; then
		log "kernel $KVER ready"
		return
	fi
	[ -f "$a/sources.list" ] || die "no $a/sources.list: run scripts/fetch-foreign-headers.sh arm64"
	fapt() {
		apt-get -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
			-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
			-o APT::Architecture=arm64 -o APT::Architectures::=arm64 "$@"
	}
	mkdir -p "$DEBS"
	if ! ls "$DEBS/${pkg}_"*_arm64.deb >/dev/null 2>&1; then
		fetch_retry "apt-get update (arm64)" fapt "${APT_NET[@]}" update >/dev/null || die "apt update (arm64) failed"
		log "downloading $pkg (arm64)"
		(cd "$DEBS" && fetch_retry "apt-get download $pkg:arm64" fapt "${APT_NET[@]}" \
			-o APT::Sandbox::User=root download "$pkg:arm64" >/dev/null) ||
			die "apt download $pkg:arm64 failed (not in bookworm(-security) any more?)"
	fi
	rm -rf "$d"
	mkdir -p "$d/root"
	dpkg -x "$DEBS/${pkg}_"*_arm64.deb "$d/root"
	# Debian 12's arm64 vmlinuz is a plain Image (older ones were gzip'd,
	# which QEMU also takes, but unpacked once here it is what every loader takes)
	if file -b "$d/root/boot/vmlinuz-$KVER" | grep -q gzip; then
		gzip -dc "$d/root/boot/vmlinuz-$KVER" > "$d/Image.tmp"
	else
		cp "$d/root/boot/vmlinuz-$KVER" "$d/Image.tmp"
	fi
	file -b "$d/Image.tmp" | grep -q 'ARM64 boot executable' ||
		die "vmlinuz-$KVER does not hold an arm64 Image ($(file -b "$d/Image.tmp"))"
	mv "$d/Image.tmp" "$d/Image"
	depmod -b "$d/root" "$KVER"
	touch "$d/.done"
	log "kernel $KVER unpacked in $d"
}

# 2. the arm64 tree
sysroot() {
	local t=$A64/sysroot stamp l tgt
	stamp=$(printf '%s\n' "$DEB" "$SEC" "${PKGS[@]}" | sha256sum | cut -c1-16)
	if [ "${FXBLK_ARM64_REFRESH:-0}" != 1 ] && [ "$(cat "$t/.fxblk-stamp" 2>/dev/null)" = "$stamp" ]; then
		log "arm64 tree ready ($t)"
		return
	fi
	log "extracting an arm64 Debian 12 tree with ${#PKGS[@]} packages (and their dependencies) into $t"
	# each attempt starts from nothing (mmdebstrap wants an empty target)
	extract() {
		rm -rf "$t.tmp"
		mmdebstrap --quiet --variant=extract --arch=arm64 --mode=root \
			--aptopt="Acquire::Retries \"${FXBLK_APT_RETRIES:-3}\"" \
			--include="$(IFS=,; echo "${PKGS[*]}")" bookworm "$t.tmp" \
			"deb [signed-by=$KR] $DEB bookworm main" \
			"deb [signed-by=$KR] $SEC bookworm-security main"
	}
	fetch_retry "mmdebstrap (arm64)" extract >&2 || die "mmdebstrap (arm64, extract) failed"
	# absolute symlinks (e.g. lib*.so -> /lib/...) would point into the
	# host when the tree is a sysroot: make them relative to the tree
	while IFS= read -r -d '' l; do
		tgt=$(readlink "$l")
		[[ $tgt == /* ]] || continue
		ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$t.tmp$tgt")" "$l"
	done < <(find "$t.tmp" -type l -print0)
	[ -x "$t.tmp/bin/bash" ] && [ -f "$t.tmp/usr/include/libnl3/netlink/genl/genl.h" ] ||
		die "the arm64 tree lacks bash or the libnl headers"
	echo "$stamp" > "$t.tmp/.fxblk-stamp"
	rm -rf "$t"
	mv "$t.tmp" "$t"
	log "arm64 tree ready: $(du -sh "$t" | cut -f1)"
}

mkdir -p "$A64"
kernel
sysroot
