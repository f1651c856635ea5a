#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# lab-break: break=off ~ member [0-9]+ of t67[ab]: no failed open in debugfs
# An association open that fails before its I/O queue exists (issue 34,
# review 2026-12-06-peer C1) leaves the peer RW on the block path, the
# volume usable and removable, and the kernel log clean. The failed open
# stops and frees both queues; before the fix they were zero-filled there
# (their lock, wait queue and completion were set up only when a queue was
# opened) and wake_up_all() on the I/O queue's wait queue oopsed with the
# volume's peer semaphore held, so every later peer RW, Flush and the
# volume's removal hung.
# fxblk peer_queues=1. Two failure stages:
#  - no controller found (t67a: members are dm-linear devices over two
#    NVMe-oF namespaces, not nvme-rdma controllers): the sysfs lookup
#    fails, neither queue was opened;
#  - the admin queue's Fabrics Connect refused (t67b: over the other two
#    namespaces; the first one's nvmet subsystem stops allowing any host,
#    so a new controller is refused while the kernel's stays): the admin
#    queue was opened, the I/O queue never;
# for each: a peer read (host memory, not chunk-aligned, across both
# members) and a peer write return the block path's bytes, debugfs shows
# each failed member's association "failed" with its reason, the kernel
# log says "not opened". Then t67b's subsystem allows hosts again: after
# the back-off a peer read opens both associations (live) and matches.
# Both volumes are removed; the lab checks the kernel log.
# Negative control break=off: fxblk without peer_queues=1: no open is
# tried, so no association shows "failed".
. /lab/lib.sh
. /lab/faults.sh
fx_breaks off -- "$@"
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
PT=/lab/modules/peer-test
[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
DBG=/sys/kernel/debug/fxblk/peerq
SUBSYS=
cleanup() {
	[ -z "$SUBSYS" ] || echo 1 >"$SUBSYS/attr_allow_any_host" 2>/dev/null
	fxctl remove t67b >/dev/null 2>&1
	fxblk-nltest --cmd destroy --name t67a --expect 0 >/dev/null 2>&1
	dmsetup remove t67l0 >/dev/null 2>&1
	dmsetup remove t67l1 >/dev/null 2>&1
}
trap cleanup EXIT
fx_mark start
fx_peerq_load "$BREAK"

# expect_failed NAME VOL REASON: each member of NAME failed to open, REASON
expect_failed() {
	local name=$1 vol=$2 why=$3 i line
	for i in 0 1; do
		line=$(grep "^$name member=$i " $DBG)
		log "debugfs: $line"
		grep -q ' state=failed ' <<<"$line" ||
			fail "member $i of $vol: no failed open in debugfs ($line)"
		expect_match "$line" "why=.*$why" "member $i of $vol: the reason"
	done
}

# ---- no controller: dm-linear members ----
for i in 0 1; do
	fx_run dmsetup create t67l$i --table "0 $(blockdev --getsz "${M[$i]}") linear ${M[$i]} 0"
done
L0=$(dmsetup info -c --noheadings -o major,minor --separator : t67l0) || fail "dmsetup info t67l0"
L1=$(dmsetup info -c --noheadings -o major,minor --separator : t67l1) || fail "dmsetup info t67l1"
fx_run fxblk-nltest --cmd create --name t67a --chunk 128 --member "$L0" --member "$L1" \
	--keep --expect 0
DA=$(fxdev t67a) || fail "no device for t67a"
fx_peer_check_rw "$DA"
expect_failed "${DA#/dev/}" t67a "no live rdma controller"

# ---- admin Connect refused ----
SUBSYS=$FL_NVMET/subsystems/$(cat "/sys/block/${M[2]#/dev/}/device/subsysnqn") ||
	fail "no subsystem NQN for ${M[2]}"
[ -d "$SUBSYS" ] || fail "no nvmet subsystem $SUBSYS"
fx_run fxctl create t67b --chunk 64K "${M[2]}" "${M[3]}"
DB=$(fxdev t67b) || fail "no device for t67b"
echo 0 >"$SUBSYS/attr_allow_any_host" || fail "allow_any_host=0 on $SUBSYS"
fx_peer_check_rw "$DB"
NB=${DB#/dev/}
line=$(grep "^$NB member=0 " $DBG)
log "debugfs: $line"
grep -q ' state=failed ' <<<"$line" || fail "member 0 of t67b: no failed open in debugfs ($line)"
expect_match "$line" "why=.*(admin|Connect|connect)" "member 0 of t67b: the reason"
msgs=$(fx_dmesg_since start | grep -c "peer queues of member .* not opened")
[ "$msgs" -ge 3 ] || fail "kernel log: $msgs 'not opened' messages, expected 3 or more"

# ---- the target allows hosts again: the associations open after the back-off ----
echo 1 >"$SUBSYS/attr_allow_any_host" || fail "allow_any_host=1 on $SUBSYS"
SUBSYS=
live=0
for _ in $(seq 1 20); do
	sleep 1
	fx_run $PT rwfile read "$DB" 0 0 131072 /tmp/got host
	live=$(grep -c "^$NB member=[01] .* state=live " $DBG)
	[ "$live" = 2 ] && break
done
expect_eq "$live" 2 "t67b's associations live after the subsystem allowed hosts again"
dd if="$DB" of=/tmp/want bs=64K count=2 iflag=direct status=none || fail "dd read of $DB"
cmp -s /tmp/got /tmp/want || fail "peer read of $DB over live associations differs from the block path"

fx_run fxctl remove t67b
fx_run fxblk-nltest --cmd destroy --name t67a --expect 0
pass "failed opens (no controller, admin Connect refused) fall back to the block path; volumes removed"
