#!/bin/bash
# Lab self-tests: prove that tests/lab/run can fail.
#   tests/lab/selftest/run.sh warn    [KERNEL]  a module WARNs at load, the script
#                                               passes -> run must exit 1 naming the WARNING
#   tests/lab/selftest/run.sh status  [KERNEL]  script exits 7 -> run must exit 7
#   tests/lab/selftest/run.sh timeout [KERNEL]  script hangs -> run must exit 124, say TIMEOUT
#                                               and show the kernel's messages from before
#   tests/lab/selftest/run.sh panic   [KERNEL]  kernel panics mid-script -> run must fail
#                                               (125, no status) and show the panic
#   tests/lab/selftest/run.sh ioerr   [KERNEL]  kernel logs "I/O error", the script passes
#                                               -> run must exit 1 naming the line
#   tests/lab/selftest/run.sh ioerr-allowed [KERNEL]  the same with "# lab-allow:" for
#                                               that line -> run must pass
#   tests/lab/selftest/run.sh taint   [KERNEL]  kernel tainted U, log clean -> run must exit 1
#   tests/lab/selftest/run.sh crash   [KERNEL]  --persist --boots 2: boot 1 WARNs, records
#                                               a line, crashes; boot 2 finds the line and
#                                               passes -> run must exit 1 naming the WARNING
#   tests/lab/selftest/run.sh known   [KERNEL]  a lockdep report listed in tests/lab/known-reports
#                                               (nvmet-rdma's locks, no fxblk frame) -> run passes,
#                                               says KNOWN; the same report with an fxblk frame
#                                               -> run must exit 1
#   tests/lab/selftest/run.sh nocrash [KERNEL]  --boots 2 and boot 1 ends normally -> exit 1
#   tests/lab/selftest/run.sh int3              no VM: run's stale-int3 classifier over a real
#                                               console excerpt: retried; with the int3 still in
#                                               the text, an earlier WARNING or a reported status:
#                                               not retried
#   tests/lab/selftest/run.sh db      [KERNEL]  run's spurious-#DB classifier over CI's lab 61
#                                               excerpt: retried; with another WARNING, an I/O error,
#                                               no end marker, another WARNING site or a kernel GPF:
#                                               not retried; then two VMs (db-boot.sh) that log
#                                               the excerpt: with an I/O error too -> exit 1, no
#                                               second boot; alone -> boots again, NOTE, exit 0
#   tests/lab/selftest/run.sh settle  [KERNEL]  --udev: lib.sh's fx_settle against a RUN+= program
#                                               that sleeps 20 s (must fail twice, naming it) and
#                                               one of 6 s (must pass on the retry, with a NOTE)
#   tests/lab/selftest/run.sh stall   [KERNEL]  an RCU stall report after fxblk is loaded -> exit 1,
#                                               no second boot; one before it is loaded (first
#                                               boot only) -> the lab boots again, says so, exit 0
#   tests/lab/selftest/run.sh batch   [KERNEL]  --batch of seven: passes; leaves a file in /tmp and
#                                               a module loaded (gone for the next test); WARNs (fails, the boot
#                                               stops); exits 7 on a fresh boot without the WARNING
#                                               in its log; hangs past its own --timeout (124);
#                                               panics (run again alone, 125)
# Exit 0 when the lab behaved as required. KERNEL: 5.10|6.1|6.12 (default 6.1).
set -uo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
CASE=${1:?usage: run.sh batch|warn|status|timeout|panic|ioerr|ioerr-allowed|taint|crash|nocrash|known|stall|settle|int3|db [KERNEL]}
KS=${2:-6.1}
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
. "$CACHE/kernels.env"
case $KS in 5.10) K=$FXBLK_KVER_5_10 ;; 6.1) K=$FXBLK_KVER_6_1 ;; 6.12) K=$FXBLK_KVER_6_12 ;; *) K=$KS ;; esac
RUN=$TOP/tests/lab/run
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
check() {	# check WANT_RC REGEX DESC: judge the run's status and output
	if [ "$rc" = "$1" ] && grep -Eq "$2" "$OUT"; then
		echo "selftest $CASE: OK: $3"
		exit 0
	fi
	echo "selftest $CASE: FAILED: expected exit $1 and /$2/ in the output, got exit $rc"
	exit 1
}
# classifier FN: load tests/lab/run's patterns and FN (a retry classifier)
# for a no-VM case over console excerpts in $T; judge 0|1 WHAT: FN must
# answer 0 (boot again) or 1 (judge the run) for what is in $T now
classifier() {
	eval "$(sed -n "/^HARD=/p; /^IOERR=/p; /^boot_log() {/,/^}/p; /^$1() {/,/^}/p" "$RUN")"
	CLASSIFY=$1 T=$(mktemp -d)
	trap 'rm -rf "$T" "$OUT"' EXIT
}
judge() {
	local got=1
	"$CLASSIFY" && got=0
	[ "$got" = "$1" ] || { echo "selftest $CASE: FAILED: $2"; exit 1; }
}
# build_warn: the WARNing module in $B (per case: make check runs warn,
# crash and batch at the same time)
build_warn() {
	B=$TOP/build/lab-selftest/$K/$CASE
	rm -rf "$B"; mkdir -p "$B"
	cp "$HERE"/warn/* "$B/"
	KDIR=$CACHE/k/$K/hdr/usr/src/linux-headers-$K
	make -s -C "$KDIR" M="$B" CC=gcc modules 2>&1 | grep -v 'Skipping BTF' || true
	[ -f "$B/fxlab_warn.ko" ] || { echo "selftest $CASE: could not build the module"; exit 1; }
}
# batch_rc ID: a --batch test's exit status; batch_has ID ERE: in its log
batch_rc() { cat "$BO/$1.rc" 2>/dev/null || echo none; }
batch_has() { grep -Eq -- "$2" "$BO/$1.log" 2>/dev/null; }
batch_want() {	# batch_want ID RC ERE WHAT
	[ "$(batch_rc "$1")" = "$2" ] && batch_has "$1" "$3" && return 0
	echo "selftest batch: FAILED: $4: test $1 exited $(batch_rc "$1"), wanted $2 with /$3/ in its log"
	exit 1
}
case $CASE in
batch)
	# one list, every way a test in a batch can end: passes; leaves a file
	# in /tmp and a module loaded (both gone for the next test); WARNs (its
	# own failure, and the boot stops); exits 7 on the next boot without
	# the earlier WARNING in its log; hangs past its own timeout; panics
	# (run again alone, fails again)
	build_warn
	BO=$(mktemp -d) L=$(mktemp)
	trap 'rm -rf "$OUT" "$BO" "$L"' EXIT
	{
		printf 'ok\t%s\n' "$(printf '%q ' -- "$HERE/exit-status.sh" 0 "two words")"
		printf 'leave\t%s\n' "$(printf '%q ' -- "$HERE/batch-leave.sh" leave)"
		printf 'clean\t%s\n' "$(printf '%q ' -- "$HERE/batch-leave.sh" check)"
		printf 'warn\t%s\n' "$(printf '%q ' --file "$B/fxlab_warn.ko" -- "$HERE/warn-load.sh")"
		printf 'seven\t%s\n' "$(printf '%q ' -- "$HERE/exit-status.sh" 7 "two words")"
		printf 'hang\t%s\n' "$(printf '%q ' --timeout 30 -- "$HERE/hang.sh")"
		printf 'panic\t%s\n' "$(printf '%q ' -- "$HERE/panic.sh")"
	} > "$L"
	"$RUN" --kernel "$KS" --no-fabric --no-build --batch "$L" --batch-out "$BO" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	batch_want ok 0 'exiting with 0' "a passing test"
	batch_want leave 0 'left /tmp/fxlab-left and nbd' "a test that leaves a file in /tmp and a module loaded"
	batch_want clean 0 '^clean$' "the test after it: /tmp emptied, the module unloaded"
	batch_want warn 1 'kernel log shows problems' "a test whose module WARNs"
	grep -q '^lab: the boot stopped after test 4' "$OUT" || { echo "selftest batch: FAILED: the boot went on after the WARNING"; exit 1; }
	batch_want seven 7 'exiting with 7' "the test after the WARNING, on a fresh boot"
	! batch_has seven 'WARNING:' || { echo "selftest batch: FAILED: test 'seven' has the WARNING of test 'warn' in its log"; exit 1; }
	batch_has ok 'exiting with 0' && ! batch_has ok 'fxlab_warn' || { echo "selftest batch: FAILED: test 'ok' has test 'warn' in its log"; exit 1; }
	batch_want hang 124 'TIMEOUT' "a test past its own --timeout 30"
	batch_want panic 125 'stopped without reporting' "a test the kernel panics in, run again alone"
	grep -q "^lab: panic (panic.sh): the VM stopped during it" "$OUT" || { echo "selftest batch: FAILED: the panicked test was not run alone"; exit 1; }
	check 1 'lab: booting .* for a batch of 1 tests: panic' "each test judged on its own part of one boot; the rest of a stopped, timed-out or dead boot on a fresh one"
	;;
warn|crash)
	build_warn
	if [ "$CASE" = crash ]; then
		"$RUN" --kernel "$KS" --members 1 --size-mb 64 --persist --boots 2 --no-build --timeout 300 \
			--file "$B/fxlab_warn.ko" -- "$HERE/crash-boots.sh" warn 2>&1 | tee "$OUT"
		rc=${PIPESTATUS[0]}
		grep -q "^lab: boot 1 of 2 ended in the script's crash" "$OUT" ||
			{ echo "selftest crash: boot 1 did not end in the script's crash"; exit 1; }
		grep -q '^PASS: crash-boots' "$OUT" || { echo "selftest crash: boot 2 of the script did not pass"; exit 1; }
		check 1 'kernel log shows problems' "lab failed the run on boot 1's WARNING although boot 2 passed"
	fi
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 --file "$B/fxlab_warn.ko" \
		-- "$HERE/warn-load.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^PASS: warn-load' "$OUT" || { echo "selftest warn: the script itself did not pass"; exit 1; }
	check 1 'kernel log shows problems' "lab failed the run on the kernel WARNING although the script passed"
	;;
known)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/lockdep-report.sh" fxblk 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^lab:   .*possible circular locking' "$OUT" && ! grep -q '^lab: KNOWN' "$OUT" ||
		{ echo "selftest known: the report with an fxblk frame was not shown as a problem (exit $rc)"; exit 1; }
	[ "$rc" = 1 ] || { echo "selftest known: the report with an fxblk frame: exit $rc, not 1"; exit 1; }
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/lockdep-report.sh" nvmet 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^lab:   nvmet-rdma-port-removal: .*possible circular locking' "$OUT" ||
		{ echo "selftest known: the nvmet report was not named as known"; exit 1; }
	check 0 'kernel log clean' "a known nvmet-rdma report passes (named KNOWN); with an fxblk frame it fails"
	;;
status)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/exit-status.sh" 7 "two words" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	check 7 'exiting with 7' "script status 7 returned to the host"
	;;
timeout)
	# 40 s: boot and the message before the hang take 10 s alone, up to 25 s
	# when make check runs several VMs at once
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 40 -- "$HERE/hang.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	dir=$(sed -n 's/^lab: run dir //p' "$OUT")
	[ -n "$dir" ] || { echo "selftest timeout: run did not name its run dir"; exit 1; }
	left=$(pgrep -f "$dir/initrd" || true)
	[ ! -e "$dir" ] || { echo "selftest timeout: run dir $dir left behind"; exit 1; }
	[ -z "$left" ] || { echo "selftest timeout: QEMU still running: $left"; exit 1; }
	grep -Eq '^lab:   \| .*fxlab-selftest: kernel message before the hang' "$OUT" ||
		{ echo "selftest timeout: the kernel messages before the hang were not kept"; exit 1; }
	check 124 'TIMEOUT' "hung VM killed after the timeout, its kernel messages kept, no QEMU left"
	;;
panic)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/panic.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q 'panic.sh: before the panic' "$OUT" || { echo "selftest panic: the script did not start"; exit 1; }
	! grep -q 'after the panic' "$OUT" || { echo "selftest panic: the kernel did not panic"; exit 1; }
	grep -Eq '^lab:   .*Kernel panic' "$OUT" || { echo "selftest panic: the run did not list the panic as a kernel log problem"; exit 1; }
	check 125 'stopped without reporting' "a panic in the middle of the script fails the run"
	;;
ioerr)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/io-error.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q 'as intended' "$OUT" || { echo "selftest ioerr: the script itself did not pass"; exit 1; }
	check 1 '^lab:   .*I/O error, dev nullb0' "an I/O error in the kernel log fails the run although the script passed"
	;;
ioerr-allowed)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 --file "$HERE/io-error.sh" \
		-- "$HERE/io-error-allowed.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q 'as intended' "$OUT" || { echo "selftest ioerr-allowed: the script itself did not pass"; exit 1; }
	check 0 "allowed by the script's '# lab-allow:': [1-9]" "an I/O error allowed by '# lab-allow:' passes"
	;;
taint)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/taint.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q 'tainted is now' "$OUT" || { echo "selftest taint: the script did not run"; exit 1; }
	check 1 'kernel tainted [0-9]+ \([A-Z]*U[A-Z]*\)' "a kernel tainted with a flag other than O/E fails the run"
	;;
stall)
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/stall-boot.sh" after 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q 'stall-boot: after, attempt 1, done' "$OUT" || { echo "selftest stall: the script (after) did not run"; exit 1; }
	! grep -q '^lab: a stall was reported before fxblk was loaded' "$OUT" ||
		{ echo "selftest stall: a stall after fxblk was loaded made the lab boot again"; exit 1; }
	grep -Eq '^lab:   .*self-detected stall.*after fxblk is loaded' "$OUT" && [ "$rc" = 1 ] ||
		{ echo "selftest stall: a stall after fxblk was loaded: exit $rc, not 1 naming it"; exit 1; }
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 -- "$HERE/stall-boot.sh" before 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^lab:   first boot: .*self-detected stall.*before fxblk is loaded' "$OUT" ||
		{ echo "selftest stall: the retry did not show the first boot's stall"; exit 1; }
	grep -q 'stall-boot: before, attempt 2, done' "$OUT" || { echo "selftest stall: no second boot"; exit 1; }
	check 0 '^lab: a stall was reported before fxblk was loaded .*booting once more' \
		"a stall before fxblk loads boots once more (and says so); one after it loads fails the run"
	;;
settle)
	"$RUN" --kernel "$KS" --members 1 --size-mb 64 --udev --no-build --timeout 300 \
		-- "$HERE/settle-retry.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^settle-retry: a stuck event fails both settles and is named' "$OUT" ||
		{ echo "selftest settle: a stuck udev event did not fail fx_settle"; exit 1; }
	check 0 '^PASS: settle-retry' "fx_settle passes a slow udev event on its second try (NOTE), fails a stuck one naming it"
	;;
int3)
	# No VM: tests/lab/run's own classifier (stale_int3) over a real console
	# excerpt (int3-stale.console: lab 29 on 6.12.117 in CI's run of
	# 2026-12-03, "Oops: int3" in __schedule on a patched-back NOP, the VM
	# dead) and three variations it must not boot again for.
	classifier stale_int3
	F=$HERE/int3-stale.console
	cp "$F" "$T/console"; : > "$T/results"
	judge 0 "the stale int3 of the excerpt was not recognised"
	sed 's/ 0f <1f> / cc <1f> /' "$F" > "$T/console"
	judge 1 "an int3 still in the text (cc before RIP) was taken for a stale one"
	{ echo "[   90.000000] WARNING: CPU: 1 PID: 1 at fxblk_submit+0x10/0x20 [fxblk]"; cat "$F"; } > "$T/console"
	judge 1 "a WARNING before the oops would have been hidden by the second boot"
	cp "$F" "$T/console"; echo "FXLAB status 0" > "$T/results"
	judge 1 "a run that reported its status would have booted again"
	echo "selftest int3: OK: a stale int3 (TCG) boots once more; a real one, an earlier problem or a finished script do not"
	exit 0
	;;
db)
	# No VM: tests/lab/run's own classifier (spurious_db) over a console
	# excerpt of lab 61 on 6.12 in CI's run of 2026-12-05 (db-spurious.console:
	# the lines CI printed - the WARNING, its header, the user GPF - with the
	# trace's middle and its end marker as 6.12's __warn prints them, since
	# CI shows only a failure's first lines) and variations it must not
	# boot again for.
	classifier spurious_db
	F=$HERE/db-spurious.console
	echo "FXLAB status 1" > "$T/results"
	cp "$F" "$T/console"
	judge 0 "the #DB warning of the excerpt (and the user GPF after it) was not recognised"
	{ cat "$F"; echo "[   40.000000] WARNING: CPU: 0 PID: 9 at drivers/block/fxblk/fxblk_io.c:10 fxblk_end_io+0x1/0x2 [fxblk]"; } > "$T/console"
	judge 1 "a second WARNING outside the #DB report would have been hidden by the second boot"
	{ cat "$F"; echo "[   40.000000] I/O error, dev fx0, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0"; } > "$T/console"
	judge 1 "an I/O error would have been hidden by the second boot"
	grep -v 'end trace' "$F" > "$T/console"
	judge 1 "a report without its end marker was taken as complete"
	sed 's/exc_debug_kernel+0xca/exc_page_fault+0xca/; s/traps.c:1120 exc_debug_kernel/fault.c:1120 exc_page_fault/' "$F" > "$T/console"
	judge 1 "a WARNING that is not exc_debug_kernel's was taken for the emulator's #DB"
	{ cat "$F"; echo "[   41.000000] Oops: general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] PREEMPT SMP NOPTI"; } > "$T/console"
	judge 1 "a kernel general protection fault was taken for a user one"
	# The same through a VM: run's retry branch, the second boot judged
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 --file "$F" -- "$HERE/db-boot.sh" other 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	! grep -q 'booting once more' "$OUT" && [ "$rc" = 1 ] && grep -q 'I/O error, dev fx0.*fxlab-selftest' "$OUT" ||
		{ echo "selftest db: with an I/O error besides the #DB: exit $rc, not 1 naming it without a second boot"; exit 1; }
	"$RUN" --kernel "$KS" --no-fabric --no-build --timeout 300 --file "$F" -- "$HERE/db-boot.sh" 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	grep -q '^lab:   first boot: .*exc_debug_kernel' "$OUT" || { echo "selftest db: the retry did not show the first boot's #DB"; exit 1; }
	grep -q 'db-boot: attempt 2, done' "$OUT" || { echo "selftest db: no second boot"; exit 1; }
	check 0 '^NOTE: lab: a single-step #DB the kernel did not ask for .*booting once more' \
		"a spurious single-step #DB (TCG) boots once more, saying NOTE; with another problem in the log it does not"
	;;
nocrash)
	"$RUN" --kernel "$KS" --members 1 --size-mb 64 --persist --boots 2 --no-build --timeout 300 \
		-- "$HERE/crash-boots.sh" nocrash 2>&1 | tee "$OUT"
	rc=${PIPESTATUS[0]}
	check 1 'boot 1 of 2 ended normally' "a boot 1 that does not crash fails the run"
	;;
*) echo "unknown self-test '$CASE'"; exit 2 ;;
esac
