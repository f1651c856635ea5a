#!/bin/bash
# Build the lab's base initramfs for one kernel (uncompressed newc cpio):
# static busybox, bash, the dynamic tools the tests use with their shared
# libraries, and the module closure the fabric and the tests need.
#
#   tests/lab/mkbase.sh KVER OUT_DIR
#
# Writes OUT_DIR/base.cpio and OUT_DIR/stage/ (the tree, kept so that `run`
# can depmod our module against the same module set). Rebuilt only when this
# script, the kernel or the tool binaries changed (stamp = hash of all three).
# PID 1 and our own module/tools are NOT in here: `run` adds them per run in
# an overlay cpio, so editing init or the module never rebuilds this image.
set -euo pipefail

KVER=${1:?usage: mkbase.sh KVER OUT_DIR}
OUT=${2:?usage: mkbase.sh KVER OUT_DIR}
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
KROOT=$CACHE/k/$KVER/root

# Kernel modules wanted in the VM; dependencies are resolved automatically,
# modules that are built in or absent from this kernel are skipped.
MODS="configfs null_blk rdma_rxe ib_uverbs rdma_ucm nvmet nvmet_rdma nvme_rdma
      dm_mod dm_flakey dm_delay dm_mirror md_mod raid0 raid1 veth dummy loop
      crc32_generic crc32c_generic xfs ext4 virtio_pci virtio_blk nvme nbd
      9p 9pnet_virtio"
# Dynamic binaries (found on PATH) copied with their libraries (ldd).
BINS="bash kmod ip rdma nvme fio dmsetup mdadm jq setpriv lsblk blkid blockdev
      losetup wipefs mkfs.xfs xfs_repair xfs_db mkfs.ext4 e2fsck dumpe2fs
      sha256sum cmp stdbuf timeout flock ibv_devinfo udevadm xfs_io perf genl"

die() { echo "mkbase: error: $*" >&2; exit 1; }
[ -d "$KROOT/lib/modules/$KVER" ] || die "kernel $KVER not unpacked in $KROOT; run 'make deps'"

# BINS spans lines: read to the end (-d ''), not just its first line
read -rd '' -a names <<< "$BINS" || :; paths=()
for b in "${names[@]}"; do
	p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$b") || die "$b not installed; run 'make deps'"
	paths+=("$(readlink -f "$p")")
done

stamp=$( { sha256sum "$0"; stat -c '%n %s %Y' "$CACHE/k/$KVER/vmlinux" /usr/bin/busybox "${paths[@]}"; } | sha256sum | cut -c1-16)
if [ -f "$OUT/base.cpio" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi
echo "mkbase: building base initramfs for $KVER" >&2

ST=$OUT/stage
rm -rf "$ST" "$OUT/base.cpio" "$OUT/stamp"
mkdir -p "$ST"/{bin,sbin,usr/bin,usr/sbin,lib64,proc,sys,dev,tmp,run,mnt,root,etc/nvme,lab}

# busybox first: its applets fill every gap, real tools override them below.
install -m755 /usr/bin/busybox "$ST/bin/busybox"
for a in $(/usr/bin/busybox --list); do
	[ -e "$ST/bin/$a" ] || ln -s busybox "$ST/bin/$a"
done

copy_lib() {
	[ -e "$ST$1" ] || install -D -m755 "$(readlink -f "$1")" "$ST$1"
}
for i in "${!paths[@]}"; do
	b=${paths[$i]}
	name=$(basename "$b")
	install -D -m755 "$b" "$ST/usr/bin/$name"
	# tool name (e.g. mkfs.xfs) may differ from the resolved file name
	want=${names[$i]}
	[ "$want" = "$name" ] || ln -sf "$name" "$ST/usr/bin/$want"
	rm -f "$ST/bin/$want" "$ST/bin/$name"	# shadowing busybox applets
	while read -r lib; do
		copy_lib "$lib"
	done < <(ldd "$b" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}')
done
# libibverbs finds its providers through /etc/libibverbs.d: Soft-RoCE's, so
# that ibv_devinfo and fxctl doctor see rxe0.
mkdir -p "$ST/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$ST/etc/libibverbs.d/" || die "no rxe provider; run 'make deps'"
for lib in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so; do
	copy_lib "$lib"
done
ln -sf /usr/bin/bash "$ST/bin/bash"
ln -sf /usr/bin/bash "$ST/bin/sh.bash"
for a in modprobe insmod rmmod lsmod modinfo depmod; do
	rm -f "$ST/bin/$a"
	ln -s /usr/bin/kmod "$ST/sbin/$a"
done
ln -sf /usr/bin/ip "$ST/sbin/ip"

# Minimal /etc for the tools (no udev, no network config).
cat > "$ST/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ST/etc/group"
echo "DEVICE partitions" > "$ST/etc/mdadm.conf"
echo "nqn.2014-08.org.nvmexpress:uuid:0f0b1a00-0000-4000-8000-000000000001" > "$ST/etc/nvme/hostnqn"
echo "0f0b1a00-0000-4000-8000-000000000001" > "$ST/etc/nvme/hostid"

# Module closure. -C /dev/null keeps the host's /etc/modprobe.d out.
MD=$ST/lib/modules/$KVER
mkdir -p "$MD"
cp "$KROOT/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$MD/"
for m in $MODS; do
	modprobe -C /dev/null -d "$KROOT" -S "$KVER" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" {print $2}' || echo "mkbase: $m: not a module of $KVER, skipped" >&2
done | sort -u | while read -r f; do
	rel=${f#"$KROOT"}
	case $f in
	*.ko.xz)  mkdir -p "$(dirname "$ST$rel")"; xz -dc "$f" > "$ST${rel%.xz}" ;;
	*.ko.zst) mkdir -p "$(dirname "$ST$rel")"; zstd -qdc "$f" > "$ST${rel%.zst}" ;;
	*)        install -D -m644 "$f" "$ST$rel" ;;
	esac
done
# modules.order names compressed files on 6.12; depmod copes with the plain ones
sed -i 's/\.ko\.\(xz\|zst\)$/.ko/' "$MD/modules.order"
depmod -b "$ST" "$KVER"

(cd "$ST" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$OUT/base.cpio.tmp"
mv "$OUT/base.cpio.tmp" "$OUT/base.cpio"
echo "$stamp" > "$OUT/stamp"
echo "mkbase: $OUT/base.cpio: $(du -h "$OUT/base.cpio" | cut -f1), $(find "$MD" -name '*.ko' | wc -l) modules" >&2
