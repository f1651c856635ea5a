#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=400
# A slow association open holds nobody but its opener (issue 34, review
# 2026-12-06-peer H3). fxblk peer_queues=1, a volume over 2 NVMe-oF/RDMA
# members; the lab-only parameter peer_lab_open_ms holds each association
# open 12 s before its first RDMA CM step, as a target that answers
# slowly would (resolve, connect retries, 30 s per unanswered admin
# command). Before the fix the opener held the volume's peer semaphore
# written across every member's connect, so every other peer RW of the
# volume, its peer flush worker and the debugfs dump waited in D state.
#
# 1. RW A (a peer read) starts the open of both members (24 s held).
# 2. 2 s later, RW B (a peer read of other bytes) and a read of the
#    debugfs dump: both must return within 8 s, B with the bytes the
#    block path reads (B took the block path: the associations are not
#    live yet), while A still runs.
# 3. A returns the right bytes, after the hold (>= 20 s: the control
#    that the open was slow), both associations live; a third RW goes
#    over them (the peer queues' read counters move).
# Seen failing with the fix undone (the connects under the semaphore):
# B returned after A, 22 s later.
. /lab/lib.sh
fx_peer_members 2
VOL=t71
HOLD_MS=12000
KiB=1024
cleanup() {
	echo 0 > $PARAM/peer_lab_open_ms 2>/dev/null
	wait
}
trap cleanup EXIT
fx_peerq_load
[ -w $PARAM/peer_lab_open_ms ] || fail "fxblk has no peer_lab_open_ms parameter"
fx_run fxctl create $VOL --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
head -c $((1024 * KiB)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct conv=fsync status=none || fail "write the reference to $DEV"
expect_eq "$(grep -c "^$NAME member=[01] .* state=none" $DBG)" 2 "members without an association before the first peer RW"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# 1. A opens (held)
echo $HOLD_MS > $PARAM/peer_lab_open_ms
t0=$(now)
{ $PT rwfile read "$DEV" 0 0 $((256 * KiB)) /tmp/a host > /tmp/a.out 2>&1; echo $? > /tmp/a.rc; now > /tmp/a.end; } &
sleep 2
[ ! -e /tmp/a.rc ] || { cat /tmp/a.out; fail "RW A returned within 2 s, with each open held $HOLD_MS ms"; }

# 2. B and the dump while A opens
tb=$(now)
timeout 60 $PT rwfile read "$DEV" 0 $((512 * KiB)) $((256 * KiB)) /tmp/b host > /tmp/b.out 2>&1
brc=$?
tb1=$(now)
timeout 60 cat $DBG > /tmp/dump || fail "the debugfs dump failed"
td1=$(now)
log "RW B: exit $brc after $(secs "$tb" "$tb1") s; the dump after $(secs "$tb1" "$td1") s more; A $([ -e /tmp/a.rc ] && echo "done" || echo "still opening")"
[ $brc = 0 ] || { cat /tmp/b.out; fail "RW B failed ($brc)"; }
awk -v a="$tb" -v b="$tb1" 'BEGIN { exit !(b - a < 8) }' ||
	fail "RW B took $(secs "$tb" "$tb1") s: it waited for RW A's open of the peer associations"
awk -v a="$tb1" -v b="$td1" 'BEGIN { exit !(b - a < 8) }' ||
	fail "the debugfs dump took $(secs "$tb1" "$td1") s: it waited for RW A's open"
[ ! -e /tmp/a.rc ] || fail "RW A was done before B returned: the check above saw no open in progress"
dd if=/tmp/ref of=/tmp/want bs=256K skip=2 count=1 status=none
cmp -s /tmp/b /tmp/want || fail "RW B read other bytes than the block path"

# 3. A finishes, the associations are live and carry the next RW
wait
echo 0 > $PARAM/peer_lab_open_ms
ta=$(secs "$t0" "$(cat /tmp/a.end)")
log "RW A: exit $(cat /tmp/a.rc) after $ta s"
[ "$(cat /tmp/a.rc)" = 0 ] || { cat /tmp/a.out; fail "RW A failed"; }
awk -v t="$ta" 'BEGIN { exit !(t >= 20) }' ||
	fail "RW A took $ta s: the two held opens (2 x $HOLD_MS ms) did not happen (lab parameter ignored?)"
head -c $((256 * KiB)) /tmp/ref | cmp -s - /tmp/a || fail "RW A read other bytes than the block path"
expect_eq "$(grep -c "^$NAME member=[01] .* state=live " $DBG)" 2 "live peer queues after A"
r0=$(peer_sum reads)
fx_run $PT rwfile read "$DEV" 0 $((768 * KiB)) $((128 * KiB)) /tmp/c host
dd if=/tmp/ref of=/tmp/want bs=128K skip=6 count=1 status=none
cmp -s /tmp/c /tmp/want || fail "RW C read other bytes than the block path"
r1=$(peer_sum reads)
[ "$r1" -gt "$r0" ] || fail "RW C did not go over the peer queues (reads $r0 -> $r1)"
fx_run fxctl stop $VOL
pass "a held association open (2 x $HOLD_MS ms) stalls only its opener: another RW took the block path in $(secs "$tb" "$tb1") s, the dump answered; then the peer queues carried the next RW"
