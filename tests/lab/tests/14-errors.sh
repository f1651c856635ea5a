#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1 members=4 timeout=1200
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
# The kernel's own refusals, reached with raw messages (fxblk-nltest --cmd,
# no fxctl pre-checks in the way), each asserted by errno AND extack text:
#  duplicate member (path, MAJ:MIN alias), busy member, no such device,
#  block-size mismatch (a null_blk of the other block size), data offset
#  beyond the end / range overflowing u64 / range past the end / no whole
#  chunk left / unaligned on 4 KiB, data offset inside the reserved label
#  area, name rules, chunk rules, unknown
#  and output-only attributes, DESTROY with NAME and INDEX of two different
#  volumes, DESTROY of an open volume
#  without FORCE, max_volumes (module reloaded with max_volumes=2).
# Args: [--refusals-only] [--break errno|extack]: --break makes every one of
# those assertions wrong on purpose; each must then fail (proves they can),
# and the run fails with "all N refusal assertions failed as they must"
# (make check runs it as a negative control, the line below).
# lab-break: --break errno ~ all [0-9]+ refusal assertions failed as they must
. /lab/lib.sh
ONLY='' BREAK=''
while [ $# -gt 0 ]; do
	case $1 in
	--refusals-only) ONLY=1 ;;
	--break) BREAK=$2; shift ;;
	*) fail "unknown argument $1" ;;
	esac
	shift
done
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

