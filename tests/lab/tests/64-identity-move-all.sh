#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=64 timeout=600
# lab-break: break=onebyone ~ 'fxctl update --identity --yes .*' exited
# Every member of a volume moved at once (issue 37, review H1), over the
# real fabric: nvmet regenerates every namespace's UUID and NGUID (a target
# restart without device_uuid in its saved configuration), so each member
# carries its label on a namespace of another identity:
#  - t64 over 4 members holds 8 MiB of random data across every member;
#  - the host disconnects the 4 members, the target gives each namespace a
#    new device_uuid and device_nguid, the host connects them again;
#  - `fxctl assemble t64` refuses, every member foreign;
#  - `fxctl update --identity` with one device refuses (the other three are
#    foreign), naming the fix: every moved member in one run;
#  - `fxctl update --identity --yes DEV...` with all four re-records all of
#    them in one rewrite: the JSON lists the four old and new identities,
#    every label is at generation 2;
#  - assemble starts t64; the data reads back;
#  - a second move of all four, then `update --identity --yes --volume t64`
#    with no device refuses, nothing written: the target's backing
#    null_blk of each member is a disk of this host too and carries the
#    same label, and which of the two is the member cannot be told from
#    the labels (as a host that sees a target's backing devices, or a
#    clone, would be refused); `--volume t64` with the four devices
#    re-records them at generation 3 and the data reads back. (--volume
#    alone taking every member when there is no copy is a unit test.)
# Before the fix update took one DEVICE only, and with one device it was
# refused whatever the order: the set could not be re-recorded at all.
# Negative control break=onebyone: the four devices updated one at a time,
# as before the fix: the first update is refused and the test fails there.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks onebyone -- "$@"
fx_load
V=t64
gen_of() { fxctl -o json examine "$1" | jq -r .label.generation; }
# assemble_reads WHEN: assemble t64 and read its data back
assemble_reads() {
	fx_run fxctl assemble $V
	DEV=$(fxdev $V) || fail "no /dev/fxN named $V $1"
	fx_expect_ref "$DEV" "data of $V $1"
}
# move_all ROUND: every member's namespace gets a new UUID and NGUID on the
# target (disconnected, disabled, new ids, enabled, connected); sets M
move_all() {
	local i ns w
	for i in 0 1 2 3; do
		nvme disconnect -n "$FL_NQN$i" >/dev/null || fail "nvme disconnect $FL_NQN$i"
	done
	for i in 0 1 2 3; do
		fl_wait 20 eval '! fl_member_dev '"$i"' >/dev/null' || fail "member $i still present after disconnect"
		ns=$FL_NVMET/subsystems/$FL_NQN$i/namespaces/1
		w=$1$i
		echo 0 >"$ns/enable" &&
			echo "0badf00d-0000-4000-8000-0000000064$w" >"$ns/device_uuid" &&
			echo "0badf00d-0000-4000-8000-1000000064$w" >"$ns/device_nguid" &&
			echo 1 >"$ns/enable" || fail "new device_uuid/device_nguid for member $i"
	done
	for i in 0 1 2 3; do
		nvme connect -t rdma -a $FL_IP -s 4420 -n "$FL_NQN$i" >/dev/null || fail "nvme connect $FL_NQN$i"
	done
	for i in 0 1 2 3; do
		fl_wait 30 fl_member_dev "$i" >/dev/null || fail "member $i did not come back"
		M[i]=$(fl_member_dev "$i")
		expect_eq "$(cat /sys/block/${M[i]#/dev/}/uuid)" "0badf00d-0000-4000-8000-0000000064$1$i" \
			"new UUID of member $i (${M[i]})"
	done
}
read -r -a M <<< "$FX_MEMBERS"

log "t64 over 4 members, 8 MiB of random data across all of them"
fx_run fxctl create $V --chunk 64K "${M[@]}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
fx_fill_ref "$DEV" 8
fx_run fxctl stop $V

log "the target regenerates every namespace's UUID and NGUID"
move_all 1
fx_expect_fail --rc 3 --msg "${M[0]#/dev/} \(member 0\) is foreign" fxctl assemble $V

log "one device alone is refused (the others are foreign), naming the fix"
fx_expect_fail --rc 3 --msg "if other members moved too, update them in the same run" \
	fxctl update --identity --yes "${M[0]}"
for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 1 "generation of $d after the refused update"; done

if [ "$BREAK" = onebyone ]; then
	for d in "${M[@]}"; do fx_run fxctl update --identity --yes "$d"; done
fi
log "update --identity with all four devices: one rewrite"
fx_run fxctl -o json update --identity --yes "${M[@]}"
echo "$FX_OUT"
expect_eq "$(jq -r '.members | length' <<<"$FX_OUT")" 4 "members updated"
for i in 0 1 2 3; do
	expect_eq "$(jq -r ".members[$i] | \"\(.member_index) \(.old_identity.uuid) \(.new_identity.uuid)\"" <<<"$FX_OUT")" \
		"$i f0b1ab00-0000-4000-8000-00000000000$i 0badf00d-0000-4000-8000-00000000641$i" \
		"old and new UUID of member $i"
done
for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 2 "generation of $d after update"; done

log "assemble over the moved members: the data reads back"
assemble_reads "after the move"
fx_run fxctl stop $V

log "a second move of all four; --volume $V alone also finds the target's backing null_blk"
move_all 2
B0=$(cat "$FL_NVMET/subsystems/${FL_NQN}0/namespaces/1/device_path") || fail "no device_path of member 0"
# the refusal names what each is: the backing device has no NVMe identity,
# the member is the namespace on the fabric; no advice to wipe a device
# a target on this host exports (it is the member)
fx_expect_fail --rc 1 \
	--msg "($B0 \(unknown device \(no NVMe identity\)\) and ${M[0]} \(nsid 1 of ${FL_NQN}0 |${M[0]} \(nsid 1 of ${FL_NQN}0 .* and $B0 \(unknown device \(no NVMe identity\)\)).* both carry the label of member 0 of \"$V\" .*one is a copy, or one device seen twice; nothing updated.*never the device a target on this host exports" \
	fxctl update --identity --yes --volume $V
for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 2 "generation of $d after the refused --volume update"; done
log "update --identity --volume $V with the four devices"
fx_run fxctl update --identity --yes --volume $V "${M[@]}"
expect_match "$FX_OUT" "rewritten at generation 3" "update --volume $V DEV..."
for d in "${M[@]}"; do expect_eq "$(gen_of "$d")" 3 "generation of $d after the second update"; done
assemble_reads "after the second move"
fx_run fxctl remove $V
pass "every member moved at once is re-recorded in one rewrite (devices given, with or without --volume); --volume alone refuses a second device with a member's label; the data reads back"
