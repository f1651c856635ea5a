#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=600 file=/usr/sbin/blkdiscard:/lab/bin/blkdiscard
# Discard, secure erase and write-zeroes are offered only as every member
# can do them (dm's dm_table_set_restrictions() and clone_endio()):
#  - F4: a volume over member 0 (discard) and a local null_blk without
#    discard advertises no discard (discard_max_bytes 0); blkdiscard on it
#    is refused up front and member 0's data is untouched. (Before the fix
#    stacking kept discard, member 0 discarded its part and the null_blk
#    part failed.) No lab device has secure erase: not checked here.
#  - F5: a member that advertises write-zeroes but answers NOTSUPP (loop on
#    tmpfs: BLKZEROOUT asks for FALLOC_FL_ZERO_RANGE, which tmpfs lacks)
#    turns the volume's write-zeroes off (write_zeroes_max_bytes 0) after
#    the first refusal; BLKZEROOUT still zeroes (the kernel's fallback);
#    a member whose discard is switched off after the volume was made
#    (its discard_max_bytes set to 0) turns the volume's discard off.
#  - F8: these refusals count as no member error (fxctl stats errors 0).
# Argument "wz": skip the F4 check (to see F5/F8 fail on an old module).
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
CH=65536
NBL=/sys/kernel/config/nullb
ONLY=${1:-}
fx_load
LOOP=
cleanup() {
	for v in t43a t43b t43c; do fxctl remove --force "$v" >/dev/null 2>&1; done
	[ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null
	umount /mnt/t43 2>/dev/null
	[ -d $NBL/t43n ] && { echo 0 >$NBL/t43n/power; rmdir $NBL/t43n; }
	for m in "${M[@]}"; do
		[ -w "/sys/block/${m#/dev/}/queue/discard_max_bytes" ] &&
			cat "/sys/block/${m#/dev/}/queue/discard_max_hw_bytes" >"/sys/block/${m#/dev/}/queue/discard_max_bytes" 2>/dev/null
	done
}
trap cleanup EXIT
q() { cat "/sys/block/${1#/dev/}/queue/$2"; }
# errors_zero VOLUME: no member counted an error in any direction
errors_zero() {
	local e
	e=$(fxctl -o json stats "$1" | jq '[.volume.members[] | .read.errors, .write.errors, .discard.errors, .flush.errors] | add')
	[ "$e" = 0 ] || fail "$1: member error counters say $e after refusals only: $(fxctl -o json stats "$1" | jq -c '[.volume.members[] | {disk, discard}]')"
}
# fill DEV LEN: random data at DEV's start, kept in /tmp/fill
fill() {
	head -c "$2" /dev/urandom >/tmp/fill
	dd if=/tmp/fill of="$1" bs=$CH oflag=direct conv=notrunc 2>/dev/null || fail "write to $1"
}
same() { cmp -s <(dd if="$1" bs=$CH count=$(($2 / CH)) iflag=direct 2>/dev/null) /tmp/fill; }

[ "$(q "${M[0]}" discard_max_bytes)" != 0 ] || fail "member ${M[0]} has no discard: this lab proves nothing"
LBS=$(blockdev --getss "${M[0]}")

# --- F4: one member without discard ------------------------------------------
if [ "$ONLY" != wz ]; then
	modprobe null_blk 2>/dev/null
	mkdir $NBL/t43n || fail "mkdir $NBL/t43n"
	echo "$LBS" >$NBL/t43n/blocksize
	echo 64 >$NBL/t43n/size
	echo 1 >$NBL/t43n/memory_backed
	echo 0 >$NBL/t43n/discard
	echo 1 >$NBL/t43n/power || fail "cannot power on null_blk t43n"
	N=
	for n in /dev/t43n /dev/nullb"$(cat $NBL/t43n/index)"; do [ -b "$n" ] && N=$n && break; done
	[ -n "$N" ] || fail "null_blk t43n has no block device"
	expect_eq "$(q "$N" discard_max_bytes)" 0 "discard_max_bytes of $N (no discard)"
	fx_run fxblk-nltest --cmd create --name t43a --chunk 128 --member "${M[0]}" --member "$N" --keep --expect 0
	D=$(fxdev t43a) || fail "no device for t43a"
	expect_eq "$(q "$D" discard_max_bytes)" 0 "discard_max_bytes of $D (member $N has no discard)"
	fill "$D" $((4 * CH))
	fx_expect_fail --msg 'not supported|Operation not supported' blkdiscard -o 0 -l $((4 * CH)) "$D"
	same "$D" $((4 * CH)) || fail "blkdiscard on $D changed data (a member discarded its part)"
	errors_zero t43a
	log "F4: $D advertises no discard, blkdiscard refused, data intact"
	fx_run fxblk-nltest --cmd destroy --name t43a --expect 0
fi

# --- F5 + F8: write-zeroes refused by a member --------------------------------
modprobe loop 2>/dev/null
mkdir -p /mnt/t43
mount -t tmpfs -o size=80m tmpfs /mnt/t43 || fail "mount tmpfs"
truncate -s 64M /mnt/t43/m || fail "truncate"
LOOP=$(losetup --show -f -b "$LBS" /mnt/t43/m 2>/dev/null || losetup --show -f /mnt/t43/m) || fail "losetup"
[ "$(q "$LOOP" write_zeroes_max_bytes)" != 0 ] || fail "$LOOP (loop on tmpfs) advertises no write-zeroes: this lab proves nothing"
fx_run fxblk-nltest --cmd create --name t43b --chunk 128 --member "${M[0]}" --member "$LOOP" --keep --expect 0
D=$(fxdev t43b) || fail "no device for t43b"
wz=$(q "$D" write_zeroes_max_bytes)
[ "$wz" != 0 ] || fail "$D advertises no write-zeroes although both members do"
fx_mark wz
fill "$D" $((4 * CH))
fx_run blkdiscard -z -o 0 -l $((4 * CH)) "$D"
cmp -s <(dd if="$D" bs=$CH count=4 iflag=direct 2>/dev/null) <(head -c $((4 * CH)) /dev/zero) ||
	fail "BLKZEROOUT on $D did not zero the range"
errors_zero t43b
expect_eq "$(q "$D" write_zeroes_max_bytes)" 0 "write_zeroes_max_bytes of $D after $LOOP refused one (was $wz)"
fx_dmesg_since wz | grep -q "refused a write-zeroes: write-zeroes off" ||
	fail "no 'write-zeroes off' line in the kernel log"
log "F5: write-zeroes off after the first NOTSUPP; F8: no member errors"
fx_run fxblk-nltest --cmd destroy --name t43b --expect 0

# --- F5: discard switched off on a member after the volume was made ----------
fx_run fxblk-nltest --cmd create --name t43c --chunk 128 --member "${M[0]}" --member "${M[1]}" --keep --expect 0
D=$(fxdev t43c) || fail "no device for t43c"
[ "$(q "$D" discard_max_bytes)" != 0 ] || fail "$D advertises no discard over two discard members"
echo 0 >"/sys/block/${M[1]#/dev/}/queue/discard_max_bytes" || fail "cannot turn off discard on ${M[1]}"
fx_mark dc
blkdiscard -o 0 -l $((4 * CH)) "$D" 2>/dev/null	# member 1 refuses its part
expect_eq "$(q "$D" discard_max_bytes)" 0 "discard_max_bytes of $D after ${M[1]} refused a discard"
fx_dmesg_since dc | grep -q "refused a discard: discard off" || fail "no 'discard off' line in the kernel log"
fx_expect_fail --msg 'not supported|Operation not supported' blkdiscard -o 0 -l $((4 * CH)) "$D"
errors_zero t43c
fx_run fxblk-nltest --cmd destroy --name t43c --expect 0
pass
