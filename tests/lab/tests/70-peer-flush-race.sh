#!/bin/bash
# lab: kernels=6.12 quick=6.12 members=2 timeout=400
# A peer Flush in flight holds every fsync of the volume (issue 34, review
# 2026-12-06-peer H1). fxblk peer_queues=1, a volume over 2 NVMe-oF/RDMA
# members (6.12 over null_blk: Identify VWC 1, disks "write back", so
# peer writes are unflushed until a Flush on their association completes).
# The lab-only parameter peer_lab_flush_ms holds every peer Flush pass
# 6 s after its Flushes were sent: the window in which, before the fix, a
# second fsync found nothing due (the bit was cleared at send) and
# returned through the members while the Flush covering its writes was
# still out.
#
# 1. A plain peer write across both members; fsync A of /dev/fxN starts
#    the pass; 2 s later (A still running, no peer Flush completed: the
#    debugfs "flushes" counters unchanged) fsync B. B must not return
#    before the Flush: at its return the counters moved on both members.
#    Both succeed; no member unflushed after.
# 2. The same with peer_lab_flush_fail=1 (every peer Flush answered as
#    failed, Internal Error): A fails with EIO, and so must B, which came
#    while the failed Flush was out (before the fix it succeeded).
#    Cleared again, the next fsync succeeds (the error is told to the
#    waiters of the failed pass, once) and no member is unflushed.
# Seen failing with the fix undone (a member's writes counted as covered
# when its Flush was sent, as the old bit was cleared then): step 1, B
# returned with the counters unchanged.
. /lab/lib.sh
fx_peer_members 2
VOL=t70
KiB=1024
cleanup() {
	{
		echo 0 > $PARAM/peer_lab_flush_ms
		echo 0 > $PARAM/peer_lab_flush_fail
	} 2>/dev/null
	wait
}
trap cleanup EXIT
fx_peerq_load
[ -w $PARAM/peer_lab_flush_ms ] && [ -w $PARAM/peer_lab_flush_fail ] ||
	fail "fxblk has no peer_lab_flush_ms/peer_lab_flush_fail parameters"
fx_run fxctl create $VOL --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
peer_field() { fx_peerq_field "$NAME" "$@"; }
head -c $((256 * KiB)) /dev/urandom > /tmp/ref
fx_run $PT rwfile read "$DEV" 0 0 65536 /tmp/z host
expect_eq "$(grep -c "^$NAME member=[01] .* state=live " $DBG)" 2 "live peer queues"
for i in 0 1; do
	expect_eq "$(peer_field $i vwc)" 1 "member $i: Identify VWC"
	expect_eq "$(cat "/sys/block/${M[i]#/dev/}/queue/write_cache")" "write back" "member $i: write cache"
done

# fsync_to OUT: fsync of the volume; OUT.rc its exit status, OUT its output
fsync_to() {
	xfs_io -c fsync "$DEV" > "$1" 2>&1
	echo $? > "$1.rc"
}
# flushes_of I: member I's completed peer Flushes
flushes_of() { peer_field "$1" flushes; }

# race PHASE: a plain peer write across both members (unflushed), fsync A,
# fsync B 2 s into A's held pass; leaves /tmp/PHASE.{a,b}[.rc]
race() {
	local f0 f1 g0 g1
	fx_run $PT rwfile write "$DEV" 0 0 $((256 * KiB)) /tmp/ref host
	expect_eq "$(peer_sum unflushed)" 2 "$1: members unflushed after a plain peer write"
	f0=$(flushes_of 0) g0=$(flushes_of 1)
	echo 6000 > $PARAM/peer_lab_flush_ms
	rm -f /tmp/"$1".a.rc
	fsync_to /tmp/"$1".a &
	sleep 2
	[ ! -e /tmp/"$1".a.rc ] || fail "$1: fsync A returned within 2 s, with a 6 s peer Flush pass"
	expect_eq "$(flushes_of 0) $(flushes_of 1)" "$f0 $g0" "$1: peer Flushes completed when fsync B starts"
	fsync_to /tmp/"$1".b
	f1=$(flushes_of 0) g1=$(flushes_of 1)
	log "$1: fsync B returned $(cat /tmp/"$1".b.rc) ($(tr '\n' ' ' < /tmp/"$1".b)); peer Flushes then: member 0 $f0 -> $f1, member 1 $g0 -> $g1; A $([ -e /tmp/"$1".a.rc ] && echo "done" || echo still running)"
	wait
	echo 0 > $PARAM/peer_lab_flush_ms
	log "$1: fsync A returned $(cat /tmp/"$1".a.rc) ($(tr '\n' ' ' < /tmp/"$1".a))"
	[ -e /tmp/"$1".a.rc ] || fail "$1: fsync A did not finish"
	# the pass's Flushes completed (counted) or failed (counted as errors)
	[ "$f1" != "$f0" ] || [ "$(peer_field 0 errors)" != 0 ] ||
		fail "$1: fsync B returned before the peer Flush of member 0 in flight (flushes $f0 -> $f1, no error): its caller's writes were not yet covered"
	[ "$g1" != "$g0" ] || [ "$(peer_field 1 errors)" != 0 ] ||
		fail "$1: fsync B returned before the peer Flush of member 1 in flight (flushes $g0 -> $g1, no error)"
}
# ok_fsync OUT WHAT / eio_fsync OUT WHAT
ok_fsync() {
	[ "$(cat "$1.rc")" = 0 ] && ! grep -qi error "$1" || { cat "$1"; fail "$2 failed"; }
}
eio_fsync() {
	grep -qi 'Input/output error' "$1" || { cat "$1"; fail "$2 did not fail with EIO"; }
}

# 1. B waits for the Flush in flight
race ok
ok_fsync /tmp/ok.a "ok: fsync A"
ok_fsync /tmp/ok.b "ok: fsync B"
expect_eq "$(peer_sum unflushed)" 0 "ok: members unflushed after both fsyncs"
expect_eq "$(peer_sum errors)" 0 "ok: peer queue errors"

# 2. B shares the failed Flush's error
echo 1 > $PARAM/peer_lab_flush_fail
race fail
echo 0 > $PARAM/peer_lab_flush_fail
eio_fsync /tmp/fail.a "fail: fsync A (its peer Flushes failed)"
eio_fsync /tmp/fail.b "fail: fsync B (it came while the failed peer Flushes were out)"
expect_eq "$(peer_sum errors)" 2 "fail: peer queue errors (one failed Flush per member)"
expect_eq "$(peer_sum unflushed)" 0 "fail: members unflushed after the failed pass (its error told)"
fsync_to /tmp/after
ok_fsync /tmp/after "the fsync after the failed pass"

# the data: what the block path reads is what the peer writes wrote
dd if="$DEV" of=/tmp/back bs=64K count=4 iflag=direct status=none || fail "block read"
cmp -s /tmp/ref /tmp/back || fail "the block path reads other bytes than the peer writes wrote"
fx_run fxctl stop $VOL
pass "a peer Flush in flight holds a second fsync until it completed (and, failed, fails it too); 2 members, 6 s held passes"
