#!/bin/bash
# lab: kernels=debug members=4 size-mb=256 timeout=1500
# lab-allow: fxblk: [^ ]+: member 1 \([^)]*\) failed [0-9]+ I/O\(s\)
# fail_make_request (CONFIG_FAIL_MAKE_REQUEST) on one member under fxblk; debug
# kernel only (make check-debug runs tests/lab/debug/, make check does not).
#
# Which disk's make-it-fail counts: fxblk sends its member bios with
# submit_bio_noacct() to the disk it opened, the nvme multipath head
# /dev/nvmeXn1, and should_fail_bio() there tests that disk's make-it-fail;
# the head then resubmits the same bio to a path disk nvmeXcYnZ, whose
# make-it-fail counts as well (the bio fails there with EIO, no failover).
# Both are exercised; the volume's own /dev/fxN flag stays off.
#
#  1. probability 100 on member 1's head: reading 4 KiB from each of the
#     first 64 chunks, exactly the chunks on member 1 fail (EIO), every other
#     one reads back what was written; fxctl stats count read errors on
#     member 1 only, exactly one per failed read.
#  2. the same with member 1's path disk flagged instead of its head.
#  3. under fio (randrw 4 KiB, QD16, continue_on_error) with 10% of member 1's
#     bios failing: fio's error count equals the errors fxblk counted on
#     member 1, the other members count none, and no other member's I/O failed.
#  4. injection off: the pattern area is intact and a fio write+verify pass
#     over the whole test area succeeds. The lab checks the log (KASAN,
#     lockdep, WARN, ...) afterwards.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}"); N=4
FMR=/sys/kernel/debug/fail_make_request
grep -q " /sys/kernel/debug debugfs " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
[ -d $FMR ] || fail "$FMR missing: not the debug kernel (CONFIG_FAIL_MAKE_REQUEST + FAULT_INJECTION_DEBUG_FS)"
H1=${M[1]#/dev/}
[ -e /sys/block/$H1/make-it-fail ] || fail "/sys/block/$H1/make-it-fail missing"

inject_off() {
	local d
	for d in /sys/block/*/make-it-fail; do echo 0 > "$d"; done
	echo 0 > $FMR/probability
}
trap 'inject_off; fxctl remove t20 >/dev/null 2>&1' EXIT
# global attributes: no stack dumps (verbose=0; 2 would print a Call Trace per
# failure, which the lab's log check rightly refuses), unlimited times
echo 0 > $FMR/verbose
echo 1 > $FMR/interval
echo -1 > $FMR/times
echo 0 > $FMR/space

fx_load
CH=65536
fxctl create t20 --chunk 64K "${M[@]}" || fail "fxctl create t20"
DEV=$(fxdev t20) || fail "no /dev/fxN named t20"
DISK=${DEV#/dev/}
[ "$(cat /sys/block/$DISK/make-it-fail)" = 0 ] || fail "$DEV make-it-fail is on"
stats() { fxctl -o json stats t20 >"$1" || fail "fxctl -o json stats t20"; }
# errs FILE I: read+write errors of member I
errs() { echo $(($(jv volume.members.$2.read.errors "$1") + $(jv volume.members.$2.write.errors "$1"))); }

# The pattern: 64 chunks (16 per member), written through the volume.
NCH=64
head -c $((NCH * CH)) /dev/urandom > /tmp/pat
dd if=/tmp/pat of="$DEV" bs=$CH oflag=direct conv=notrunc 2>/dev/null || fail "writing the pattern to $DEV"
log "pattern of $NCH chunks written to $DEV"

# chunk_pass WHAT DISKFLAG: flag one disk, read every chunk alone, check
chunk_pass() {
	local what=$1 flag=$2 c ok=0 bad=0 want i d
	stats /tmp/s0
	echo 100 > $FMR/probability
	echo 1 > "$flag"
	for ((c = 0; c < NCH; c++)); do
		# 4 KiB from the middle of chunk c: one member bio, never split
		if dd if="$DEV" of=/tmp/chunk bs=4096 skip=$((c * 16 + 7)) count=1 iflag=direct 2>/tmp/dd.err; then
			[ $((c % N)) != 1 ] || fail "$what: chunk $c (member 1) read fine with $flag set"
			cmp -s /tmp/chunk <(dd if=/tmp/pat bs=4096 skip=$((c * 16 + 7)) count=1 2>/dev/null) ||
				fail "$what: chunk $c (member $((c % N))) does not read back what was written"
			ok=$((ok + 1))
		else
			[ $((c % N)) = 1 ] || fail "$what: chunk $c (member $((c % N))) failed: $(cat /tmp/dd.err)"
			grep -q 'Input/output error' /tmp/dd.err || fail "$what: chunk $c: not EIO: $(cat /tmp/dd.err)"
			bad=$((bad + 1))
		fi
	done
	echo 0 > "$flag"
	echo 0 > $FMR/probability
	stats /tmp/s1
	want=$((NCH / N))
	[ $bad = "$want" ] || fail "$what: $bad chunks failed, expected $want"
	for ((i = 0; i < N; i++)); do
		d=$(($(errs /tmp/s1 $i) - $(errs /tmp/s0 $i)))
		echo "   member $i ${M[$i]}: $d errors counted by fxblk"
		if [ $i = 1 ]; then
			[ $d = "$want" ] || fail "$what: fxblk counted $d errors on member 1, expected $want"
		else
			[ $d = 0 ] || fail "$what: fxblk counted $d errors on member $i, which was not flagged"
		fi
	done
	log "$what: $bad/$NCH chunks failed, all on member 1; $ok read back intact"
}

# 1. the head disk fxblk opened
chunk_pass "head $H1" /sys/block/$H1/make-it-fail

# 2. the path disk under it (native nvme multipath)
P1=
for p in /sys/block/$H1/multipath/* /sys/block/${H1%n*}c*n${H1##*n}; do
	[ -e "$p/make-it-fail" ] && { P1=${p##*/}; break; }
