#!/bin/bash
# lab: kernels=6.12,7.2,7.3 quick=6.12 members=2 timeout=500
# lab-break: --break nokey ~ cannot connect-all from config.json .*requires DH-CHAP authentication and no key
# fxctl connect-all does what libnvme's config.json says (issue 19, M7):
# DH-CHAP (nvmet hosts/<hostnqn>/dhchap_key, CONFIG_NVME_TARGET_AUTH and
# CONFIG_NVME_HOST_AUTH: 6.12 and later; Debian's 6.1 and 5.10 have neither,
# so the test does not run there) and a second path through a second host
# interface. The lab connects the members with nvme-cli first; this test
# disconnects them, adds a second netdev (dummy1, 10.0.1.1, its own rxe1)
# with an nvmet port of its own, requires DH-CHAP for member 0's subsystem
# and writes /etc/nvme/config.json with:
#   member 0, path A: 10.0.0.1 from host_traddr 10.0.0.1 (dummy0/rxe0),
#     the port's dhchap_key, nr_io_queues 1, queue_size 32, ctrl_loss_tmo 120;
#   member 0, path B: 10.0.1.1 from host_traddr 10.0.1.1 (dummy1/rxe1),
#     the port's dhchap_key and dhchap_ctrl_key (bidirectional);
#   member 1: 10.0.0.1, no key (its subsystem allows any host);
#   the host's hostnqn and no hostid.
# Checks:
#  - connect-all connects all three; in sysfs each controller has the
#    configured transport, address (traddr, host_traddr), host NQN, the host
#    ID of /etc/nvme/hostid (the config names none), dhchap_secret, path B
#    also dhchap_ctrl_secret, path A queue_count 2 and sqsize 31 and
#    ctrl_loss_tmo 120;
#  - a second connect-all connects nothing (already-connected x3, still 3
#    controllers);
#  - path B disconnected, its dhchap_ctrl_key in config.json replaced by a
#    wrong one (the controller fails to authenticate to the host):
#    connect-all fails (exit 1) naming that target and DH-CHAP, at once (no
#    retry), and the other two are already-connected; a malformed key
#    (checksum) is refused as such. After a failed authentication 6.12's
#    nvmet does not answer the host's next AUTH command (failure2, or
#    success1 after a wrong host key: "ctrl N fatal error occurred"), so
#    the host's connect waits for the admin timeout, 60 s, retried 5 times:
#    6 minutes and hung-task reports. This section runs with
#    nvme_core.admin_timeout=5 and max_retries=0 (writable at run time,
#    taken by controllers created after), restored after it.
#  - disconnect --config (M8), with an fx volume over member 0 and member 1
#    reconnected by nvme-cli: member 0's controller is refused, naming it and
#    the volume (exit 4), member 1's is left ("not connected by fxctl");
#    with the volume stopped, member 0's is disconnected and member 1's
#    still left; fxctl's records (/run/fxblk/connected) follow.
# Args: [--break nokey]: the dhchap_key of path B left out of config.json,
# as a connect-all that drops the port's key would send it: the test must
# fail (make check runs it as a negative control, the line above).
. /lab/lib.sh
. /lab/faults.sh
BREAK=
[ "${1:-}" = --break ] && BREAK=$2
NQN0=${FL_NQN}0
NQN1=${FL_NQN}1
IP2=10.0.1.1
CFG=/etc/nvme/config.json
# DH-CHAP secrets (nvme gen-dhchap-key -m 0 -s <hex>): the host's and the
# controller's for bidirectional authentication, and a wrong one
KEY=DHHC-1:00:ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8qDMNU:
CKEY=DHHC-1:00:/xEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v88VQe3:
BADKEY=DHHC-1:00:dxEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8gFti+:
# ... and one whose checksum does not match (one character of BADKEY changed)
MALFORMED=DHHC-1:00:exEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8gFti+:

