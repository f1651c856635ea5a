#!/bin/bash
# lab: kernels=6.1,6.12 members=4 timeout=1200
# Error paths, each with the right exit status (fxctl(8): 1 failed, 3 not
# found, 4 busy, 6 permission), a message naming the object,
# no volume left behind and a clean kernel log:
#  busy member (in another fx volume; held by dm; racing creates: exactly one
#  wins, so the kernel's exclusive claim works even when fxctl's userspace
#  pre-check is beaten), duplicate member (same path, alias node), mismatched
#  logical block size (4 KiB null_blk vs 512 B members), duplicate volume name,
#  unknown volume, destroy while open (fd, mount), unprivileged caller (uid
#  65534 without caps; root in a child user namespace, which only the kernel's
#  GENL_ADMIN_PERM can refuse), malformed netlink attributes (fxblk-nltest).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
fx_load
export DM_DISABLE_UDEV=1
modprobe dm_mod 2>/dev/null
NB=/sys/kernel/config/nullb
cleanup() {
	exec 3<&- 2>/dev/null
	umount /mnt/t14 2>/dev/null
	for v in $(fxctl -o json list 2>/dev/null | jq -r '.volumes[].name'); do fxctl remove "$v" >/dev/null 2>&1; done
	dmsetup remove --noudevsync t14hold >/dev/null 2>&1
	for d in $NB/t14a $NB/t14b; do [ -d $d ] && { echo 0 >$d/power; rmdir $d; }; done
}
trap cleanup EXIT
nvols() { fxctl -o json list | jq '.volumes | length'; }
no_volume() { # no_volume NAME: the failed create left nothing behind
	fxdev "$1" >/dev/null && fail "failed create left volume $1 behind"
	[ "$(nvols)" = "${2:-0}" ] || fail "expected ${2:-0} volumes after failed create, have $(nvols)"
}
fx_mark start

# --- busy member: already in another volume --------------------------------
fx_run fxctl create t14a --chunk 64K "${M[0]}" "${M[1]}"
A=$(fxdev t14a) || fail "no device for t14a"
fx_expect_fail --rc 4 --msg "${M[1]}.*(in use|busy).*${A#/dev/}|${A#/dev/}.*${M[1]}" \
	fxctl create t14b "${M[1]}" "${M[2]}"
no_volume t14b 1
# --- duplicate volume name (kernel: EEXIST) ---------------------------------
fx_mark eexist
fx_expect_fail --rc 1 --msg 't14a.*(already exists|exists)' fxctl create t14a "${M[2]}" "${M[3]}"
# the kernel says why: in the extack (6.2+: formatted messages) or, where
# extack messages must be static (6.1), in the kernel log
grep -q 'kernel:.*t14a' <<<"$FX_OUT" || fx_dmesg_since eexist | grep -q 't14a.*already exists' ||
	fail "neither the extack nor the kernel log names the duplicate volume t14a"
[ "$(nvols)" = 1 ] || fail "duplicate-name create changed the volume count"
for m in "${M[2]}" "${M[3]}"; do
	[ -z "$(ls /sys/block/${m#/dev/}/holders)" ] || fail "$m still held after refused duplicate-name create"
