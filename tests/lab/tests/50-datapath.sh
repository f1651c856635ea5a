#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=5.10,7.2,7.3 members=4 size-mb=512 timeout=900 nullb-attr=cache_size=64 file=/usr/sbin/blkdiscard:/lab/bin/blkdiscard
# The data path in one boot, on every supported kernel: make check runs it
# on 5.10, 7.2 and 7.3; 6.1 and 6.12, whose make check runs the longer 11,
# 12, 13 and assembly tests (35 on 6.1, 31 on 6.12), run it in make
# check-full (it passes there too). The smallest set of checks that a kernel
# whose block-layer API differs (kmod/compat probes) breaks first.
#  1. create over 4 members, 64 KiB chunks: volume chunk c lives on member
#     c % 4 at data_offset + (c / 4) * 64 KiB (checked on the members, so a
#     consistent mis-mapping cannot pass as fio verify alone would let it);
#  2. fio verify (crc32c) across chunk and member boundaries: libaio and
#     io_uring (io_uring only skipped where the kernel switched it off);
#  3. flush: every fsync on fxN reaches every member (fxctl stats and the
#     member's own block layer, /sys/block/X/stat field 16);
#  4. FUA: O_SYNC direct writes arrive as FUA on exactly the members they map
#     to (2 each), plain writes without; fxN advertises FUA when members do;
#  5. discard over 6 chunks reaches every member (fxctl and field 12) and
#     reads back zeroes (the lab's members zero on discard);
#  6. write-zeroes (BLKZEROOUT) over 6 chunk boundaries reads back zeroes,
#     neighbours intact, and arrives at the members as write-zeroes, NOT as
#     discard: their block-layer discard counter (field 12) must not move;
#  7. stop, then assemble from the labels: the data of step 2 verifies again;
#  8. remove: members released (no holders) and labels wiped, rmmod.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
V=t50 CH=65536
fx_load
trap 'fxctl remove $V >/dev/null 2>&1' EXIT
stats() { fxctl -o json stats $V >"$1" || fail "fxctl -o json stats $V"; }
sdelta() {	# sdelta I FIELD: member I's fxctl stats FIELD, /tmp/s1 - /tmp/s0
	echo $(($(jv "volume.members.$1.$2" /tmp/s1) - $(jv "volume.members.$1.$2" /tmp/s0)))
}
mstat() { fx_mstat "$@"; }
mq() { cat "/sys/block/${1#/dev/}/queue/$2" 2>/dev/null || echo "${3:-?}"; }
is_fill() {	# is_fill OFFSET OCTAL: the 4 KiB block of $DEV at OFFSET holds only that byte
	cmp -s <(dd if="$DEV" bs=4096 skip=$(($1 / 4096)) count=1 iflag=direct 2>/dev/null) \
		<(head -c 4096 /dev/zero | tr '\000' "$2")
}
fio_verify() {	# fio_verify LABEL FIO-ARGS...: write, read back, check every block
	local label=$1 rc; shift
	fio --name="$label" --filename="$DEV" --direct=1 --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --output=/tmp/fio.out --eta=never "$@"
	rc=$?
	if [ $rc -ne 0 ] || grep -qiE 'verify: bad|verify failed|err= *[1-9]' /tmp/fio.out; then
		cat /tmp/fio.out
		fail "fio verify '$label' on $DEV: rc=$rc ($*)"
	fi
	log "   ok $label: $*"
}

# io_uring exists on every supported kernel (5.1+); only a sysctl that
# switches it off (6.6+) makes those runs libaio, with SKIP
URING=io_uring
if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != 0 ]; then
	URING=libaio; skip "io_uring runs use libaio: kernel.io_uring_disabled=$(cat /proc/sys/kernel/io_uring_disabled)"
elif ! fio --eta=never --name=probe --ioengine=io_uring --filename=/dev/null --rw=write \
		--bs=4k --size=4k >/tmp/probe.out 2>&1; then
	cat /tmp/probe.out
	fail "fio cannot use io_uring on $(uname -r), which has it enabled"
