#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# lab-allow: I/O error|XFS \(fx[0-9]+\)|Buffer I/O error|nvme nvme[0-9]+: |nvmet(_rdma)?: |fxblk: .*(error|fail|gone)|attempt to access beyond end of device|rw=[0-9]+, sector=[0-9]+, nr_sectors = [0-9]+ limit=0|lost (async )?page write|nvme[0-9]+(c[0-9]+)?n[0-9]+: I/O Cmd
# Member lost beyond ctrl_loss_tmo: member 1 is reconnected through its own
# nvmet port (service 4421) with --ctrl-loss-tmo=3 --reconnect-delay=1; an
# xfs on /dev/fxN takes fio I/O (direct, with fsyncs) and a reader of one of
# member 1's chunks runs, then that port is removed for good.
#  - I/O on the volume ends with EIO within BOUND_S (30) s: the raw read of
#    member 1's chunk fails with EIO, fio ends with an error, the host deletes
#    the controller; no task hangs (hung_task_timeout_secs=15 and the lab
#    fails the run on a report, but block I/O waits never cause one, so every
#    wait on the volume is bounded by polling);
#  - with FXBLK_FEAT_HEALTH: fxctl show -o json says member 1 gone/failing
#    and the volume not live, a change uevent names the member, a
#    MEMBER_ERROR/MEMBER_STATE event is seen (if a listener exists);
#  - fxctl remove --force works while mounted (if fxctl has it), then umount
#    returns within BOUND_S and the disk goes away; without --force, umount
#    and a plain remove must work.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
I=1
BOUND_S=30
CH=65536
fx_load
modprobe xfs 2>/dev/null
cleanup() {
	local c
	fl_events_stop
	# stuck on the lost member (the bound was exceeded): deleting its
	# controller fails the waiting I/O
	c=$(fl_ctrl $I) && { echo 1 >"/sys/class/nvme/$c/delete_controller" & sleep 5; }
	kill "${FIO:-}" 2>/dev/null
	fl_bounded 20 /dev/null umount /mnt/t24
	fxctl remove t24 >/dev/null 2>&1
	nvme disconnect -n "$FL_NQN$I" >/dev/null 2>&1
	fl_port_del 2
}
trap cleanup EXIT
fl_hung_task 15
fl_stallable $I 3
M[I]=$FL_DEV
CTRL=$(fl_ctrl $I) || fail "no controller for member $I"
fx_run fxctl create t24 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t24) || fail "no /dev/fxN named t24"
mkfs.xfs -f -q "$DEV" || fail "mkfs.xfs $DEV"
mkdir -p /mnt/t24
mount -t xfs "$DEV" /mnt/t24 || fail "mount $DEV"
fl_events_start
fio --eta=never --name=io --directory=/mnt/t24 --size=48M --nrfiles=4 --rw=randwrite --bsrange=4k-64k \
	--ioengine=libaio --iodepth=8 --direct=1 --fsync=32 --time_based --runtime=120 \
	--output-format=json --output=/tmp/fio.json >/dev/null 2>&1 & FIO=$!
sleep 4
kill -0 $FIO 2>/dev/null || { cat /tmp/fio.json; fail "fio on xfs over $DEV ended before the fault"; }
fxctl -o json stats t24 >/tmp/s0 || fail "fxctl stats t24"
jq -r '.volume.members[] | "   before: member \(.index) \(.disk): errors read \(.read.errors) write \(.write.errors) flush \(.flush.errors) discard \(.discard.errors)"' /tmp/s0
fx_mark lost
t0=$(fl_now)
fl_port_del 2
log "member $I ($CTRL): its nvmet port removed for good"
age() { awk -v a="$t0" -v n="$(fl_now)" 'BEGIN {printf "%.1f", n - a}'; }
# a reader of one of member 1's chunks (volume chunk 5): EIO when it is gone
EIO_S=
while awk -v a="$t0" -v n="$(fl_now)" -v b=$BOUND_S 'BEGIN {exit !(n - a < b)}'; do
	fl_bounded $BOUND_S /tmp/dd.out dd if="$DEV" of=/dev/null bs=$CH skip=$((4 + I)) count=1 iflag=direct
	rc=$?
	out=$(cat /tmp/dd.out)
	[ $rc = 124 ] && fail "a read of member $I's chunk on $DEV still waits after $BOUND_S s"
	if [ $rc != 0 ]; then
		grep -q 'Input/output error' <<<"$out" || fail "read of member $I's chunk failed without EIO: $out"
		EIO_S=$(age)
		break
	fi
	sleep 0.5
done
[ -n "$EIO_S" ] || fail "reads of member $I's chunk still succeed $BOUND_S s after its controller went away"
log "read of member $I's chunk: EIO after $EIO_S s"
fl_wait $BOUND_S eval '! kill -0 $FIO 2>/dev/null' ||
	fail "fio on xfs over $DEV still running $(age) s after member $I went away"
