#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.1,6.12 members=4 timeout=1200 nullb-attr=cache_size=64 file=/usr/sbin/blkdiscard:/lab/bin/blkdiscard file=/usr/sbin/fstrim:/lab/bin/fstrim
# Flush, FUA, discard and write-zeroes reach the members:
#  - fsync on /dev/fxN (fio --fsync=1): every member sees >= one flush per fsync,
#    counted twice: by fxblk (fxctl stats: members[].flush.ios) and by the
#    member's own block layer (/sys/block/nvmeXnY/stat, field 16 = flush ios);
#  - O_DIRECT|O_SYNC writes (REQ_FUA): fxctl stats members[].write.fua grows on
#    exactly the members the writes map to, by exactly 2; fxN must advertise
#    FUA when its members do;
#  - write-zeroes (BLKZEROOUT ioctl via util-linux `blkdiscard -z`, copied
#    into the VM by the header above; or
#    `fallocate --zero-range`) reads back as zeroes over a range crossing six
#    chunk boundaries, and leaves the neighbouring blocks alone; it reaches
#    every member as writes, never as discard (the members' block-layer
#    discard counter must not move: the lab's members zero on discard, so
#    the read-back alone cannot tell the two apart);
#    When fx does not advertise write-zeroes although its members do, that is
#    a failure; when neither does, the offload sub-check prints SKIP.
#  - discard: split per member (each member's discard counters grow), and where
#    the member reads back zeroes after a discard on its own (the lab's
#    null_blk members have discard on and are memory-backed), so must fx;
#  - fstrim on ext4 on fxN trims something and the discards reach every member.
# Members get a volatile write cache (null_blk cache_size, header above): from
# 7.x on nvmet reports VWC only when its backing device has one, and members
# without it are "write through", so fxN is too and no flush reaches fxblk.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}"); N=4
fx_load
stats() { fxctl -o json stats t12 >"$1" || fail "fxctl -o json stats t12"; }
mstat() { fx_mstat "$@"; }
# is_fill OFFSET OCTAL: the 4 KiB block of $DEV at OFFSET holds only that byte
is_fill() {
	cmp -s <(dd if="$DEV" bs=4096 skip=$(($1 / 4096)) count=1 iflag=direct 2>/dev/null) \
		<(head -c 4096 /dev/zero | tr '\000' "$2")
}
trap 'fxctl remove t12 >/dev/null 2>&1' EXIT
CH=65536
# Does a member read back zeroes after a discard of its own? Probed in its
# label area before the volume claims it (util-linux blkdiscard opens O_EXCL).
MZERO=0
if [ "$(cat /sys/block/${M[0]#/dev/}/queue/discard_max_bytes)" != 0 ]; then
	head -c 65536 /dev/urandom | dd of="${M[0]}" bs=64k seek=1 oflag=direct 2>/dev/null
	blkdiscard -o 65536 -l 65536 "${M[0]}" 2>/tmp/bd.err ||
		{ cat /tmp/bd.err; fail "${M[0]} advertises discard but a discard on the member itself fails (lab backend problem, not fxblk)"; }
	cmp -s <(dd if="${M[0]}" bs=64k skip=1 count=1 iflag=direct 2>/dev/null) <(head -c 65536 /dev/zero) && MZERO=1