fi

# Does a member read back zeroes after a discard of its own? (probed in its
# label area before the volume claims it)
MZERO=0
if [ "$(mq "${M[0]}" discard_max_bytes 0)" != 0 ]; then
	head -c 65536 /dev/urandom | dd of="${M[0]}" bs=64k seek=1 oflag=direct 2>/dev/null
	blkdiscard -o 65536 -l 65536 "${M[0]}" || fail "discard on the member ${M[0]} itself fails (lab backend)"
	cmp -s <(dd if="${M[0]}" bs=64k skip=1 count=1 iflag=direct 2>/dev/null) <(head -c 65536 /dev/zero) && MZERO=1
fi

# --- 1. create, mapping on the members ---------------------------------------
fx_run fxctl create $V --chunk 64K "${M[@]}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
OFF=$(fxctl -o json show $V | jq -r '.volume.members[0].data_offset_bytes')
[[ $OFF =~ ^[0-9]+$ ]] || fail "fxctl -o json show $V has no data_offset_bytes"
log "$DEV: 4 members, chunk 64 KiB, data offset $OFF, $(blockdev --getsize64 "$DEV") bytes"
for c in 0 1 2 3 5 10; do
	head -c $CH /dev/urandom >/tmp/chunk$c
	dd if=/tmp/chunk$c of="$DEV" bs=$CH seek=$c oflag=direct conv=notrunc status=none || fail "write chunk $c"
done
for c in 0 1 2 3 5 10; do
	cmp -s /tmp/chunk$c <(dd if="${M[$((c % 4))]}" bs=$CH skip=$(((OFF + (c / 4) * CH) / CH)) count=1 iflag=direct status=none) ||
		fail "volume chunk $c is not at ${M[$((c % 4))]} offset $((OFF + (c / 4) * CH)) (member $((c % 4)), stripe $((c / 4)))"
done
log "mapping: chunks 0-3, 5, 10 found on the member and offset the layout names"

# --- 2. fio verify across chunk and member boundaries ---------------------------
fio_verify rand-libaio --rw=randwrite --bsrange=512-256k --iodepth=16 --ioengine=libaio --size=8M --offset=1M
fio_verify seq-96k-uring --rw=write --bs=96k --iodepth=32 --ioengine=$URING --size=12M --offset=16M
fio_verify rand-uring --rw=randwrite --bsrange=4k-1M --iodepth=8 --ioengine=$URING --size=8M --offset=$((40 * 1048576 + 512))
fio_verify seq-odd-libaio --rw=write --bs=33280 --iodepth=8 --ioengine=libaio --size=4M --offset=$((56 * 1048576 + 512))

# --- 3. flush ------------------------------------------------------------------
[ "$(mq "$DEV" write_cache)" = "write back" ] ||
	fail "$DEV reports '$(mq "$DEV" write_cache)' (members: $(mq "${M[0]}" write_cache)): flushes never reach fxblk"
stats /tmp/s0; for i in 0 1 2 3; do F0[$i]=$(mstat "${M[$i]}" 16); done
fio --eta=never --name=flush --filename="$DEV" --direct=1 --rw=write --bs=4k --size=64k --offset=$((64 * 1048576)) \
	--fsync=1 --ioengine=psync --output-format=json --output=/tmp/fio.json || fail "fio --fsync=1 on $DEV"
NF=$(jq '.jobs[0].sync.total_ios' /tmp/fio.json)
[ "$NF" -ge 8 ] || fail "fio reports only '$NF' fsyncs for 16 writes"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(sdelta $i flush.ios) b=$(($(mstat "${M[$i]}" 16) - F0[$i]))
	[ $a -ge "$NF" ] && [ $b -ge "$NF" ] ||
		fail "${M[$i]}: $NF fsyncs on $DEV, fxblk sent $a flushes, the member completed $b"
	[ "$(jv volume.members.$i.flush.errors /tmp/s1)" = 0 ] || fail "flush errors on ${M[$i]}"
