#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 poll-queues=1 timeout=600
# io_uring polled I/O (fio --hipri, IORING_SETUP_IOPOLL) through /dev/fxN.
# The members are connected with one poll queue each (nvme connect
# --nr-poll-queues=1, lab option --poll-queues). Part 1: fio io_uring --hipri
# write+verify on fxN must succeed, /sys/block/fxN/queue/io_poll must be 1,
# and the polling must really reach the members: the nvme_setup_cmd
# tracepoint must show the fio commands on each member's poll queue (an
# nvme-rdma poll queue has no interrupt: its completions are reaped only by
# polling), and a kretprobe on nvme_rdma_poll must see it reap completions.
# Part 2: member 1 is reconnected WITHOUT poll queues; hipri I/O on a new
# volume must still complete normally (verify passes), with member 0's part
# still polled and member 1's on its interrupt-driven queues. Hipri bios that
# cross a chunk (split) complete normally too. The lab's kernel-log check
# matters here: on 6.1 a polled bio completed from an interrupt without
# dropping REQ_ALLOC_CACHE warns in bio_put().
# Before fxblk polled, 6.12 failed every hipri I/O with EOPNOTSUPP and 6.1
# completed it unpolled (nothing on a poll queue).
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
NIO=512			# 4 KiB writes, then as many verify reads
fx_load
cleanup() {
	fxctl remove t33 >/dev/null 2>&1
	echo 0 > $FL_TRACE/tracing_on 2>/dev/null
	echo 0 > $FL_TRACE/events/enable 2>/dev/null
	echo > $FL_TRACE/kprobe_events 2>/dev/null
}
trap cleanup EXIT

