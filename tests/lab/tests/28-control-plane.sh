#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1 members=4 timeout=900
# Read-only requests never wait behind a volume that is stuck on a member.
# The member is connected through a second nvmet port of its own (faults.sh),
# which is removed: nvme-rdma reconnects in vain and multipath parks the
# member's I/O (up to ctrl_loss_tmo). (Unlinking the subsystem from a port
# that stays up is not transient: from 6.12 on, a reconnect during the gap is
# answered "invalid subsystem" with DNR and the host deletes the controller,
# seen on 7.2.) A CREATE listing that member returns at once: the partition
# scan, which reads sector 0 from it, is left to the first opener of the new
# disk (42-genl-stall.sh), here a reader that then blocks in it. Meanwhile
# `fxctl list`, `fxctl show` and `fxctl stats` of another volume must answer
# at once: the registry lock is not held across member I/O. Once the link is
# back the reader completes and both volumes work.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members (got '${FX_MEMBERS:-}')"
I=3
fx_load
CPID=
cleanup() {
	[ -d "$FL_NVMET/ports/2" ] || fl_port_add 2 4421 $I
	[ -n "$CPID" ] && wait "$CPID" 2>/dev/null
	fl_stallable_end $I
}
trap cleanup EXIT
fl_stallable $I
M[I]=$FL_DEV
ctrl=$(fl_ctrl $I) || fail "no controller for member $I"

fx_run fxctl create t28a --chunk 64K "${M[0]}" "${M[1]}"
log "removing member $I's nvmet port ($FL_NQN$I, ${M[I]}, $ctrl)"
fl_port_del 2

# A raw CREATE: fxctl create would first block in user space, reading the
# member's label; the kernel's CREATE path is what is under test here.
fl_bounded 10 /tmp/t28b.out fxblk-nltest --cmd create --name t28b --chunk 128 \
	--member "${M[I]}" --member "${M[2]}" --keep --expect 0
rc=$?
[ $rc = 124 ] && fail "CREATE still waits 10 s for a member without a path"
[ $rc = 0 ] || { cat /tmp/t28b.out; fail "CREATE over a member without a path failed ($rc)"; }
B=$(fxdev t28b) || fail "no device for t28b"
# The first opener scans the partition table: a read of member $I's sector 0.
dd if="$B" of=/dev/null bs=64k count=1 iflag=direct 2>/dev/null &
CPID=$!
fl_wait 20 eval "[ \"\$(fxctl -o json stats t28b | jq '.volume.members[0].read.inflight')\" -ge 1 ]" ||
	fail "no read of t28b in flight on member $I"
kill -0 $CPID 2>/dev/null || fail "the reader of $B finished while the member had no path"
log "reader of $B blocked on member $I:"
sed 's/^/    /' /proc/$CPID/stack

# uptime in ms (busybox date has no %N)
now_ms() { awk '{printf "%d\n", $1 * 1000}' /proc/uptime; }
# A reader stuck on a kernel mutex sits in D state, where timeout(1)'s
# signals do not reach it: poll for it instead.
for cmd in "fxctl list" "fxctl show t28a" "fxctl stats t28a" "fxctl -o json list"; do
	t0=$(now_ms)
	$cmd >/dev/null &
	rpid=$!
	while kill -0 $rpid 2>/dev/null && [ $(($(now_ms) - t0)) -lt 10000 ]; do
		sleep 0.1
	done
	kill -0 $rpid 2>/dev/null &&
		fail "'$cmd' still waiting after 10 s behind the stuck reader: $(tr '\n' ' ' </proc/$rpid/stack)"
	wait $rpid || fail "'$cmd' failed while a reader of t28b was stuck"
	log "'$cmd' answered in $(($(now_ms) - t0)) ms"
done
kill -0 $CPID 2>/dev/null || fail "the reader finished early: the checks above proved nothing"
D=$(fxdev t28a) || fail "no device for t28a"
fx_run dd if=/dev/urandom of="$D" bs=64k count=16 oflag=direct status=none

log "member $I's port back; waiting for $ctrl to reconnect and the reader to finish"
fl_port_add 2 4421 $I
for _ in $(seq 1 120); do
	kill -0 $CPID 2>/dev/null || break
	sleep 0.5
done
kill -0 $CPID 2>/dev/null && fail "reader still blocked 60 s after the path came back ($ctrl: $(cat /sys/class/nvme/$ctrl/state))"
wait $CPID
rc=$?
CPID=
[ $rc = 0 ] || fail "the reader that waited for its member failed ($rc)"
fx_run dd if="$B" of=/dev/null bs=1M count=8 iflag=direct status=none
fx_run fxctl remove t28b
fx_run fxctl remove t28a
pass