done
log "flush: $NF fsyncs reached all 4 members (fxblk and member counters)"

# --- 4. FUA --------------------------------------------------------------------
MFUA=$(mq "${M[0]}" fua 1) FXFUA=$(mq "$DEV" fua 1)
[ "$MFUA" = 0 ] || [ "$FXFUA" = 1 ] || fail "$DEV does not advertise FUA (queue/fua=$FXFUA) although its members do"
stats /tmp/s0
fio --eta=never --name=fua --filename="$DEV" --direct=1 --sync=1 --rw=write --bs=64k --size=512k \
	--offset=$((1024 * CH + 4 * CH)) --ioengine=psync --output=/tmp/fio.out || fail "fio --sync=1 on $DEV"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(sdelta $i write.fua) w=$(sdelta $i write.ios)
	if [ "$FXFUA" = 1 ]; then
		[ "$a" = 2 ] || fail "${M[$i]}: expected exactly 2 FUA writes (its chunks of 8 O_SYNC 64 KiB writes), fxblk sent $a"
	fi
	[ "$w" -ge 2 ] || fail "${M[$i]}: expected >= 2 writes, got $w"
done
[ "$FXFUA" = 1 ] || skip "FUA count: neither $DEV nor its members advertise FUA (the block layer emulates it with flushes)"
stats /tmp/s0
fio --eta=never --name=nofua --filename="$DEV" --direct=1 --rw=write --bs=64k --size=512k \
	--offset=$((1024 * CH + 4 * CH)) --ioengine=psync --output=/tmp/fio.out || fail "fio on $DEV"
stats /tmp/s1
for i in 0 1 2 3; do
	[ "$(sdelta $i write.fua)" = 0 ] || fail "${M[$i]}: FUA writes for writes without O_SYNC"
done
log "FUA: O_SYNC writes arrive as FUA, 2 on each member; plain writes without"

# --- 5. discard ----------------------------------------------------------------
DMAX=$(mq "$DEV" discard_max_bytes 0) MDMAX=$(mq "${M[0]}" discard_max_bytes 0)
[ "$MDMAX" != 0 ] || fail "the lab's members do not advertise discard (init sets null_blk discard=1)"
[ "$DMAX" -gt 0 ] || fail "$DEV does not advertise discard although all members do ($MDMAX)"
fio --eta=never --name=fill --filename="$DEV" --direct=1 --rw=write --bs=1M --size=4M --offset=$((80 * 1048576)) \
	--buffer_pattern=0x5a --ioengine=libaio --iodepth=4 --output=/tmp/fio.out || fail "fill"
stats /tmp/s0; for i in 0 1 2 3; do D0[$i]=$(mstat "${M[$i]}" 12); done
DO=$((80 * 1048576 + CH)) DL=$((6 * CH))
blkdiscard -o $DO -l $DL "$DEV" || fail "blkdiscard -o $DO -l $DL $DEV"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(sdelta $i discard.ios) b=$(($(mstat "${M[$i]}" 12) - D0[$i]))
	[ "$a" -ge 1 ] && [ "$b" -ge 1 ] || fail "${M[$i]}: discard over 6 chunks did not reach it (fxblk $a, member $b)"
done
if [ $MZERO = 1 ]; then
	cmp -s <(dd if="$DEV" bs=$CH skip=$((DO / CH)) count=6 iflag=direct 2>/dev/null) <(head -c $DL /dev/zero) ||
		fail "members read zeroes after a discard, the discarded range of $DEV does not"
else
	fail "the lab's members do not read zeroes after a discard (null_blk memory_backed + discard)"
fi
is_fill $((DO - 4096)) '\132' && is_fill $((DO + DL)) '\132' || fail "discard changed the blocks next to [$DO, +$DL)"
log "discard: reached all 4 members, reads back zeroes, neighbours intact"

