#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# lab-allow: I/O error|XFS \(fx[0-9]+\)|Buffer I/O error|nvme nvme[0-9]+: |nvmet(_rdma)?: |fxblk: .*(error|fail|gone)|attempt to access beyond end of device|rw=[0-9]+, sector=[0-9]+, nr_sectors = [0-9]+ limit=0|lost (async )?page write|nvme[0-9]+(c[0-9]+)?n[0-9]+: I/O Cmd
# lab-break: --break stale ~ 'fxctl assemble t57' exited
# A member lost beyond ctrl_loss_tmo that comes back: what an administrator
# does after the target returns (as with md raid0 after a disk came back:
# stop the array, assemble it again), and what must hold.
#
# Member 1 is reconnected through its own nvmet port (service 4421) with
# --ctrl-loss-tmo=3 --reconnect-delay=1. xfs on /dev/fxN holds a 16 MiB
# reference file written and fsynced before the fault; fio writes other
# files (direct, with fsyncs) when the port is removed for good. Then:
#  - the host deletes member 1's controller; fio ends with an error; umount
#    returns within BOUND_S (30) s; `fxctl stop` takes the failed volume
#    down (the labels stay: stop never writes them);
#  - `fxctl assemble` while member 1 is still away is refused with exit 3,
#    naming the missing member: never a partial volume;
#  - the port comes back and member 1 is connected again, as a new
#    controller and usually a new /dev/nvmeXnY name; `fxctl assemble` then
#    starts the volume over the same 4 members, member 1 live;
#  - xfs mounts (log recovery of what the fault cut off), the reference file
#    reads back with the checksum it had, and after umount `xfs_repair -n`
#    finds nothing to repair;
#  - new writes through the volume reach member 1 (its write count grows)
#    and verify.
# Negative control --break stale: member 1 comes back with its label
# overwritten (as by another host's mkfs while it was away); assemble must
# refuse it (exit 3 or 2, naming the member), so the test fails.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
BREAK=
[ "${1:-}" != --break ] || BREAK=${2:?--break needs a mode: stale}
I=1
BOUND_S=30
fx_load
modprobe xfs 2>/dev/null
cleanup() {
	kill "${FIO:-}" 2>/dev/null
	fl_bounded 20 /dev/null umount /mnt/t57
	fl_stallable_end $I
}
trap cleanup EXIT
fl_hung_task 15
fl_stallable $I 3
M[I]=$FL_DEV
fx_run fxctl create t57 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t57) || fail "no /dev/fxN named t57"
mkfs.xfs -f -q "$DEV" || fail "mkfs.xfs $DEV"
mkdir -p /mnt/t57
mount -t xfs "$DEV" /mnt/t57 || fail "mount $DEV"
dd if=/dev/urandom of=/mnt/t57/ref bs=1M count=16 conv=fsync status=none || fail "write the reference file"
SUM=$(md5sum < /mnt/t57/ref | cut -d' ' -f1)
log "reference file: 16 MiB, md5 $SUM, fsynced"
fio --eta=never --name=io --directory=/mnt/t57 --size=32M --nrfiles=4 --rw=randwrite --bsrange=4k-64k \
	--ioengine=libaio --iodepth=8 --direct=1 --fsync=32 --time_based --runtime=120 \
	--output-format=json --output=/tmp/fio.json >/dev/null 2>&1 & FIO=$!
sleep 3
kill -0 $FIO 2>/dev/null || { cat /tmp/fio.json; fail "fio on xfs over $DEV ended before the fault"; }
fx_mark lost
t0=$(fl_now)
fl_port_del 2
log "member $I: its nvmet port removed"
age() { awk -v a="$t0" -v n="$(fl_now)" 'BEGIN {printf "%.1f", n - a}'; }
fl_wait $BOUND_S eval '! fl_ctrl $I >/dev/null' || fail "controller of member $I still there $(age) s after its port went away"
log "controller of member $I deleted by the host after $(age) s"
fl_wait $BOUND_S eval '! kill -0 $FIO 2>/dev/null' || fail "fio on xfs over $DEV still running $(age) s after member $I went away"
wait $FIO && fail "fio on xfs over $DEV passed although member $I is gone"
FIO=
fl_bounded $BOUND_S /tmp/umount.out umount /mnt/t57 || fail "umount of xfs on the failed volume: failed or hung: $(cat /tmp/umount.out)"
fx_run fxctl stop t57
fxdev t57 >/dev/null && fail "t57 still has a disk after fxctl stop"

