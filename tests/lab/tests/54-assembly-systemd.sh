#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=64 udev timeout=600 file=systemd/fxblk-assemble@.service
# lab-break: break=global ~ B did not assemble within 30 s while A.s member 3 stalled
# Issue 19, "udev does the least, systemd does the work", through the real
# udevd and the project's rules (udev/61-fxblk-assembly.rules):
# - Per-volume locks: volume A (members 0 and 3) and B (members 1 and 2).
#   Member 3 is recorded, then stalls (its nvmet port removed: its I/O waits
#   for the reconnect); the add event of member 0 makes A's incremental read
#   member 3 again and hang there, holding A's lock. The add events of
#   members 1 and 2 must still assemble B (with one global lock, as before,
#   B waited for A's stalled member). With the port back, A assembles.
# - The systemd hand-off: with /run/systemd/system present (systemd's own
#   test of whether it runs; udevd here is the plain one), add events of all
#   four members start nothing in udev; exactly the member whose event
#   completed its volume's records carries
#   SYSTEMD_WANTS=fxblk-assemble@<uuid>.service (the others
#   FXBLK_COMPLETE=0); the unit file's ExecStart (%i = the uuid) then starts
#   the volume, and a second run finds it running. What this cannot show:
#   systemd itself starting the unit (the lab has no systemd).
# - fxctl doctor warns about both volumes while they are stopped (labelled
#   members present, volume not running, with the fix).
# - assemble A waits for A's lock while another process holds it and wipes
#   member 3's label meanwhile: assemble reads the members again and refuses
#   (exit 3, member missing) instead of creating A over a disk that is no
#   longer its member.
# Break mode (the run must fail): break=global makes every incremental hold
# one lock of all volumes (flock on /run/fxblk/lock around fxctl, through a
# wrapper at /usr/sbin/fxctl), as fxctl did before: B does not assemble.
. /lab/lib.sh
. /lab/faults.sh
fx_breaks global -- "$@"
[ "${FX_UDEV:-0}" = 1 ] || fail "udevd is not running: the header needs 'udev' (tests/lab/run --udev)"
UNIT=/lab/files/fxblk-assemble@.service
[ -f "$UNIT" ] || fail "no $UNIT (header file=)"
fx_load
read -r -a M <<< "$FX_MEMBERS"
I=3
settle() { fx_settle; }
add_event() {	# add_event DEV...: an "add" event for each namespace
	local d
	for d in "$@"; do
		udevadm trigger --action=add "/sys/class/block/${d#/dev/}" || fail "udevadm trigger --action=add $d"
	done
}
uuid_of() { fxctl -o json examine "$1" | jq -r .label.volume_uuid; }
prop() { udevadm info -q property "$1" | sed -n "s/^$2=//p"; }
running() { fxctl -o json list | jq -r '.volumes[].name' | sort | paste -sd' '; }
cleanup() {
	rm -rf /run/systemd
	if [ "$BREAK" = global ] && [ -f /usr/sbin/fxctl.real ]; then
		rm -f /usr/sbin/fxctl && mv /usr/sbin/fxctl.real /usr/sbin/fxctl
	fi
	[ ! -d "$FL_NVMET/ports/2" ] || udevadm settle --timeout=60
	fl_stallable_end $I
}
trap cleanup EXIT

# member I through a port of its own, so that it can stall and come back
fl_stallable $I
M[I]=$FL_DEV
settle
fx_run fxctl create A --chunk 64K "${M[0]}" "${M[3]}"
fx_run fxctl create B --chunk 64K "${M[1]}" "${M[2]}"
UA=$(uuid_of "${M[0]}") UB=$(uuid_of "${M[1]}")
log "A = ${M[0]} ${M[3]} ($UA), B = ${M[1]} ${M[2]} ($UB)"
settle
fx_run fxctl stop A
fx_run fxctl stop B
rm -rf /run/fxblk
# doctor names the labelled volumes that do not run, with the reason
fxctl -o json doctor > /tmp/doctor.json || fail "fxctl doctor exited $? (warnings only expected)"
for v in A B; do
	u=$([ $v = A ] && echo "$UA" || echo "$UB")
	n=$(jq --arg u "$u" '[.findings[] | select(.check == "labels" and .severity == "warning"
		and (.message | contains("every member present, but the volume is not running"))
		and (.message | contains($u)))] | length' /tmp/doctor.json)
	expect_eq "$n" 1 "doctor warnings for stopped volume $v"
done
jq -r '.findings[] | select(.check == "labels") | "  doctor: \(.severity): \(.message)"' /tmp/doctor.json

if [ "$BREAK" = global ]; then
	mv /usr/sbin/fxctl /usr/sbin/fxctl.real
	printf '#!/bin/sh\nmkdir -p /run/fxblk\nexec flock /run/fxblk/lock /usr/sbin/fxctl.real "$@"\n' > /usr/sbin/fxctl
	chmod 755 /usr/sbin/fxctl
fi