# --- 6. write-zeroes: not a discard -------------------------------------------
ZMAX=$(mq "$DEV" write_zeroes_max_bytes 0) MZMAX=$(mq "${M[0]}" write_zeroes_max_bytes 0)
log "write_zeroes_max_bytes: $DEV $ZMAX, members $MZMAX"
[ "$ZMAX" != 0 ] || [ "$MZMAX" = 0 ] || fail "$DEV does not advertise write-zeroes although its members do ($MZMAX)"
fio --eta=never --name=fill --filename="$DEV" --direct=1 --rw=write --bs=1M --size=4M --offset=$((96 * 1048576)) \
	--buffer_pattern=0xa5 --ioengine=libaio --iodepth=4 --output=/tmp/fio.out || fail "fill"
stats /tmp/s0; for i in 0 1 2 3; do D0[$i]=$(mstat "${M[$i]}" 12) W0[$i]=$(mstat "${M[$i]}" 5); done
ZO=$((96 * 1048576 + 3 * CH + 4096)) ZL=$((5 * CH + 8192))
blkdiscard -z -o $ZO -l $ZL "$DEV" || fail "blkdiscard -z (BLKZEROOUT) -o $ZO -l $ZL $DEV"
stats /tmp/s1
cmp -s <(dd if="$DEV" bs=4096 skip=$((ZO / 4096)) count=$((ZL / 4096)) iflag=direct 2>/dev/null) \
	<(head -c $ZL /dev/zero) || fail "write-zeroes range [$ZO, +$ZL) does not read back as zeroes"
is_fill $((ZO - 4096)) '\245' && is_fill $((ZO + ZL)) '\245' || fail "write-zeroes touched the blocks next to [$ZO, +$ZL)"
for i in 0 1 2 3; do
	d=$(($(mstat "${M[$i]}" 12) - D0[$i])) w=$(($(mstat "${M[$i]}" 5) - W0[$i]))
	[ "$d" = 0 ] || fail "${M[$i]}: its discard counter moved by $d on write-zeroes of $DEV: zeroes sent as DISCARD (stale data on a device that does not zero on discard)"
	[ "$w" -ge 1 ] || fail "${M[$i]}: no write (zeroes) arrived for a write-zeroes range covering all members"
	[ "$ZMAX" = 0 ] || [ "$(sdelta $i discard.ios)" -ge 1 ] || fail "${M[$i]}: fxblk sent no write-zeroes bio"
done
[ "$ZMAX" != 0 ] || skip "write-zeroes offload: the members do not advertise write-zeroes on $(uname -r) (zeroes written as data; read-back checked)"
log "write-zeroes: zeroes read back, neighbours intact, members saw writes and no discard"

# --- 7. stop, assemble, verify again --------------------------------------------
fx_run fxctl stop $V
! fxdev $V >/dev/null || fail "$V still running after fxctl stop"
for m in "${M[@]}"; do [ -z "$(ls "/sys/block/${m#/dev/}/holders")" ] || fail "$m still held after stop"; done
fx_run fxctl assemble $V
DEV=$(fxdev $V) || fail "no /dev/fxN named $V after assemble"
fio --name=rand-libaio --filename="$DEV" --direct=1 --verify=crc32c --verify_fatal=1 --verify_only=1 \
	--rw=randwrite --bsrange=512-256k --iodepth=16 --ioengine=libaio --size=8M --offset=1M \
	--output=/tmp/fio.out --eta=never || { cat /tmp/fio.out; fail "data written before stop does not verify after assemble"; }
for c in 0 1 2 3 5 10; do
	cmp -s /tmp/chunk$c <(dd if="$DEV" bs=$CH skip=$c count=1 iflag=direct status=none) || fail "chunk $c differs after assemble"
done
log "stop + assemble: data verifies again"

# --- 8. remove -------------------------------------------------------------------
fx_run fxctl remove $V
trap - EXIT
! fxdev $V >/dev/null || fail "$V still running after remove"
for m in "${M[@]}"; do
	[ -z "$(ls "/sys/block/${m#/dev/}/holders")" ] || fail "$m still held after remove"
	fx_expect_fail --rc 3 fxctl examine "$m"
done
fx_unload
pass "data path on $(uname -r)"