# ctrl_of NQN TRADDR: the controller of subsystem NQN at TRADDR
ctrl_of() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] &&
			[[ $(cat "$c/address" 2>/dev/null) == traddr=$2,* ]] && { echo "${c##*/}"; return 0; }
	done
	return 1
}
cleanup() {
	local c
	[ -z "${ADMIN_TMO:-}" ] || echo "$ADMIN_TMO" >$NVME_PAR/admin_timeout
	[ -z "${MAX_RETRIES:-}" ] || echo "$MAX_RETRIES" >$NVME_PAR/max_retries
	fxctl stop lab60 >/dev/null 2>&1
	for c in /sys/class/nvme/nvme*; do
		[[ $(cat "$c/address" 2>/dev/null) == *$IP2* ]] && echo 1 >"$c/delete_controller"
	done
	fl_port_del 3
	rm -f "$FL_NVMET/subsystems/$NQN0/allowed_hosts/"* 2>/dev/null
	echo 1 >"$FL_NVMET/subsystems/$NQN0/attr_allow_any_host" 2>/dev/null
	rmdir "$FL_NVMET/hosts/"* 2>/dev/null
	rdma link delete rxe1 2>/dev/null
	ip link del dummy1 2>/dev/null
	rm -f $CFG
}
trap cleanup EXIT
fx_load
HOSTNQN=$(cat /etc/nvme/hostnqn) || fail "no /etc/nvme/hostnqn in the lab image"
HOSTID=$(cat /etc/nvme/hostid) || fail "no /etc/nvme/hostid in the lab image"
fl_disconnect_all

# -- a second host interface with its own Soft-RoCE device and target port
ip link add dummy1 type dummy || fail "ip link add dummy1"
ip link set dummy1 mtu 9000
ip addr add $IP2/24 dev dummy1
ip link set dummy1 up
rdma link add rxe1 type rxe netdev dummy1 || fail "rdma link add rxe1"
p=$FL_NVMET/ports/3
mkdir $p || fail "mkdir nvmet port 3"
echo rdma >$p/addr_trtype; echo ipv4 >$p/addr_adrfam
echo $IP2 >$p/addr_traddr; echo 4420 >$p/addr_trsvcid
ln -s "$FL_NVMET/subsystems/$NQN0" $p/subsystems/ || fail "link $NQN0 to port 3"

# -- DH-CHAP for member 0's subsystem: only this host, with its key
h=$FL_NVMET/hosts/$HOSTNQN
mkdir "$h" || fail "mkdir nvmet host $HOSTNQN"
[ -e "$h/dhchap_key" ] || fail "nvmet has no DH-CHAP (hosts/*/dhchap_key) on $(uname -r)"
echo "$KEY" >"$h/dhchap_key" || fail "set the target's dhchap_key"
echo "$CKEY" >"$h/dhchap_ctrl_key" || fail "set the target's dhchap_ctrl_key"
echo "hmac(sha256)" >"$h/dhchap_hash" || fail "set dhchap_hash"
echo 0 >"$FL_NVMET/subsystems/$NQN0/attr_allow_any_host"
ln -s "$h" "$FL_NVMET/subsystems/$NQN0/allowed_hosts/" || fail "allow $HOSTNQN on $NQN0"

# write_config KEY_OF_PATH_B [CTRL_KEY_OF_PATH_B]
write_config() {
	local bkey='' ckey=${2:-$CKEY}
	[ -z "$1" ] || bkey="\"dhchap_key\": \"$1\", "
	cat >$CFG <<EOF
[
  {
    "hostnqn": "$HOSTNQN",
    "subsystems": [
      { "nqn": "$NQN0", "ports": [
        { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4420", "host_traddr": "$FL_IP",
          "dhchap_key": "$KEY", "nr_io_queues": 1, "queue_size": 32, "ctrl_loss_tmo": 120 },
        { "transport": "rdma", "traddr": "$IP2", "trsvcid": "4420", "host_traddr": "$IP2",
          $bkey"dhchap_ctrl_key": "$ckey" } ] },
      { "nqn": "$NQN1", "ports": [ { "transport": "rdma", "traddr": "$FL_IP", "trsvcid": "4420" } ] }
    ]
  }
]
EOF
}
if [ "$BREAK" = nokey ]; then write_config ""; else write_config "$KEY"; fi
cat $CFG

