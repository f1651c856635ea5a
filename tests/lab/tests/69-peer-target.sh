#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# lab-break: break=dupid ~ peer read of /dev/fx[0-9]+ differs from the block path
# A peer association reaches the member's own namespace and no other
# (issue 34, review 2026-12-06-peer C3). fxblk peer_queues=1.
#
# 1. Target from the kernel, not from the caller's /sys (volume t69a over
#    members 2 and 3). An unprivileged user (uid 65534) who may read and
#    write /dev/fxN (mode 0666 here, as an ACL or a container's --device
#    would grant it) runs `unshare -Urm`, mounts a tmpfs over /sys/block and
#    writes there the files the module read until issue 34: each member's
#    disk "device" claims the other member's subsystem (same address, real
#    host NQN and ID, nsid 1). Then it makes the volume's first peer write.
#    debugfs must show each association on its member's own subsystem, and
#    the block path must read back what the user wrote. The module before
#    the fix took the fake files: its associations showed the swapped NQNs
#    and each chunk landed on the other member (seen on main's 423c97a).
# 2. Identify Namespace over the association (volume t69 over members 0
#    and 1): each member's subsystem gets a second namespace (nsid 2, a loop
#    device filled with 'Z', its own UUID and NGUID) and the lab-only
#    parameter peer_lab_nsid=2 opens every association to nsid 2. Both
#    must be refused ("not the member's namespace"), nsid 2 untouched, and
#    peer reads and writes take the block path with the right bytes. With peer_lab_nsid=0 again both open after the back-off,
#    live, and match.
# Negative control break=dupid: each nsid 2 gets its member's own UUID and
# NGUID, so Identify cannot tell it from the member (nvme core refuses such
# a namespace: "duplicate IDs"); the associations go live on nsid 2 and a
# peer read returns its 'Z's: the test must fail.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks dupid -- "$@"
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
PT=/lab/modules/peer-test
[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
DBG=/sys/kernel/debug/fxblk/peerq
NS2S=() LOOPS=()
cleanup() {
	local ns loop
	{ echo 0 >/sys/module/fxblk/parameters/peer_lab_nsid; } 2>/dev/null
	fxctl remove t69 >/dev/null 2>&1
	fxctl remove t69a >/dev/null 2>&1
	for ns in "${NS2S[@]}"; do
		echo 0 >"$ns/enable" 2>/dev/null
		rmdir "$ns" 2>/dev/null
	done
	for loop in "${LOOPS[@]}"; do
		losetup -d "$loop" 2>/dev/null
	done
}
trap cleanup EXIT
fx_mark start
fx_peerq_load

# subsys DISK: the NVMe subsystem NQN of member DISK (/dev/nvmeXnY)
subsys() { cat "/sys/block/${1#/dev/}/device/subsysnqn" || fail "no subsystem NQN for $1"; }
# member_line DEV I: debugfs's line of member I of fxN DEV
member_line() { grep "^${1#/dev/} member=$2 " $DBG; }

# ---- 1. a tmpfs over /sys/block in the caller's mount namespace ----
fx_run fxctl create t69a --chunk 64K "${M[2]}" "${M[3]}"
DA=$(fxdev t69a) || fail "no device for t69a"
chmod 0666 "$DA" || fail "chmod $DA"
N2=$(subsys "${M[2]}") N3=$(subsys "${M[3]}")
C2=/sys/class/nvme/$(fl_ctrl 2) || fail "no controller of member 2"
# the fake: member 2's disk claims member 3's subsystem and the reverse
# (the files filp_open() read: DISK/nsid, DISK/device/{transport,state,
# subsysnqn,address,hostnqn,hostid})
{
	echo 'set -e'
	echo 'mount -t tmpfs fake /sys/block'
	for pair in "${M[2]#/dev/} $N3" "${M[3]#/dev/} $N2"; do
		read -r disk nqn <<<"$pair"
		echo "mkdir -p /sys/block/$disk/device"
		echo "echo 1 >/sys/block/$disk/nsid"
		echo "cd /sys/block/$disk/device"
		echo "echo rdma >transport; echo live >state; echo '$nqn' >subsysnqn"
		echo "echo '$(cat "$C2/address")' >address"
		echo "echo '$(cat "$C2/hostnqn")' >hostnqn"
		echo "echo '$(cat "$C2/hostid")' >hostid"
	done
	echo "ls /sys/block/${M[2]#/dev/}/device"
	echo "$PT rwfile write $DA 0 0 131072 /tmp/t69-user host"
} >/tmp/t69-attack.sh
head -c 131072 /dev/urandom >/tmp/t69-user
chmod 0644 /tmp/t69-attack.sh /tmp/t69-user
# as a user without privileges (a full bounding set, as any login has; no
# capability in the initial namespace), 1 MiB of memory lockable
# (bash: busybox sh would run its own setpriv applet, not util-linux's)
fx_run bash -c "ulimit -l 1024 && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
-- unshare -Urm sh /tmp/t69-attack.sh"
log "$FX_OUT"
grep -q '^subsysnqn$' <<<"$FX_OUT" || fail "the fake /sys/block was not in place: $FX_OUT"
for i in 0 1; do
	line=$(member_line "$DA" $i)
	log "debugfs: $line"
	want=$N2
	[ $i = 1 ] && want=$N3
	expect_match "$line" " state=live " "member $i of t69a: association live"
	expect_match "$line" " subsysnqn=$want " "member $i of t69a: its own subsystem"
done
dd if="$DA" of=/tmp/back bs=64K count=2 iflag=direct status=none || fail "dd read of $DA"
cmp -s /tmp/t69-user /tmp/back || fail "the user's peer write to $DA not read back by the block path"
log "ok: a tmpfs over /sys/block did not move t69a's associations"
fx_run fxctl remove t69a

# ---- 2. Identify Namespace: another namespace of each member's subsystem ----
modprobe loop 2>/dev/null
# add_ns2 I: nsid 2 in member I's nvmet subsystem, a loop device of 'Z's
# with its own UUID and NGUID (break=dupid: member I's)
add_ns2() {
	local i=$1 s ns loop
	s=$FL_NVMET/subsystems/$(subsys "${M[$i]}")
	[ -d "$s/namespaces/1" ] || fail "no nvmet namespace 1 in $s"
	head -c $((16 << 20)) /dev/zero | tr '\0' Z >/tmp/t69-ns2-$i.img
	loop=$(losetup -f --show /tmp/t69-ns2-$i.img) || fail "losetup"
	LOOPS+=("$loop")
	ns=$s/namespaces/2
	mkdir "$ns" || fail "mkdir $ns"
	NS2S+=("$ns")
	echo "$loop" >"$ns/device_path" || fail "device_path of $ns"
	if [ "$BREAK" = dupid ]; then
		cat "$s/namespaces/1/device_uuid" >"$ns/device_uuid" &&
			cat "$s/namespaces/1/device_nguid" >"$ns/device_nguid" ||
			fail "member $i's identifiers to $ns"
	else
		echo "f0b1ab00-0000-4000-8000-20000000000$i" >"$ns/device_uuid" &&
			echo "f0b1ab00-0000-4000-8000-30000000000$i" >"$ns/device_nguid" ||
			fail "identifiers of $ns"
	fi
	echo 1 >"$ns/enable" || fail "enable $ns"
}
add_ns2 0
add_ns2 1
echo 2 >/sys/module/fxblk/parameters/peer_lab_nsid || fail "peer_lab_nsid=2"
fx_run fxctl create t69 --chunk 64K "${M[0]}" "${M[1]}"
D=$(fxdev t69) || fail "no device for t69"
fx_peer_check_rw "$D"
for i in 0 1; do
	line=$(member_line "$D" $i)
	log "debugfs: $line"
	expect_match "$line" " state=failed .*why=nsid 2 is not the member's namespace" \
		"member $i of t69: association to nsid 2 refused"
	# nothing was written to nsid 2
	cmp -s -n $((16 << 20)) /tmp/t69-ns2-$i.img "${LOOPS[$i]}" ||
		fail "nsid 2 of member $i: its bytes changed"
done

echo 0 >/sys/module/fxblk/parameters/peer_lab_nsid || fail "peer_lab_nsid=0"
live=0
for _ in $(seq 1 20); do
	sleep 1
	fx_run $PT rwfile read "$D" 0 0 131072 /tmp/got host
	live=$(grep -c "^${D#/dev/} member=[01] .* state=live " $DBG)
	[ "$live" = 2 ] && break
done
expect_eq "$live" 2 "t69's associations live with peer_lab_nsid=0"
expect_match "$(member_line "$D" 0)" " nsid=1 " "member 0 of t69: nsid 1"
dd if="$D" of=/tmp/want bs=64K count=2 iflag=direct status=none || fail "dd read of $D"
cmp -s /tmp/got /tmp/want || fail "peer read of $D over live associations differs from the block path"
fx_run fxctl remove t69
pass "associations reach the member's own namespace: not moved by a user's /sys, refused on another nsid"
