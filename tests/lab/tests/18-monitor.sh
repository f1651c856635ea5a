#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=600
# lab-allow: I/O error|critical medium error|Buffer I/O error|nvme[0-9]+(c[0-9]+)?n[0-9]+: I/O Cmd|fxblk.*(error|failing)
# fxctl monitor: the module's netlink events as JSON Lines and text.
#  - an unprivileged `fxctl -o json monitor --count 4` sees, in order:
#    created t18, member_error (member 1, errno 5 EIO), member_state
#    (member 1 failing), destroyed t18; then exits 0 by itself; every line
#    is one JSON object with schema_version and timestamp;
#  - the error comes from null_blk badblocks behind member 1 (one of its
#    chunks) and one direct read of that chunk through /dev/fxN;
#  - a text-mode monitor prints the same events one line each;
#  - --timeout with nothing happening exits 0 with no output;
#  - rmmod while monitoring ends it with exit 5 ("unloaded").
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
BAD=1
CH=65536
MCH=10			# member 1's chunk 10 goes bad: volume chunk 4 * 10 + 1
fx_load
NB=$(fl_nullb $BAD)
[ -e "$NB/badblocks" ] || fail "null_blk on $FX_KVER has no configfs badblocks attribute"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	# only the range set: on 7.2/7.3 clearing 0..2^40 spins in
	# badblocks_clear() with interrupts off (RCU stall, the VM hangs)
	[ -z "${S:-}" ] || echo "-$S-$E" > "$NB/badblocks" 2>/dev/null
	fxctl remove t18 >/dev/null 2>&1
}
trap cleanup EXIT

# subscribed FILE: fxctl -v monitor said so on stderr
subscribed() { grep -q "subscribed to the fxblk events" "$1"; }

# --timeout, nothing happening: exit 0, nothing printed
t0=$(fl_now)
out=$(as_nobody fxctl -o json monitor --timeout 1) || fail "monitor --timeout 1: exit $?"
[ -z "$out" ] || fail "monitor --timeout 1 printed '$out' with no events"
log "monitor --timeout 1: exit 0, no output, $(awk -v a="$t0" -v b="$(fl_now)" 'BEGIN {printf "%.1f", b - a}') s"

as_nobody fxctl -v -o json monitor --count 4 --timeout 300 >/tmp/mon.json 2>/tmp/mon.err & MON=$!
PIDS+=("$MON")
fxctl -v monitor >/tmp/mon.txt 2>/tmp/mon.txterr & TXT=$!
PIDS+=("$TXT")
fl_wait 20 subscribed /tmp/mon.err || fail "JSON monitor not subscribed after 20 s: $(cat /tmp/mon.err)"
fl_wait 20 subscribed /tmp/mon.txterr || fail "text monitor not subscribed after 20 s: $(cat /tmp/mon.txterr)"