# -- connect-all: every path, with what the config says
FX_OUT=$(fxctl -o json connect-all 2>/tmp/t60.err)
rc=$?
cat /tmp/t60.err
printf '%s\n' "$FX_OUT"
[ $rc = 0 ] || fail "cannot connect-all from config.json (exit $rc): $(printf '%s' "$FX_OUT" | jq -r '.connections[] | select(.status == "failed") | "\(.traddr): \(.error)"' 2>/dev/null)"
# shellcheck disable=SC2034 # read by jqr (lib.sh)
FX_JSON=$(printf '%s' "$FX_OUT" | jq -c .) || fail "connect-all: no JSON"
expect_eq "$(jqr '[.connections[].status] | join(",")')" "connected,connected,connected" "connect-all statuses"
expect_eq "$(fl_ctrl_count)" 3 "controllers after connect-all"
A=$(ctrl_of "$NQN0" "$FL_IP") || fail "no controller of $NQN0 at $FL_IP"
B=$(ctrl_of "$NQN0" "$IP2") || fail "no controller of $NQN0 at $IP2"
C=$(ctrl_of "$NQN1" "$FL_IP") || fail "no controller of $NQN1"
sysattr() { cat "/sys/class/nvme/$1/$2" 2>/dev/null; }
for c in $A $B $C; do
	fl_wait 20 eval '[ "$(sysattr '"$c"' state)" = live ]' || fail "$c not live: $(sysattr "$c" state)"
	expect_eq "$(sysattr "$c" transport)" rdma "transport of $c"
	expect_eq "$(sysattr "$c" hostnqn)" "$HOSTNQN" "hostnqn of $c"
	expect_eq "$(sysattr "$c" hostid)" "$HOSTID" "hostid of $c (/etc/nvme/hostid; config.json names none)"
	log "$c: $(sysattr "$c" subsysnqn) $(sysattr "$c" address) queue_count $(sysattr "$c" queue_count) sqsize $(sysattr "$c" sqsize)"
done
expect_match "$(sysattr "$A" address)" "^traddr=$FL_IP,trsvcid=4420,host_traddr=$FL_IP" "address of path A ($A)"
expect_match "$(sysattr "$B" address)" "^traddr=$IP2,trsvcid=4420,host_traddr=$IP2" "address of path B ($B)"
expect_eq "$(sysattr "$A" dhchap_secret)" "$KEY" "dhchap_secret of path A ($A)"
expect_eq "$(sysattr "$B" dhchap_secret)" "$KEY" "dhchap_secret of path B ($B)"
expect_eq "$(sysattr "$B" dhchap_ctrl_secret)" "$CKEY" "dhchap_ctrl_secret of path B ($B)"
expect_eq "$(sysattr "$A" dhchap_ctrl_secret)" none "dhchap_ctrl_secret of path A ($A)"
expect_eq "$(sysattr "$C" dhchap_secret)" none "dhchap_secret of $NQN1 ($C)"
expect_eq "$(sysattr "$A" queue_count)" 2 "queue_count of path A ($A): nr_io_queues 1 + admin"
expect_eq "$(sysattr "$A" sqsize)" 31 "sqsize of path A ($A): queue_size 32"
expect_eq "$(sysattr "$A" ctrl_loss_tmo)" 120 "ctrl_loss_tmo of path A ($A)"
expect_eq "$(sysattr "$B" ctrl_loss_tmo)" 600 "ctrl_loss_tmo of path B ($B): the default"
dmesg | grep -E "nvme.*(authenticated|authentication)" | tail -n 6

# -- idempotent: nothing new the second time
fx_json fxctl -o json connect-all
expect_eq "$(jqr '[.connections[].status] | join(",")')" \
	"already-connected,already-connected,already-connected" "second connect-all"
expect_eq "$(jqr "[.connections[].controller] | sort | join(\",\")")" \
	"$(printf '%s\n' "$A" "$B" "$C" | sort | paste -sd,)" "second connect-all: the same controllers"