log "per-volume locks: member 3 of A recorded, then stalled"
add_event "${M[3]}"
settle
[ -f "/run/fxblk/$UA/${M[3]#/dev/}" ] || { ls -R /run/fxblk; fail "member ${M[3]} of A not recorded"; }
expect_eq "$(running)" "" "volumes running with A's member 0 not seen yet"
fl_port_del 2
fl_wait 20 eval '[ "$(fl_ctrl_state "$(fl_ctrl $I)")" != live ]' || fail "member $I's controller still live without its port"
echo 3 > /proc/sys/vm/drop_caches
log "member $I stalled ($(fl_ctrl_state "$(fl_ctrl $I)")); add event of A's member 0"
add_event "${M[0]}"
# A's incremental re-reads member 3 under A's lock: wait until it sits there
fl_wait 30 eval 'grep -l "^State:.*D" /proc/[0-9]*/status 2>/dev/null | while read -r s; do
	tr "\0" " " < "${s%status}cmdline"; echo; done | grep -q "fxctl.* incremental"' ||
	fail "no fxctl incremental blocked on the stalled member"
log "A's incremental is blocked on member $I; add events of B's members"
add_event "${M[1]}" "${M[2]}"
# no settle here: it would wait for A's stuck event
fx_wait_path /dev/fx/B 30 || { ls -R /run/fxblk; fail "B did not assemble within 30 s while A's member $I stalled"; }
expect_eq "$(running)" B "volumes running while member $I stalls"
log "B assembled while A waits on its stalled member; member $I's port back"
fl_port_add 2 4421 $I
fx_wait_path /dev/fx/A 90 || fail "A did not assemble after member $I came back"
settle
expect_eq "$(running)" "A B" "volumes running after member $I came back"
log "A assembled once member $I was back"

log "systemd hand-off: add events record, the completing member wants the unit"
fx_run fxctl stop A
fx_run fxctl stop B
rm -rf /run/fxblk
mkdir -p /run/systemd/system
add_event "${M[@]}"
settle
sleep 1
settle
expect_eq "$(running)" "" "volumes udev started with systemd present (it must start none)"
for v in A B; do
	u=$([ $v = A ] && echo "$UA" || echo "$UB")
	want=fxblk-assemble@$u.service n=0
	for d in "${M[@]}"; do
		[ "$(uuid_of "$d")" = "$u" ] || continue
		case "$(prop "$d" SYSTEMD_WANTS)" in
		*"$want"*) n=$((n + 1)); expect_eq "$(prop "$d" FXBLK_COMPLETE)" 1 "$d: FXBLK_COMPLETE" ;;
		*) expect_eq "$(prop "$d" FXBLK_COMPLETE)" 0 "$d: FXBLK_COMPLETE" ;;
		esac
	done
	expect_eq "$n" 1 "members of $v whose SYSTEMD_WANTS has $want"
	[ -f "/run/fxblk/$u/${M[0]#/dev/}" ] || [ -n "$(ls "/run/fxblk/$u")" ] || fail "nothing recorded for $v"
done
udevadm info -q property "${M[@]}" | grep -E '^(DEVNAME|FXBLK_COMPLETE|SYSTEMD_WANTS)=' | sed 's/^/  /'
# the unit's own command line, %i expanded as systemd does
exec_line=$(sed -n 's/^ExecStart=//p' "$UNIT")
[ -n "$exec_line" ] || fail "no ExecStart= in $UNIT"
for u in "$UA" "$UB"; do
	cmd=${exec_line//%i/$u}
	log "as fxblk-assemble@$u.service: $cmd"
	out=$($cmd 2>&1) || fail "'$cmd' failed: $out"
	echo "  $out"
	expect_match "$out" "^assembled " "first run of the unit for $u"
	out=$($cmd 2>&1) || fail "'$cmd' (again) failed: $out"
	expect_match "$out" "already running" "second run of the unit for $u"
done
settle
expect_eq "$(running)" "A B" "volumes running after the units ran"
out=$(fxctl incremental --uuid 0f0f0f0f-0000-4000-8000-00000000b0b0 2>&1) ||
	fail "incremental --uuid of a volume nothing recorded: $out"
expect_match "$out" "no member recorded" "incremental --uuid of an unknown volume"
fx_expect_fail --rc 2 --msg "not a volume UUID" fxctl incremental --uuid not-a-uuid
fx_run fxctl remove B

log "assemble reads the members again when another fxctl held the volume's lock"
fx_run fxctl stop A
settle
# the holder takes A's lock first, and while assemble waits for it, wipes
# member 3's label (as a create or an import rewrites labels under it)
flock "/run/fxblk/$UA.lock" sh -c "sleep 5; fxctl wipe --yes ${M[3]} >/dev/null 2>&1" &
hp=$!
sleep 1
t0=$(fl_now)
fx_expect_fail --rc 3 --msg "1 of 2 members" fxctl assemble A
t1=$(fl_now)
wait $hp || fail "the lock holder's wipe of ${M[3]} failed"
awk -v a="$t0" -v b="$t1" 'BEGIN {exit !(b - a >= 2)}' ||
	fail "assemble A returned after $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') s: it did not wait for A's lock"
expect_eq "$(running)" "" "volumes running after assemble A was refused"
pass "B assembled while A's member stalled; with systemd, udev only recorded and one member per volume wanted fxblk-assemble@<uuid>.service, whose command started it"