fi
fxctl create t12 --chunk 64K "${M[@]}" || fail "fxctl create t12"
DEV=$(fxdev t12) || fail "no /dev/fxN named t12"
DISK=${DEV#/dev/}

# --- flush -----------------------------------------------------------------
[ "$(cat /sys/block/$DISK/queue/write_cache)" = "write back" ] ||
	fail "$DEV reports '$(cat /sys/block/$DISK/queue/write_cache)': the block layer drops flushes before fxblk sees them (members: $(cat /sys/block/${M[0]#/dev/}/queue/write_cache))"
stats /tmp/s0; for i in 0 1 2 3; do F0[$i]=$(mstat "${M[$i]}" 16); done
fio --eta=never --name=flush --filename="$DEV" --direct=1 --rw=write --bs=4k --size=64k \
	--fsync=1 --ioengine=psync --output-format=json --output=/tmp/fio.json || fail "fio --fsync=1 on $DEV"
# fio issues one fsync per write except after the last one: take its count
NF=$(jq '.jobs[0].sync.total_ios' /tmp/fio.json)
[ "$NF" -ge 8 ] || fail "fio reports only '$NF' fsyncs for 16 writes"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(($(jv volume.members.$i.flush.ios /tmp/s1) - $(jv volume.members.$i.flush.ios /tmp/s0)))
	b=$(($(mstat "${M[$i]}" 16) - F0[$i]))
	echo "   member $i ${M[$i]}: fxblk sent $a flushes, member block layer counted $b"
	[ $a -ge $NF ] || fail "${M[$i]}: only $a flushes sent by fxblk for $NF fsyncs on $DEV"
	[ $b -ge $NF ] || fail "${M[$i]}: only $b flushes completed on the member for $NF fsyncs on $DEV"
	[ "$(jv volume.members.$i.flush.errors /tmp/s1)" = 0 ] || fail "flush errors on ${M[$i]}"
done
log "flush: every fsync on $DEV reached all $N members"

# --- FUA -------------------------------------------------------------------
# 8 x 64 KiB O_DSYNC direct writes from volume chunk 4: chunks 4..11 -> 2 per member
# fxN advertises FUA when its members do (a lost FUA flag is a failure, not
# a note); only members without FUA make the exact count a SKIP
FXFUA=$(cat /sys/block/$DISK/queue/fua 2>/dev/null || echo 1)
MFUA=$(cat /sys/block/${M[0]#/dev/}/queue/fua 2>/dev/null || echo 1)
[ "$MFUA" = 0 ] || [ "$FXFUA" = 1 ] || fail "$DEV does not advertise FUA (queue/fua=0) although its members do"
[ "$FXFUA" = 1 ] || skip "exact FUA count: the members do not advertise FUA (the block layer emulates it with flushes)"
stats /tmp/s0
fio --eta=never --name=fua --filename="$DEV" --direct=1 --sync=1 --rw=write --bs=64k --size=512k \
	--offset=$((4 * CH)) --ioengine=psync --output=/tmp/fio.out || fail "fio --sync=1 on $DEV"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(($(jv volume.members.$i.write.fua /tmp/s1) - $(jv volume.members.$i.write.fua /tmp/s0)))
	w=$(($(jv volume.members.$i.write.ios /tmp/s1) - $(jv volume.members.$i.write.ios /tmp/s0)))
	echo "   member $i: $w writes, $a with FUA"
	if [ "$FXFUA" = 1 ]; then
		[ $a -eq 2 ] || fail "${M[$i]}: expected 2 FUA writes (chunks $i+4, $i+8), fxblk sent $a"
	fi
	[ $w -ge 2 ] || fail "${M[$i]}: expected >= 2 writes, got $w"
done
# and plain direct writes must not be FUA
stats /tmp/s0
fio --eta=never --name=nofua --filename="$DEV" --direct=1 --rw=write --bs=64k --size=512k \
	--ioengine=psync --output=/tmp/fio.out || fail "fio on $DEV"
stats /tmp/s1
for i in 0 1 2 3; do
	a=$(($(jv volume.members.$i.write.fua /tmp/s1) - $(jv volume.members.$i.write.fua /tmp/s0)))
	[ $a -eq 0 ] || fail "${M[$i]}: $a FUA writes for writes without O_SYNC"
done
log "FUA: O_SYNC direct writes arrive as FUA on the right members, plain ones don't"

# --- write-zeroes ----------------------------------------------------------
# BLKZEROOUT never returns stale data (falls back to writing zeroes), so the
# read-back is a hard check; whether fxblk passed REQ_OP_WRITE_ZEROES down is
# read from its discard counters (discard + write-zeroes) when it advertises it.
ZMAX=$(cat /sys/block/$DISK/queue/write_zeroes_max_bytes)
echo "   $DEV write_zeroes_max_bytes=$ZMAX members: $(cat /sys/block/${M[0]#/dev/}/queue/write_zeroes_max_bytes)"
fio --eta=never --name=fill --filename="$DEV" --direct=1 --rw=write --bs=1M --size=8M --offset=$((16 * 1048576)) \
	--buffer_pattern=0xa5 --ioengine=libaio --iodepth=4 --output=/tmp/fio.out || fail "fill"
stats /tmp/s0; for i in 0 1 2 3; do D0[$i]=$(mstat "${M[$i]}" 12) W0[$i]=$(mstat "${M[$i]}" 5); done
ZO=$((16 * 1048576 + 3 * CH + 4096)); ZL=$((5 * CH + 8192)) # crosses 6 chunk boundaries
# util-linux blkdiscard -z = BLKZEROOUT; busybox's blkdiscard has no -z
if blkdiscard --help 2>&1 | grep -q -- --zeroout; then
	blkdiscard -z -o $ZO -l $ZL "$DEV" || fail "blkdiscard -z -o $ZO -l $ZL $DEV"
elif fallocate --help 2>&1 | grep -q -- --zero-range; then
	fallocate --zero-range -o $ZO -l $ZL "$DEV" || fail "fallocate --zero-range -o $ZO -l $ZL $DEV"
else
	fail "lab image lacks util-linux blkdiscard/fallocate (busybox ones cannot zero-out): add them to tests/lab/mkbase.sh BINS"
fi
stats /tmp/s1
cmp -s <(dd if="$DEV" bs=4096 skip=$((ZO / 4096)) count=$((ZL / 4096)) iflag=direct 2>/dev/null) \
	<(head -c $ZL /dev/zero) || fail "write-zeroes range [$ZO, +$ZL) does not read back as zeroes"
is_fill "$((ZO - 4096))" '\245' && is_fill "$((ZO + ZL))" '\245' ||
	fail "write-zeroes touched the 4 KiB blocks next to [$ZO, +$ZL)"
# The members zero on discard (memory-backed null_blk), so the read-back
# cannot tell write-zeroes from discard: their own block-layer counters can.
# REQ_OP_WRITE_ZEROES is accounted as a write (op_stat_group()), a discard
# in field 12: that one must not move, field 5 (writes) must.
for i in 0 1 2 3; do
	d=$(($(mstat "${M[$i]}" 12) - D0[$i])) w=$(($(mstat "${M[$i]}" 5) - W0[$i]))
	echo "   member $i: write-zeroes of $DEV gave $w writes, $d discards"
	[ $d = 0 ] || fail "${M[$i]}: its discard counter moved by $d on write-zeroes of $DEV: zeroes sent as DISCARD (stale data where discard does not zero)"
	[ $w -ge 1 ] || fail "${M[$i]}: no write arrived for write-zeroes over all members"
done
MZMAX=$(cat /sys/block/${M[0]#/dev/}/queue/write_zeroes_max_bytes)
if [ "$ZMAX" = 0 ] && [ "$MZMAX" != 0 ]; then
	fail "$DEV does not advertise write-zeroes (0) although its members do ($MZMAX): fxblk drops the offload"
fi
if [ "$ZMAX" -gt 0 ]; then
	tot=0
	for i in 0 1 2 3; do
		d=$(($(jv volume.members.$i.discard.ios /tmp/s1) - $(jv volume.members.$i.discard.ios /tmp/s0)))
		tot=$((tot + d)); [ $d -ge 1 ] || fail "${M[$i]}: no write-zeroes bio sent by fxblk (range covers all members)"
	done
	log "write-zeroes: offloaded, $tot member bios, reads back as zeroes, neighbours intact"
else
	skip "write-zeroes offload: neither $DEV nor its members advertise write-zeroes (zeroes were written as data; read-back checked)"
fi

# --- discard ---------------------------------------------------------------
DMAX=$(cat /sys/block/$DISK/queue/discard_max_bytes)
MDMAX=$(cat /sys/block/${M[0]#/dev/}/queue/discard_max_bytes)
echo "   discard_max_bytes: $DEV $DMAX, member $MDMAX"
if [ "$MDMAX" = 0 ]; then
	[ "$DMAX" = 0 ] || fail "$DEV advertises discard ($DMAX) although its members do not"
	skip "discard: the members do not support it (and $DEV correctly does not advertise it)"
else
	[ "$DMAX" -gt 0 ] || fail "$DEV does not advertise discard although all members do ($MDMAX)"
	fio --eta=never --name=fill --filename="$DEV" --direct=1 --rw=write --bs=1M --size=8M --offset=$((32 * 1048576)) \
		--buffer_pattern=0x5a --ioengine=libaio --iodepth=4 --output=/tmp/fio.out || fail "fill"
	stats /tmp/s0; for i in 0 1 2 3; do D0[$i]=$(mstat "${M[$i]}" 12); done
	DO=$((32 * 1048576 + CH)); DL=$((6 * CH))
	blkdiscard -o $DO -l $DL "$DEV" || fail "blkdiscard on $DEV (members accept discard)"
	stats /tmp/s1
	for i in 0 1 2 3; do
		a=$(($(jv volume.members.$i.discard.ios /tmp/s1) - $(jv volume.members.$i.discard.ios /tmp/s0)))
		b=$(($(mstat "${M[$i]}" 12) - D0[$i]))
		echo "   member $i: fxblk sent $a discards, member counted $b"
		[ $a -ge 1 ] && [ $b -ge 1 ] || fail "${M[$i]}: discard over 6 chunks did not reach it (fxblk $a, member $b)"
	done
	if [ $MZERO = 1 ]; then
		cmp -s <(dd if="$DEV" bs=64k skip=$((DO / CH)) count=6 iflag=direct 2>/dev/null) <(head -c $DL /dev/zero) ||
			fail "members read zeroes after discard, but discarded range of $DEV does not"
		log "discard: reached every member, reads back zeroes (members guarantee it)"
	else
		skip "discard read-back: the members do not read back zeroes after a discard of their own (memory-backed=0?)"
		log "discard: reached every member"
	fi
	# neighbours untouched
	is_fill "$((DO - 4096))" '\132' && is_fill "$((DO + DL))" '\132' ||
		fail "discard changed the 4 KiB blocks next to [$DO, +$DL)"
fi
# --- fstrim --------------------------------------------------------------------
if [ "$MDMAX" != 0 ]; then
	modprobe ext4 2>/dev/null
	MNT=/mnt/t12; mkdir -p $MNT
	trap 'umount $MNT 2>/dev/null; fxctl remove t12 >/dev/null 2>&1' EXIT
	# 256 MiB of the volume (64 KiB chunks: all members), so that the first,
	# full trim stays short under TCG
	mkfs.ext4 -F -q -E nodiscard "$DEV" 256M >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; fail "mkfs.ext4 $DEV"; }
	mount -t ext4 "$DEV" $MNT || fail "mount $DEV"
	# a first fstrim trims all free space (mkfs did not); ext4 then trims
	# again only block groups where blocks were freed since: the file's
	fstrim $MNT || fail "first fstrim $MNT on $DEV"
	head -c $((16 * 1048576)) /dev/urandom >$MNT/f || fail "write a file"
	sync; rm $MNT/f; sync
	stats /tmp/s0; for i in 0 1 2 3; do D0[$i]=$(mstat "${M[$i]}" 12); done
	fstrim -v $MNT >/tmp/fstrim.out 2>&1 || { cat /tmp/fstrim.out; fail "fstrim $MNT on $DEV"; }
	cat /tmp/fstrim.out
	TRIMMED=$(grep -oE '[0-9]+ bytes' /tmp/fstrim.out | cut -d' ' -f1)
	[ "${TRIMMED:-0}" -ge $((16 * 1048576)) ] || fail "fstrim trimmed '${TRIMMED:-?}' bytes, expected >= 16 MiB (the deleted file)"
	stats /tmp/s1
	for i in 0 1 2 3; do
		a=$(($(jv volume.members.$i.discard.ios /tmp/s1) - $(jv volume.members.$i.discard.ios /tmp/s0)))
		b=$(($(mstat "${M[$i]}" 12) - D0[$i]))
		[ $a -ge 1 ] && [ $b -ge 1 ] || fail "${M[$i]}: fstrim's discards did not reach it (fxblk $a, member $b)"
	done
	umount $MNT || fail "umount $DEV"
	log "fstrim: $TRIMMED bytes trimmed on ext4, discards reached all $N members"
else
	skip "fstrim: the members do not support discard"
fi
fxctl remove t12 || fail "remove"
trap - EXIT
pass "flush/FUA/discard/write-zeroes"
