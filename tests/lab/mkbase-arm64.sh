#!/bin/bash
# Build the arm64 lab's base initramfs (uncompressed newc cpio): the arm64
# counterpart of mkbase.sh, which copies the host's (amd64) binaries. Here
# every binary and library comes from the extracted arm64 Debian 12 tree that
# `make deps` keeps (scripts/fetch-arm64-lab.sh), and the library closure is
# resolved from the ELF files' DT_NEEDED entries (aarch64-linux-gnu-readelf)
# inside that tree, since ldd cannot run arm64 binaries here.
#
#   tests/lab/mkbase-arm64.sh KVER OUT_DIR
#
# Writes OUT_DIR/base.cpio and OUT_DIR/stage/ like mkbase.sh; rebuilt when
# this script, the kernel or the arm64 tree changed. The same tools as
# mkbase.sh, except perf (the lab's perf is the host's linux-perf).
set -euo pipefail

KVER=${1:?usage: mkbase-arm64.sh KVER OUT_DIR}
OUT=${2:?usage: mkbase-arm64.sh KVER OUT_DIR}
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
KDIR=$CACHE/arm64/kernel/$KVER
KROOT=$KDIR/root
SR=${FXBLK_ARM64_SYSROOT:-$CACHE/arm64/sysroot}
READELF=aarch64-linux-gnu-readelf

# As mkbase.sh (virtio_pci is built in on arm64; the results channel is a
# virtio console, built in too).
MODS="configfs null_blk rdma_rxe ib_uverbs rdma_ucm nvmet nvmet_rdma nvme_rdma
      dm_mod dm_flakey dm_delay dm_mirror md_mod raid0 raid1 veth dummy loop
      crc32_generic crc32c_generic xfs ext4 virtio_pci virtio_blk nvme"
BINS="bash kmod ip rdma nvme fio dmsetup mdadm jq setpriv lsblk blkid blockdev
      losetup wipefs mkfs.xfs xfs_repair xfs_db mkfs.ext4 e2fsck dumpe2fs
      sha256sum cmp stdbuf timeout flock ibv_devinfo udevadm xfs_io"
LIBDIRS="/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /lib /usr/lib"

die() { echo "mkbase-arm64: error: $*" >&2; exit 1; }
[ -d "$KROOT/lib/modules/$KVER" ] || die "arm64 kernel $KVER not unpacked in $KROOT; run 'make deps'"
[ -x "$SR/bin/busybox" ] || die "no arm64 tree in $SR; run 'make deps'"
command -v "$READELF" >/dev/null || die "$READELF not installed; run 'make deps'"

stamp=$( { sha256sum "$0"; stat -c '%n %s %Y' "$KDIR/Image" "$SR/.fxblk-stamp"; cat "$SR/.fxblk-stamp"; } |
	sha256sum | cut -c1-16)
