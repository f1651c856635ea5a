#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=300
# A voluntary close of fxblk's own associations ends them as nvme-rdma
# ends a controller (issue 34, review 2026-12-06-peer M2): a Flush of
# what they wrote, then CC.SHN normal (shutdown notification) and
# CSTS.SHST complete awaited, as nvme_disable_ctrl(ctrl, true) does.
# nvmet flushes nothing at a shutdown (nvmet_update_cc() only clears the
# controller), so without the Flush a peer write never fsynced could
# stay in a target's volatile cache after the association is gone.
#
# fxblk peer_queues=1, a volume over 4 NVMe-oF/RDMA members, a peer write
# across all of them (host memory, no fsync): every association live.
# Kprobes on the target's nvmet_update_cc (the new CC value) and on its
# Flush of the block backend (nvmet_bdev_execute_flush) count what
# reaches the target while `fxctl remove` closes the volume:
# - exactly 4 CC writes with SHN = 01b (normal), one per association;
#   the kernel's own nvme-rdma controllers of the members stay connected
#   (none of theirs comes in), and still read the peer write's bytes;
# - 4 Flushes before the last of those CC writes (the block path's own
#   Flushes of the members come after);
# - no "shutdown: ... error" in the kernel log.
# Seen failing with the shutdown undone (the code before it): 0 CC.SHN
# writes; and with the Flush left out: 0 Flushes before the CC writes.
. /lab/lib.sh
. /lab/faults.sh
fx_peer_members 4
VOL=t75
cleanup() {
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo 2>/dev/null > $FL_TRACE/kprobe_events
	fxctl remove $VOL >/dev/null 2>&1
}
trap cleanup EXIT
fx_peerq_load
fx_mark start
fx_run fxctl create $VOL --chunk 64K "${M[0]}" "${M[1]}" "${M[2]}" "${M[3]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
# 512 KiB at 64 KiB: two chunks on each member
head -c $((512 << 10)) /dev/urandom > /tmp/new
fx_run $PT rwfile write "$DEV" 0 65536 $((512 << 10)) /tmp/new host
expect_eq "$(grep -c "^$NAME member=[0-3] .* state=live" $DBG)" 4 "associations live after the peer write"
expect_eq "$(fx_peerq_sum "$NAME" write_bytes)" $((512 << 10)) "bytes the peer queues wrote"

fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE)"
echo 1 > $FL_TRACE/tracing_on || fail "tracing on"
echo > $FL_TRACE/trace
echo > $FL_TRACE/kprobe_events
echo 'p:t75cc nvmet:nvmet_update_cc cc=%si:u32' >> $FL_TRACE/kprobe_events ||
	fail "kprobe on nvmet_update_cc refused"
echo 'p:t75flush nvmet:nvmet_bdev_execute_flush' >> $FL_TRACE/kprobe_events ||
	fail "kprobe on nvmet_bdev_execute_flush refused"
echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
fx_run fxctl remove $VOL
echo 0 > $FL_TRACE/events/kprobes/enable
grep -E ' t75(cc|flush):' $FL_TRACE/trace | sed 's/^/trace: /'
# CC.SHN is bits 15:14; 01b is a normal shutdown
shn=$(awk '/ t75cc:/ { for (i = 1; i <= NF; i++) if ($i ~ /^cc=/) {
	v = substr($i, 4) + 0; if (int(v / 16384) % 4 == 1) n++ } } END { print n + 0 }' $FL_TRACE/trace)
ccs=$(grep -c ' t75cc:' $FL_TRACE/trace)
# the block path flushes each member too when the volume goes, after the
# associations are closed: only Flushes before the last CC write count
before=$(awk '/ t75flush:/ { f++ } / t75cc:/ { n = f } END { print n + 0 }' $FL_TRACE/trace)
log "while the volume was removed: $ccs CC writes ($shn with SHN normal), $before Flushes before the last of them, $(grep -c ' t75flush:' $FL_TRACE/trace) in all"
expect_eq "$shn" 4 "CC.SHN normal writes at the target, one per association"
expect_eq "$ccs" 4 "CC writes at the target (the kernel's controllers wrote none)"
expect_eq "$before" 4 "Flushes at the target before the associations' shutdowns"
if fx_dmesg_since start | grep -E "peer queues of .*: shutdown:"; then
	fail "an association's shutdown failed (above)"
fi
# the members' own controllers are untouched and read the peer write
dd if="${M[0]}" of=/dev/null bs=4096 count=1 iflag=direct status=none ||
	fail "the kernel's controller of ${M[0]} no longer reads after the shutdown"
pass "4 associations flushed and shut down (CC.SHN, CSTS.SHST) at the volume's removal; the members' controllers still read"