done
# --- destroy while open (kernel: EBUSY) ------------------------------------
exec 3<"$A"
fx_expect_fail --rc 4 --msg "${A#/dev/}.*open|open.*${A#/dev/}|busy" fxctl remove t14a
exec 3<&-
mkdir -p /mnt/t14
modprobe ext4 2>/dev/null
mkfs.ext4 -q -F -E nodiscard "$A" >/dev/null 2>&1 || fail "mkfs.ext4 $A"
mount -t ext4 "$A" /mnt/t14 || fail "mount $A"
fx_expect_fail --rc 4 --msg "open|mounted|busy" fxctl remove t14a
umount /mnt/t14 || fail "umount"
fx_run fxctl remove t14a
[ "$(nvols)" = 0 ] || fail "t14a not removed after close"
# --- unknown volume (ENOENT) -------------------------------------------------
fx_expect_fail --rc 3 --msg 'nosuch' fxctl remove nosuch
fx_expect_fail --rc 3 --msg 'nosuch' fxctl show nosuch
fx_expect_fail --rc 3 --msg 'fx200' fxctl stats fx200
# --- busy member: held exclusively by device-mapper -----------------------
SZ=$(blockdev --getsz "${M[3]}")
dmsetup create --noudevsync t14hold --table "0 $SZ linear ${M[3]} 0" || fail "dmsetup create over ${M[3]}"
fx_expect_fail --rc 4 --msg "${M[3]}.*(in use|busy)" fxctl create t14b "${M[2]}" "${M[3]}"
no_volume t14b
dmsetup remove --noudevsync t14hold || fail "dmsetup remove"
# --- racing creates over a shared member: exactly one may win --------------
# fxctl checks holders/O_EXCL before asking the kernel; two creates started
# together often both pass that check, so the loser is refused by the
# kernel's exclusive claim (EBUSY). Both winning would corrupt data.
fx_mark race
KREFUSED=0
for r in 1 2 3 4 5 6; do
	fxctl create t14r1 --chunk 64K "${M[0]}" "${M[1]}" >/tmp/r1 2>&1 & p1=$!
	fxctl create t14r2 --chunk 64K "${M[1]}" "${M[2]}" >/tmp/r2 2>&1 & p2=$!
	wait $p1; c1=$?; wait $p2; c2=$?
	[ $((c1 == 0)) -ne $((c2 == 0)) ] || { cat /tmp/r1 /tmp/r2; fail "race $r: create exit codes $c1 and $c2, exactly one must succeed"; }
	[ "$(nvols)" = 1 ] || fail "race $r: $(nvols) volumes exist"
	grep -qiE 'in use|busy' /tmp/r$([ $c1 = 0 ] && echo 2 || echo 1) ||
		{ cat /tmp/r1 /tmp/r2; fail "race $r: loser's message does not say busy/in use"; }
	grep -q 'kernel:' /tmp/r1 /tmp/r2 && KREFUSED=$((KREFUSED + 1))
	fxctl remove t14r1 >/dev/null 2>&1 || fxctl remove t14r2 >/dev/null 2>&1 || fail "race $r: remove winner"
