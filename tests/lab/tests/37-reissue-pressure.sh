#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 size-mb=512 timeout=600
# Forward progress of the re-issue of member bios refused with EAGAIN, under
# memory pressure (review 2026-12-02 F1).
#
# A member that refuses a REQ_NOWAIT piece with EAGAIN gets it again from
# the volume's worker, without NOWAIT (fxblk_reissue()). The refused bio
# holds its clone_bs entry (and, upstream of it, split_bs and acct_bs ones)
# until then. The worker used to allocate a new clone from the same pool
# for it, and also sends the data of PREFLUSH writes (journal commits)
# through fxblk_submit_bio(), which allocates from the same pools: with
# the reserves held by refused bios that only this worker could send, it
# could wait for ever when reclaim needs I/O to the volume. The re-issue
# now sends the refused bio itself again, restored (dm_bio_restore() as in
# dm-raid1), from its own work item on its own WQ_MEM_RECLAIM workqueue.
#
# Members: dm-linear over the two NVMe-oF namespaces; member A is suspended
# for 1 s every 2 s (a suspended dm device refuses NOWAIT bios with EAGAIN
# at once, as in 29-nowait-again.sh). xfs on fxN (its log writes are
# PREFLUSH+FUA writes with data: the deferred path). In a memory cgroup v2
# with memory.max=48M, fio runs at once:
#   - io_uring O_DIRECT random writes to fxN after the file system (xfs on
#     its first 512 MiB), QD 64, 4-128 KiB, fsync (io_uring
#     IORING_OP_FSYNC) every 32 writes, verified;
#   - buffered writes of a 160 MiB file on the xfs (over 3x memory.max: dirty pages on fxN
#     that reclaim must write back through the volume), fsync every 64.
# Checks:
#   (a) fio finishes within its bound with 0 errors, data verified, the
#       cgroup hit memory.max (memory.events "max" > 0), xfs_repair -n is
#       clean, the kernel log is clean (no hung task, no OOM);
#   (b) kprobes: fxblk_stats_cancel (one call per refused bio that is sent
#       again) counts > 0 (refusals happened: the control), and no bio was
#       allocated by the volume's workers themselves: bio_alloc_bioset and
#       bio_alloc_clone called directly from fxblk_deferred_work,
#       fxblk_reissue_work or fxblk_reissue (their return address, the
#       probe's $stack0) count 0. Allocations of fxblk_submit_bio() for the
#       PREFLUSH data, reached from the worker through submit_bio_noacct(),
#       have other callers and are allowed.
# Seen failing with the module before this change (6.12): (b) counted the
# worker's own allocations, one per re-issued bio.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
A=t37a B=t37b CG=/sys/fs/cgroup/t37 MNT=/mnt/t37
cleanup() {
	dmsetup resume $A >/dev/null 2>&1
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo 2>/dev/null > $FL_TRACE/kprobe_events
	umount $MNT >/dev/null 2>&1
	fxblk-nltest --cmd destroy --name t37 --expect 0 >/dev/null 2>&1
	dmsetup remove $A >/dev/null 2>&1
	dmsetup remove $B >/dev/null 2>&1
	rmdir $CG >/dev/null 2>&1
}
trap cleanup EXIT

fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE)"
for p in "$A ${M[0]}" "$B ${M[1]}"; do
	set -- $p
	fx_run dmsetup create "$1" --table "0 $(blockdev --getsz "$2") linear $2 0"
done
declare -A DEV
for d in $A $B; do
	DEV[$d]=$(dmsetup info -c --noheadings -o major,minor --separator : "$d") ||
		fail "dmsetup info $d"
done
fx_run fxblk-nltest --cmd create --name t37 --chunk 128 --member "${DEV[$A]}" \
	--member "${DEV[$B]}" --keep --expect 0
D=$(fxdev t37) || fail "no device for t37"
expect_match "$(fxctl -o json show t37 | jq -r '.volume.flags // [] | join(",")')" \
	'(^|,)nowait(,|$)' "t37's flags in fxctl show (NOWAIT bios taken, else the test proves nothing)"
# xfs on the first 512 MiB; io_uring O_DIRECT goes to the raw device after
# it (iomap's direct I/O on xfs did not pass NOWAIT to the bios here)
fx_run mkfs.xfs -q -f -d size=512m "$D"
mkdir -p $MNT
fx_run mount -t xfs "$D" $MNT

# the memory cgroup
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup || fail "mount cgroup2"
grep -qw memory /sys/fs/cgroup/cgroup.controllers || fail "no memory controller in cgroup v2"
echo +memory > /sys/fs/cgroup/cgroup.subtree_control || fail "enable the memory controller"
mkdir -p $CG && echo 48M > $CG/memory.max || fail "cgroup $CG with memory.max"

