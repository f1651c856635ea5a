#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1,6.12 members=2 timeout=900
# io_uring (REQ_NOWAIT) I/O through fxN while a member refuses NOWAIT bios.
#
# io_uring sends a block device's bios with REQ_NOWAIT first and retries
# -EAGAIN itself, but only when the bio completes in the submitting task:
# an -EAGAIN that completes later, from a completion context, reaches the
# application as an I/O error (io_rw_should_reissue()). A member answers a
# NOWAIT bio with EAGAIN whenever it cannot take it at once: a dm device
# while suspended, a queue frozen during an NVMe controller reset, a
# multipath requeue. Seen in make check-debug: fio's 4 MiB io_uring reads
# over a member whose path reconnected failed with "Resource temporarily
# unavailable". fxblk must send such a piece again itself, without NOWAIT.
#
# Members: dm-linear over the two NVMe-oF namespaces, so one can be
# suspended (a suspended dm device fails NOWAIT bios with EAGAIN at once and
# queues the others until resume). fio io_uring, 128 KiB blocks over 64 KiB
# chunks: every bio has a piece on each member. While it writes+verifies and
# then reads, member A is suspended and resumed several times.
#   - fio: 0 errors, every block verifies
#   - fxctl stats: no member error (EAGAIN is not a member failure)
#   - the log shows no I/O error
#   - an EAGAIN did happen and its piece was sent again: a kprobe counts the
#     runs of the volume's re-issue work (fxblk_reissue_work), which re-sends
#     in place a piece a member refused with EAGAIN. 0 runs: the test proved nothing (NOWAIT not
#     passed down, or the member did not refuse), a failure, not a SKIP.
. /lab/lib.sh
. /lab/faults.sh
# --break noflap: member A is never suspended (no EAGAIN): the worker count
# must then fail the test (proves the EAGAIN check can fail)
# lab-break: --break noflap ~ no piece was refused with EAGAIN and sent again
BREAK=
[ "${1:-}" = --break ] && BREAK=$2
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
A=t29a B=t29b
cleanup() {
	dmsetup resume $A >/dev/null 2>&1
	fxblk-nltest --cmd destroy --name t29 --expect 0 >/dev/null 2>&1
	dmsetup remove $A >/dev/null 2>&1
	dmsetup remove $B >/dev/null 2>&1
}
trap cleanup EXIT
for p in "$A ${M[0]}" "$B ${M[1]}"; do
	set -- $p
	fx_run dmsetup create "$1" --table "0 $(blockdev --getsz "$2") linear $2 0"
done
# by MAJ:MIN: without udevd the /dev/mapper nodes may not be there
declare -A DEV
for d in $A $B; do
	DEV[$d]=$(dmsetup info -c --noheadings -o major,minor --separator : "$d") ||
		fail "dmsetup info $d"
	# (6.1 and 6.12 have no queue/nowait; there the worker count below
	# shows the member refused NOWAIT bios, which it can only if it took them)
	nw=/sys/dev/block/${DEV[$d]}/queue/nowait
	[ ! -r "$nw" ] || expect_eq "$(cat "$nw")" 1 "member $d (${DEV[$d]}) takes NOWAIT bios (else the test proves nothing)"
done
fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE): Debian kernels have CONFIG_KPROBE_EVENTS"
echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
echo > $FL_TRACE/kprobe_events
echo 'p:fxwork29 fxblk:fxblk_reissue_work' >> $FL_TRACE/kprobe_events || fail "kprobe on fxblk_reissue_work refused"
echo 'p:fxsubmit29 fxblk:fxblk_submit_bio' >> $FL_TRACE/kprobe_events || fail "kprobe on fxblk_submit_bio refused"
hits() { awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print 0}' $FL_TRACE/kprobe_profile; }
fx_run fxblk-nltest --cmd create --name t29 --chunk 128 --member "${DEV[$A]}" \
	--member "${DEV[$B]}" --keep --expect 0
D=$(fxdev t29) || fail "no device for t29"
if [ -r /sys/block/${D#/dev/}/queue/nowait ]; then
	expect_eq "$(cat /sys/block/${D#/dev/}/queue/nowait)" 1 "$D takes NOWAIT bios"
else	# no queue/nowait in sysfs here: the volume's own flag says it
	expect_match "$(fxctl -o json show t29 | jq -r '.volume.flags // [] | join(",")')" \
		'(^|,)nowait(,|$)' "t29's flags in fxctl show ($D takes NOWAIT bios)"
fi

# suspend A for 1 s every 2 s while fio runs ($1 rounds)
flapper() {
	local i
	[ "${1:-}" != 0 ] && [ "$BREAK" != noflap ] || return 0
	for ((i = 0; i < $1; i++)); do
		sleep 1
		dmsetup suspend --nolockfs $A || return 1
		sleep 1
		dmsetup resume $A || return 1
	done
}
run_fio() {	# run_fio NAME ARGS...: fio json to /tmp/NAME.json while A flaps
	local name=$1 rounds=$2 rc
	shift 2
	flapper "$rounds" & local FL=$!
	fio --eta=never --name="$name" --filename="$D" --direct=1 --ioengine=io_uring \
		--iodepth=16 --bs=128k --output-format=json --output=/tmp/$name.json "$@"
	rc=$?
	wait $FL || fail "dmsetup suspend/resume of $A failed"
	dmsetup resume $A >/dev/null 2>&1
	errs=$(jq '[.jobs[] | .error] | add' /tmp/$name.json)
	ios=$(jq '[.jobs[] | .read.total_ios + .write.total_ios] | add' /tmp/$name.json)
	log "$name: fio rc=$rc error=$errs ios=$ios"
	[ "$rc" = 0 ] && [ "$errs" = 0 ] ||
		{ jq -c '.jobs[] | {error, read: .read.total_ios, write: .write.total_ios}' /tmp/$name.json
		  fail "$name: fio failed (rc=$rc, error=$errs) while member $A was suspended and resumed"; }
	[ "$ios" -gt 0 ] || fail "$name: fio did no I/O"
}

fx_mark t29
echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
# write + verify 96 MiB (rate-limited so the suspensions fall inside it)
run_fio t29w 6 --rw=randwrite --size=96M --verify=crc32c --do_verify=1 \
	--verify_fatal=1 --rate=16m
# random reads, time based
run_fio t29r 4 --rw=randread --size=96M --time_based --runtime=8

echo 0 > $FL_TRACE/events/kprobes/enable
RESENT=$(hits fxwork29) SUB=$(hits fxsubmit29)
log "kprobes: fxblk_submit_bio $SUB, fxblk_reissue_work $RESENT (pieces refused with EAGAIN, sent again)"
[ "$SUB" -gt 0 ] || fail "the kprobe on fxblk_submit_bio counted nothing: the probes do not count"
[ "$RESENT" -gt 0 ] || fail "no piece was refused with EAGAIN and sent again while $A was suspended: the test proved nothing (NOWAIT not passed to the members?)"
echo > $FL_TRACE/kprobe_events
fx_json fxctl -o json stats t29
errs=$(jqr '[.volume.members[] | .read.errors + .write.errors] | add')
expect_eq "$errs" 0 "member errors counted in fxctl stats t29"
fx_dmesg_clean_since t29 || fail "kernel log not clean"
pass "io_uring through fxN with a member refusing NOWAIT bios: $RESENT worker runs re-sent refused pieces, 0 errors, data verified"