expect_eq "$(fl_ctrl_count)" 3 "controllers after a second connect-all"

# -- a wrong key: refused at once, naming the target
fx_run fxctl disconnect "$B"
fl_wait 20 eval '! ctrl_of "$NQN0" "$IP2" >/dev/null' || fail "$B still there after fxctl disconnect"
NVME_PAR=/sys/module/nvme_core/parameters
ADMIN_TMO=$(cat $NVME_PAR/admin_timeout) MAX_RETRIES=$(cat $NVME_PAR/max_retries)
echo 5 >$NVME_PAR/admin_timeout && echo 0 >$NVME_PAR/max_retries || fail "set nvme_core admin_timeout/max_retries"
write_config "$KEY" "$BADKEY"
# exit 7: the other two ports are connected, this one is not (issue 19 M9)
fx_expect_fail --rc 7 --msg "$NQN0 via rdma $IP2:4420 from $IP2: DH-CHAP authentication of host $HOSTNQN with $NQN0 failed" \
	fxctl connect-all
expect_eq "$(grep -c retry <<<"$FX_OUT")" 0 "retries of a refused key"
expect_match "$FX_OUT" "already connected as $A" "path A during the failed connect-all"
expect_match "$FX_OUT" "already connected as $C" "$NQN1 during the failed connect-all"
expect_eq "$(fl_ctrl_count)" 2 "controllers after a refused key"
write_config "$KEY" "$MALFORMED"
fx_expect_fail --rc 7 --msg "$IP2: the kernel refused a DH-CHAP key for $NQN0 as malformed" \
	fxctl connect-all --retries 1
expect_eq "$(grep -c retry <<<"$FX_OUT")" 0 "retries of a malformed key"
echo "$ADMIN_TMO" >$NVME_PAR/admin_timeout && echo "$MAX_RETRIES" >$NVME_PAR/max_retries

# -- disconnect --config: only what fxctl connected, never a namespace in use
recorded() { (cd /run/fxblk/connected 2>/dev/null && ls | sort | paste -sd' '); }
expect_eq "$(recorded)" "$(printf '%s\n' "$A" "$C" | sort | paste -sd' ')" "fxctl's records of what it connected"
fx_run fxctl disconnect "$C"
fl_wait 20 eval '! ctrl_of "$NQN1" "$FL_IP" >/dev/null' || fail "$C still there after fxctl disconnect"
expect_eq "$(recorded)" "$A" "records after fxctl disconnect $C"
nvme connect -t rdma -a "$FL_IP" -s 4420 -n "$NQN1" >/dev/null || fail "nvme connect $NQN1"
fl_wait 30 fl_member_dev 1 >/dev/null || fail "namespace of $NQN1 did not appear"
C=$(ctrl_of "$NQN1" "$FL_IP") || fail "no controller of $NQN1 after nvme connect"
D0=$(fl_member_dev 0) || fail "no namespace of $NQN0"
D1=$(fl_member_dev 1)
fx_run fxctl create lab60 --chunk 64K "$D0" "$D1"
fx_expect_fail --rc 4 --msg "not disconnecting $A \($NQN0\): its namespace is in use: .*${D0#/dev/} member of fx volume lab60" \
	fxctl disconnect --config
expect_match "$FX_OUT" "left $C \($NQN1 via rdma $FL_IP:4420\): not connected by fxctl" "disconnect --config of nvme-cli's $C"
expect_eq "$(fl_ctrl_count)" 2 "controllers after a refused disconnect --config"
fx_run fxctl stop lab60
fx_run fxctl disconnect --config
expect_match "$FX_OUT" "disconnected $A" "disconnect --config after the volume stopped"
fl_wait 20 eval '! ctrl_of "$NQN0" "$FL_IP" >/dev/null' || fail "$A still there after disconnect --config"
expect_eq "$(fl_ctrl_count)" 1 "controllers after disconnect --config (nvme-cli's $C left)"
expect_eq "$(sysattr "$C" state)" live "nvme-cli's $C after disconnect --config"
expect_eq "$(recorded)" "" "records after disconnect --config"
pass