done
if [ -n "$P1" ]; then
	chunk_pass "path $P1 under $H1" /sys/block/$P1/make-it-fail
else
	echo "SKIP: path disk: $H1 has no nvme multipath path disk (NVME_MULTIPATH off?)"
fi

# 3. fio load, 10% of member 1's bios fail
stats /tmp/s0
echo 10 > $FMR/probability
echo 1 > /sys/block/$H1/make-it-fail
fio --eta=never --name=fmr --filename="$DEV" --direct=1 --rw=randrw --bs=4k --iodepth=16 \
	--ioengine=libaio --offset=$((8 * 1048576)) --size=$((32 * 1048576)) --io_size=$((16 * 1048576)) \
	--continue_on_error=io --output-format=json --output=/tmp/fio.json
rc=$?
echo 0 > /sys/block/$H1/make-it-fail
echo 0 > $FMR/probability
stats /tmp/s1
FE=$(jq '.jobs[0].total_err // empty' /tmp/fio.json) || { cat /tmp/fio.json; fail "fio JSON unreadable (rc $rc)"; }
[[ $FE =~ ^[0-9]+$ ]] || { cat /tmp/fio.json; fail "fio reports no total_err (rc $rc)"; }
NIO=$(( $(jq '.jobs[0].read.total_ios + .jobs[0].write.total_ios' /tmp/fio.json) ))
D1=$(($(errs /tmp/s1 1) - $(errs /tmp/s0 1)))
log "fio: $NIO I/Os, $FE errors; fxblk counted $D1 on member 1"
# ~1/4 of the I/Os go to member 1, 10% of those fail: expect about NIO/40
[ "$FE" -gt 0 ] || fail "fio saw no errors with 10% of member 1's bios failing"
[ "$FE" -lt $((NIO / 4)) ] || fail "fio saw $FE errors in $NIO I/Os: more than member 1's share"
[ "$D1" = "$FE" ] || fail "fxblk counted $D1 errors on member 1, fio saw $FE failed I/Os"
for i in 0 2 3; do
	d=$(($(errs /tmp/s1 $i) - $(errs /tmp/s0 $i)))
	[ $d = 0 ] || fail "fio phase: $d errors on member $i, which was not flagged"
done

# 4. injection off: nothing damaged, the volume works
cmp -s /tmp/pat <(dd if="$DEV" bs=$CH count=$NCH iflag=direct 2>/dev/null) ||
	fail "the pattern area of $DEV changed (reads only were failed there)"
fio --eta=never --name=after --filename="$DEV" --direct=1 --rw=randwrite --bs=4k --iodepth=16 \
	--ioengine=libaio --offset=$((8 * 1048576)) --size=$((32 * 1048576)) --io_size=$((8 * 1048576)) \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.out ||
	{ cat /tmp/fio.out; fail "fio verify after the injection"; }
stats /tmp/s2
for i in 0 1 2 3; do
	d=$(($(errs /tmp/s2 $i) - $(errs /tmp/s1 $i)))
	[ $d = 0 ] || fail "$d errors on member $i with the injection off"
done
fxctl remove t20 || fail "fxctl remove t20"
trap - EXIT
inject_off
pass "fail_make_request: errors on the flagged member only ($FE under fio, exact counts)"
