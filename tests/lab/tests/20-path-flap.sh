#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# Path flap shorter than ctrl_loss_tmo: member 1 is reconnected through a
# second nvmet port (service 4421, its own) with --reconnect-delay=1
# --ctrl-loss-tmo=60; while fio writes and verifies (crc32c, rate-limited so
# the write phase spans the flap), that port is removed for FLAP_S (4) seconds
# and created again (the other members keep their port).
#  - the host controller leaves "live" (resetting/connecting) and is live
#    again within 30 s of the restore;
#  - fio: no I/O error, every block verifies; fxctl stats: no member error;
#  - fxctl show -o json answers meanwhile and its member paths[].state shows
#    the controller reconnecting, then live again.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
I=1
FLAP_S=${FL_FLAP_S:-4}
fx_load
cleanup() {
	kill "${FIO:-}" "${SAMPLER:-}" 2>/dev/null
	fxctl remove t20 >/dev/null 2>&1
	nvme disconnect -n "$FL_NQN$I" >/dev/null 2>&1
	fl_port_del 2
}
trap cleanup EXIT
fl_hung_task 30
fl_port_add 2 4421 $I
fl_reconnect $I --svcid 4421 --reconnect-delay=1 --ctrl-loss-tmo=60
M[I]=$FL_DEV
CTRL=$(fl_ctrl $I) || fail "no controller for member $I"
fx_run fxctl create t20 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t20) || fail "no /dev/fxN named t20"
fxctl -o json stats t20 >/tmp/s0 || fail "stats"

# ~12 s of writes at 3 MiB/s, then the verify pass
fio --eta=never --name=flap --filename="$DEV" --direct=1 --ioengine=libaio --iodepth=8 \
	--rw=randwrite --bsrange=4k-128k --size=36M --rate=3m --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output-format=json --output=/tmp/fio.json & FIO=$!
