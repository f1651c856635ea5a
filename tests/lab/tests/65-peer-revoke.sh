#!/bin/bash
# lab: kernels=6.12 members=4 target-dm timeout=600
# A vendor's free callback with peer-queue I/O in flight on the memory
# (review 2026-12-06-peer C2, issue 34). The Ascend HAL's contract
# (ascend_kernel_hal.h, hal_kernel_p2p_get_pages() note 4): once the free
# callback returned, the memory is no longer used - the driver hands the
# HBM to someone else. fake_ascend (tests/peer/fake_ascend.c) poisons the
# pages of a pin the moment its callback returns and counts, in late_dma,
# the poisoned pages written since: a NIC DMA after the callback.
# Each member's namespace is a dm-linear on the target (--target-dm):
# dmsetup suspend --noflush holds the commands nvmet got, the RDMA
# connections stay up.
#   A. wait: one 4 MiB peer READ into fake Ascend memory (64 KiB chunks:
#      pieces on all 4 members) is held by the suspended targets; the fake's
#      free callback runs, and 300 ms into it the targets resume. The
#      callback returns only after those commands completed (fxblk waits
#      for them, bounded): no poisoned page is written afterwards; the RW
#      moved its data or failed ENXIO.
#   B. fence: the same, but the targets resume only after the callback
#      returned: fxblk stopped the queue pairs holding the commands (its
#      wait is bounded), the RW fails ENXIO, and the data the targets send
#      after resuming reaches no page: none written after the callback.
#   C. afterwards the associations reopen: a peer read into a fresh
#      registration of fake Ascend memory equals the block path's read;
#      no pin is left, the kernel log is clean (no oops, no WARN).
# Today's module (before the fence) fails A and B: its callback returned
# at once and the held data landed in the poisoned pages.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
LM=/lab/modules
PT=$LM/peer-test
for f in $PT $LM/fake_ascend.ko $LM/fxblk_ascend.ko; do
	[ -e "$f" ] || fail "$f missing (tests/lab/modules/build.sh builds it)"
done
for i in 0 1 2 3; do
	dmsetup info fxtgt$i >/dev/null 2>&1 || fail "no target-side dm device fxtgt$i (tests/lab/run --target-dm)"
done
V=t65
HOLD="for i in 0 1 2 3; do dmsetup suspend --noflush fxtgt\$i || exit 1; done"
RELEASE="for i in 0 1 2 3; do dmsetup resume fxtgt\$i || exit 1; done"
cleanup() {
	for i in 0 1 2 3; do dmsetup resume fxtgt$i 2>/dev/null; done
	fxctl remove $V >/dev/null 2>&1
	rmmod fxblk_ascend 2>/dev/null
	rmmod fake_ascend 2>/dev/null
}
trap cleanup EXIT

grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"
fx_mark start
# peer_virt_dma: the lab's rxe moves the fake's "HBM" (44-peer-queue.sh)
modprobe fxblk peer_queues=1 peer_virt_dma=1 || fail "modprobe fxblk peer_queues=1 peer_virt_dma=1"
insmod $LM/fake_ascend.ko || fail "insmod fake_ascend"
insmod $LM/fxblk_ascend.ko || fail "insmod fxblk_ascend"
fx_run fxctl create $V --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
head -c $((8 << 20)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct status=none || fail "dd the reference data"
# the associations open with the first peer RW
fx_run $PT rwfile read "$DEV" 0 0 1048576 /tmp/warm ascend
cmp /tmp/warm <(head -c 1048576 /tmp/ref) || fail "warm-up peer read differs from the reference"
expect_eq "$(grep -c "^${DEV#/dev/} member=[0-3] .* state=live" /sys/kernel/debug/fxblk/peerq)" 4 \
	"live associations after the warm-up read"

# A, B
fx_run $PT revoke-held "$DEV" wait "$HOLD" "$RELEASE"
log "ok: A: the callback waited for the held commands; no poisoned page written after it"
fx_run $PT revoke-held "$DEV" fence "$HOLD" "$RELEASE"
expect_match "$FX_OUT" "the held RW: No such device or address" "B: the RW whose queues the fence stopped"
expect_match "$(fx_dmesg_since start)" "peer queues of .* down: peer memory revoked with I/O in flight" \
	"B: the fence stopped the associations holding the commands"
log "ok: B: the callback stopped the queues holding the commands; no poisoned page written after it"

# C: the back-off after the stop is 1 s; a fresh registration reopens them
sleep 3
fx_run $PT rwfile read "$DEV" 0 1048576 2097152 /tmp/after ascend
dd if="$DEV" of=/tmp/after.blk bs=1M skip=1 count=2 iflag=direct status=none || fail "dd read"
cmp /tmp/after /tmp/after.blk || fail "C: peer read into fresh Ascend memory differs from the block path"
expect_eq "$(grep -c "^${DEV#/dev/} member=[0-3] .* state=live" /sys/kernel/debug/fxblk/peerq)" 4 \
	"C: live associations after the read"
expect_eq "$(cat /sys/module/fake_ascend/parameters/pins)" 0 "C: Ascend pins at the end"
expect_eq "$(cat /sys/module/fake_ascend/parameters/late_dma)" 0 "C: poisoned pages written at the end"
log "ok: C: a peer read into fresh Ascend memory after the fence equals the block path"
fx_dmesg_clean_since start
pass
