#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=3 size-mb=64 timeout=400
# lab-break: break=noref ~ discovery controllers created by connect-all: got
# fxctl connect-all through a discovery controller (issue 19, M7: "discovery
# entries and their referrals"), against nvmet's real discovery service:
#  - member 1 is moved to its own port (service 4421), member 2 to a third
#    (4422); port 1 (4420) lists member 0 and refers to port 2, port 2
#    refers to port 3 and back to port 1 (a cycle);
#  - /etc/nvme/config.json names only the discovery subsystem
#    (nqn.2014-08.org.nvmexpress.discovery) at port 1;
#  - connect-all connects all three members, each through the port that
#    exports it (the controller's address in sysfs), follows both referrals
#    and asks each discovery address once (the kernel's "new ctrl" lines:
#    4420, 4421, 4422, the cycle back to 4420 not followed), and exits 0;
#  - a second connect-all connects nothing new (already-connected x3);
#  - `disconnect --config` takes the three (they were recorded) and leaves
#    no controller.
# Negative control break=noref: port 1 refers nowhere, so only port 1 is
# asked and only member 0 connected: the test fails at the discovery check.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks noref -- "$@"
DISC=nqn.2014-08.org.nvmexpress.discovery
HOSTNQN=$(cat /etc/nvme/hostnqn) || fail "no /etc/nvme/hostnqn in the lab image"
refer() {	# refer FROM-PORT TO-PORT TO-SVCID: a referral entry in FROM's log page
	local r=$FL_NVMET/ports/$1/referrals/to$2
	mkdir "$r" && echo rdma >"$r/addr_trtype" && echo ipv4 >"$r/addr_adrfam" &&
		echo "$FL_IP" >"$r/addr_traddr" && echo "$3" >"$r/addr_trsvcid" &&
		echo "$2" >"$r/addr_portid" && echo 1 >"$r/enable" ||
		fail "referral from port $1 to port $2"
}
cleanup() {
	local c r
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/delete_controller" ] && echo 1 >"$c/delete_controller"
	done
	for r in "$FL_NVMET"/ports/*/referrals/*; do
		[ -d "$r" ] && { echo 0 >"$r/enable"; rmdir "$r"; }
	done
	fl_port_del 2
	fl_port_del 3
	rm -f /etc/nvme/config.json
}
trap cleanup EXIT
fx_load
fl_disconnect_all

log "ports: 1 (4420) member 0; 2 (4421) member 1; 3 (4422) member 2; referrals 1->2, 2->3, 2->1"
rm "$FL_NVMET/ports/1/subsystems/${FL_NQN}1" "$FL_NVMET/ports/1/subsystems/${FL_NQN}2" ||
	fail "unlink members 1 and 2 from port 1"
fl_port_add 2 4421 1
fl_port_add 3 4422 2
[ "$BREAK" = noref ] || refer 1 2 4421
refer 2 3 4422
refer 2 1 4420
nvme discover -t rdma -a "$FL_IP" -s 4420 || fail "nvme discover at port 1"

cat >/etc/nvme/config.json <<EOF
[
  {
    "hostnqn": "$HOSTNQN",
    "subsystems": [
      { "nqn": "$DISC", "ports": [ { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4420" } ] }
    ]
  }
]
EOF
log "connect-all from the discovery port"
fx_mark disc
fx_json fxctl -o json connect-all
# each discovery address asked once: nvme-rdma logs every controller it creates
disc=$(fx_dmesg_since disc | grep -o "new ctrl: NQN \"$DISC\", addr [0-9.:]*" | sed 's/.*addr //' | sort | paste -sd' ')
expect_eq "$disc" "$FL_IP:4420 $FL_IP:4421 $FL_IP:4422" "discovery controllers created by connect-all"
printf '%s\n' "$FX_JSON"
got=$(jqr '[.connections[] | "\(.subsysnqn)=\(.status)"] | sort | join(" ")')
expect_eq "$got" "${FL_NQN}0=connected ${FL_NQN}1=connected ${FL_NQN}2=connected" \
	"connect-all from the discovery port: got"
for i in 0 1 2; do
	c=$(fl_ctrl $i) || fail "no controller for member $i"
	expect_eq "$(fl_ctrl_state "$c")" live "state of $c (member $i)"
	expect_match "$(cat /sys/class/nvme/$c/address)" "traddr=$FL_IP,trsvcid=442$i" \
		"member $i connected through the port that exports it ($c)"
done
expect_eq "$(fl_ctrl_count)" 3 "controllers after connect-all (no discovery controller left)"

log "a second connect-all connects nothing new"
fx_json fxctl -o json connect-all
got=$(jqr '[.connections[].status] | sort | join(" ")')
expect_eq "$got" "already-connected already-connected already-connected" "second connect-all"
expect_eq "$(fl_ctrl_count)" 3 "controllers after the second connect-all"

log "disconnect --config: the three recorded controllers"
fx_run fxctl disconnect --config
fl_wait 20 eval '[ "$(fl_ctrl_count)" = 0 ]' || fail "controllers left after disconnect --config: $(ls /sys/class/nvme)"
pass "connect-all through a discovery controller follows referrals (a cycle visited once) and connects each member at its own port; idempotent; disconnect --config takes them"
