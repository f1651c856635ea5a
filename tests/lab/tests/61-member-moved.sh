#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=64 timeout=600
# lab-break: break=noupdate ~ 'fxctl assemble t61' exited
# A member whose target moved (admin guide, "Rename a volume, re-record a
# member that moved"; issue 19, review M4), over the real fabric:
#  - t61 over 4 members holds 8 MiB of random data across every member;
#  - "migration" of member 2 on the target: its namespace leaves subsystem
#    member2 and the same null_blk is exported again by a new subsystem
#    (another NQN, NSID 7, a new device UUID and NGUID), which the host
#    connects: the device carries the label, the identity is new;
#  - `fxctl assemble t61` refuses, naming member 2 (never a volume over a
#    namespace that is not the one the labels record);
#  - `fxctl update --identity` refuses without --yes when there is no
#    terminal, refuses a device of another volume name, and with --yes shows
#    the old identity (subsystem member2, NSID 1) and the new (the new NQN,
#    NSID 7) and rewrites every label at generation 2;
#  - assemble starts t61 over the moved member; the data reads back;
#  - update again (t61 running) has nothing to do and says so; rename
#    refuses while t61 runs (exit 4); `fxctl rename t61 t61b` rewrites the labels (generation 3), t61 is then no name fxctl
#    knows and t61b assembles with the same data.
#  - review M5: member 0 given an MBR with one partition (busybox fdisk):
#    create refuses the partition (members are whole namespaces) and the
#    whole disk (it carries a partition table), writing nothing.
# Negative control break=noupdate: no update --identity, so assemble must
# refuse and the test fails there.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks noupdate -- "$@"
fx_load
read -r -a M <<< "$FX_MEMBERS"
V=t61
I=2
NEWNQN=nqn.2026-11.io.fxblk.lab:moved-array
NEWNSID=7
gen_of() { fxctl -o json examine "$1" | jq -r .label.generation; }

log "t61 over 4 members, 8 MiB of random data across all of them"
fx_run fxctl create $V --chunk 64K "${M[@]}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
fx_fill_ref "$DEV" 8
fx_run fxctl stop $V

log "member $I moves: same null_blk, new subsystem $NEWNQN, NSID $NEWNSID, new UUID and NGUID"
OLD=$FL_NVMET/subsystems/$FL_NQN$I
BACKING=$(cat "$OLD/namespaces/1/device_path") || fail "no device_path of member $I"
nvme disconnect -n "$FL_NQN$I" >/dev/null || fail "nvme disconnect $FL_NQN$I"
fl_wait 20 eval '! fl_member_dev '"$I"' >/dev/null' || fail "member $I still present after disconnect"
rm "$FL_NVMET/ports/1/subsystems/$FL_NQN$I" || fail "unlink $FL_NQN$I from port 1"
echo 0 >"$OLD/namespaces/1/enable" || fail "disable the old namespace"
S=$FL_NVMET/subsystems/$NEWNQN
mkdir "$S" && echo 1 >"$S/attr_allow_any_host" && mkdir "$S/namespaces/$NEWNSID" &&
	echo "$BACKING" >"$S/namespaces/$NEWNSID/device_path" &&
	echo "0badf00d-0000-4000-8000-000000000061" >"$S/namespaces/$NEWNSID/device_uuid" &&
	echo "0badf00d-0000-4000-8000-100000000061" >"$S/namespaces/$NEWNSID/device_nguid" &&
	echo 1 >"$S/namespaces/$NEWNSID/enable" &&
	ln -s "$S" "$FL_NVMET/ports/1/subsystems/" || fail "export $BACKING as $NEWNQN"
nvme connect -t rdma -a $FL_IP -s 4420 -n "$NEWNQN" >/dev/null || fail "nvme connect $NEWNQN"
moved_dev() {
	local b
	for b in /sys/block/nvme*n*; do
		[[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$NEWNQN" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
fl_wait 30 moved_dev >/dev/null || fail "no namespace of $NEWNQN after connect"
NEW=$(moved_dev)
expect_eq "$(cat /sys/block/${NEW#/dev/}/nsid)" $NEWNSID "NSID of $NEW"
fx_run fxctl examine "$NEW"
expect_match "$FX_OUT" "member $I of 4" "$NEW carries member $I's label"

log "assemble refuses the moved member, naming it"
fx_expect_fail --msg "${NEW#/dev/} \(member $I\) is foreign: the labels record member $I as nsid 1 of $FL_NQN$I .*but ${NEW#/dev/} is nsid $NEWNSID of $NEWNQN" \
	fxctl assemble $V

log "update --identity: no terminal without --yes, another volume name, then --yes"
fx_expect_fail --rc 1 --msg "--yes" fxctl update --identity --volume $V "$NEW" </dev/null
fx_expect_fail --msg "not of volume \"other\"" fxctl update --identity --volume other "$NEW"
if [ "$BREAK" != noupdate ]; then
	fx_run fxctl -o json update --identity --yes --volume $V "$NEW"
	echo "$FX_OUT"
	expect_eq "$(jq -r '"\(.old_identity.subsys_nqn) \(.old_identity.nsid)"' <<<"$FX_OUT")" "$FL_NQN$I 1" "old identity"
	expect_eq "$(jq -r '"\(.new_identity.subsys_nqn) \(.new_identity.nsid) \(.new_identity.uuid)"' <<<"$FX_OUT")" \
		"$NEWNQN $NEWNSID 0badf00d-0000-4000-8000-000000000061" "new identity"
	expect_eq "$(jq -r .updated <<<"$FX_OUT")" true "updated"
	M[I]=$NEW
	for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 2 "generation of $d after update"; done
fi

log "assemble over the moved member: the data reads back"
fx_run fxctl assemble $V
DEV=$(fxdev $V) || fail "no /dev/fxN named $V after assemble"
fx_expect_ref "$DEV" "data of $V after the move"
fx_run fxctl update --identity --yes --volume $V "$NEW"
expect_match "$FX_OUT" "already records its identity \(nsid $NEWNSID of $NEWNQN" "update again: nothing to do"
fx_expect_fail --rc 4 --msg "stop" fxctl rename $V t61b

log "rename t61 -> t61b (stopped): generation 3, t61b assembles with the data"
fx_run fxctl stop $V
fx_run fxctl rename $V t61b
for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 3 "generation of $d after rename"; done
fx_expect_fail --msg "t61" fxctl assemble $V
fx_run fxctl assemble t61b
DEV=$(fxdev t61b) || fail "no /dev/fxN named t61b"
fx_expect_ref "$DEV" "data of t61b"
fx_run fxctl remove t61b

log "M5: a partition is no member; a disk with a partition table is not empty"
P=${M[0]}
printf 'o\nn\np\n1\n\n+16M\nw\n' | fdisk "$P" >/dev/null 2>&1
blockdev --rereadpt "$P" 2>/dev/null
fl_wait 10 test -b "${P}p1" || fail "fdisk made no ${P}p1"
fx_expect_fail --msg "${P}p1 is a partition of ${P#/dev/}: fxblk members are whole namespaces.*nothing was written" \
	fxctl create t61p --chunk 64K "${P}p1" "${M[1]}"
fx_expect_fail --msg "$P is not empty: it carries .*partition" fxctl create t61p --chunk 64K "$P" "${M[1]}"
fx_expect_fail --rc 3 --msg "not an fxblk member" fxctl examine "${M[1]}"
pass "a moved member is refused until update --identity (old and new shown, generation 2); rename keeps the data (generation 3); partitions refused"
