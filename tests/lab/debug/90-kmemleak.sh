#!/bin/bash
# lab: kernels=debug members=4 size-mb=256 timeout=1800 file=build/lab-debug/kmemleak-test.ko:/lab/files/kmemleak-test.ko
# kmemleak after fxblk's whole life cycle; debug kernel only (make check-debug).
#
# Policy (docs/reliability.md, "Debug kernel"): suspects that exist before
# fxblk is loaded (boot, fabric set-up) are scanned and cleared first, so they
# are never reported; after that ANY new suspect fails the test, whether or
# not its backtrace names fxblk: objects the block layer allocates on fxblk's
# behalf (disks, queues, bios) carry core frames first. Suspects whose
# backtrace has fxblk frames are listed as "attributed to fxblk".
#
# Workload (volumes' whole lives, error paths included): create/remove with
# several chunk sizes and member counts, fio write+verify, stats and list
# dumps, refused creates (fxctl's checks, and fxblk-nltest's hand-made
# messages the kernel refuses), remove while open (refused), 8 create/remove rounds, then scans with fxblk
# still loaded (so backtraces name it) and again after rmmod fxblk.
# Positive control: the kernel's own kmemleak-test sample module leaks on
# purpose; after loading it a scan must report its objects, or this test
# could not see a leak at all.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
KL=/sys/kernel/debug/kmemleak
grep -q " /sys/kernel/debug debugfs " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
[ -e $KL ] || fail "$KL missing: not the debug kernel (CONFIG_DEBUG_KMEMLEAK)"

# scan: two scans a few seconds apart (an object must be unreferenced in
# both to be reported; the second also sees objects freed by RCU since)
scan() {
	echo scan > $KL || fail "kmemleak scan refused (kmemleak disabled? $(dmesg | grep -m1 'kmemleak:.*disabl'))"
	sleep 5
	echo scan > $KL || fail "kmemleak scan refused"
	cat $KL > "$1" || fail "reading $KL"
}
# suspects FILE: number of reported objects
suspects() { grep -c '^unreferenced object' "$1"; }
# fxblk_suspects FILE: the reports whose backtrace names fxblk (a frame in
# the module, "[fxblk]", or an fxblk_ function; not a comm like fxblk-nltest)
fxblk_suspects() {
	awk '/^unreferenced object/ { if (r ~ /\[fxblk\]|fxblk_[a-z]/) printf "%s", r; r = "" }
	     { r = r $0 "\n" } END { if (r ~ /\[fxblk\]|fxblk_[a-z]/) printf "%s", r }' "$1"
}

t0=$(cut -d' ' -f1 /proc/uptime)
scan /tmp/kl0
B=$(suspects /tmp/kl0)
log "baseline before fxblk: $B suspects (boot, fabric), cleared"
[ "$B" = 0 ] || grep -A12 -m3 '^unreferenced object' /tmp/kl0 | grep -E '^unref|\[<' | head -n 24
echo clear > $KL

# ---- workload -------------------------------------------------------------
fx_load
trap 'fxctl remove k1 >/dev/null 2>&1; fxctl remove k2 >/dev/null 2>&1' EXIT
fxctl create k1 --chunk 64K "${M[@]:0:4}" || fail "create k1"
D1=$(fxdev k1) || fail "no /dev/fxN named k1"
fio --eta=never --name=kl --filename="$D1" --direct=1 --rw=randwrite --bsrange=512-1M \
	--iodepth=16 --ioengine=libaio --size=16M --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --output=/tmp/fio.out || { cat /tmp/fio.out; fail "fio verify on $D1"; }
fxctl stats k1 >/dev/null || fail "stats k1"
fxctl -o json list >/dev/null || fail "list"
fxctl -o json show k1 >/dev/null || fail "show k1"
# refusals fxctl makes itself (busy member, missing device, bad chunk, name)
fx_expect_fail fxctl create k2 --chunk 64K "${M[0]}" "${M[1]}"
fx_expect_fail fxctl create k2 --chunk 64K /dev/nonexistent "${M[2]}"
fx_expect_fail fxctl create k2 --chunk 3K "${M[2]}" "${M[3]}"
fx_expect_fail fxctl create k1 --chunk 64K "${M[2]}" "${M[3]}"
# remove while open is refused and leaves the volume working
exec 7<"$D1"
fx_expect_fail fxctl remove k1
exec 7<&-
fxctl remove k1 || fail "remove k1"
# the kernel's own refusals and malformed messages (fxblk-nltest's cases, as
# root and unprivileged)
fx_run fxblk-nltest
fx_run as_nobody fxblk-nltest --expect-eperm
for r in 1 2 3 4 5 6 7 8; do
	n=$((r % 3 + 2))
	fxctl create k2 --chunk $((4 << (r % 4)))K "${M[@]:0:$n}" >/dev/null || fail "round $r: create k2 over $n"
	D2=$(fxdev k2) || fail "round $r: no /dev/fxN named k2"
	dd if=/dev/urandom of="$D2" bs=64k count=16 oflag=direct 2>/dev/null || fail "round $r: write $D2"
	dd if="$D2" of=/dev/null bs=64k count=16 iflag=direct 2>/dev/null || fail "round $r: read $D2"
	fxctl remove k2 >/dev/null || fail "round $r: remove k2"
done
trap - EXIT
log "workload done in $(awk -v a="$t0" '{printf "%.0f", $1 - a}' /proc/uptime) s"

# ---- scans ---------------------------------------------------------------
sleep 5	# RCU-deferred frees of the last volume; kmemleak skips objects < 5 s old
scan /tmp/kl1
N1=$(suspects /tmp/kl1)
fx_unload
scan /tmp/kl2
N2=$(suspects /tmp/kl2)
log "after the workload, fxblk loaded: $N1 new suspects; after rmmod: $N2"
if [ "$N1" != 0 ] || [ "$N2" != 0 ]; then
	echo "--- suspects attributed to fxblk (backtrace names it):"
	fxblk_suspects /tmp/kl1
	echo "--- all suspects (fxblk loaded, then after rmmod):"
	cat /tmp/kl1 /tmp/kl2 | head -n 200
	fail "kmemleak: $N1 new suspects with fxblk loaded, $N2 after rmmod (policy: any new suspect fails)"
fi

# ---- positive control: a module that leaks on purpose ----------------------
echo clear > $KL
insmod /lab/files/kmemleak-test.ko || fail "insmod kmemleak-test.ko"
rmmod kmemleak_test || fail "rmmod kmemleak_test"
sleep 5	# kmemleak reports no object younger than 5 s
scan /tmp/kl3
N3=$(suspects /tmp/kl3)
log "positive control: kmemleak-test.ko leaked on purpose, scan reports $N3 suspects"
[ "$N3" -ge 8 ] || { cat /tmp/kl3; fail "kmemleak found only $N3 of kmemleak-test's leaks: the scan cannot see leaks"; }
echo clear > $KL
pass "kmemleak: 0 new suspects after the fxblk workload (baseline $B cleared); control found $N3"