# --- the kernel's own refusals, with raw messages -----------------------------
# nlx LABEL ERRNO REGEX NLTEST-ARGS...: one request; errno and extack asserted
NLX_BROKEN=0 NLX_SKIPPED=0
nlx() {
	local label=$1 want=$2 re=$3 rc
	shift 3
	case $BREAK in
	errno) want=EXDEV ;;
	extack) re='^text no refusal has$' ;;
	esac
	log "+ fxblk-nltest --label '$label' --expect $want --extack '$re' $*"
	FX_OUT=$(fxblk-nltest --label "$label" --expect "$want" --extack "$re" "$@" 2>&1)
	rc=$?
	printf '%s\n' "$FX_OUT"
	if [ "$rc" = 77 ]; then	# nltest printed "SKIP: <label>: <reason>"
		NLX_SKIPPED=$((NLX_SKIPPED + 1))
	elif [ -n "$BREAK" ]; then
		[ "$rc" = 1 ] && grep -qF "FAIL $label: " <<<"$FX_OUT" ||
			fail "broken on purpose (--break $BREAK), yet '$label' did not fail (exit $rc)"
		NLX_BROKEN=$((NLX_BROKEN + 1))
	else
		[ "$rc" = 0 ] || fail "kernel refusal '$label': exit $rc"
	fi
}
nvols_is() { [ "$(nvols)" = "$1" ] || fail "$2: $(nvols) volumes, expected $1"; }
N0=${M[0]#/dev/} N1=${M[1]#/dev/}
L=$(cat "/sys/block/$N0/queue/logical_block_size")
SZ0=$(blockdev --getsz "${M[0]}") || fail "blockdev --getsz ${M[0]}"
fx_mark refusals
# members
nlx "duplicate member" EINVAL '^fxblk: member 2 duplicates member 0$' \
	--cmd create --name t14n --member "${M[0]}" --member "${M[1]}" --member "${M[0]}"
nlx "duplicate member by MAJ:MIN" EINVAL '^fxblk: member 1 duplicates member 0$' \
	--cmd create --name t14n --member "${M[0]}" --member "$(cat "/sys/block/$N0/dev")"
nlx "no such device" ENODEV '^fxblk: member 1 \(4095:1048575\): no such block device$' \
	--cmd create --name t14n --member "${M[0]}" --member 4095:1048575
# data offsets and sizes (512-byte sectors)
nlx "data offset at the member end" EINVAL "^fxblk: member 0 \\($N0\\): data offset beyond member end\$" \
	--cmd create --name t14n --member "${M[0]},off=$SZ0"
nlx "data offset near 2^64" EINVAL "^fxblk: member 1 \\($N1\\): data offset beyond member end\$" \
	--cmd create --name t14n --member "${M[0]}" --member "${M[1]},off=0xfffffffffffffff8"
nlx "data range overflowing u64" EINVAL "^fxblk: member 0 \\($N0\\): data range exceeds member size\$" \
	--cmd create --name t14n --member "${M[0]},off=8192,sectors=max"
nlx "data range past the end" EINVAL "^fxblk: member 0 \\($N0\\): data range exceeds member size\$" \
	--cmd create --name t14n --member "${M[0]},off=8192,sectors=$((SZ0 - 8191))"
nlx "no whole chunk after the offset" EINVAL '^fxblk: capacity invalid: smallest member holds 0 chunks$' \
	--cmd create --name t14n --chunk 1024 --member "${M[0]},off=$((SZ0 - 2048 - 8))"
nvols_is 0 "after refused creates"
# the first 4 MiB of a member are reserved for labels (docs/on-disk-format.md)
nlx "data offset inside the reserved label area" EINVAL "^fxblk: member 0 \\($N0\\): data offset inside the 4 MiB label area\$" \
	--cmd create --name t14n --member "${M[0]},off=0" --member "${M[1]},off=2048"
nvols_is 0 "after the reserved-area case"
# block-size mismatch: a null_blk with the other logical block size
O=$([ "$L" = 4096 ] && echo 512 || echo 4096)
mkdir $NB/t14z || fail "null_blk configfs mkdir t14z"
echo 64 >$NB/t14z/size; echo "$O" >$NB/t14z/blocksize; echo 1 >$NB/t14z/memory_backed
echo 1 >$NB/t14z/power || fail "power on null_blk t14z"
if [ -b /dev/t14z ]; then Z=t14z; else Z=nullb$(cat $NB/t14z/index); fi
[ "$(cat /sys/block/$Z/queue/logical_block_size)" = "$O" ] || fail "/dev/$Z does not have $O-byte blocks"
nlx "block-size mismatch" EINVAL "^fxblk: member 1 \\($Z\\): logical block size $O, member 0: $L\$" \
	--cmd create --name t14n --member "${M[0]}" --member "/dev/$Z"
nlx "block-size mismatch, other order" EINVAL "^fxblk: member 1 \\($N0\\): logical block size $L, member 0: $O\$" \
	--cmd create --name t14n --member "/dev/$Z,off=8192" --member "${M[0]}"
nlx "data offset not aligned to 4 KiB" EINVAL "^fxblk: member 0 \\(($Z|$N0)\\): data offset not aligned to 4096 bytes\$" \
	--cmd create --name t14n --member "/dev/$([ "$O" = 4096 ] && echo "$Z" || echo "$N0"),off=8193"
echo 0 >$NB/t14z/power; rmdir $NB/t14z || fail "rmdir null_blk t14z (still held?)"
# name and chunk rules, attributes the policy does not know or take
for n in "" . .. a/b "a b" "fx%d"; do
	nlx "volume name '$n'" EINVAL '^fxblk: volume name must be 1-31 of \[A-Za-z0-9\._-\]$' \
		--cmd create --name "$n" --member "${M[0]}"
done
nlx "volume name of 32 characters" EINVAL 'policy validation' \
	--cmd create --name "$(printf 'n%.0s' {1..32})" --member "${M[0]}"
# (this one is set with NL_SET_ERR_MSG_ATTR: no "fxblk: " prefix today)
for c in 0 4 1000 65536 4294967295; do
	nlx "chunk of $c sectors" EINVAL '^(fxblk: )?chunk size must be a power of two, 4 KiB to 16 MiB$' \
		--cmd create --name t14n --chunk "$c" --member "${M[0]}"
done
nlx "unknown attribute (FXBLK_ATTR_MAX + 1)" EINVAL 'Unknown attribute type' \
	--cmd create --name t14n --member "${M[0]}" --extra-attr unknown
nlx "output-only attribute CAPACITY in a request" EINVAL 'Unsupported attribute' \
	--cmd get --name t14n --extra-attr 8
nvols_is 0 "after refused creates"
# busy member, open volume, NAME and INDEX of two volumes
fx_run fxctl create t14a --chunk 64K "${M[0]}" "${M[1]}"
fx_run fxctl create t14b --chunk 64K "${M[2]}" "${M[3]}"
A=$(fxdev t14a) || fail "no device for t14a"
B=$(fxdev t14b) || fail "no device for t14b"
nlx "busy member (in t14a)" EBUSY "^fxblk: member 0 \\($(cat "/sys/block/$N1/dev")\\) is busy: opened exclusively elsewhere\$" \
	--cmd create --name t14n --member "${M[1]}"
nlx "volume name taken" EEXIST '^fxblk: volume "t14a" already exists$' \
	--cmd create --name t14a --member 4095:1
nlx "DESTROY: NAME and INDEX of two different volumes" ENOENT "^fxblk: NAME \"t14a\" is ${A#/dev/} but INDEX is ${B#/dev/fx}\$" \
	--cmd destroy --name t14a --index "${B#/dev/fx}"
fxdev t14a >/dev/null && fxdev t14b >/dev/null || fail "DESTROY naming two volumes removed one of them"
exec 3<"$A"
nlx "DESTROY of an open volume without FORCE" EBUSY "^fxblk: ${A#/dev/} \\(t14a\\) is open; close or unmount it first\$" \
	--cmd destroy --name t14a
exec 3<&-
fxdev t14a >/dev/null || fail "refused DESTROY removed t14a"
fx_run fxctl remove t14a
fx_run fxctl remove t14b
# max_volumes: module reloaded with room for two volumes
fx_unload
modprobe fxblk max_volumes=2 || fail "modprobe fxblk max_volumes=2"
expect_eq "$(cat /sys/module/fxblk/parameters/max_volumes)" 2 "max_volumes parameter"
fx_run fxctl create t14v1 --chunk 64K "${M[0]}"
fx_run fxctl create t14v2 --chunk 64K "${M[1]}"
nlx "third volume with max_volumes=2" ENOSPC '^fxblk: all 2 volumes in use \(max_volumes\)$' \
	--cmd create --name t14v3 --member "${M[2]}"
nvols_is 2 "after the refused third volume"
[ -z "$(ls "/sys/block/${M[2]#/dev/}/holders")" ] || fail "${M[2]} held after the refused third volume"
fx_run fxctl remove t14v1
fx_run fxctl remove t14v2
fx_unload
fx_load
fx_dmesg_clean_since refusals
if [ -n "$BREAK" ]; then
	# a negative control (make check: '# lab-break:' above) must fail; this
	# message says it failed for the planted reason
	[ "$NLX_SKIPPED" = 0 ] || fail "--break $BREAK: $NLX_SKIPPED refusal assertions skipped"
	fail "--break $BREAK: all $NLX_BROKEN refusal assertions failed as they must"
fi
[ "$NLX_SKIPPED" = 0 ] || fail "$NLX_SKIPPED kernel refusal assertions skipped (fxblk-nltest exit 77): every one ships"
log "kernel refusals: all asserted"
if [ -n "$ONLY" ]; then
	trap - EXIT
	pass "kernel refusals (--refusals-only)"
fi

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
# fxctl create serialises itself (it locks the members while it checks,
# labels and creates), so two fxctl creates never reach the kernel together.
# The kernel's own exclusive claim is raced with raw CREATEs: each asks for
# EBUSY, so exactly one of the two "fails" (the winner, whose volume is kept)
# and the other gets EBUSY. Both winning would corrupt data.
fxctl create t14r1 --chunk 64K "${M[0]}" "${M[1]}" >/tmp/r1 2>&1 & p1=$!
fxctl create t14r2 --chunk 64K "${M[1]}" "${M[2]}" >/tmp/r2 2>&1 & p2=$!
wait $p1; c1=$?; wait $p2; c2=$?
[ $((c1 == 0)) -ne $((c2 == 0)) ] || { cat /tmp/r1 /tmp/r2; fail "racing fxctl creates: exit codes $c1 and $c2, exactly one must succeed"; }
grep -qiE 'in use|busy' "/tmp/r$([ $c1 = 0 ] && echo 2 || echo 1)" ||
	{ cat /tmp/r1 /tmp/r2; fail "racing fxctl creates: loser's message does not say busy/in use"; }
fxctl remove t14r1 >/dev/null 2>&1 || fxctl remove t14r2 >/dev/null 2>&1 || fail "remove the fxctl race winner"
for r in 1 2 3 4 5 6; do
	fxblk-nltest --cmd create --name t14r1 --member "${M[0]}" --member "${M[1]}" \
		--keep --expect EBUSY >/tmp/r1 2>&1 & p1=$!
	fxblk-nltest --cmd create --name t14r2 --member "${M[1]}" --member "${M[2]}" \
		--keep --expect EBUSY >/tmp/r2 2>&1 & p2=$!
	wait $p1; c1=$?; wait $p2; c2=$?
	[ $((c1 == 0)) -ne $((c2 == 0)) ] || { cat /tmp/r1 /tmp/r2; fail "race $r: raw CREATE results $c1 and $c2, exactly one must get EBUSY"; }
	[ "$(nvols)" = 1 ] || fail "race $r: $(nvols) volumes exist"
	fxctl remove t14r1 >/dev/null 2>&1 || fxctl remove t14r2 >/dev/null 2>&1 || fail "race $r: remove winner"
done
log "racing creates: one winner of 2 fxctl creates, and of 2 raw CREATEs in each of $r rounds (loser: EBUSY)"
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
	skip "block-size mismatch: the members already have 4 KiB blocks (lab run with --lbs 4096)"
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
	skip "user-namespace case: unshare -r not permitted in this kernel"
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
# every create the kernel refused took its volume's lock file (and records)
# in /run/fxblk with it, as every remove did: nothing is left of volumes
# that never were or are gone
left=$(ls /run/fxblk 2>/dev/null)
[ -z "$left" ] || fail "left in /run/fxblk with no volume: $(echo $left)"
fx_dmesg_clean_since start
trap - EXIT
pass "error paths"