sleep 2
fx_mark flap
t0=$(fl_now)
fl_port_del 2
log "member $I ($FL_NQN$I, $CTRL): its nvmet port removed"
# samplers in the background: the controller state every 0.2 s, and
# fxctl's view in a loop of its own (fxctl may be slow while the member is
# down; the flap is timed apart from both)
states() { while :; do echo "$(fl_now) $(fl_ctrl_state "$CTRL")"; sleep 0.2; done >/tmp/states; }
shows() {
	local c t a b
	: >/tmp/samples
	while :; do
		a=$(fl_now)
		fxctl -o json show t20 >/tmp/show.json 2>/dev/null || { sleep 0.3; continue; }
		b=$(fl_now)
		# a member field about the controller/path, if fxctl has one
		c=$(jq -r --argjson i $I '.volume.members[$i] | [
			(.paths // [] | map(.state) | join("/") | select(. != "") | "paths.state=\(.)"),
			(.nvme.state // empty | "nvme.state=\(.)"), (.nvme.ctrl_state // empty | "nvme.ctrl_state=\(.)"),
			(.nvme.controller_state // empty | "nvme.controller_state=\(.)"),
			(.controller_state // empty | "controller_state=\(.)"), (.path_state // empty | "path_state=\(.)")
			] | first // "- -" | sub("="; " ")' /tmp/show.json 2>/dev/null) || c="- -"
		t=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%d", (b - a) * 1000}')
		echo "$a x $c $t" >>/tmp/samples
		[ "$(fl_ctrl_state "$CTRL")" = live ] || [ -e /tmp/flapshow.json ] || cp /tmp/show.json /tmp/flapshow.json
		sleep 0.3
	done
}
states & SAMPLER=$!
shows & SAMPLER+=" $!"
sleep "$FLAP_S"
fl_port_add 2 4421 $I
t1=$(fl_now)
log "member $I's port back after $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') s"
fl_wait 30 eval '[ "$(fl_ctrl_state "$CTRL")" = live ]' ||
	fail "controller $CTRL of member $I is '$(fl_ctrl_state "$CTRL")' 30 s after the port came back"
t2=$(fl_now)
RECONNECT=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.1f", b - a}')
log "controller $CTRL live again $RECONNECT s after the restore"
sleep 1
kill $SAMPLER; wait $SAMPLER 2>/dev/null
SAMPLER=
STATES=" $(awk '{print $2}' /tmp/states | sort -u | tr '\n' ' ')"
log "controller states seen: $STATES"
if [ -e /tmp/flapshow.json ]; then
	log "during the flap, fxctl -o json show t20 said about member $I:"
	jq -cM ".volume.members[$I] | del(.read, .write, .discard, .flush)" /tmp/flapshow.json
else
	log "no fxctl show output while the controller was not live"
fi
# how long each fxctl show itself took (the sampler loop also runs jq etc.)
SHOW_MS=$(awk '{if ($5 > m) m = $5} END {print m + 0}' /tmp/samples)
log "$(wc -l </tmp/states) state samples, $(wc -l </tmp/samples) fxctl show samples; slowest fxctl show: $SHOW_MS ms"
CSF=$(awk '$3 != "-" {print $3; exit}' /tmp/samples)
SHOWN=$(awk -v f="$CSF" '$3 == f {print $4}' /tmp/samples | sort -u | tr '\n' ' ')
[[ $STATES == *" connecting "* || $STATES == *" resetting "* ]] ||
	fail "controller $CTRL never left live during the flap (states seen:$STATES): the fault was not injected"
# fio: bounded by its own rate (write phase ~12 s + stall + verify)
fl_wait 120 eval '! kill -0 $FIO 2>/dev/null' || fail "fio still running 120 s after the flap"
wait $FIO; rc=$?
FIO=
[ $rc = 0 ] && [ "$(jq '.jobs[0].error' /tmp/fio.json)" = 0 ] || { cat /tmp/fio.json; fail "fio verify across the flap: rc $rc"; }
VIOS=$(jq '.jobs[0].read.total_ios' /tmp/fio.json)
WIOS=$(jq '.jobs[0].write.total_ios' /tmp/fio.json)
fxctl -o json stats t20 >/tmp/s1 || fail "stats"
ERR=$(jq -s 'map([.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors] | add)
	| .[1] - .[0]' /tmp/s0 /tmp/s1)
fl_result "ios_written=$WIOS ios_verified=$VIOS faults_injected=1 flap_s=$FLAP_S reconnect_s=$RECONNECT" \
	"member_errors=$ERR io_errors=0 corruptions=0 ctrl_states=$(echo $STATES | tr ' ' ,) show_ms_max=$SHOW_MS"
[ "$ERR" = 0 ] || fail "$ERR member I/O errors counted across a flap shorter than ctrl_loss_tmo"
# fxctl reads paths from sysfs, so it answers during the outage and shows the
# member's controller as not live (libnvme's scan used to stall on Identify
# and drop the paths).
[ -n "$CSF" ] || fail "fxctl -o json show never listed .paths[].state of member $I during the flap"
log "fxctl member $I $CSF seen: $SHOWN"
grep -Eq 'connecting|resetting' <<<"$SHOWN" ||
	fail "fxctl never showed member $I's path as reconnecting (saw: $SHOWN)"
# and once the controller is live again, so is the path fxctl shows
fxctl -o json show t20 >/tmp/show.json || fail "show after the flap"
AFTER=$(jq -r --argjson i $I '.volume.members[$i].paths | map(.controller + "=" + .state) | join(",")' /tmp/show.json)
[ "$AFTER" = "$CTRL=live" ] || fail "after the reconnect fxctl shows member $I's paths as '$AFTER', not '$CTRL=live'"
fx_dmesg_clean_since flap
fx_run fxctl remove t20
trap - EXIT
cleanup
pass "${FLAP_S} s flap: reconnected in $RECONNECT s, $WIOS writes and $VIOS verified reads without error"
