#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1 members=4 timeout=900
# Lifecycle races (what 14-errors and 15-create-remove-leaks do not cover:
# 14 races two creates over one member and refuses a remove of an open or
# mounted volume; 15 creates/removes sequentially and rmmods with no volume):
#  1. open against remove: 3 readers open and read /dev/fxN in a loop while
#     it is removed (retried while busy); each open either works on a live
#     volume or fails cleanly (ENXIO/ENOENT), a refused remove says busy, and
#     in the end the volume is gone and its members free;
#  2. storms: 4 processes each create and remove their own single-member
#     volume ROUNDS times while 2 processes dump list and stats in a loop:
#     every create/remove succeeds, every dump is valid JSON, nothing is left;
#  3. remove and rmmod under I/O: both refused while fio verifies on the
#     volume, fio's verify still passes, then remove works;
#  4. rmmod with idle volumes: volumes that nobody holds open go away with
#     the module, members are free, a reload starts empty and works.
# Bounded: every fxctl call runs under timeout 60; the lab's hung-task report
# (hung_task_timeout_secs=20) fails the run.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
ROUNDS=${1:-4}	# tests/lab/run ... -- 25-lifecycle-races.sh ROUNDS
T=60
fx_load
cleanup() {
	kill ${PIDS:-} 2>/dev/null
	wait 2>/dev/null
	for v in $(fxctl -o json list 2>/dev/null | jq -r '.volumes[].name'); do fxctl remove "$v" >/dev/null 2>&1; done
}
trap cleanup EXIT
fl_hung_task 20
fx_mark races
nvols() { timeout $T fxctl -o json list | jq '.volumes | length'; }
members_free() {
	local m
	for m in "${M[@]}"; do
		[ -z "$(ls "/sys/block/${m#/dev/}/holders")" ] || fail "$1: $m still held by $(ls "/sys/block/${m#/dev/}/holders")"
	done
}

# --- 1. open against remove ---------------------------------------------------
OPENS_OK=0 OPENS_REFUSED=0 RM_BUSY=0
for r in $(seq 1 $ROUNDS); do
	timeout $T fxctl create t25o --chunk 64K "${M[@]}" >/dev/null || fail "round $r: create t25o"
	DEV=$(fxdev t25o) || fail "round $r: no device for t25o"
	: >/tmp/opens
	# readers: open+read in a loop until the device is gone (or 40 times)
	for _ in 1 2 3; do
		(for _ in $(seq 1 40); do
			if out=$(dd if="$DEV" of=/dev/null bs=4k count=1 iflag=direct 2>&1); then echo ok
			else echo "refused $out"; [ -e "$DEV" ] || break; fi
		done >>/tmp/opens) &
	done
	# remove while they read; busy is an allowed answer: try again
	sleep 0.$((RANDOM % 5))
	for _ in $(seq 1 100); do
		out=$(timeout $T fxctl remove t25o 2>&1) && break
		[ $? = 124 ] && fail "round $r: fxctl remove hung"
		grep -qiE 'open|busy' <<<"$out" || fail "round $r: remove failed but not with busy: $out"
		RM_BUSY=$((RM_BUSY + 1))
	done
	wait
	if fxdev t25o >/dev/null; then	# busy until the readers ended
		timeout $T fxctl remove t25o >/dev/null || fail "round $r: remove after the readers ended"
	fi
	bad=$(grep '^refused' /tmp/opens | grep -vE 'No such (device|file)|No such device or address' || true)
	[ -z "$bad" ] || fail "round $r: an open/read during remove failed unexpectedly: $bad"
	OPENS_OK=$((OPENS_OK + $(grep -c '^ok' /tmp/opens)))
	OPENS_REFUSED=$((OPENS_REFUSED + $(grep -c '^refused' /tmp/opens)))
	fxdev t25o >/dev/null && fail "round $r: t25o still has a disk after remove"
done
[ "$(nvols)" = 0 ] || fail "open-vs-remove: volumes left: $(fxctl list)"
members_free "open-vs-remove"
log "open vs remove: $ROUNDS rounds, $OPENS_OK reads done, $OPENS_REFUSED opens refused cleanly, remove busy $RM_BUSY times"

# --- 2. create/remove storms with dumps running ---------------------------------
dumper() { # dumper KIND: list or stats of every volume, until killed
	local n=0 v
	while :; do
		if [ "$1" = list ]; then
			timeout $T fxctl -o json list >/tmp/d.$1 2>&1 || { [ $? = 124 ] && echo HUNG; }
			jq -e .volumes /tmp/d.$1 >/dev/null 2>&1 || echo "BAD $(head -c 200 /tmp/d.$1)"
		else
			for v in $(jq -r '.volumes[]?.name' /tmp/d.list 2>/dev/null); do
				timeout $T fxctl -o json stats "$v" >/tmp/d.$1 2>&1
				case $? in
				0) jq -e .volume /tmp/d.$1 >/dev/null 2>&1 || echo "BAD $(head -c 200 /tmp/d.$1)" ;;
				124) echo HUNG ;;
				# it may vanish between list and stats: "no volume" is fine
				*) grep -q 'no volume' /tmp/d.$1 || echo "BAD $(head -c 200 /tmp/d.$1)" ;;
				esac
			done
		fi
		n=$((n + 1)); echo "n $n"
	done
}
stormer() { # stormer I: create/remove fxs$I over member I, ROUNDS times
	local i=$1 r
	for r in $(seq 1 $ROUNDS); do
		timeout $T fxctl create "fxs$i" "${M[$i]}" >/dev/null 2>&1 || { echo "create fxs$i round $r failed"; continue; }
		dd if="$(fxdev "fxs$i")" of=/dev/null bs=4k count=4 iflag=direct 2>/dev/null || echo "read fxs$i round $r failed"
		timeout $T fxctl remove "fxs$i" >/dev/null 2>&1 || echo "remove fxs$i round $r failed"
	done
}
PIDS=
dumper list >/tmp/dump.list & PIDS+=" $!"
dumper stats >/tmp/dump.stats & PIDS+=" $!"
t0=$(fl_now)
SP=
for i in 0 1 2 3; do stormer $i >/tmp/storm.$i & SP+=" $!"; done
wait $SP
kill $PIDS; wait $PIDS 2>/dev/null
PIDS=
STORM_S=$(awk -v a="$t0" -v n="$(fl_now)" 'BEGIN {printf "%.1f", n - a}')
cat /tmp/storm.* | head -20
[ -z "$(cat /tmp/storm.*)" ] || fail "create/remove storm: $(cat /tmp/storm.* | wc -l) operations failed"
grep -h '^HUNG' /tmp/dump.* && fail "a dump hung for $T s during the storm"
grep -h '^BAD' /tmp/dump.* | head -5
grep -qh '^BAD' /tmp/dump.* && fail "a dump during the storm printed invalid JSON or failed"
DUMPS=$(($(grep -c '^n' /tmp/dump.list) + $(grep -c '^n' /tmp/dump.stats)))
[ "$(nvols)" = 0 ] || fail "storm: volumes left: $(fxctl list)"
members_free "storm"
log "storm: 4 x $ROUNDS create/remove cycles in $STORM_S s with $DUMPS list/stats dump loops running"

