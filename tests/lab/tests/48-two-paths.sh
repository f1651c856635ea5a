#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 append=nvme_core.multipath=N
# Two paths to one namespace are never two members (issue 17, fxctl review
# C1). With native NVMe multipath off (nvme_core.multipath=N on the kernel
# command line, as where dm-multipath is used), a second controller to
# member 0's subsystem, through a second target port (4421) as a second
# path would be, gives a second disk of the same namespace, with the same
# NGUID, UUID, NSID and NQN (drivers/nvme/host/sysfs.c reads them from the
# namespace head).
#  - fxctl create over member 0, member 1 and that second disk is refused,
#    naming both disks and the shared NGUID, exit 1, with and without
#    --force; nothing is written (no label on any of them);
#  - create over the two distinct namespaces still works.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
expect_eq "$(cat /sys/module/nvme_core/parameters/multipath)" N \
	"nvme_core multipath (kernel command line nvme_core.multipath=N)"
fx_load
SECOND=
# the second path's controller and port go before the lab's teardown, which
# knows only port 1
cleanup() {
	fxctl remove lab48 >/dev/null 2>&1
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ $(cat "$c/address" 2>/dev/null) == *trsvcid=4421* ]] &&
			echo 1 >"$c/delete_controller"
	done
	fl_port_del 2
}
trap cleanup EXIT

# a second controller to member 0's subsystem, through port 4421: its own
# disk of namespace 1
NQN0=$(cat "/sys/block/${M[0]#/dev/}/device/subsysnqn")
expect_eq "$NQN0" "${FL_NQN}0" "${M[0]}'s subsystem"
before=$(ls /sys/class/nvme)
fl_port_add 2 4421 0
fx_run nvme connect -t rdma -a "$FL_IP" -s 4421 -n "$NQN0"

for ((w = 0; w < 600; w++)); do	# up to 30 s under load
	for d in /sys/block/nvme*n*; do
		n=${d##*/}
		[ "/dev/$n" != "${M[0]}" ] && [ "/dev/$n" != "${M[1]}" ] || continue
		[ "$(cat "$d/device/subsysnqn" 2>/dev/null)" = "$NQN0" ] || continue
		[ "$(cat "$d/size" 2>/dev/null)" != 0 ] && [ -b "/dev/$n" ] && SECOND=/dev/$n
	done
	[ -z "$SECOND" ] || break
	sleep 0.05
done
[ -n "$SECOND" ] || fail "no second disk of $NQN0 after nvme connect to port 4421 (controllers before: $before; now: $(ls /sys/class/nvme))"
log "second path to ${M[0]}'s namespace: $SECOND"
# the setup itself: one namespace, two disks, one identity
for a in nguid uuid nsid; do
	expect_eq "$(cat "/sys/block/${SECOND#/dev/}/$a")" "$(cat "/sys/block/${M[0]#/dev/}/$a")" \
		"$SECOND and ${M[0]}: $a"
done
NGUID=$(tr -d '-' < "/sys/block/${M[0]#/dev/}/nguid")

A=${M[0]}
for force in "" --force; do
	fx_expect_fail --rc 1 \
		--msg "$A and $SECOND are two paths to one namespace: the same NGUID $NGUID" \
		fxctl create lab48 $force "$A" "${M[1]}" "$SECOND"
	expect_match "$FX_OUT" 'nothing was written' "create $force: says nothing was written"
	expect_match "$FX_OUT" 'nvme_core.multipath=Y' "create $force: names the fix"
	for m in "${M[0]}" "${M[1]}" "$SECOND"; do
		fx_expect_fail --rc 3 --msg 'not an fxblk member' fxctl examine "$m"
	done
	[ -z "$(fxctl list -o json | jq -r '.volumes[]?.name')" ] || fail "create $force left a volume"
done

# two distinct namespaces are still two members
fx_run fxctl create lab48 "${M[0]}" "${M[1]}"
fx_json fxctl -o json show lab48
expect_eq "$(jqr '.volume.members | length')" 2 "lab48 members"
fx_run fxctl remove lab48
pass "two paths to one namespace refused (NGUID $NGUID: ${M[0]}, $SECOND); distinct namespaces accepted"