done
# 6.1 logs the reason of a refusal (no formatted extack there)
KLOG=$(fx_dmesg_since race | grep -c 'is busy')
log "racing creates: exactly one winner in 6 rounds; refused by the kernel's claim: $((KREFUSED > KLOG ? KREFUSED : KLOG)), by fxctl's pre-check: the rest"
# --- duplicate member ------------------------------------------------------
fx_expect_fail --rc 1 --msg "${M[0]}.*(same device|duplicat|once)" fxctl create t14d "${M[0]}" "${M[1]}" "${M[0]}"
no_volume t14d
MAJMIN=$(cat /sys/block/${M[0]#/dev/}/dev)
mknod /tmp/alias0 b "${MAJMIN%:*}" "${MAJMIN#*:}" || fail "mknod alias"
fx_expect_fail --rc 1 --msg "(same device|duplicat|once)" fxctl create t14d "${M[0]}" /tmp/alias0
no_volume t14d
rm -f /tmp/alias0
# --- mismatched logical block size -----------------------------------------
NEW=()
for d in t14a t14b; do
	mkdir $NB/$d || fail "null_blk configfs mkdir $d"
	echo 64 >$NB/$d/size; echo 4096 >$NB/$d/blocksize; echo 1 >$NB/$d/memory_backed
	echo 1 >$NB/$d/power || fail "power on 4 KiB null_blk $d"
	# 6.12 names the disk after the configfs directory, 6.1 nullb<index>
	if [ -b /dev/$d ]; then NEW+=("$d"); else NEW+=("nullb$(cat $NB/$d/index)"); fi
	[ -b "/dev/${NEW[-1]}" ] || fail "no block device for null_blk $d (${NEW[-1]})"
done
[ "$(cat /sys/block/${NEW[0]}/queue/logical_block_size)" = 4096 ] || fail "/dev/${NEW[0]} is not 4 KiB"
L=$(cat /sys/block/${M[0]#/dev/}/queue/logical_block_size)
if [ "$L" != 4096 ]; then
	fx_expect_fail --rc 1 --msg "(logical block|block size)" fxctl create t14l "${M[0]}" "/dev/${NEW[0]}"
	no_volume t14l
	fx_expect_fail --rc 1 --msg "(logical block|block size)" fxctl create t14l "/dev/${NEW[0]}" "${M[0]}"
	no_volume t14l
else
	log "members already have 4 KiB blocks: mismatch case skipped (lab run with --lbs 4096)"
fi
# two 4 KiB members make a 4 KiB volume (limits are stacked)
fx_run fxctl create t14k --chunk 64K "/dev/${NEW[0]}" "/dev/${NEW[1]}"
K=$(fxdev t14k) || fail "no device for t14k"
[ "$(cat /sys/block/${K#/dev/}/queue/logical_block_size)" = 4096 ] || fail "$K over 4 KiB members has $(cat /sys/block/${K#/dev/}/queue/logical_block_size)-byte blocks"
[ "$(fxctl -o json show t14k | jq .volume.logical_block_size)" = 4096 ] || fail "show t14k: logical_block_size != 4096"
# (fio, not busybox dd: that one silently retries without O_DIRECT on EINVAL)
fio --eta=never --name=odd --filename="$K" --rw=write --bs=512 --size=4k --direct=1 \
	--output=/tmp/odd.out >/dev/null 2>&1 && fail "512-byte O_DIRECT writes to a 4 KiB volume succeeded"
fx_run fxctl remove t14k
for d in t14a t14b; do echo 0 >$NB/$d/power; rmdir $NB/$d || fail "rmdir null_blk $d (still held?)"; done
# --- unprivileged callers --------------------------------------------------
fx_expect_fail --rc 6 --msg "(permission|EPERM|not permitted)" as_nobody fxctl create t14u "${M[0]}" "${M[1]}"
no_volume t14u
fx_run fxctl create t14p "${M[2]}" "${M[3]}"
fx_expect_fail --rc 6 --msg "(permission|EPERM|not permitted)" as_nobody fxctl remove t14p
fxdev t14p >/dev/null || fail "unprivileged remove removed t14p"
fx_run as_nobody fxctl list          # queries stay open to everyone
fx_run as_nobody fxctl show t14p
# root inside a child user namespace can open the devices, so fxctl's own
# checks pass: only the kernel (GENL_ADMIN_PERM, init_user_ns) can refuse it.
if unshare -r true 2>/dev/null; then
	fx_expect_fail --rc 6 --msg "(permission|EPERM|not permitted)" unshare -r fxctl create t14u "${M[0]}" "${M[1]}"
	no_volume t14u 1
	fx_expect_fail --rc 6 --msg "(permission|EPERM|not permitted)" unshare -r fxctl remove t14p
else
	log "SKIP user-namespace case: unshare -r not permitted in this kernel"
fi
# root without CAP_SYS_ADMIN (CAP_NET_ADMIN kept, so GENL_ADMIN_PERM passes):
# the module's own check refuses, with its message
fx_expect_fail --rc 6 --msg "CAP_SYS_ADMIN" setpriv --bounding-set=-sys_admin -- fxctl create t14u "${M[0]}" "${M[1]}"
no_volume t14u 1
fx_expect_fail --rc 6 --msg "CAP_SYS_ADMIN" setpriv --bounding-set=-sys_admin -- fxctl remove t14p
fxdev t14p >/dev/null || fail "remove without CAP_SYS_ADMIN removed t14p"
fx_run fxctl remove t14p
command -v fxblk-nltest >/dev/null || fail "fxblk-nltest not in the lab image (build/ctl/fxblk-nltest)"
# EPERM for GENL_ADMIN_PERM ops comes from the genetlink core before the
# family's handler runs, and the core sets no extack message: don't ask for one
fx_run fxblk-nltest --expect-eperm --no-extack
# --- malformed attributes ----------------------------------------------------
fx_run fxblk-nltest
# --- usage errors never reach the kernel: exit 2 ------------------------------
fx_expect_fail --rc 2 fxctl create t14x --chunk 3K "${M[0]}" "${M[1]}"
fx_expect_fail --rc 2 fxctl create t14x --chunk 32M "${M[0]}" "${M[1]}"
fx_expect_fail --rc 2 fxctl frobnicate
[ "$(nvols)" = 0 ] || fail "volumes left: $(fxctl list)"
fx_dmesg_clean_since start
trap - EXIT
pass "error paths"
