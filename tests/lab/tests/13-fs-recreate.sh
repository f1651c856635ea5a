#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.1,6.12 members=4 timeout=1200
# A file system survives remove + re-create: mkfs.xfs on /dev/fxN, files of
# assorted sizes (buffered and O_DIRECT, some with fsync), sha256 sums,
# unmount, fxctl remove, re-create with the same members and chunk, mount,
# verify every sum and xfs_repair -n finds nothing. Repeated with ext4 on a
# different chunk size. Also checks that the file system saw the stripe
# geometry (xfs sunit = chunk, swidth = chunk*N, from io_min/io_opt).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
fx_load
MNT=/mnt/t13
mkdir -p $MNT
trap 'umount $MNT 2>/dev/null; fxctl remove t13 >/dev/null 2>&1' EXIT

populate() { # write files and keep their sums in /tmp/sums
	local i
	mkdir -p $MNT/d/e || fail "mkdir on the file system"
	for i in 1 2 3 4 5 6; do
		head -c $((i * 300000 + i * 7)) /dev/urandom >$MNT/d/small$i || fail "write small$i"
	done
	head -c $((9 * 1048576 + 12345)) /dev/urandom >$MNT/d/e/big || fail "write big"
	dd if=/dev/urandom of=$MNT/direct bs=1M count=6 oflag=direct 2>/dev/null || fail "O_DIRECT write on the fs"
	fio --eta=never --name=f --filename=$MNT/fio.dat --rw=randwrite --bs=16k --size=8M --direct=1 \
		--ioengine=libaio --iodepth=16 --fsync=32 --output=/tmp/fio.out || fail "fio on the file system"
	sync
	(cd $MNT && find . -type f | sort | xargs sha256sum) >/tmp/sums || fail "sha256sum"
	log "$(wc -l </tmp/sums) files, $(du -sk $MNT | cut -f1) KiB"
}

cycle() { # cycle FSTYPE CHUNK MKFS...
	local fs=$1 chunk=$2 dev; shift 2
	fxctl create t13 --chunk "$chunk" "${M[@]}" || fail "fxctl create t13 --chunk $chunk"
	dev=$(fxdev t13) || fail "no /dev/fxN for t13"
	log "$dev chunk $chunk: $*"
	"$@" "$dev" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; fail "$* $dev"; }
	mount -t "$fs" "$dev" $MNT || fail "mount $dev ($fs)"
	if [ "$fs" = xfs ]; then
		local sunit swidth
		sunit=$(xfs_db -r -c 'sb 0' -c 'p unit' "$dev" | awk '{print $3}')
		swidth=$(xfs_db -r -c 'sb 0' -c 'p width' "$dev" | awk '{print $3}')
		# in fs blocks (4 KiB): unit = chunk/4K, width = unit * 4
		log "xfs stripe unit $sunit, width $swidth blocks"
		[ "$swidth" = $((sunit * 4)) ] && [ "$sunit" = $((${chunk%K} / 4)) ] ||
			fail "mkfs.xfs did not pick up the stripe geometry (unit $sunit, width $swidth): io_min/io_opt of $dev are $(cat /sys/block/${dev#/dev/}/queue/minimum_io_size)/$(cat /sys/block/${dev#/dev/}/queue/optimal_io_size)"
	fi
	populate
	umount $MNT || fail "umount $dev"
	fxctl remove t13 || fail "fxctl remove t13 after umount"
	[ ! -e "$dev" ] || [ ! -e "/sys/block/${dev#/dev/}" ] || fail "$dev still present after remove"
	# the data must be on the members, not in some cache: drop caches
	echo 3 >/proc/sys/vm/drop_caches
	fxctl create t13 --chunk "$chunk" "${M[@]}" || fail "re-create t13"
	dev=$(fxdev t13) || fail "no /dev/fxN for re-created t13"
	if [ "$fs" = xfs ]; then
		xfs_repair -n "$dev" >/tmp/repair.out 2>&1 || { tail -20 /tmp/repair.out; fail "xfs_repair -n found problems on re-created $dev"; }
	else
		e2fsck -fn "$dev" >/tmp/fsck.out 2>&1 || { tail -20 /tmp/fsck.out; fail "e2fsck -fn found problems on re-created $dev"; }
	fi
	mount -t "$fs" "$dev" $MNT || fail "mount re-created $dev ($fs)"
	(cd $MNT && sha256sum -c /tmp/sums >/tmp/check.out 2>&1) || { grep -v ': OK$' /tmp/check.out; fail "checksums differ after re-create ($fs, chunk $chunk)"; }
	log "$fs chunk $chunk: $(grep -c ': OK$' /tmp/check.out) files verified after remove/re-create"
	umount $MNT || fail "umount"
	fxctl remove t13 || fail "remove"
}

modprobe xfs 2>/dev/null
cycle xfs 256K mkfs.xfs -f -K -q
modprobe ext4 2>/dev/null
cycle ext4 64K mkfs.ext4 -F -q -E nodiscard
trap - EXIT
pass "xfs and ext4 survive remove/re-create"
