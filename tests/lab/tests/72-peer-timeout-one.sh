#!/bin/bash
# lab: kernels=6.12 quick=6.12 members=4 target-dm timeout=500
# One slow member stops only its own association, and the next fsync
# succeeds (issue 34, review 2026-12-06-peer H5). fxblk peer_queues=1, a
# volume over 4 NVMe-oF/RDMA members, each target's namespace a dm-linear
# device (--target-dm) that can be suspended, holding the commands nvmet
# got; 64 KiB chunks.
#  1. A plain peer write across all 4 members (unflushed on each).
#  2. Member 1's target suspended; a second peer write across all 4: its
#     piece on member 1 is held. After the peer queues' 30 s command
#     timeout fxblk stops the associations holding the RW's commands:
#     member 1's alone ("I/O timed out"); the others stay live. The
#     target resumes at 36 s; the RW, done again on the block path,
#     succeeds; both writes read back through the block path.
#  3. fsync of /dev/fxN succeeds: member 1's old association closed with
#     writes no peer Flush covered, and the member's own Flush through
#     its kernel controller covers them (the default; peer_strict_flush=1
#     fails it with EIO instead: lab 56). No member is unflushed after.
# Seen failing with the change undone: every member's association went
# down at the timeout, and the fsync failed with EIO.
. /lab/lib.sh
fx_peer_members 4
VOL=t72 SLOW=1
KiB=1024
cleanup() {
	dmsetup resume fxtgt$SLOW 2>/dev/null
	wait
}
trap cleanup EXIT
fx_peerq_load
[ -w $PARAM/peer_strict_flush ] || fail "fxblk has no peer_strict_flush parameter"
expect_eq "$(cat $PARAM/peer_strict_flush)" N "peer_strict_flush by default"
dmsetup info fxtgt$SLOW > /dev/null || fail "no target dm device fxtgt$SLOW (--target-dm)"
fx_run fxctl create $VOL --chunk 64K "${M[@]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
peer_field() { fx_peerq_field "$NAME" "$@"; }
live_count() { grep -c "^$NAME member=[0-3] .* state=live " $DBG; }
now() { date +%s; }

# 1. unflushed writes on every member
head -c $((512 * KiB)) /dev/urandom > /tmp/ref
head -c $((256 * KiB)) /tmp/ref > /tmp/ref.a
tail -c $((256 * KiB)) /tmp/ref > /tmp/ref.b
fx_run $PT rwfile write "$DEV" 0 0 $((256 * KiB)) /tmp/ref.a host
expect_eq "$(live_count)" 4 "live associations after the first peer write"
expect_eq "$(peer_sum unflushed)" 4 "members unflushed after a plain peer write across all"

# 2. member 1's target held across the peer queues' command timeout
fx_mark slow
dmsetup suspend --noflush fxtgt$SLOW || fail "suspend fxtgt$SLOW"
t0=$(now)
{ sleep 36; dmsetup resume fxtgt$SLOW; } &
RES=$!
$PT rwfile write "$DEV" 0 $((256 * KiB)) $((256 * KiB)) /tmp/ref.b host > /tmp/rw.out 2>&1
rc=$? t1=$(now)
wait $RES || fail "resume fxtgt$SLOW"
log "the held RW: exit $rc after $((t1 - t0)) s; states: $(for i in 0 1 2 3; do printf '%s ' "$(peer_field $i state)"; done)"
[ $rc = 0 ] || { cat /tmp/rw.out; fail "the peer write with member $SLOW held failed ($rc)"; }
[ $((t1 - t0)) -ge 30 ] || fail "the held RW returned after $((t1 - t0)) s: the 30 s command timeout never came (target not held?)"
fx_dmesg_since slow > /tmp/dm.slow
grep -E "peer queues of .* down: " /tmp/dm.slow | sed 's/^/   /'
grep -qE "peer queues of ${M[SLOW]#/dev/} .*down: I/O timed out" /tmp/dm.slow ||
	fail "member $SLOW's association was not stopped for the timeout"
expect_eq "$(grep -cE "peer queues of .* down: " /tmp/dm.slow)" 1 "associations stopped by the timeout (member $SLOW's only)"
for i in 0 1 2 3; do
	[ $i = $SLOW ] && continue
	expect_eq "$(peer_field $i state)" live "member $i's association after member $SLOW's timeout"
done
[ "$(peer_field $SLOW state)" != live ] || fail "member $SLOW's association is live after its timeout"
dd if="$DEV" of=/tmp/back bs=64K count=8 iflag=direct status=none || fail "block read"
cmp -s /tmp/ref /tmp/back || fail "the block path reads other bytes than the two peer writes wrote"

# 3. the fsync: member 1's lost writes covered by its own flush
xfs_io -c fsync "$DEV" > /tmp/fsync.out 2>&1 && ! grep -qi error /tmp/fsync.out ||
	{ cat /tmp/fsync.out; fail "fsync of $DEV failed after member $SLOW's association closed (default: the member's own flush covers it)"; }
fx_dmesg_since slow | grep -E "own flush covers" | sed 's/^/   /'
fx_dmesg_since slow | grep -qE "member $SLOW: .*own flush covers" ||
	fail "no message that member $SLOW's own flush covered its lost writes"
expect_eq "$(peer_sum unflushed)" 0 "members unflushed after the fsync"
fx_run fxctl stop $VOL
pass "a 36 s stall of member $SLOW stopped its association alone after the 30 s timeout, the RW succeeded, the next fsync too"