fx_run fxctl create t18 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t18) || fail "no /dev/fxN named t18"
DISK=${DEV#/dev/}
udevadm settle 2>/dev/null || sleep 2	# udev's probing done before the fault
OFF=$(fxctl -o json show t18 | jq -r ".volume.members[$BAD].data_offset_bytes")
[[ $OFF =~ ^[0-9]+$ ]] || fail "no data_offset_bytes for member $BAD"
S=$((OFF / 512 + MCH * CH / 512))
E=$((S + CH / 512 - 1))
fx_mark fault
echo "+$S-$E" >"$NB/badblocks" || fail "set badblocks +$S-$E on $NB"
C=$((4 * MCH + BAD))
out=$(dd if="$DEV" of=/dev/null bs=$CH skip=$C count=1 iflag=direct 2>&1) &&
	fail "read of volume chunk $C (member $BAD, bad blocks) succeeded"
grep -qi 'Input/output error' <<<"$out" || fail "read of chunk $C failed without EIO: $out"
log "read of volume chunk $C (member $BAD chunk $MCH): EIO"
# MEMBER_STATE follows MEMBER_ERROR from the same health work
fl_wait 10 grep -q member_state /tmp/mon.json ||
	{ cat /tmp/mon.json /tmp/mon.err; fail "no member_state event within 10 s of the error"; }
echo "-$S-$E" > "$NB/badblocks" || fail "clear badblocks -$S-$E on $NB"
fx_run fxctl remove t18
fl_wait 20 eval '! kill -0 $MON 2>/dev/null' ||
	{ cat /tmp/mon.json; fail "monitor --count 4 still running 20 s after the 4th event"; }
wait $MON && rc=0 || rc=$?
[ $rc = 0 ] || { cat /tmp/mon.err; fail "monitor --count 4 exited $rc"; }
sed 's/^/   json: /' /tmp/mon.json

# the JSON lines
[ "$(wc -l </tmp/mon.json)" = 4 ] || fail "expected 4 lines, got $(wc -l </tmp/mon.json)"
jq -e . /tmp/mon.json >/dev/null || fail "not one JSON object per line"
[ "$(jq -c . /tmp/mon.json | wc -l)" = 4 ] || fail "a line holds more than one JSON value"
jq -se 'all(.schema_version == 2 and (.timestamp | type) == "number" and
	.volume.name == "t18" and .volume.disk == $d)' --arg d "$DISK" /tmp/mon.json >/dev/null ||
	fail "schema_version, timestamp or volume {name t18, disk $DISK} wrong in a line"
EV=$(jq -r .event /tmp/mon.json | paste -sd' ')
expect_eq "$EV" "created member_error member_state destroyed" "event order"
line() { sed -n "$1p" /tmp/mon.json; }
MD=${M[$BAD]#/dev/}
line 2 | jq -e --arg md "$MD" '.member.index == 1 and .member.disk == $md and
	.member.errno == 5 and .member.errno_name == "EIO" and .member.state == "failing"' >/dev/null ||
	fail "member_error: expected member 1 ($MD), errno 5 EIO, failing: $(line 2)"
line 3 | jq -e '.member.index == 1 and .member.state == "failing" and .member.errno == null' \
	>/dev/null || fail "member_state: expected member 1 failing: $(line 3)"
line 1 | jq -e 'has("member") | not' >/dev/null || fail "created carries a member: $(line 1)"

# the text lines
fl_wait 5 grep -q destroyed /tmp/mon.txt || { cat /tmp/mon.txt; fail "text monitor: no destroyed line"; }
sed 's/^/   text: /' /tmp/mon.txt
re='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z'
grep -Eq "$re created t18 \($DISK\)$" /tmp/mon.txt || fail "text: no 'created t18 ($DISK)' line"
grep -Eq "$re member-error t18 \($DISK\) member 1 $MD: error -5 \(EIO\), failing$" /tmp/mon.txt ||
	fail "text: no member-error line for member 1"
grep -Eq "$re member-state t18 \($DISK\) member 1 $MD: failing$" /tmp/mon.txt ||
	fail "text: no member-state line for member 1"
grep -Eq "$re destroyed t18 \($DISK\)$" /tmp/mon.txt || fail "text: no 'destroyed t18 ($DISK)' line"
[ "$(wc -l </tmp/mon.txt)" = 4 ] || fail "text: expected 4 lines"

# the module goes away: exit 5
fx_unload
fl_wait 20 eval '! kill -0 $TXT 2>/dev/null' || fail "text monitor still running 20 s after rmmod"
wait $TXT && rc=0 || rc=$?
PIDS=()
expect_eq "$rc" 5 "monitor exit status after rmmod"
grep -q unloaded /tmp/mon.txterr || fail "monitor did not say the module was unloaded: $(cat /tmp/mon.txterr)"
# (monitor without the module is not checked here: resolving the family
# autoloads fxblk through its net-pf-16 alias; the unit tests cover exit 5)
trap - EXIT
pass "created, member_error (member 1 EIO), member_state (failing), destroyed as JSON Lines (unprivileged) and text; exit 5 on rmmod"