# mq_disk I: the blk-mq disk under member I's /dev/nvmeInY (the path node
# nvmeIcXn1 with native multipath, else the namespace itself)
mq_disk() {
	local d
	for d in /sys/kernel/debug/block/nvme"$1"c*n1 /sys/kernel/debug/block/nvme"$1"n1; do
		[ -e "$d/hctx0/type" ] && { basename "$d"; return 0; }
	done
	return 1
}
# poll_qid DISK: nvme queue id of DISK's poll hctx (nvme-rdma: hctx index + 1)
poll_qid() {
	local h
	for h in /sys/kernel/debug/block/"$1"/hctx*; do
		[ "$(cat "$h/type")" = poll ] && { echo $((${h##*hctx} + 1)); return 0; }
	done
	return 1
}
# ctrl_of DISK: the controller instance of a path/namespace disk (nvmeXc.. / nvmeX..)
ctrl_of() {
	if [[ $1 =~ ^nvme[0-9]+c([0-9]+)n ]] || [[ $1 =~ ^nvme([0-9]+)n ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		fail "cannot tell the controller of $1"
	fi
}

# trace_start: nvme_setup_cmd, and a kretprobe on nvme_rdma_poll if the
# kernel takes one (KPROBE=1), counting only calls that reaped something
trace_start() {
	local ev=(nvme/nvme_setup_cmd)
	fl_trace_start
	echo 0 > $FL_TRACE/tracing_on
	KPROBE=0
	if echo 'r:fxpoll nvme_rdma_poll ret=$retval' > $FL_TRACE/kprobe_events 2>/dev/null &&
		echo 'ret != 0' > $FL_TRACE/events/kprobes/fxpoll/filter; then
		KPROBE=1 ev+=(kprobes/fxpoll)
	fi
	fl_trace_start "${ev[@]}"
}
trace_stop() {
	fl_trace_stop "$1"
	echo > $FL_TRACE/kprobe_events
	! grep -q 'LOST' "$1" || fail "trace buffer overflowed ($1)"
}
# cmds TRACE CTRL QID: fio's reads and writes on controller CTRL, queue QID
cmds() {
	grep -E "nvme$2: .*qid=$3, .*cmd=\(nvme_cmd_(read|write) " "$1" | wc -l
}
# reaped TRACE: completions nvme_rdma_poll returned in total
reaped() {
	sed -n 's/.* fxpoll:.* ret=\(0x[0-9a-f]*\|[0-9]*\).*/\1/p' "$1" |
		while read -r v; do echo $((v)); done | awk '{s += $1} END {print s + 0}'
}

# hipri_verify LABEL [FIO-ARGS]: fio io_uring --hipri write + verify on $DEV
hipri_verify() {
	local rc label=$1; shift
	fio --name="$label" --filename="$DEV" --direct=1 --ioengine=io_uring --hipri \
		--rw=randwrite --bs=4k --iodepth=8 --size=$((NIO * 4))k --offset=1M \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=0 \
		--eta=never --output=/tmp/fio.out "$@"
	rc=$?
	if [ $rc -ne 0 ] || grep -qiE 'verify: bad|verify failed|err= *[1-9]' /tmp/fio.out; then
		cat /tmp/fio.out
		fail "fio io_uring --hipri verify '$label' on $DEV: rc=$rc"
	fi
	log "fio --hipri verify '$label' on $DEV: ok"
}

# ---- part 1: every member has a poll queue -------------------------------
for i in 0 1; do
	expect_eq "$(cat /sys/block/nvme${i}n1/queue/io_poll)" 1 \
		"io_poll of member ${M[i]} (lab --poll-queues 1)"
done
D0=$(mq_disk 0) && D1=$(mq_disk 1) || fail "no blk-mq debugfs dir for the members' paths"
Q0=$(poll_qid "$D0") && Q1=$(poll_qid "$D1") || fail "no poll hctx on $D0/$D1"
C0=$(ctrl_of "$D0") C1=$(ctrl_of "$D1")
log "members' blk-mq disks $D0 (nvme$C0, poll qid $Q0), $D1 (nvme$C1, poll qid $Q1)"
fx_run fxctl create t33 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t33) || fail "no /dev/fxN with sysfs name t33"

trace_start
hipri_verify polled
trace_stop /tmp/trace1
P0=$(cmds /tmp/trace1 "$C0" "$Q0") P1=$(cmds /tmp/trace1 "$C1" "$Q1")
ALL=$(grep -cE 'cmd=\(nvme_cmd_(read|write) ' /tmp/trace1)
log "nvme commands: $ALL in all, $P0 on nvme$C0 poll queue $Q0, $P1 on nvme$C1 poll queue $Q1"
# 4 KiB inside 64 KiB chunks: every fio I/O is one member command, and random
# offsets over 2 MiB hit both members; all of them on the poll queues
[ $((P0 + P1)) -ge $((2 * NIO)) ] ||
	fail "only $((P0 + P1)) of >= $((2 * NIO)) fio commands went to the members' poll queues: not polled"
[ "$P0" -gt 0 ] && [ "$P1" -gt 0 ] || fail "a member got no polled command ($P0, $P1)"
expect_eq "$(cat /sys/block/${DEV#/dev/}/queue/io_poll)" 1 "$DEV queue/io_poll"
if [ $KPROBE = 1 ]; then
	R=$(reaped /tmp/trace1)
	log "nvme_rdma_poll reaped $R completions"
	[ "$R" -ge $((P0 + P1)) ] || { log "$(grep -c fxpoll /tmp/trace1) fxpoll lines"; grep -m3 fxpoll /tmp/trace1;
		fail "nvme_rdma_poll reaped $R completions for $((P0 + P1)) polled commands"; }
else
	skip "no kretprobe on nvme_rdma_poll (kprobe_events unavailable): poll-queue commands only"
fi
# bios crossing a chunk are split and complete normally (not polled)
hipri_verify crossing --bs=96k --size=12M --offset=8M
fx_run fxctl remove t33

# ---- part 2: member 1 without poll queues --------------------------------
NQN1=$(cat /sys/block/nvme1n1/device/subsysnqn) || fail "subsysnqn of ${M[1]}"
ADDR=$(cat /sys/class/nvme/nvme$C1/address) || fail "address of nvme$C1"
TRADDR=$(sed -n 's/.*traddr=\([^,]*\).*/\1/p' <<<"$ADDR")
fx_run nvme disconnect -n "$NQN1"
fx_run nvme connect -t rdma -a "$TRADDR" -s 4420 -n "$NQN1"
for ((w = 0; w < 600; w++)); do
	[ -b "${M[1]}" ] && [ "$(cat /sys/block/nvme1n1/device/subsysnqn 2>/dev/null)" = "$NQN1" ] &&
		[ "$(cat /sys/block/nvme1n1/size 2>/dev/null)" != 0 ] && break
	sleep 0.05
done
[ "$(cat /sys/block/nvme1n1/device/subsysnqn 2>/dev/null)" = "$NQN1" ] ||
	fail "${M[1]} did not come back as $NQN1 after reconnecting"
expect_eq "$(cat /sys/block/nvme1n1/queue/io_poll)" 0 "io_poll of ${M[1]} reconnected without poll queues"
D1=$(mq_disk 1) || fail "no blk-mq debugfs dir for ${M[1]}"
C1=$(ctrl_of "$D1")
poll_qid "$D1" >/dev/null && fail "$D1 still has a poll hctx"
fx_run fxctl create t33 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t33) || fail "no /dev/fxN with sysfs name t33"
trace_start
hipri_verify "member 1 unpolled"
trace_stop /tmp/trace2
P0=$(cmds /tmp/trace2 "$C0" "$Q0")
N1=$(grep -cE "nvme$C1: .*cmd=\(nvme_cmd_(read|write) " /tmp/trace2)
log "nvme commands: $P0 on nvme$C0 poll queue $Q0, $N1 on nvme$C1 (no poll queue)"
[ "$P0" -gt 0 ] || fail "member 0 (with a poll queue) got no polled command"
[ "$N1" -gt 0 ] || fail "member 1 got no command"
fx_run fxctl remove t33
trap - EXIT
cleanup
pass "polled I/O through $DEV"