FIO_S=$(age)
wait $FIO; frc=$?
FIO=
FERR=$(jq '.jobs[0].error' /tmp/fio.json 2>/dev/null)
WIOS=$(jq '.jobs[0].write.total_ios' /tmp/fio.json 2>/dev/null)
log "fio ended after $FIO_S s: exit $frc, error ${FERR:-?}$([ "${FERR:-}" = 5 ] && echo " (EIO)"), $WIOS writes before"
[ $frc != 0 ] || fail "fio on xfs over $DEV passed although member $I is gone"
[ "$FERR" = 5 ] || log "note: fio's first error is ${FERR:-unknown} rather than EIO (xfs shut down first); the EIO bound is the raw read above"
fl_wait $BOUND_S eval '! fl_ctrl $I >/dev/null' || fail "controller of member $I still exists after ctrl_loss_tmo (state $(fl_ctrl_state "$CTRL"))"
log "controller $CTRL deleted by the host after $(age) s"

# health: states, uevent, events
fxctl -o json stats t24 >/tmp/s1 || fail "fxctl stats t24 with a member gone"
# errors since the fault (mkfs.xfs's discards may have failed before it)
errs() { jq -s "map([.volume.members$1 | .read.errors, .write.errors, .flush.errors, .discard.errors] | add) | .[1] - .[0]" /tmp/s0 /tmp/s1; }
MERR=$(errs "[$I]")
OERR=$(errs " | del(.[$I]) | .[]")
log "errors counted since the fault: member $I: $MERR, other members: $OERR"
jq -r '.volume.members[] | "   member \(.index) \(.disk): errors read \(.read.errors) write \(.write.errors) flush \(.flush.errors) discard \(.discard.errors)"' /tmp/s1
[ "$MERR" -gt 0 ] || fail "no error counted on member $I"
[ "$OERR" = 0 ] || fail "$OERR errors counted on the members that are still there"
# health (FXBLK_FEAT_HEALTH ships: asserted). The exact state each kernel
# can report: `gone` where the block layer tells holders a disk died
# (->mark_dead, 6.5+); before that (6.1) the multipath head stays alive
# while fxblk holds it, and the member is `failing` (docs/architecture.md).
fxctl -o json version | jq -e '.module.features | index("health")' >/dev/null ||
	fail "module does not report the health feature (fxctl version): member states are shipped"
KV=$(uname -r | awk -F. '{print $1 * 1000 + $2}')
WANT=$([ "$KV" -ge 6005 ] && echo gone || echo failing)
fxctl -o json show t24 >/tmp/show.json || fail "fxctl show t24 with a member gone"
MS=$(jq -r ".volume.members[$I].state | tostring" /tmp/show.json)
VS=$(jq -r '.volume.state | tostring' /tmp/show.json)
log "member states: $(jq -r '.volume.members | map(.state | tostring) | join(" ")' /tmp/show.json); volume: $VS"
expect_eq "$MS" "$WANT" "state of member $I after its controller was deleted on $(uname -r)"
expect_eq "$VS" "$WANT" "volume state with member $I $WANT"
fl_wait 5 grep -q "FXBLK_MEMBER=$I" /tmp/fl-uevents ||
	{ cat /tmp/fl-uevents; fail "no change uevent naming FXBLK_MEMBER=$I on ${DEV#/dev/}"; }
grep -E '^FXBLK_MEMBER' /tmp/fl-uevents | sort | uniq -c | sed 's/^/   uevent: /'
[ -n "$FL_NL_LISTENER" ] || fail "no netlink event listener (fxctl monitor): fxctl ships one"
fl_wait 5 grep -qiE 'member_(error|state)' /tmp/fl-nlevents ||
	{ cat /tmp/fl-nlevents; fail "no MEMBER_ERROR/MEMBER_STATE event seen by $FL_NL_LISTENER"; }
fl_events_stop

# remove --force while mounted, then umount (ships with the health feature)
fx_run timeout $BOUND_S fxctl remove --force t24
FORCED=yes
fxdev t24 >/dev/null && [ "$(fxctl -o json list | jq '[.volumes[] | select(.name == "t24")] | length')" != 0 ] &&
	fail "t24 still listed after remove --force"
dd if=/mnt/t24/io.0.0 of=/dev/null bs=4k count=1 iflag=direct 2>/dev/null &&
	fail "read through the mounted xfs succeeded after remove --force"
t1=$(fl_now)
fl_bounded $BOUND_S /tmp/umount.out umount /mnt/t24 || fail "umount after remove --force: failed or hung for $BOUND_S s: $(cat /tmp/umount.out)"
log "umount after remove --force took $(awk -v a="$t1" -v n="$(fl_now)" 'BEGIN {printf "%.1f", n - a}') s"
fl_wait 10 eval '[ ! -e "/sys/block/${DEV#/dev/}" ]' || fail "$DEV still there after its last close"
grep -q 'blocked for more than' <(fx_dmesg_since lost) && fail "hung task reported after member $I was lost"
fl_result "faults_injected=1 ios_before_loss=$WIOS eio_after_s=$EIO_S fio_end_s=$FIO_S member_errors=$MERR" \
	"other_errors=$OERR volume_state=$VS member_state=$MS forced_remove=$FORCED hung_tasks=0"
trap - EXIT
cleanup
pass "member $I lost: EIO after $EIO_S s, fio ended after $FIO_S s, no hang, removed ($FORCED force)"