# Not while member 1 is away: exit 3 (a member is missing), naming it
fx_expect_fail --rc 3 --msg "member $I|index $I" fxctl assemble t57
log "assemble with member $I away: refused: $(head -1 <<<"$FX_OUT")"

# The target comes back; the host connects member 1 again
fl_port_add 2 4421 $I
nvme connect -t rdma -a $FL_IP -s 4421 -n "$FL_NQN$I" --ctrl-loss-tmo=3 --reconnect-delay=1 >/dev/null ||
	fail "nvme connect $FL_NQN$I again"
fl_wait 30 fl_member_dev $I >/dev/null || fail "namespace of member $I did not come back"
NEW=$(fl_member_dev $I)
log "member $I back as $NEW (was ${M[I]}) after $(age) s"
if [ "$BREAK" = stale ]; then
	# the negative control: the member came back carrying something else
	mkfs.ext4 -q -F "$NEW" >/dev/null 2>&1 || fail "control: mkfs.ext4 $NEW"
	log "control: member $I overwritten with ext4 while it was away"
fi
fx_run fxctl assemble t57
DEV=$(fxdev t57) || fail "no /dev/fxN named t57 after assemble"
fxctl -o json show t57 >/tmp/show.json || fail "fxctl show t57"
expect_eq "$(jq -r '.volume.members | length' /tmp/show.json)" 4 "members of the assembled volume"
expect_eq "$(jq -r ".volume.members[$I].disk" /tmp/show.json)" "${NEW#/dev/}" "member $I of the assembled volume"
expect_eq "$(jq -r ".volume.members[$I].state" /tmp/show.json)" live "state of member $I after assembly"
expect_eq "$(jq -r '.volume.state' /tmp/show.json)" live "state of the assembled volume"
fl_bounded $BOUND_S /tmp/mount.out mount -t xfs "$DEV" /mnt/t57 || fail "mount $DEV after assembly: $(cat /tmp/mount.out)"
GOT=$(md5sum < /mnt/t57/ref | cut -d' ' -f1)
expect_eq "$GOT" "$SUM" "md5 of the reference file written and fsynced before member $I was lost"
W0=$(fxctl -o json stats t57 | jq ".volume.members[$I].write.ios")
fio --eta=never --name=after --directory=/mnt/t57 --size=8M --nrfiles=2 --rw=randwrite --bs=64k --ioengine=libaio \
	--iodepth=8 --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json --output=/tmp/fio2.json \
	>/dev/null 2>&1 || { head -c 2000 /tmp/fio2.json; fail "fio write+verify on the assembled volume"; }
W1=$(fxctl -o json stats t57 | jq ".volume.members[$I].write.ios")
[ "$W1" -gt "$W0" ] || fail "no write reached member $I after assembly (writes $W0 -> $W1)"
umount /mnt/t57 || fail "umount after assembly"
xfs_repair -n "$DEV" >/tmp/repair.out 2>&1 || { tail -20 /tmp/repair.out; fail "xfs_repair -n $DEV found damage"; }
fx_run fxctl stop t57
grep -q 'blocked for more than' <(fx_dmesg_since lost) && fail "hung task reported"
fl_result "member_back_as=${NEW#/dev/} ref_md5_ok=1 writes_to_member=$((W1 - W0)) xfs_repair=clean"
pass "member $I lost beyond ctrl_loss_tmo and back as ${NEW#/dev/}: stop, assemble refused while away (exit 3), assembled when back, fsynced data intact, xfs_repair -n clean, new writes reach it"
