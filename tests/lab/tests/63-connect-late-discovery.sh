#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=3 size-mb=64 timeout=400
# lab-break: break=nolate ~ members of the late discovery controller connected: got
# connect-all with a discovery controller that comes up late and one that
# never does (issue 37, review H2 and M-2), against nvmet's real discovery
# service:
#  - /etc/nvme/config.json names member 0 at port 1 (4420, an I/O port), a
#    discovery controller at port 2 (4421) that does not exist yet, and one
#    at 4429 that never will;
#  - connect-all (--retries 15 --timeout 30) connects member 0 at once (the
#    dead discovery controllers stop nothing), then port 2 appears on the
#    target exporting members 1 and 2: connect-all's retries of the
#    discovery controller (refused at first: retry 1 on stderr) read its
#    log and connect both through 4421;
#  - it exits 7 (some connected, not all): the discovery controller at 4429
#    is named on stderr and in the JSON ("failed", "discovery: ..."), and
#    retried as an I/O target is (attempts > 1).
# (The --timeout bound of the first round, M-2, is a unit test: no timing
# assertion here.)
# Before the fix a discovery controller that failed was never retried:
# members 1 and 2 were not connected.
# Negative control break=nolate: port 2 never comes up, so members 1 and 2
# are not connected and the test fails at that check.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks nolate -- "$@"
DISC=nqn.2014-08.org.nvmexpress.discovery
HOSTNQN=$(cat /etc/nvme/hostnqn) || fail "no /etc/nvme/hostnqn in the lab image"
cleanup() {
	local c
	[ -z "${cpid:-}" ] || kill "$cpid" 2>/dev/null
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/delete_controller" ] && echo 1 >"$c/delete_controller"
	done
	fl_port_del 2
	rm -f /etc/nvme/config.json
}
trap cleanup EXIT
fx_load
fl_disconnect_all

log "port 1 (4420) exports member 0 only; port 2 (4421, members 1 and 2) is not up yet"
rm "$FL_NVMET/ports/1/subsystems/${FL_NQN}1" "$FL_NVMET/ports/1/subsystems/${FL_NQN}2" ||
	fail "unlink members 1 and 2 from port 1"
cat >/etc/nvme/config.json <<EOF
[
  {
    "hostnqn": "$HOSTNQN",
    "subsystems": [
      { "nqn": "${FL_NQN}0", "ports": [ { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4420" } ] },
      { "nqn": "$DISC", "ports": [ { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4421" },
                                   { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4429" } ] }
    ]
  }
]
EOF
log "connect-all --retries 15 --timeout 30 in the background"
t0=$(fl_now)
fxctl -o json connect-all --retries 15 --timeout 30 >/tmp/t63.out 2>/tmp/t63.err &
cpid=$!
fl_wait 30 fl_member_dev 0 >/dev/null || { cat /tmp/t63.err; fail "member 0 not connected while the discovery controllers are down"; }
kill -0 $cpid 2>/dev/null || { cat /tmp/t63.err; fail "connect-all ended before port 2 came up (discovery not retried)"; }
log "member 0 is connected after $(fl_since "$t0") s, connect-all still retrying"
if [ "$BREAK" != nolate ]; then
	log "port 2 (4421) comes up, exporting members 1 and 2"
	fl_port_add 2 4421 1 2
fi
wait $cpid
rc=$?
took=$(fl_since "$t0")
unset cpid
cat /tmp/t63.err
cat /tmp/t63.out
log "connect-all exited $rc after $took s"
# shellcheck disable=SC2034 # read by jqr (lib.sh)
FX_JSON=$(cat /tmp/t63.out)
got=$(jqr '[.connections[] | select(.subsysnqn != "'"$DISC"'") | "\(.subsysnqn)=\(.status)"] | sort | join(" ")')
expect_eq "$got" "${FL_NQN}0=connected ${FL_NQN}1=connected ${FL_NQN}2=connected" \
	"members of the late discovery controller connected"
for i in 1 2; do
	c=$(fl_ctrl $i) || fail "no controller for member $i"
	expect_match "$(cat /sys/class/nvme/$c/address)" "traddr=$FL_IP,trsvcid=4421" \
		"member $i connected through the late port ($c)"
done
expect_eq "$rc" 7 "exit status (the discovery controller at 4429 never came up)"
dead=$(jqr '.connections[] | select(.trsvcid == "4429") | "\(.subsysnqn) \(.status) \(.attempts > 1)"')
expect_eq "$dead" "$DISC failed true" "the dead discovery controller in the JSON (retried)"
expect_match "$(cat /tmp/t63.err)" "$DISC via rdma $FL_IP:4429: discovery: " "the dead discovery controller named on stderr"
expect_match "$(cat /tmp/t63.err)" "$DISC via rdma $FL_IP:4421: discovery: .*; retry 1 of 15 " \
	"the late discovery controller refused before port 2 came up, then retried"
expect_eq "$(fl_ctrl_count)" 3 "controllers after connect-all (no discovery controller left)"
pass "a late discovery controller is retried and its subsystems connected; a dead one stops nothing, is named, exit 7"