# kprobes: refused bios sent again, and the workers' own bio allocations
probes_start() {
	local f
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo > $FL_TRACE/kprobe_events
	echo 8192 > $FL_TRACE/buffer_size_kb
	echo > $FL_TRACE/trace
	echo 'p:fxcancel fxblk:fxblk_stats_cancel' >> $FL_TRACE/kprobe_events ||
		fail "kprobe on fxblk_stats_cancel refused"
	for f in bio_alloc_bioset bio_alloc_clone; do
		echo "p:fx_$f $f caller=\$stack0:symbol" >> $FL_TRACE/kprobe_events ||
			fail "kprobe on $f refused"
	done
	echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
}
probes_hits() { awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print "none"}' $FL_TRACE/kprobe_profile; }

flapper() {	# suspend A for 1 s every 2 s until /tmp/t37.stop exists
	while [ ! -e /tmp/t37.stop ]; do
		sleep 1
		dmsetup suspend --nolockfs $A || return 1
		sleep 1
		dmsetup resume $A || return 1
	done
}

fx_mark t37
probes_start
rm -f /tmp/t37.stop
flapper & FL=$!
# fio in the cgroup: a shell that moves itself there, then runs it
fl_bounded 240 /tmp/t37.out sh -c "echo \$\$ > $CG/cgroup.procs && exec fio --eta=never \
	--output-format=json --output=/tmp/t37.json \
	--name=direct --filename=$D --offset=640m --size=256m --direct=1 --ioengine=io_uring \
	--iodepth=64 --rw=randwrite --bsrange=4k-128k --fsync=32 --verify=crc32c \
	--do_verify=1 --verify_fatal=1 --runtime=25 \
	--name=dirty --filename=$MNT/dirty --size=160m --ioengine=psync --rw=write \
	--bs=256k --fsync=64 --end_fsync=1"
rc=$?
touch /tmp/t37.stop
wait $FL || fail "dmsetup suspend/resume of $A failed"
dmsetup resume $A >/dev/null 2>&1
echo 0 > $FL_TRACE/events/kprobes/enable
[ "$rc" = 124 ] && { cat /tmp/t37.out; fail "fio did not finish within 240 s (hang?)"; }
cancels=$(probes_hits fxcancel)
sed -n '/^{/,$p' /tmp/t37.json > /tmp/t37.j
errs=$(jq '[.jobs[] | .error] | add' /tmp/t37.j)
ios=$(jq '[.jobs[] | .read.total_ios + .write.total_ios] | add' /tmp/t37.j)
maxev=$(awk '$1 == "max" {print $2}' $CG/memory.events)
# the workers' own allocations: the probes' caller is a worker function
own=$(grep -cE 'fx_bio_alloc_(bioset|clone):.*caller=(fxblk_deferred_work|fxblk_reissue_work|fxblk_reissue)\+' $FL_TRACE/trace)
allocs=$(grep -c 'fx_bio_alloc_' $FL_TRACE/trace)
lost=$(awk '/entries-in-buffer/ {print $0}' $FL_TRACE/trace | head -1)
log "fio rc=$rc error=$errs ios=$ios; memory.events max=$maxev; re-issued (fxblk_stats_cancel) $cancels; bio allocations traced $allocs, by the workers themselves $own ($lost)"
grep -E 'fx_bio_alloc_.*caller=fxblk' $FL_TRACE/trace | sed 's/.*caller=//' | sort | uniq -c | sort -rn | head -8
[ "$rc" = 0 ] && [ "$errs" = 0 ] || { cat /tmp/t37.out; head -c 3000 /tmp/t37.json; fail "fio failed (rc=$rc, error=$errs)"; }
[ "$ios" -gt 0 ] || fail "fio did no I/O"
[ -n "$maxev" ] && [ "$maxev" -gt 0 ] || fail "the cgroup never hit memory.max (memory.events max=$maxev): no memory pressure"
[ "$cancels" != none ] && [ "$cancels" -gt 0 ] ||
	fail "no member bio was refused and sent again (fxblk_stats_cancel: $cancels): the test proves nothing"
[ "$allocs" -gt 0 ] || fail "the allocation probes counted nothing (they do not work)"
expect_eq "$own" 0 "bio allocations by the volume's workers themselves while $cancels refused bios were sent again"

fx_run umount $MNT
fx_run xfs_repair -n "$D"
fx_dmesg_clean_since t37 || fail "kernel log not clean"
pass "io_uring QD 64 + fsync + dirty pages in a 48M cgroup with a member refusing NOWAIT: 0 errors, data verified, $cancels bios re-issued without allocating"