# --- 3. remove and rmmod under I/O ---------------------------------------------
fx_run timeout $T fxctl create t25io --chunk 64K "${M[@]}"
DEV=$(fxdev t25io) || fail "no device for t25io"
fio --eta=never --name=io --filename="$DEV" --direct=1 --ioengine=libaio --iodepth=8 --rw=randwrite \
	--bsrange=4k-256k --size=32M --rate=4m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--output-format=json --output=/tmp/fio.json & FIO=$!
PIDS=$FIO
# fio holds the volume open once its job has started (slow to start under TCG)
fl_wait 30 eval '[ "$(fxctl -o json show t25io | jq .volume.open_count)" -gt 0 ]' ||
	fail "fio did not open $DEV within 30 s"
# fio may finish before the last round on a fast (or slow) host: an open fd
# keeps the volume open for the whole loop, whatever fio's timing
exec 3<"$DEV"
REFUSED=0 UNDER_IO=0
for _ in 1 2 3; do
	kill -0 $FIO 2>/dev/null && UNDER_IO=$((UNDER_IO + 1))
	fx_expect_fail --msg 'open|busy' timeout $T fxctl remove t25io
	REFUSED=$((REFUSED + 1))
	fx_expect_fail rmmod fxblk
	[ -d /sys/module/fxblk ] || fail "rmmod fxblk under I/O removed the module"
	REFUSED=$((REFUSED + 1))
	sleep 1
done
exec 3<&-
[ $UNDER_IO -gt 0 ] || fail "fio had finished before the first remove/rmmod attempt: nothing was tested under I/O"
wait $FIO; rc=$?
PIDS=
[ $rc = 0 ] && [ "$(jq '.jobs[0].error' /tmp/fio.json)" = 0 ] || { cat /tmp/fio.json; fail "fio verify while remove/rmmod were refused: rc $rc"; }
VIOS=$(jq '.jobs[0].read.total_ios' /tmp/fio.json)
fx_run timeout $T fxctl remove t25io
log "remove and rmmod under I/O: refused $REFUSED times ($UNDER_IO rounds with fio running), fio verified $VIOS reads, remove afterwards worked"

# --- 4. rmmod with idle volumes --------------------------------------------------
fx_run timeout $T fxctl create t25a --chunk 64K "${M[0]}" "${M[1]}"
fx_run timeout $T fxctl create t25b "${M[2]}"
fx_run timeout $T fxctl create t25c "${M[3]}"
dd if="$(fxdev t25a)" of=/dev/null bs=64k count=4 iflag=direct 2>/dev/null || fail "read t25a"
fx_unload
[ -z "$(fx_disks)" ] || fail "fx disks left after rmmod: $(fx_disks)"
members_free "rmmod with idle volumes"
fx_load
[ "$(nvols)" = 0 ] || fail "volumes after a reload: $(fxctl list)"
# rmmod removed the volumes, not their labels: a different volume over
# the same members needs --force
fx_run timeout $T fxctl create --force t25a "${M[@]}"
fx_run timeout $T fxctl remove t25a
fx_dmesg_clean_since races
fl_result "rounds=$ROUNDS opens_ok=$OPENS_OK opens_refused=$OPENS_REFUSED remove_busy=$RM_BUSY storm_cycles=$((4 * ROUNDS))" \
	"storm_s=$STORM_S dump_loops=$DUMPS refused_under_io=$REFUSED ios_verified=$VIOS idle_volumes_rmmod=3"
trap - EXIT
pass "open vs remove, storms with dumps, remove/rmmod refused under I/O, rmmod with idle volumes"
