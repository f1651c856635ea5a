#!/bin/bash
# lab: kernels=6.12 quick=6.12 members=2 size-mb=256 timeout=600
# A member disappears while CREATE is building the volume over it (review
# 2026-12-02 F2).
#
# fxblk opens the members with holder ops (6.5+): from that moment the
# member's disk may call ->mark_dead, which marks the member GONE and kicks
# its health work, and that work sends a change uevent on fxN. But fxN
# does not exist until CREATE reaches add_disk(): the work used to
# dereference vol->disk == NULL (an oops in a kworker), and a member that
# failed its checks was closed without cancelling its work (a use after
# free once the volume was freed). Health work now does nothing until the
# volume is ready, catching up then, and a member closed on error has its
# work cancelled.
#
# The window (member open, no disk yet) is microseconds wide. The lab test
# module fxlab_delay widens it: it makes fxblk_bdev_sectors(), which CREATE
# calls for each opened member while checking it, sleep 400 ms first (an
# ftrace IPMODIFY redirection, as livepatch does; a busy-waiting kprobe kept
# RCU, and so the member's removal, waiting until CREATE had finished).
# Each round: CREATE over members 0 and 1 in the background; after a delay
# (stepped over the rounds so that it lands in the window of member 1),
# `nvme disconnect` of member 1: nvme deletes its disk, which calls
# ->mark_dead on fxblk. Then the volume is removed if it was created, and
# member 1 connected again. Checks, every round:
#   - CREATE either succeeded or failed with a message naming the member
#   - the kernel log is clean (no Oops, no BUG, no KASAN on the debug
#     kernel)
#   - the control: in at least one round ->mark_dead reached fxblk before
#     CREATE added fxN, or CREATE failed after it (kprobe events on
#     fxblk_mark_dead and on device_add_disk called by fxblk-nltest, their
#     timestamps compared)
# Seen failing with the module before this change (6.12, round 2 of 12): an Oops in
# fxblk_health_work (NULL pointer dereference in kobject_uevent_env).
# lab-allow: Buffer I/O error on dev fx[0-9]+
# lab-allow: I/O error, dev fx[0-9]+
# lab-allow: fxblk: t38: member [0-9]+ \(nvme[0-9]+n1\) failed [0-9]+ I/O
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
KO=/lab/modules/fxlab_delay.ko
[ -f $KO ] || fail "no $KO (tests/lab/modules not built for $(uname -r)?)"
cleanup() {
	echo 0 2>/dev/null > $FL_TRACE/events/kprobes/enable
	echo 2>/dev/null > $FL_TRACE/kprobe_events
	rmmod fxlab_delay 2>/dev/null
	fxblk-nltest --cmd destroy --name t38 --force --expect 0 >/dev/null 2>&1
}
trap cleanup EXIT
majmin() { cat "/sys/block/$(basename "$1")/dev"; }
M0=$(majmin "${M[0]}")
# 400 ms per checked member; on the debug kernel nvme's ->mark_dead came
# 0.5-4 s after `nvme disconnect` returned (six rounds of twelve missed the
# window at 400 ms, 2026-12-03), so the window is 4 s there
DELAY_MS=400
[ "$FL_SLOW" = 1 ] || DELAY_MS=4000	# faults.sh: the debug kernel
insmod $KO delay_ms=$DELAY_MS || fail "insmod fxlab_delay"
hits() { cat /sys/module/fxlab_delay/parameters/hits; }
fl_tracefs
[ -w $FL_TRACE/kprobe_events ] || fail "no kprobe_events in tracefs ($FL_TRACE)"
echo 1 > $FL_TRACE/tracing_on || fail "tracing on"
echo > $FL_TRACE/kprobe_events
echo 'p:t38dead fxblk:fxblk_mark_dead' >> $FL_TRACE/kprobe_events || fail "kprobe on fxblk_mark_dead refused"
echo 'p:t38add device_add_disk' >> $FL_TRACE/kprobe_events || fail "kprobe on device_add_disk refused"
echo 1 > $FL_TRACE/events/kprobes/enable || fail "enable kprobes"
# ts EVENT [TASK]: timestamp of the first EVENT (of TASK), empty if none
ts() {
	awk -v e="$1:" -v t="${2:-}" '$0 ~ e && (t == "" || index($1, t) == 1) {
		for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { sub(":", "", $i); print $i; exit } }' $FL_TRACE/trace
}

fx_mark t38
created=0 refused=0 raced=0
# the delays step over member 1's window: it opens after member 0's check
# (DELAY_MS) and is checked for DELAY_MS; scaled with DELAY_MS
for d0 in 0.3 0.45 0.6 0.75 0.9 1.05 0.4 0.55 0.7 0.85 1.0 1.2; do
	d=$(awk -v d="$d0" -v k="$DELAY_MS" 'BEGIN {printf "%.2f", d * k / 400}')
	M1=$(majmin "$(fl_member_dev 1)") || fail "member 1 has no device"
	echo > $FL_TRACE/trace
	fxblk-nltest --cmd create --name t38 --member "$M0" --member "$M1" --keep \
		--expect 0 > /tmp/t38.create 2>&1 &
	C=$!
	sleep "$d"
	nvme disconnect -n "$FL_NQN"1 >/dev/null || fail "nvme disconnect member 1"
	wait $C
	rc=$?
	out=$(cat /tmp/t38.create)
	# ->mark_dead before fxN was added (or CREATE failed after it)
	tdead=$(ts t38dead) tadd=$(ts t38add fxblk-nltest)
	if [ -n "$tdead" ] && { [ -z "$tadd" ] || awk -v a="$tdead" -v b="$tadd" 'BEGIN {exit !(a < b)}'; }; then
		raced=$((raced + 1))
	fi
	log "delay $d: mark_dead at ${tdead:-never}, fxN added at ${tadd:-never}"
	if [ "$rc" = 0 ]; then
		created=$((created + 1))
		log "delay $d: created"
		fxblk-nltest --cmd destroy --name t38 --force --expect 0 >/dev/null ||
			fail "delay $d: cannot remove t38"
	else
		refused=$((refused + 1))
		log "delay $d: refused: $out"
		expect_match "$out" 'member [0-9]' "delay $d: CREATE's refusal names the member"
	fi
	fx_member_connect 1
	fx_dmesg_clean_since t38 || fail "delay $d: kernel log not clean"
done
log "rounds: created $created, refused $refused; member 1 vanished during its check in $raced; delayed calls $(hits)"
[ "$raced" -gt 0 ] || fail "member 1 never vanished while CREATE held it: the test proves nothing"
rmmod fxlab_delay || fail "rmmod fxlab_delay"
fx_dmesg_clean_since t38 || fail "kernel log not clean"
pass "member 1 disconnected during CREATE in $raced of 12 rounds: $created created, $refused refused with a message, clean kernel log"