if [ -f "$OUT/base.cpio" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi
echo "mkbase-arm64: building base initramfs for $KVER from $SR" >&2

ST=$OUT/stage
rm -rf "$ST" "$OUT/base.cpio" "$OUT/stamp"
mkdir -p "$ST"/{bin,sbin,usr/bin,usr/sbin,lib,proc,sys,dev,tmp,run,mnt,root,etc/nvme,lab}

# busybox-static (arm64). Its applet list cannot be asked from the arm64
# binary; the host's busybox-static is the same Debian package version for
# amd64, so the same applets.
install -m755 "$SR/bin/busybox" "$ST/bin/busybox"
for a in $(/usr/bin/busybox --list); do
	[ -e "$ST/bin/$a" ] || ln -s busybox "$ST/bin/$a"
done

# tree_path P: the file P (absolute, in the tree) resolved inside the tree;
# the fetch step made every symlink in the tree relative
tree_path() { realpath -e "$SR$1" 2>/dev/null; }
# find_lib NAME [RUNPATH]: the tree path of a DT_NEEDED library (librados
# finds libceph-common through its RUNPATH)
find_lib() {
	local d
	for d in ${2//:/ } $LIBDIRS; do
		[ -e "$SR$d/$1" ] && { echo "$d/$1"; return; }
	done
	return 1
}
declare -A SEEN=()
# copy_needed TREEFILE WHAT: copy the libraries TREEFILE needs
copy_needed() {
	local dyn rp n lib
	dyn=$("$READELF" -d "$1" 2>/dev/null) || true
	rp=$(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' <<< "$dyn" | head -n1)
	for n in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<< "$dyn"); do
		lib=$(find_lib "$n" "$rp") || die "$n (needed by $2) not in the arm64 tree"
		copy_elf "$lib"
	done
}
# copy_elf TREEPATH: copy a library (at the same path) and, once each, the
# libraries it needs, recursively
copy_elf() {
	local p=$1 real
	[ -z "${SEEN[$p]:-}" ] || return 0
	SEEN[$p]=1
	real=$(tree_path "$p") || die "$p not in the arm64 tree"
	[ -e "$ST$p" ] || install -D -m755 "$real" "$ST$p"
	copy_needed "$real" "$p"
}
copy_elf /lib/ld-linux-aarch64.so.1

for b in $BINS; do
	p=
	for d in /usr/sbin /usr/bin /sbin /bin; do
		[ -e "$SR$d/$b" ] && { p=$d/$b; break; }
	done
	[ -n "$p" ] || die "$b not in the arm64 tree (scripts/fetch-arm64-lab.sh PKGS)"
	real=$(tree_path "$p") || die "$p: dangling in the arm64 tree"
	name=$(basename "$real")
	SEEN[/usr/bin/$name]=1
	install -D -m755 "$real" "$ST/usr/bin/$name"
	[ "$b" = "$name" ] || ln -sf "$name" "$ST/usr/bin/$b"
	rm -f "$ST/bin/$b" "$ST/bin/$name"	# shadowing busybox applets
	copy_needed "$real" "$b"
done
# libibverbs' Soft-RoCE provider, as in mkbase.sh
mkdir -p "$ST/etc/libibverbs.d"
cp "$SR/etc/libibverbs.d/rxe.driver" "$ST/etc/libibverbs.d/" || die "no rxe provider in the arm64 tree"
for lib in "$SR"/usr/lib/aarch64-linux-gnu/libibverbs/librxe-*.so; do
	copy_elf "${lib#"$SR"}"
done
ln -sf /usr/bin/bash "$ST/bin/bash"
ln -sf /usr/bin/bash "$ST/bin/sh.bash"
for a in modprobe insmod rmmod lsmod modinfo depmod; do
	rm -f "$ST/bin/$a"
	ln -s /usr/bin/kmod "$ST/sbin/$a"
done
ln -sf /usr/bin/ip "$ST/sbin/ip"

cat > "$ST/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ST/etc/group"
echo "DEVICE partitions" > "$ST/etc/mdadm.conf"
echo "nqn.2014-08.org.nvmexpress:uuid:0f0b1a00-0000-4000-8000-000000000001" > "$ST/etc/nvme/hostnqn"
echo "0f0b1a00-0000-4000-8000-000000000001" > "$ST/etc/nvme/hostid"

# Module closure (the host's modprobe reads the arm64 tree's depmod output).
MD=$ST/lib/modules/$KVER
mkdir -p "$MD"
cp "$KROOT/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$MD/"
for m in $MODS; do
	modprobe -C /dev/null -d "$KROOT" -S "$KVER" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" {print $2}' || echo "mkbase-arm64: $m: not a module of $KVER, skipped" >&2
done | sort -u | while read -r f; do
	rel=${f#"$KROOT"}
	case $f in
	*.ko.xz)  mkdir -p "$(dirname "$ST$rel")"; xz -dc "$f" > "$ST${rel%.xz}" ;;
	*.ko.zst) mkdir -p "$(dirname "$ST$rel")"; zstd -qdc "$f" > "$ST${rel%.zst}" ;;
	*)        install -D -m644 "$f" "$ST$rel" ;;
	esac
done
sed -i 's/\.ko\.\(xz\|zst\)$/.ko/' "$MD/modules.order"
depmod -b "$ST" "$KVER"

(cd "$ST" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$OUT/base.cpio.tmp"
mv "$OUT/base.cpio.tmp" "$OUT/base.cpio"
echo "$stamp" > "$OUT/stamp"
echo "mkbase-arm64: $OUT/base.cpio: $(du -h "$OUT/base.cpio" | cut -f1), $(find "$MD" -name '*.ko' | wc -l) modules" >&2
