#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 target-dm timeout=900
# lab-break: --break no-stall ~ B: no I/O timeout logged for nvme[0-9]+
# I/O timeout on one member (issue 18). Member 1's namespace is a dm-linear
# on the target (--target-dm); suspending it (dmsetup suspend --noflush)
# holds every command sent to member 1 inside nvmet while the RDMA
# connection stays up: the array has stopped answering, the link has not.
# Member 1's host queues get a 3 s I/O timeout (queue/io_timeout).
#   A. 8 MiB of random data are written through /dev/fxN (chunk 64 KiB:
#      every member holds 2 MiB of it) and read back.
#   B. The target device is suspended. A 1 MiB write + fsync over all four
#      members is started in the background. While it waits, a read of a
#      chunk on member 0 completes and returns the data of A: a stalled
#      member holds up only the I/O sent to it. The host then logs the
#      timeout of member 1's command and starts error recovery (nvme-rdma
#      has no Abort: it tears the association down and reconnects).
#   C. After STALL_S more seconds the device resumes. The write + fsync
#      completes without error (the host retried the command, fxblk saw no
#      error), the whole 8 MiB read back equal what A and B wrote, member
#      1's controller is live again, fxctl stats counts no error on any
#      member and the volume is live.
# --break no-stall: the device is never suspended, so no timeout is logged:
# the test must fail there (negative control).
# Not here: a stall that outlasts the host's retries (the I/O then fails:
# 51-flush-errors and 24-member-lost cover errors reaching fxblk).
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
dmsetup info fxtgt1 >/dev/null 2>&1 || fail "no target-side dm device fxtgt1 (tests/lab/run --target-dm)"
V=t59 STALL_S=8 TMO_MS=3000
STALL=1
if [ "${1:-}" = --break ] && [ "${2:-}" = no-stall ]; then
	STALL=0
	log "--break no-stall: member 1's target device is never suspended"
fi
fx_load
cleanup() {
	dmsetup resume fxtgt1 2>/dev/null
	[ -z "${BG:-}" ] || wait "$BG" 2>/dev/null
	fxctl remove $V >/dev/null 2>&1
}
trap cleanup EXIT

fx_run fxctl create $V --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
C1=$(fl_ctrl 1) || fail "no controller for member 1"
# member 1's request queues: the path node (native multipath) or the disk
n=0
for b in /sys/block/nvme*; do
	[ "$(basename "$(readlink -f "$b/device")")" = "$C1" ] || continue
	[ -w "$b/queue/io_timeout" ] || continue
	echo $TMO_MS > "$b/queue/io_timeout" || fail "set ${b##*/}/queue/io_timeout"
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no request queue of $C1 with an io_timeout to set"
log "member 1 ($C1): io_timeout ${TMO_MS} ms on $n queue(s)"

# A
MIB=$((1 << 20))
head -c $((8 * MIB)) /dev/urandom >/tmp/ref || fail "A: random data"
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct conv=fsync status=none || fail "A: write 8 MiB to $DEV"
cmp -n $((8 * MIB)) /tmp/ref "$DEV" || fail "A: read-back of 8 MiB differs"

# B
head -c $MIB /dev/urandom >/tmp/new || fail "B: random data"
dd if=/tmp/new of=/tmp/ref bs=1M seek=2 conv=notrunc status=none || fail "B: update /tmp/ref"
dmesg -C
if [ $STALL = 1 ]; then
	dmsetup suspend --noflush fxtgt1 || fail "B: dmsetup suspend fxtgt1"
	log "B: member 1's target device suspended"
fi
t0=$(fl_now)
# 1 MiB at 2 MiB: 16 chunks, four on each member
dd if=/tmp/new of="$DEV" bs=1M seek=2 oflag=direct conv=fsync status=none 2>/tmp/dd.err &
BG=$!
# chunk 0 lives on member 0: read it while member 1 is held
dd if="$DEV" of=/tmp/c0 bs=64k count=1 iflag=direct status=none || fail "B: read of member 0's chunk failed"
cmp -n 65536 /tmp/c0 /tmp/ref || fail "B: member 0's chunk read during the stall differs"
if [ $STALL = 1 ]; then
	kill -0 $BG 2>/dev/null || fail "B: the write over member 1 completed while its target was suspended"
	dmsetup info fxtgt1 | grep -q SUSPENDED || fail "B: fxtgt1 not suspended"
	log "B: member 0's chunk read back during the stall; the write over member 1 still waits"
fi
fl_wait 30 eval 'dmesg | grep -qE "$C1: I/O .*QID [0-9]+ timeout"' ||
	fail "B: no I/O timeout logged for $C1 within 30 s: $(dmesg | grep -i "$C1" | tail -3)"
fl_wait 10 eval 'dmesg | grep -q "$C1: starting error recovery"' ||
	fail "B: no error recovery logged for $C1"
log "B: $(dmesg | grep -E "$C1: I/O .*timeout" | head -1 | sed 's/^\[[^]]*\] //') after $(fl_since "$t0") s"
sleep $STALL_S

# C
dmsetup resume fxtgt1 || fail "C: dmsetup resume fxtgt1"
log "C: member 1's target device resumed ($(fl_since "$t0") s after the suspend)"
fl_wait 180 eval "! kill -0 $BG 2>/dev/null" || fail "C: the write + fsync did not complete within 180 s of the resume"
wait $BG; rc=$?; BG=
[ $rc = 0 ] || fail "C: write + fsync over the stalled member failed (dd exit $rc: $(cat /tmp/dd.err))"
log "C: write + fsync completed $(fl_since "$t0") s after the suspend"
cmp -n $((8 * MIB)) /tmp/ref "$DEV" || fail "C: the 8 MiB read back differ from what was written"
fl_wait 60 eval '[ "$(fl_ctrl_state "$C1")" = live ]' || fail "C: $C1 is $(fl_ctrl_state "$C1"), not live"
fxctl -o json stats $V >/tmp/st || fail "fxctl stats $V"
errs=$(jq '[.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors] | add' /tmp/st)
[[ $errs =~ ^[0-9]+$ ]] || fail "C: no error counters in fxctl stats: $(head -c 300 /tmp/st)"
[ "$errs" = 0 ] || fail "C: fxctl stats counts $errs member errors: $(jq -c '[.volume.members[] | {read: .read.errors, write: .write.errors, flush: .flush.errors}]' /tmp/st)"
st=$(fxctl -o json show $V | jq -r '.volume.state')
[ "$st" = live ] || fail "C: volume is $st, not live"
fl_result "timeout_logged=1 stall_s=$STALL_S io_timeout_ms=$TMO_MS"
pass "I/O timeout on member 1: recovery, retry, no error at fxN, data intact"
