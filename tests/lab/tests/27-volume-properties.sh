#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=5.10,6.1 members=4 timeout=900
# What a volume inherits from its members, per kernel (issue 6, "per kernel"):
#  - non-rotational members -> /sys/block/fxN/queue/rotational = 0
#    (5.10/6.1 keep NONROT as a queue flag that stacking does not inherit)
#  - discard advertised -> blkdiscard on fxN works (5.10 needs
#    QUEUE_FLAG_DISCARD set, or every discard fails with EOPNOTSUPP)
#  - a read-only member -> a read-only volume: ro=1, writes refused, reads work
#    (raw CREATE); fxctl create refuses it first, naming it, no label written
#  - a zoned member -> CREATE refused, naming the zoned member; fxctl create
#    refuses it first, naming it, no label written
#  - a data offset inside the 4 MiB label area -> refused (by fxctl first;
#    the kernel's own refusal is asserted with raw messages in test 14)
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members (got '${FX_MEMBERS:-}')"
fx_load
NB=/sys/kernel/config/nullb
cleanup() {
	for v in $(fxctl -o json list 2>/dev/null | jq -r '.volumes[].name'); do
		fxctl remove "$v" >/dev/null 2>&1
	done
	blockdev --setrw "${M[1]}" 2>/dev/null
	[ -d $NB/t27z ] && { echo 0 >$NB/t27z/power; rmdir $NB/t27z; }
}
trap cleanup EXIT

# --- rotational and discard --------------------------------------------------
fx_run fxctl create t27 --chunk 64K "${M[@]}"
D=$(fxdev t27) || fail "no device for t27"
q=/sys/block/${D#/dev/}/queue
for m in "${M[@]}"; do
	expect_eq "$(cat /sys/block/${m#/dev/}/queue/rotational)" 0 "member $m rotational"
done
expect_eq "$(cat $q/rotational)" 0 "$D rotational over non-rotational members"
mdisc=$(cat /sys/block/${M[0]#/dev/}/queue/discard_max_bytes)
if [ "$mdisc" -gt 0 ]; then
	[ "$(cat $q/discard_max_bytes)" -gt 0 ] || fail "$D advertises no discard over discarding members"
	fx_run blkdiscard -o 0 -l $((4 << 20)) "$D"
	fx_run blkdiscard "$D"
else
	echo "SKIP: discard on $D: member ${M[0]} has discard_max_bytes=0"
fi
fx_run fxctl remove t27

# --- read-only member --------------------------------------------------------
fx_run blockdev --setro "${M[1]}"
# fxctl create names the read-only member before writing any label (member
# 0, writable and listed first, stays unlabelled)
fx_expect_fail --rc 1 --msg "^fxctl: ${M[1]} is read-only: its fxblk label cannot be written; nothing was written; make it writable first \('blockdev --setrw ${M[1]}'" \
	fxctl create t27ro "${M[0]}" "${M[1]}"
fx_expect_fail --rc 3 --msg 'not an fxblk member' fxctl examine "${M[0]}"
fxdev t27ro >/dev/null && fail "fxctl create over read-only ${M[1]} left a volume"
# the kernel's side, by a raw CREATE (fxctl refuses first, above)
fx_run fxblk-nltest --cmd create --name t27ro --chunk 128 --member "${M[0]}" --member "${M[1]}" --keep --expect 0
D=$(fxdev t27ro) || fail "no device for t27ro"
expect_eq "$(cat /sys/block/${D#/dev/}/ro)" 1 "$D ro with read-only member ${M[1]}"
fx_run dd if="$D" of=/dev/null bs=1M count=4 iflag=direct status=none
if dd if=/dev/zero of="$D" bs=4k count=1 oflag=direct status=none 2>/dev/null; then
	fail "a write to read-only $D succeeded"
fi
flags=$(fxctl -o json show t27ro | jq -r '.volume.flags // empty | join(",")' 2>/dev/null)
[ -n "$flags" ] || fail "fxctl -o json show t27ro has no volume.flags (fxctl ships them)"
grep -q read-only <<<"$flags" || fail "fxctl show t27ro flags '$flags' lack read-only"
fx_run fxblk-nltest --cmd destroy --name t27ro --expect 0
fx_run blockdev --setrw "${M[1]}"

# --- zoned member ------------------------------------------------------------
modprobe null_blk 2>/dev/null
if mkdir $NB/t27z 2>/dev/null && echo 1 >$NB/t27z/zoned 2>/dev/null; then
	echo 512 >$NB/t27z/blocksize
	echo 256 >$NB/t27z/size
	echo 64 >$NB/t27z/zone_size
	echo 1 >$NB/t27z/memory_backed
	echo 1 >$NB/t27z/power || fail "cannot power on zoned null_blk"
	# newer kernels name the disk after the configfs directory
	Z=
	for z in /dev/t27z /dev/nullb"$(cat $NB/t27z/index)"; do
		[ -b "$z" ] && Z=$z && break
	done
	[ -n "$Z" ] || fail "zoned null_blk t27z has no block device"
	expect_eq "$(cat /sys/block/${Z#/dev/}/queue/zoned)" host-managed "zoned model of $Z"
	fx_mark zoned
	# fxctl create names the zoned member before writing any label
	fx_expect_fail --rc 1 --msg "^fxctl: $Z is a zoned block device \(host-managed\): fxblk stripes only conventional block devices; nothing was written" \
		fxctl create t27z "${M[0]}" "$Z"
	fx_expect_fail --rc 3 --msg 'not an fxblk member' fxctl examine "${M[0]}"
	# the kernel's refusal, by a raw CREATE (fxctl refuses first, above)
	fx_run fxblk-nltest --cmd create --name t27z --chunk 128 --member "${M[0]}" --member "$Z" \
		--expect EINVAL --extack 'zoned'
	fxdev t27z >/dev/null && fail "a volume over zoned $Z was created"
else
	echo "SKIP: zoned member: this kernel's null_blk cannot be made zoned"
fi

# --- data offset inside the label area -----------------------------------------
fx_expect_fail --msg 'label' fxctl create t27off --chunk 64K --data-offset 1M "${M[0]}" "${M[1]}"
fxdev t27off >/dev/null && fail "a volume with a 1 MiB data offset was created"
pass
