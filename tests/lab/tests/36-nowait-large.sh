#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1,6.12 members=2 timeout=600
# Large io_uring (REQ_NOWAIT) bios whose pieces are longer than the members
# take whole. The block core refuses a NOWAIT bio that it would have to
# split (bio_split_rw_at()); a member whose max_sectors is below fxN's piece
# size therefore answered every such piece with EAGAIN, after fxN had sent
# it, and fxblk sent each one again from the volume's worker, one after the
# other: in make bench, 512 KiB io_uring reads over members taking 128 KiB
# ran at 0.6x md raid0 (which refuses such bios at its own split, so that
# io_uring retries them from its io-wq workers). fxblk now refuses them in
# the submitter as well, before anything is sent.
#
# Members: the two NVMe-oF namespaces with max_sectors_kb set to 128 before
# the volume is created (fxN stacks it); chunk 512 KiB.
#   - io_uring write+verify, 512 KiB blocks, chunk-aligned: 0 errors
#   - io_uring random reads of 512 KiB at 4 KiB-aligned offsets (most cross
#     a chunk), 8 jobs: 0 errors
#   - neither phase ran the volume's re-issue worker (a kprobe on
#     fxblk_reissue_work counts 0 hits; fxblk_deferred_work before the
#     re-issue got its own work item), while a kprobe on fxblk_submit_bio
#     counts the bios (the control: the probes count)
#   - 128 KiB io_uring reads (pieces the members take whole) still pass
#     through: the worker is not run and fio completes
#   - the kernel log shows no I/O error
# Seen failing with the module before this change: the worker probe counted
# 238 (6.1) and 189 (6.12) hits for 256 writes of 512 KiB. With the probe on
# fxblk_reissue_work and fxblk_nowait_too_big() disabled on purpose
# (2026-12-02, 6.12): 184 hits for the 256 writes.
# Not run on 5.10: io_uring's bios reach fxN without NOWAIT there (with the
# old module and the new one alike, fxblk_submit_bio counts one call per
# write and the worker 0), so the test could not fail on it.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
cleanup() {
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo 2>/dev/null > $FL_TRACE/kprobe_events
	fxblk-nltest --cmd destroy --name t36 --expect 0 >/dev/null 2>&1
}
trap cleanup EXIT

fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE)"
for m in "${M[@]}"; do
	q=/sys/block/$(basename "$m")/queue
	echo 128 > $q/max_sectors_kb || fail "cannot set max_sectors_kb of $m"
	expect_eq "$(cat $q/max_sectors_kb)" 128 "max_sectors_kb of $m"
done
args=()
for m in "${M[@]}"; do args+=(--member "$(cat /sys/block/$(basename "$m")/dev)"); done
fx_run fxblk-nltest --cmd create --name t36 --chunk 1024 "${args[@]}" --keep --expect 0
D=$(fxdev t36) || fail "no device for t36"
Q=/sys/block/${D#/dev/}/queue
expect_eq "$(cat $Q/max_sectors_kb)" 128 "$D stacks the members' max_sectors_kb"
if [ -r $Q/nowait ]; then
	expect_eq "$(cat $Q/nowait)" 1 "$D takes NOWAIT bios (else the test proves nothing)"
else	# no queue/nowait in sysfs here: the volume's own flag says it
	expect_match "$(fxctl -o json show t36 | jq -r '.volume.flags // [] | join(",")')" \
		'(^|,)nowait(,|$)' "t36's flags in fxctl show (NOWAIT bios taken, else the test proves nothing)"
fi

# probes_start / probes_hits NAME: kprobe hit counts (kprobe_profile)
probes_start() {
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo > $FL_TRACE/kprobe_events
	echo 'p:fxwork fxblk:fxblk_reissue_work' >> $FL_TRACE/kprobe_events ||
		fail "kprobe on fxblk_reissue_work refused"
	echo 'p:fxsubmit fxblk:fxblk_submit_bio' >> $FL_TRACE/kprobe_events ||
		fail "kprobe on fxblk_submit_bio refused"
	echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
}
probes_hits() { awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print "none"}' $FL_TRACE/kprobe_profile; }

# run NAME ARGS...: fio io_uring on $D; checks errors, I/Os, and the probes
run() {
	local name=$1 rc errs ios work sub
	shift
	probes_start
	fio --eta=never --name="$name" --filename="$D" --direct=1 --ioengine=io_uring \
		--output-format=json --output=/tmp/$name.json "$@"
	rc=$?
	work=$(probes_hits fxwork) sub=$(probes_hits fxsubmit)
	echo 0 > $FL_TRACE/events/kprobes/enable
	# fio may print notes before the JSON
	sed -n '/^{/,$p' /tmp/$name.json > /tmp/$name.j
	errs=$(jq '[.jobs[] | .error] | add' /tmp/$name.j)
	ios=$(jq '[.jobs[] | .read.total_ios + .write.total_ios] | add' /tmp/$name.j)
	log "$name: fio rc=$rc error=$errs ios=$ios; kprobe hits: fxblk_submit_bio $sub, fxblk_reissue_work $work"
	[ "$rc" = 0 ] && [ "$errs" = 0 ] || { head -c 2000 /tmp/$name.json; fail "$name: fio failed (rc=$rc, error=$errs)"; }
	[ "$ios" -gt 0 ] || fail "$name: fio did no I/O"
	[ "$sub" != none ] && [ "$sub" -ge "$ios" ] ||
		fail "$name: the kprobe on fxblk_submit_bio counted $sub of $ios I/Os (the probes do not count)"
	expect_eq "$work" 0 "$name: runs of the volume's worker (a piece refused with EAGAIN after it was sent)"
}

fx_mark t36
run t36w --rw=randwrite --bs=512k --iodepth=4 --numjobs=4 --size=16M \
	--offset_increment=16M --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting=0
run t36r --rw=randread --bs=512k --blockalign=4k --iodepth=1 --numjobs=8 --size=64M \
	--time_based --runtime=4
run t36s --rw=randread --bs=128k --iodepth=8 --numjobs=2 --size=64M --time_based --runtime=2
fx_dmesg_clean_since t36 || fail "kernel log not clean"
pass "512 KiB io_uring I/O over members taking 128 KiB: refused in the submitter and retried by io_uring, never re-sent from the worker; 0 errors, data verified"
