#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 size-mb=512 timeout=700
# lab-break: break=libaio ~ no member bio was refused and sent again
# A member bio refused with EAGAIN after the member split it (issue 33,
# review 2026-12-06 H1) is sent again as a new bio, and completes once.
#
# dm splits a NOWAIT bio at its targets' boundaries: it maps one piece,
# trims the bio to the rest, takes bio_inc_remaining() and submits it again
# (dm_split_and_process_bio(), 6.1 and 6.12). A rest that meets a suspended
# device (DMF_BLOCK_IO_FOR_SUSPEND) or a failed GFP_NOWAIT dm_io allocation
# is ended with EAGAIN (bio_wouldblock_error()); when the mapped pieces are
# done, fxblk's clone comes back with EAGAIN and __bi_remaining used up to
# 0. fxblk re-sends that clone without NOWAIT (fxblk_reissue()). Re-sent as
# it was, dm's next split counts from 0: the clone is ended once a piece
# too early, while its last piece still moves data, and that last piece's
# completion ends it again (BIO_CHAIN is gone by then): a double completion
# of a clone already freed.
#
# Members: per NVMe-oF namespace, a dm-stripe of its two halves with 4 KiB
# stripes (DM_TARGET_NOWAIT), so each clone of fxN, up to one 64 KiB chunk
# (fxblk-nltest's --chunk 128 is in sectors), is split in up to 16 by dm. Member A is suspended and resumed every 0.3 s. fio io_uring
# O_DIRECT random writes of 64-512 KiB at QD 32 with crc32c verify, then
# reads that verify.
# Checks, with kprobes on fxblk_stats_start (a member bio sent, first time
# or again), fxblk_stats_done (one completed) and fxblk_stats_cancel (one
# refused with EAGAIN, to be sent again): after the I/O, every send ended
# exactly once (start = done + cancel), some were refused and sent again
# (cancel > 0: else the test proved nothing), fio 0 errors, data verified,
# kernel log clean (lab). The refusals come from the suspends and from dm
# itself: with 32 pieces per clone at QD 32 its GFP_NOWAIT clone allocations
# (alloc_tio()) fail too (1025 refusals on 6.12 with no suspend at all).
# Negative control break=libaio: fio's libaio sends no REQ_NOWAIT bios, so
# nothing is refused: the cancel count fails the run.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks libaio -- "$@"
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
A=t66a B=t66b
cleanup() {
	touch /tmp/t66.stop
	dmsetup resume $A >/dev/null 2>&1
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo 2>/dev/null > $FL_TRACE/kprobe_events
	fxblk-nltest --cmd destroy --name t66 --expect 0 >/dev/null 2>&1
	dmsetup remove $A >/dev/null 2>&1
	dmsetup remove $B >/dev/null 2>&1
}
trap cleanup EXIT

fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE)"
# dm-stripe over the namespace's two halves, 8-sector (4 KiB) stripes
for p in "$A ${M[0]}" "$B ${M[1]}"; do
	read -r name dev <<<"$p"
	half=$(($(blockdev --getsz "$dev") / 2 / 8 * 8))
	fx_run dmsetup create "$name" --table "0 $((2 * half)) striped 2 8 $dev 0 $dev $half"
done
declare -A DEV
for d in $A $B; do
	DEV[$d]=$(dmsetup info -c --noheadings -o major,minor --separator : "$d") ||
		fail "dmsetup info $d"
done
fx_run fxblk-nltest --cmd create --name t66 --chunk 128 --member "${DEV[$A]}" \
	--member "${DEV[$B]}" --keep --expect 0
D=$(fxdev t66) || fail "no device for t66"
expect_match "$(fxctl -o json show t66 | jq -r '.volume.flags // [] | join(",")')" \
	'(^|,)nowait(,|$)' "t66's flags in fxctl show (NOWAIT bios taken, else the test proves nothing)"

probes_start() {
	local f
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo > $FL_TRACE/kprobe_events
	for f in start cancel "done"; do
		echo "p:fx_$f fxblk:fxblk_stats_$f" >> $FL_TRACE/kprobe_events ||
			fail "kprobe on fxblk_stats_$f refused"
	done
	echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
}
# calls of a probed function: its hits plus its misses (a probe that fires
# while another probe's handler runs on that CPU, a completion interrupting
# a submission's, is counted as missed; the function ran all the same)
hits() { awk -v n="fx_$1" '$1 == n {print $2 + $3; f=1} END {if (!f) print "none"}' $FL_TRACE/kprobe_profile; }

flapper() {	# suspend A for 0.3 s every 0.6 s until /tmp/t66.stop exists
	while [ ! -e /tmp/t66.stop ]; do
		sleep 0.3
		dmsetup suspend --nolockfs $A || return 1
		sleep 0.3
		dmsetup resume $A || return 1
	done
}

udevadm settle >/dev/null 2>&1	# nothing of fxN's own in flight before the probes count
fx_mark t66
probes_start
rm -f /tmp/t66.stop
flapper & FL=$!
ENGINE=io_uring
[ "$BREAK" != libaio ] || ENGINE=libaio
fl_bounded 300 /tmp/t66.out fio --eta=never --output-format=json --output=/tmp/t66.json \
	--name=split --filename="$D" --size=256m --direct=1 --ioengine=$ENGINE \
	--iodepth=32 --rw=randwrite --bsrange=64k-512k --verify=crc32c \
	--do_verify=1 --verify_fatal=1 --verify_backlog=256 --runtime=40
rc=$?
touch /tmp/t66.stop
wait "$FL" || fail "dmsetup suspend/resume of $A failed"
dmsetup resume $A >/dev/null 2>&1
# what is in flight ends (nothing is sent after fio), then the counts
udevadm settle >/dev/null 2>&1
sleep 1
echo 0 > $FL_TRACE/events/kprobes/enable
[ "$rc" = 124 ] && { cat /tmp/t66.out; fail "fio did not finish within 300 s (hang?)"; }
sed -n '/^{/,$p' /tmp/t66.json > /tmp/t66.j
errs=$(jq '[.jobs[] | .error] | add' /tmp/t66.j)
ios=$(jq '[.jobs[] | .read.total_ios + .write.total_ios] | add' /tmp/t66.j)
start=$(hits start) ended=$(hits "done") cancel=$(hits cancel)
log "kprobe_profile (name, hits, missed): $(tr -s ' ' < $FL_TRACE/kprobe_profile | paste -sd';')"
log "fio rc=$rc error=$errs ios=$ios; member bios sent $start, completed $ended, refused and sent again $cancel"
[ "$rc" = 0 ] && [ "$errs" = 0 ] || { cat /tmp/t66.out; head -c 3000 /tmp/t66.json; fail "fio failed (rc=$rc, error=$errs)"; }
[ "$ios" -gt 0 ] || fail "fio did no I/O"
[ "$start" != none ] && [ "$start" -gt 0 ] || fail "the send probe counted nothing ($start): the probes do not work"
expect_eq "$ended" "$((start - cancel))" \
	"member bios completed (sent $start, refused and sent again $cancel: each send ends once)"
[ "$cancel" != none ] && [ "$cancel" -gt 0 ] ||
	fail "no member bio was refused and sent again (fxblk_stats_cancel: $cancel): the test proves nothing"
fx_dmesg_clean_since t66 || fail "kernel log not clean"
pass "io_uring writes+verify over dm-stripe members split in 4 KiB pieces, one suspended every 0.6 s: $cancel refused bios sent again, every send completed once, data verified"
