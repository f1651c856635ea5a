#!/bin/bash
# make check: every test of fxblk, one PASS/FAIL line each, logs under
# build/check/, last line exactly "N passed, M failed", followed by
# ", K skipped" on the same line when anything was skipped (exit 1 if M > 0).
# K counts both kinds of skip: a test that is not run (filtered out, kernel
# not selected) gets a line "SKIP  NAME  REASON"; "SKIP: reason" lines a test
# prints (a lab sub-check that cannot run) are shown as "      note: SKIP: ..."
# under its result. Such a note must be listed for that test in
# tests/expected-skips (reviewed like code): an unexpected note fails the test.
# Negative controls ("# lab-break:" header lines, see the lab section) run
# the test broken on purpose: the run must fail, for the planted reason.
#
#   unit    cmake build + ctest in build/ctl, and again with ASan/UBSan in
#           build/ctl-asan (-DFXBLK_SANITIZE=ON); one line per ctest test
#   fuzz-label  libFuzzer on the on-disk label decoder (tests/fuzz-label.sh)
#   module  fxblk.ko builds with -Werror against the 5.10, 6.1, 6.12 headers,
#           and 7.3 + 7.2 inside their chroots (scripts/fetch-chroot-kernels.sh)
#   style   checkpatch --no-tree -f clean on kmod/*.c kmod/*.h and the uapi header
#   docs    README.md, docs/ and man pages cite no path outside the repository;
#           the README's claims hold (tests/docs-check.sh, its self-test)
#   dkms    dkms add/build against the 6.1 headers (tests/dkms.sh), 6.12 in packages;
#           a source with a new warning builds under DKMS, fails with FXBLK_WERROR=1
#   packages make install/uninstall, .debs + lintian + DKMS + upgrade/purge,
#           .rpms (tests/packages.sh)
#   lab     every tests/lab/tests/*.sh on each kernel named in its header
#           line "# lab: kernels=6.1,6.12 [quick=6.12] members=4 [timeout=S ...]";
#           with quick=, the default run uses only those kernels (35-minute
#           budget; quick=none: none, only make check-full) and
#           FXBLK_CHECK_FULL=1 (make check-full) all of kernels=
#           (other key=value pairs become tests/lab/run --key value).
#           Most run several to a boot (tests/lab/run --batch, lab_add
#           below); each keeps its own result line and log
#           7.3 and 7.2 run what 6.12 runs, in make check-full; in the
#           default run only the tests whose quick= names them (smoke test)
#   selftest the lab fails a run whose kernel WARNs, panics mid-script, logs
#           an I/O error the script did not allow (and passes one it did), or
#           is tainted; returns the script's status; kills a hung VM and keeps
#           its kernel messages; checks boot 1 of a --boots 2 run; passes a
#           lockdep report listed in tests/lab/known-reports, fails one with fxblk
#
# Environment:
#   FXBLK_CHECK_FILTER=REGEX   run only tests whose name matches (grep -E)
#   FXBLK_LAB_KERNELS=6.1,6.12 restrict lab tests (and self-tests) to these kernels;
#                              "debug" = the debug kernel (FXBLK_KVER_DEBUG, make
#                              kernel-debug), which runs the tests listing 6.12
#   FXBLK_LAB_EXTRA_DIR=DIR    also run DIR/*.sh as lab tests (make check-debug:
#                              tests/lab/debug, headers say kernels=debug)
#   FXBLK_CHECK_FULL=1         every lab test on every kernel its header names
#   FXBLK_CHECK_JOBS=N         parallel build jobs (default nproc)
#   FXBLK_LAB_JOBS=N           lab VMs run at once (default nproc+1, at most
#                              one per 4 GiB of available memory; 1: one by one)
#   FXBLK_LAB_BATCH=0          every lab test on a boot of its own
#   FXBLK_LAB_CHUNK=SECONDS    a lab batch's expected length (default 480)
#   FXBLK_CHECK_LIST=1         run nothing: print the plan, "RUN<TAB>NAME<TAB>CMD"
#                              or "SKIP<TAB>NAME<TAB>REASON" per test, as on a
#                              machine 'make deps' (and, for check-full, 'make
#                              kernel-debug') prepared; tests/docs-check.sh reads it
#
# The lab runs and the lab self-tests go through a pool of FXBLK_LAB_JOBS VMs
# (each VM is one TCG process at about one core, waiting part of the time),
# longest-expected first (header timeout=); results are printed in that order.
# The tests that need no VM and that the lab does not need (ASan unit tree,
# label fuzzer, dkms, packages) run in the same pool, filling idle CPU time.
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP" || exit 2
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
LOGDIR=$TOP/build/check
FILTER=${FXBLK_CHECK_FILTER:-}
LAB_KERNELS=${FXBLK_LAB_KERNELS:-5.10,6.1,6.12,7.2,7.3}
FULL=${FXBLK_CHECK_FULL:-0}
LIST=${FXBLK_CHECK_LIST:-0}
JOBS=${FXBLK_CHECK_JOBS:-$(nproc)}
lab_jobs_default() {
	local n mem
	n=$(($(nproc) + 1))
	mem=$(awk '/^MemAvailable:/ {print int($2 / 4194304)}' /proc/meminfo)
	[ "${mem:-0}" -ge 1 ] || mem=1
	echo $((n < mem ? n : mem))
}
LAB_JOBS=${FXBLK_LAB_JOBS:-$(lab_jobs_default)}
[[ $LAB_JOBS =~ ^[1-9][0-9]*$ ]] || { echo "check: FXBLK_LAB_JOBS must be a number >= 1" >&2; exit 2; }
# The module builds with -Werror here (kmod/Kbuild); DKMS builds do not.
export FXBLK_WERROR=1
[ "$LIST" = 1 ] || { mkdir -p "$LOGDIR"; rm -f "$LOGDIR"/*.log; }

# A compiler cache (ccache, from make deps) in $CACHE/ccache, for the host
# compilers: a clean clone compiles the same sources for the same kernels
# with the same flags as the run before it, minutes of CPU that the lab's
# VMs need. CCACHE_BASEDIR makes ctl's objects match a clone at another
# path too; kbuild compiles from the headers' directory, so the module's
# objects match only those of a clone at the same path.
# ccache replays each compiler's messages with its object, so -Werror and
# the warning checks see the same warnings. The chroot builds (7.2, 7.3)
# and DKMS do not use it (FXBLK_CCACHE is passed to kmod/Makefile and the
# lab modules only, not exported). Without ccache: built as before.
CCACHE=
if command -v ccache >/dev/null && mkdir -p "$CACHE/ccache" 2>/dev/null && [ -w "$CACHE/ccache" ]; then
	CCACHE=ccache
	export CCACHE_DIR=$CACHE/ccache CCACHE_BASEDIR=$TOP CCACHE_NOHASHDIR=1
	# ctl's targets use precompiled headers, which ccache caches only so
	export CCACHE_SLOPPINESS=pch_defines,time_macros
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
else
	echo "check: note: no ccache or $CACHE/ccache not writable: every build compiles from scratch ('make deps' installs ccache)"
fi
CMAKE_CCACHE=(${CCACHE:+-DCMAKE_C_COMPILER_LAUNCHER=$CCACHE -DCMAKE_CXX_COMPILER_LAUNCHER=$CCACHE})

PASSED=0 FAILED=0 SKIPPED=0 NOTES=0 FAILS=() FAIL_LOGS=()
T_ALL=$SECONDS

selected() { [ -z "$FILTER" ] || grep -Eq -- "$FILTER" <<< "$1"; }
skip_test() {	# skip_test NAME REASON
	[ "$LIST" != 1 ] || { printf 'SKIP\t%s\t%s\n' "$1" "$2"; return; }
	SKIPPED=$((SKIPPED + 1))
	printf 'SKIP  %-52s  %s\n' "$1" "$2"
}
# shellcheck source=scripts/lib-fetch.sh
. "$TOP/scripts/lib-fetch.sh"	# missing_skip: what make deps recorded as not fetched
# absent_test NAME ARTEFACT: the test NAME needs ARTEFACT, which make deps
# did not leave in the cache. Skipped, with the reason, when make deps
# recorded its failure to fetch it (a mirror mid-sync: scripts/lib-fetch.sh);
# otherwise a failure: an artefact gone without a record is not a skip
absent_test() {
	local why
	if why=$(FXBLK_CACHE=$CACHE missing_skip "$2" "$1"); then
		skip_test "$1" "${why#SKIP: "$1": }"
		return
	fi
	want "$1" || return 0
	[ "$LIST" != 1 ] || { printf 'FAIL\t%s\t%s\n' "$1" "artefact $2 absent"; return; }
	local log
	log=$(logname "$1")
	mkdir -p "$LOGDIR"
	echo "artefact $2 is not in $CACHE and make deps recorded no failure to fetch it ($(FXBLK_CACHE=$CACHE missing_file "$2") absent): run 'make deps' (as root)" > "$log"
	record "$1" 1 0 "$log"
}
# want NAME: selected by the filter, else counted and shown as skipped
want() {
	selected "$1" && return 0
	skip_test "$1" "not matched by FXBLK_CHECK_FILTER='$FILTER'"
	return 1
}
# Expected "SKIP:" notes, reviewed like code: tests/expected-skips, lines
# "NAME-ERE<TAB>NOTE-ERE" (grep -E; NAME as make check prints it, e.g.
# "lab 5.10: 50-datapath"). A note no line matches is unexpected: it fails
# the test (a sub-check that stopped running is a regression, not a note).
EXPECTED_SKIPS=$TOP/tests/expected-skips
# unexpected_notes NAME LOG: the test's SKIP: lines that no allow-list line
# matches for NAME
unexpected_notes() {
	local line name_re note_re ok
	while IFS= read -r line; do
		ok=0
		while IFS=$'\t' read -r name_re note_re; do
			[ -n "$name_re" ] && [ -n "$note_re" ] && [ "${name_re#\#}" = "$name_re" ] || continue
			grep -Eq -- "$name_re" <<< "$1" && grep -Eq -- "$note_re" <<< "$line" && { ok=1; break; }
		done < "$EXPECTED_SKIPS"
		[ $ok = 1 ] || echo "$line"
	done < <(grep -a '^SKIP: ' "$2" | sort -u)
}
# notes NAME LOG: show the "SKIP: reason" lines a test printed under its
# result ("UNEXPECTED" when tests/expected-skips does not list them)
notes() {
	local line bad
	bad=$(unexpected_notes "$1" "$2")
	while IFS= read -r line; do
		NOTES=$((NOTES + 1))
		if [ -n "$bad" ] && grep -qxF -- "$line" <<< "$bad"; then
			printf '      note: UNEXPECTED (not in tests/expected-skips): %s\n' "$line"
		else
			printf '      note: %s\n' "$line"
		fi
	done < <(grep -a '^SKIP: ' "$2" | sort -u)
	# "NOTE: " lines: something a test survived that CI should show (a
	# retried udevadm settle); not a skip, never counted
	grep -a '^NOTE: ' "$2" | sort -u | sed 's/^/      note: /' || true
}
# record_test NAME RC SECONDS LOG: record + notes; a passing test with an
# unexpected SKIP note fails
record_test() {
	local rc=$2
	if [ "$rc" = 0 ] && [ -n "$(unexpected_notes "$1" "$4")" ]; then
		rc=1
		echo "# unexpected SKIP note(s), not in tests/expected-skips: fails the test" >> "$4"
		FAILED=$((FAILED + 1))
		FAILS+=("$1 (unexpected SKIP note)")
		FAIL_LOGS+=("$4")
		printf 'FAIL  %-52s %4ss  unexpected SKIP note (tests/expected-skips), log: %s\n' "$1" "$3" "${4#"$TOP"/}"
	else
		record "$1" $((rc != 0)) "$3" "$4"
	fi
	notes "$1" "$4"
}
logname() { echo "$LOGDIR/$(echo "$1" | tr -c 'A-Za-z0-9._-' '_' | sed 's/_*$//').log"; }
record() {	# record NAME OK(0/1) SECONDS LOG
	if [ "$2" = 0 ]; then
		PASSED=$((PASSED + 1))
		printf 'PASS  %-52s %4ss\n' "$1" "$3"
	else
		FAILED=$((FAILED + 1))
		FAILS+=("$1")
		FAIL_LOGS+=("$4")
		printf 'FAIL  %-52s %4ss  log: %s\n' "$1" "$3" "${4#"$TOP"/}"
	fi
}
# t NAME CMD...: run CMD as one test, output into its log
t() {
	local name=$1 log t0 rc
	shift
	want "$name" || return 0
	[ "$LIST" != 1 ] || { printf 'RUN\t%s\t%s\n' "$name" "$*"; return; }
	log=$(logname "$name")
	t0=$SECONDS
	{ echo "# $name"; echo "# $*"; } > "$log"
	"$@" >> "$log" 2>&1 < /dev/null
	rc=$?
	echo "# exit $rc" >> "$log"
	record_test "$name" "$rc" $((SECONDS - t0)) "$log"
}

# The lab pool: pool_add NAME ORDER CMD... queues a test (if selected);
# pool_run runs the queue LAB_JOBS at a time, highest ORDER first, and
# prints each result (in that order) once it and those before it are done.
POOL_NAMES=() POOL_CMDS=() POOL_ORDER=()
# every name queued in this run (over all pools): names are log file names
declare -A POOL_SEEN=()
pool_add() {
	local name=$1 order=$2
	shift 2
	want "$name" || return 0
	# two jobs of one name would share a log file (logname): a queuing bug
	if [ -n "${POOL_SEEN[$name]:-}" ]; then
		record "$name (queued twice: check.sh bug)" 1 0 /dev/null
		return 0
	fi
	POOL_SEEN[$name]=1
	POOL_NAMES+=("$name")
	POOL_ORDER+=("$order")
	POOL_CMDS+=("$(printf '%q ' "$@")")
}
# A job that is several tests (pool_unit, lab_batch) writes their results to
# $POOL_LINES, one per line: "rec<TAB>NAME<TAB>EXIT<TAB>SECONDS<TAB>LOG",
# "test<TAB>..." (the same, and its SKIP notes checked as a test's) or
# "skip<TAB>NAME<TAB>REASON"; pool_print shows those instead of the job's.
pool_job() {	# pool_job INDEX: one test, its status into $POOL/INDEX
	local name=${POOL_NAMES[$1]} log t0 rc
	log=$(logname "$name")
	t0=$SECONDS
	POOL_LINES=$POOL/$1.lines POOL_I=$1
	{ echo "# $name"; echo "# ${POOL_CMDS[$1]}"; } > "$log"
	eval "${POOL_CMDS[$1]}" >> "$log" 2>&1 < /dev/null
	rc=$?
	echo "# exit $rc" >> "$log"
	echo "$rc $((SECONDS - t0))" > "$POOL/$1.tmp" && mv "$POOL/$1.tmp" "$POOL/$1"
}
pool_print() {	# results that are ready, in queue order
	local i rc secs
	while [ "$POOL_NEXT" -lt "${#POOL_QUEUE[@]}" ]; do
		i=${POOL_QUEUE[$POOL_NEXT]}
		[ -f "$POOL/$i" ] || return 0
		read -r rc secs < "$POOL/$i"
		if [ -s "$POOL/$i.lines" ]; then
			local kind name a b c
			while IFS=$'\t' read -r kind name a b c; do
				case $kind in
				rec) record "$name" $((a != 0)) "$b" "$c" ;;
				test) record_test "$name" "$a" "$b" "$c" ;;
				skip) skip_test "$name" "$a" ;;
				esac
			done < "$POOL/$i.lines"
		else
			record_test "${POOL_NAMES[$i]}" "$rc" "$secs" "$(logname "${POOL_NAMES[$i]}")"
		fi
		POOL_NEXT=$((POOL_NEXT + 1))
	done
}
pool_run() {	# pool_run WHAT: runs the queue, then empties it
	local i n=${#POOL_NAMES[@]}
	[ "$n" -gt 0 ] || return 0
	if [ "$LIST" = 1 ]; then
		for i in "${!POOL_NAMES[@]}"; do
			printf 'RUN\t%s\t%s\n' "${POOL_NAMES[$i]}" "${POOL_CMDS[$i]}"
		done
		POOL_NAMES=() POOL_CMDS=() POOL_ORDER=()
		return 0
	fi
	POOL=$LOGDIR/.pool
	rm -rf "$POOL" && mkdir -p "$POOL"
	mapfile -t POOL_QUEUE < <(for i in "${!POOL_NAMES[@]}"; do echo "${POOL_ORDER[$i]} $i"; done |
		sort -s -k1,1nr | awk '{print $2}')
	POOL_NEXT=0
	echo "check: $n jobs ($1), $LAB_JOBS at a time (FXBLK_LAB_JOBS)"
	trap 'kill $(jobs -p) 2>/dev/null; wait; exit 130' INT TERM
	local started=0
	for i in "${POOL_QUEUE[@]}"; do
		# running = started - finished (the status files written so far)
		# (status files are named N; N.tmp and N.lines are not finished jobs)
		while [ $((started - $(find "$POOL" -maxdepth 1 -regex '.*/[0-9]+' | wc -l))) -ge "$LAB_JOBS" ]; do
			wait -n 2>/dev/null || sleep 1
			pool_print
		done
		pool_job "$i" &
		started=$((started + 1))
		pool_print
	done
	while [ "$POOL_NEXT" -lt "$n" ]; do
		wait -n 2>/dev/null || sleep 1
		pool_print
	done
	wait
	trap - INT TERM
	rm -rf "$POOL"
	POOL_NAMES=() POOL_CMDS=() POOL_ORDER=()
}

if [ -f "$CACHE/kernels.env" ]; then
	# shellcheck source=/dev/null
	. "$CACHE/kernels.env"
else
	echo "check: no $CACHE/kernels.env: run 'make deps' first" >&2
fi
kver() {
	case $1 in
	5.10) echo "${FXBLK_KVER_5_10:-}" ;; 6.1) echo "${FXBLK_KVER_6_1:-}" ;;
	6.12) echo "${FXBLK_KVER_6_12:-}" ;; debug) echo "${FXBLK_KVER_DEBUG:-}" ;;
	7.3) echo "${FXBLK_KVER_7_3:-}" ;; 7.2) echo "${FXBLK_KVER_7_2:-}" ;;
	*) echo "$1" ;;
	esac
}

# ---- unit tests -----------------------------------------------------------
# pool_unit BUILDDIR LABEL [cmake args]: a pool job that configures and builds
# the tree (one test), then runs ctest (one test per ctest entry); its
# results go to $POOL_LINES, one line each
pool_unit() {
	local dir=$1 label=$2 log name rc t0 n=0 status secs
	shift 2
	log=$(logname "unit $label: build")
	t0=$SECONDS
	{
		echo "# unit $label: build"
		cmake -S "$TOP" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${CMAKE_CCACHE[@]}" "$@" &&
			cmake --build "$dir" -j"$JOBS"
	} > "$log" 2>&1 < /dev/null
	rc=$?
	printf 'rec\t%s\t%s\t%s\t%s\n' "unit $label: build" $rc $((SECONDS - t0)) "$log" >> "$POOL_LINES"
	log=$(logname "unit $label: ctest")
	(cd "$dir" && ctest --output-on-failure -j"$JOBS" --timeout 300) > "$log" 2>&1 < /dev/null
	rc=$?
	while read -r name status secs; do
		n=$((n + 1))
		if [ "$status" = Skipped ]; then
			printf 'skip\t%s\t%s\n' "unit $label: $name" "skipped by ctest (see $(basename "$log"))"
		else
			printf 'rec\t%s\t%s\t%s\t%s\n' "unit $label: $name" \
				"$([ "$status" = Passed ] && echo 0 || echo 1)" "${secs%.*}" "$log"
		fi
	done < <(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) [ .*]*\([A-Za-z]*\).* \([0-9.]*\) sec$/\1 \2 \3/p' "$log") >> "$POOL_LINES"
	[ $n -gt 0 ] || printf 'rec\t%s\t1\t0\t%s\n' "unit $label: ctest (exit $rc, no tests ran)" "$log" >> "$POOL_LINES"
}
# ---- builds: the unit tree, the module on every kernel, style -------------
# These run before the lab (it needs fxctl and fxblk.ko) as one pool of their
# own: the unit build keeps both cores busy, a module build about one, so
# together they take ~1 min less than one after the other.
pool_add "unit ctl" 1000 pool_unit "$TOP/build/ctl" ctl
# The sanitizer tree, the label fuzzer, dkms and the packages need no VM and
# are not needed by the lab: they join its pool (below), where they fill
# the CPU time the VMs leave idle.

# ---- module builds with -Werror -----------------------------------------
module_build() {	# -Werror is in kmod/Kbuild; also refuse any warning text
	local k=$1 out
	out=$(make -C "$TOP/kmod" KVER="$k" BUILD="$TOP/build/kmod" FXBLK_CCACHE=$CCACHE 2>&1)
	local rc=$?
	echo "$out"
	[ $rc = 0 ] || return 1
	[ -f "$TOP/build/kmod/$k/fxblk.ko" ] || { echo "no fxblk.ko produced"; return 1; }
	! grep -E '(warning|error):' <<< "$out"
}
# NEW_KERNELS: built in a chroot; make deps prepares them, a machine whose
# deps predate them gets SKIP lines, not failures
NEW_KERNELS="7.2 7.3"
kernel_ready() {	# kernel_ready SERIES: its headers (and chroot) are in the cache
	[ "$LIST" != 1 ] || return 0	# the plan of a prepared machine
	local k
	k=$(kver "$1")
	[ -n "$k" ] && [ -f "$CACHE/k/$k/.done" ] || return 1
	[ ! -f "$CACHE/k/$k/chroot" ] || [ -f "$(cat "$CACHE/k/$k/chroot")/.done" ]
}
NOT_READY="not prepared in $CACHE: run 'make deps' (as root; debootstrap chroots, scripts/fetch-chroot-kernels.sh)"
for s in 5.10 6.1 6.12 $NEW_KERNELS; do
	k=$(kver $s)
	if [[ " $NEW_KERNELS " == *" $s "* ]] && ! kernel_ready "$s"; then
		absent_test "module $s: build -Werror" "chroot-$s"
		continue
	fi
	pool_add "module $s: build -Werror ($k)" 500 module_build "$k"
done
# 32-bit kernels are refused with a message, by kmod/Makefile before the
# probes and by kmod/Kbuild for a kbuild run without it (Debian 12's i386
# 6.1 headers, scripts/fetch-foreign-headers.sh)
refuses_32bit() {
	local k=$1 out rc src
	out=$(make -C "$TOP/kmod" KVER="$k" BUILD="$TOP/build/kmod" FXBLK_CCACHE=$CCACHE 2>&1)
	rc=$?
	echo "$out"
	[ $rc != 0 ] || { echo "make -C kmod built for 32-bit $k"; return 1; }
	grep -q 'fxblk: 32-bit kernels are not supported' <<< "$out" || { echo "kmod/Makefile: no message"; return 1; }
	src=$(mktemp -d) || return 1
	cp -a "$TOP"/kmod/. "$TOP/VERSION" "$src/" && : > "$src/fxblk_probes.h"
	out=$(make -C "$CACHE/k/$k/hdr/usr/src/linux-headers-$k" M="$src" CC=gcc modules 2>&1)
	rc=$?
	echo "$out"
	rm -rf "$src"
	[ $rc != 0 ] || { echo "kbuild built kmod/ for 32-bit $k"; return 1; }
	grep -q 'Kbuild:.*fxblk: 32-bit kernels are not supported' <<< "$out" || { echo "kmod/Kbuild: no message"; return 1; }
}
if [ -n "${FXBLK_KVER_I386:-}" ] && [ -f "$CACHE/k/$FXBLK_KVER_I386/.done" ]; then
	pool_add "module i386: 32-bit refused with a message ($FXBLK_KVER_I386)" 100 refuses_32bit "$FXBLK_KVER_I386"
else
	absent_test "module i386: 32-bit refused with a message" i386-headers
fi
# arm64: cross-built with gcc-aarch64-linux-gnu against Debian's arm64 6.12
# headers (kmod/Makefile takes CC from their CROSS_COMPILE)
module_build_arm64() {
	module_build "$1" || return 1
	file "$TOP/build/kmod/$1/fxblk.ko" | grep -q 'ARM aarch64' || { echo "fxblk.ko is not an arm64 object"; return 1; }
	modinfo -F vermagic "$TOP/build/kmod/$1/fxblk.ko" | grep -q "^$1 .*aarch64" || { echo "vermagic is not $1 aarch64"; return 1; }
}
if [ -n "${FXBLK_KVER_ARM64:-}" ] && [ -f "$CACHE/k/$FXBLK_KVER_ARM64/.done" ] && command -v aarch64-linux-gnu-gcc >/dev/null; then
	pool_add "module arm64: cross-build -Werror ($FXBLK_KVER_ARM64)" 500 module_build_arm64 "$FXBLK_KVER_ARM64"
else
	absent_test "module arm64: cross-build -Werror" arm64-headers
fi

# ---- checkpatch ----------------------------------------------------------
checkpatch() {
	local f bad=0 out
	for f in kmod/*.c kmod/*.h kmod/include/uapi/linux/*.h; do
		out=$(perl "$CACHE/checkpatch/checkpatch.pl" --no-tree --no-summary --terse -f "$f" 2>&1)
		if [ -n "$out" ]; then echo "$out"; bad=1; else echo "$f: clean"; fi
	done
	return $bad
}
pool_add "style: checkpatch kmod" 200 checkpatch
# README, docs/ and man pages cite no path outside the repository; the
# README's one screen, feature table (against this script's own plan,
# FXBLK_CHECK_LIST=1), figures and every docs link (tests/docs_check.py)
pool_add "docs: README claims and docs links (docs-check)" 100 bash "$TOP/tests/docs-check.sh"
pool_add "docs: docs-check catches planted defects" 100 bash "$TOP/tests/docs-check-selftest.sh"
# every shell file through shellcheck (warnings and up)
pool_add "style: shellcheck every shell file" 200 bash "$TOP/tests/shellcheck.sh"
# make bench's cost regression check against a synthetic history
pool_add "bench: cost regression check" 60 bash "$TOP/tests/bench/cost-history-test.sh"
# make deps against a stand-in apt-get failing like a mirror being synced
pool_add "deps: retries, optional artefacts recorded (stand-in apt-get)" 60 bash "$TOP/tests/deps-fetch.sh"
pool_run "builds and style checks"

# ---- in the pool (no VM): ASan/UBSan unit tree, label fuzzer, dkms, packages
# -O0 for the sanitizer tree: the same tests, a quarter of the compile time
# (test_cli.cpp: 159 s of CPU at -O2 -g with ASan, 35 s at -O0)
# The lab-only tools are not built there: they run in the VM from build/ctl.
pool_add "unit asan" 1200 pool_unit "$TOP/build/ctl-asan" asan \
	-DFXBLK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DFXBLK_LAB_TOOLS=OFF
pool_add "fuzz-label: libFuzzer on the label decoder, 25 s" 450 bash "$TOP/tests/fuzz-label.sh" 25
# pip install of the fxio package into a fresh venv, its suite run there
pool_add "python: pip install fxio into a fresh venv, its tests there" 600 bash "$TOP/tests/pip-venv.sh"
# dkms (6.12: the packaged source, in the packages test)
pool_add "dkms 6.1: add+build; a new warning is no error (CI: error)" 900 \
	env FXBLK_DKMS_WARNING=1 bash "$TOP/tests/dkms.sh" "$(kver 6.1)"
# packages: make install, .deb, lintian, upgrade/purge, .rpm
# FXBLK_PKG_FULL=0: the fxctl rpm (a second fxctl build) only in make packages
pool_add "packages: install, deb, lintian, dkms 6.12, upgrade/purge, rpm" 1000 \
	env FXBLK_PKG_FULL=0 bash "$TOP/tests/packages.sh"

# ---- lab tests -----------------------------------------------------------
# LAB_RUN: tests/lab/run, its test modules (tests/lab/modules/build.sh)
# compiled through the compiler cache (a command line the log shows as is)
LAB_RUN=(env FXBLK_CCACHE="$CCACHE" "$TOP/tests/lab/run")
lab_kernel_ok() { [[ ,$LAB_KERNELS, == *,$1,* ]]; }
# First collect the runs (name, kernel, options), so that module + tools are
# built once for all of them instead of by every run.
# parse_header HEADER: a "# lab:" line's words into kernels, quick and opts
# (every other key=value becomes --key value, a bare word --word); timeout
# is also kept by itself (the run's expected length orders the pool)
parse_header() {
	local kv
	kernels='' quick='' timeout='' opts=()
	for kv in $1; do
		case $kv in
		kernels=*) kernels=${kv#kernels=} ;;
		quick=*) quick=${kv#quick=} ;;
		timeout=*) timeout=${kv#timeout=}; opts+=(--timeout "$timeout") ;;
		*=*) opts+=("--${kv%%=*}" "${kv#*=}") ;;
		*) opts+=("--$kv") ;;
		esac
	done
}
# Lab tests run several per boot (tests/lab/run --batch; tests/lab/README.md,
# "Several tests per boot"): lab_add collects them, keyed by what must be the
# same for a whole boot (kernel, --append, --hostfs, --mem, --smp); lab_batches
# cuts each key's tests into batches of about LAB_CHUNK seconds (expected:
# the time recorded for the test in the last run, tests/lab/times.tsv when
# none, else a third of its timeout) and queues each batch as one pool job.
# A test that needs a boot of its own (--persist, --boots, --no-connect,
# --no-fabric, --machine, --nvme-pci, --icount) is queued alone, as is every
# test with FXBLK_LAB_BATCH=0.
LAB_BATCH=${FXBLK_LAB_BATCH:-1}
LAB_CHUNK=${FXBLK_LAB_CHUNK:-480}
LAB_TIMES=$CACHE/lab-times.tsv
E_NAME=() E_KEY=() E_WORDS=() E_EXP=() E_ERE=()
# lab_expected NAME TIMEOUT: the seconds NAME is expected to take
lab_expected() {
	local f v
	for f in "$LAB_TIMES" "$TOP/tests/lab/times.tsv"; do
		[ -f "$f" ] || continue
		v=$(awk -F'\t' -v n="$1" '$1 == n {v = $2} END {print v}' "$f")
		[ -z "$v" ] || { echo "$v"; return; }
	done
	echo $(($2 / 3))
}
# lab_add NAME KERNEL ERE OPTIONS... -- SCRIPT ARGS: queue one lab test (a
# negative control when ERE is not empty: control_verdict)
lab_add() {
	local name=$1 k=$2 ere=$3 to=600 alone=0 boot=() test=()
	shift 3
	want "$name" || return 0
	while [ $# -gt 0 ]; do
		case $1 in
		--) test+=("$@"); break ;;
		--append|--mem|--smp) boot+=("$1" "$2"); shift ;;
		--hostfs) boot+=("$1") ;;
		--persist|--no-connect|--no-fabric|--icount) boot+=("$1"); alone=1 ;;
		--boots|--machine|--nvme-pci|--cmb-mb|--arch) boot+=("$1" "$2"); alone=1; shift ;;
		--target-dm|--udev) test+=("$1") ;;
		--timeout) to=$2; test+=("$1" "$2"); shift ;;
		*) test+=("$1" "$2"); shift ;;
		esac
		shift
	done
	if [ "$LIST" = 1 ] || [ "$LAB_BATCH" = 0 ] || [ $alone = 1 ]; then
		if [ -n "$ere" ]; then
			pool_add "$name" "$to" control_run "$ere" "${LAB_RUN[@]}" --no-build --kernel "$k" "${boot[@]}" "${test[@]}"
		else
			pool_add "$name" "$to" "${LAB_RUN[@]}" --no-build --kernel "$k" "${boot[@]}" "${test[@]}"
		fi
		return
	fi
	if [ -n "${POOL_SEEN[$name]:-}" ]; then
		record "$name (queued twice: check.sh bug)" 1 0 /dev/null
		return 0
	fi
	POOL_SEEN[$name]=1
	E_NAME+=("$name") E_ERE+=("$ere") E_EXP+=("$(lab_expected "$name" "$to")")
	E_KEY+=("$(printf '%q ' --kernel "$k" "${boot[@]}")") E_WORDS+=("$(printf '%q ' "${test[@]}")")
}
# lab_batches: the collected tests as batches in the pool, first fit by
# expected time, longest first
lab_batches() {
	local key i c n=0 idx csum cids kw
	[ "${#E_NAME[@]}" -gt 0 ] || return 0
	rm -rf "$LOGDIR/batch" && mkdir -p "$LOGDIR/batch"
	while IFS= read -r key; do
		mapfile -t idx < <(for i in "${!E_KEY[@]}"; do
			[ "${E_KEY[i]}" != "$key" ] || echo "${E_EXP[i]} $i"
		done | sort -s -k1,1nr | awk '{print $2}')
		csum=() cids=()
		for i in "${idx[@]}"; do
			for c in "${!csum[@]}"; do
				[ $((csum[c] + E_EXP[i])) -le "$LAB_CHUNK" ] || continue
				csum[c]=$((csum[c] + E_EXP[i])) cids[c]+=" $i"
				continue 2
			done
			c=${#csum[@]}
			csum[c]=${E_EXP[i]} cids[c]=" $i"
		done
		for c in "${!csum[@]}"; do
			n=$((n + 1))
			: > "$LOGDIR/batch/$n.spec" && : > "$LOGDIR/batch/$n.names"
			for i in ${cids[c]}; do
				printf '%s\t%s\n' "t$i" "${E_WORDS[i]}" >> "$LOGDIR/batch/$n.spec"
				printf '%s\t%s\t%s\n' "t$i" "${E_NAME[i]}" "${E_ERE[i]}" >> "$LOGDIR/batch/$n.names"
			done
			eval "kw=($key)"
			FILTER='' pool_add "lab batch $n (${kw[*]}, $(wc -l < "$LOGDIR/batch/$n.spec") tests)" \
				"${csum[c]}" lab_batch_job "$n" "${kw[@]}"
		done
	done < <(printf '%s\n' "${E_KEY[@]}" | sort -u)
}
# lab_batch_job N BOOT-OPTIONS...: batch N in one boot (or more: see run's
# --batch); each test's log, verdict (a control's by control_verdict) and
# time to $POOL_LINES
lab_batch_job() {
	local n=$1 out id name ere rc log secs
	shift
	out=$LOGDIR/batch/$n.out
	"${LAB_RUN[@]}" --no-build "$@" --batch "$LOGDIR/batch/$n.spec" --batch-out "$out"
	while IFS=$'\t' read -r id name ere; do
		log=$(logname "$name")
		rc=125
		[ ! -f "$out/$id.rc" ] || rc=$(cat "$out/$id.rc")
		{
			echo "# $name"
			echo "# in lab batch $n ($(basename "$(logname "${POOL_NAMES[$POOL_I]}")"))"
			cat "$out/$id.log" 2>/dev/null || echo "lab: no output for this test: the batch did not get to it"
		} > "$log"
		if [ -n "$ere" ]; then
			control_verdict "$ere" "$rc" "$log" >> "$log"
			rc=$?
		fi
		echo "# exit $rc" >> "$log"
		secs=$(sed -n 's/.*, fabric \([0-9.]*\) s, script \([0-9.]*\) s, teardown \([0-9.]*\) s.*/\1 \2 \3/p' "$log" |
			tail -n1 | awk '{printf "%d", $1 + $2 + $3 + 0.5}')
		printf 'test\t%s\t%s\t%s\t%s\n' "$name" "$rc" "${secs:-0}" "$log" >> "$POOL_LINES"
		[ -z "$secs" ] || printf '%s\t%s\n' "$name" "$secs" >> "$LOGDIR/batch/times"
	done < "$LOGDIR/batch/$n.names"
}
# The debug kernel's quick set (fault injection, the peer-ioctl fuzzer,
# kmemleak: what KASAN/kmemleak/fail_make_request see and a stock kernel does
# not) runs in make check-full when `make kernel-debug` has built it; the
# default run leaves it out to stay inside its 35-minute budget (it added
# about 20 minutes to CI's make check on 2026-12-03) and says so in one SKIP
# line. Only when FXBLK_LAB_KERNELS is not given: make check-debug (and any
# narrowed run) chooses its kernels itself.
DEBUG_QUICK=(tests/lab/debug/20-fail-make-request.sh tests/lab/tests/45-peer-fuzz.sh
	tests/lab/debug/90-kmemleak.sh tests/lab/tests/44-peer-queue.sh
	tests/lab/tests/55-peer-crash.sh tests/lab/tests/56-peer-reconnect.sh
	tests/lab/tests/65-peer-revoke.sh)
DEBUG_QUICK_ON=0
if [ -z "${FXBLK_LAB_KERNELS:-}" ]; then
	if [ "$FULL" != 1 ]; then
		skip_test "lab debug: quick set (${DEBUG_QUICK[*]##*/})" \
			"not in the default run (time budget): make check-full runs it once 'make kernel-debug' has built the debug kernel"
	elif kernel_ready debug; then
		DEBUG_QUICK_ON=1
		echo "check: the debug kernel $(kver debug) is built: its quick set runs too (${DEBUG_QUICK[*]##*/})"
	else
		skip_test "lab debug: quick set (${DEBUG_QUICK[*]##*/})" \
			"no debug kernel in $CACHE: 'make kernel-debug' builds it (about 1 h once on 2 cores), then make check-full runs these on it"
	fi
fi
# pool_add_debug NAME SCRIPT: queue SCRIPT on the debug kernel with the
# options parse_header found in its header; a test that runs on 6.12 gets 3x
# its timeout there (KASAN and lockdep make it 2-4x slower), a
# tests/lab/debug script (kernels=debug) keeps its own
pool_add_debug() {
	local to=
	[[ ,$kernels, != *,6.12,* ]] || to=$((3 * ${timeout:-600}))
	pool_add "lab debug: $1" "${timeout:-600}" "${LAB_RUN[@]}" --no-build \
		--kernel "$(kver debug)" "${opts[@]}" ${to:+--timeout $to} -- "$2"
}
LAB_SCRIPTS=("$TOP"/tests/lab/tests/*.sh)
[ -z "${FXBLK_LAB_EXTRA_DIR:-}" ] || LAB_SCRIPTS+=("$TOP/$FXBLK_LAB_EXTRA_DIR"/*.sh)
for script in "${LAB_SCRIPTS[@]}"; do
	[ -f "$script" ] || continue
	header=$(sed -n 's/^# lab: *//p' "$script" | head -n1)
	name=$(basename "$script" .sh)
	if [ -z "$header" ]; then
		want "lab: $name" && record "lab: $name (no '# lab:' header line)" 1 0 "$script"
		continue
	fi
	parse_header "$header"
	# the debug kernel runs what 6.12 runs (pool_add_debug); tests/lab/debug
	# headers name it themselves
	[[ ,$kernels, != *,6.12,* ]] || kernels+=,${NEW_KERNELS// /,},debug
	# a header may already name 7.2/7.3 (44, 55, 56, 60): each kernel once
	kernels=$(tr , '\n' <<< "$kernels" | awk 'NF && !seen[$0]++' | paste -sd,)
	for s in ${kernels//,/ }; do
		if ! lab_kernel_ok "$s"; then
			# the quick set runs it there (below): not a skip
			[ "$s" = debug ] && [ "$DEBUG_QUICK_ON" = 1 ] &&
				[[ " ${DEBUG_QUICK[*]} " == *"/$name.sh "* ]] && continue
			skip_test "lab $s: $name" "kernel $s not in FXBLK_LAB_KERNELS=$LAB_KERNELS"
			continue
		fi
		# the chroot kernels: only what quick= names them for by default
		if [[ " $NEW_KERNELS " == *" $s "* ]]; then
			if ! kernel_ready "$s"; then
				# (unrecorded, module $s's build fails instead: one failure)
				why=$(FXBLK_CACHE=$CACHE missing_reason "chroot-$s") &&
					why="artefact chroot-$s not fetched by make deps: $why" || why=$NOT_READY
				skip_test "lab $s: $name" "$why"
				continue
			fi
			if [ "$FULL" != 1 ] && [[ ,$quick, != *,$s,* ]]; then
				skip_test "lab $s: $name" "$s runs only the tests whose quick= names it by default; all in make check-full"
				continue
			fi
		fi
		# quick= trims the default run only; the debug kernel runs everything
		if [ "$FULL" != 1 ] && [ "$s" != debug ] && [ -n "$quick" ] &&
			[[ ,$quick, != *,$s,* ]]; then
			skip_test "lab $s: $name" "runs on $quick by default; on $kernels in make check-full"
			continue
		fi
		if [ "$s" = debug ]; then
			pool_add_debug "$name" "$script"
			continue
		fi
		lab_add "lab $s: $name" "$s" '' "${opts[@]}" -- "$script"
	done
done
# The debug kernel's quick set (decided before the lab loop): its runs are
# added after the loop, so that loop does not list them as skipped
if [ "$DEBUG_QUICK_ON" = 1 ]; then
	for script in "${DEBUG_QUICK[@]}"; do
		header=$(sed -n 's/^# lab: *//p' "$TOP/$script" | head -n1)
		parse_header "$header"
		pool_add_debug "$(basename "$script" .sh)" "$TOP/$script"
	done
fi
# Negative controls: a header line
#   # lab-break: [on=KERNEL] [full] ARGS... ~ ERE
# runs the test with ARGS (its break mode) on KERNEL (default: the first
# kernel its quick= names, else kernels=) with the header's options; the
# script must fail (exit 1) with ERE in the output (the planted fault was
# caught, not something else). A control that passes fails make check.
# "full": the control runs in make check-full only (a control that costs
# several minutes of the 35-minute budget; the test itself still runs).
# Old headers need no change: a test without the line has no control.
# control_verdict ERE RC LOG: a control's run (exit status RC, output in
# LOG) failed as it must; the verdict is printed
control_verdict() {
	if [ "$2" != 1 ] || ! grep -q 'script exit 1,' "$3"; then
		echo "CONTROL FAILED: broken on purpose, the run exited $2, not with the script's failure (1): the checker missed the break"
		return 1
	fi
	if ! grep -Eq -- "$1" "$3"; then
		echo "CONTROL FAILED: the script failed, but without /$1/: not because of the planted break"
		return 1
	fi
	echo "CONTROL OK: broken on purpose, the test failed as it must (/$1/)"
}
control_run() {	# control_run ERE CMD...
	local ere=$1 out rc
	shift
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	control_verdict "$ere" "$rc" "$out"
	rc=$?
	rm -f "$out"
	return $rc
}
for script in "${LAB_SCRIPTS[@]}"; do
	[ -f "$script" ] || continue
	header=$(sed -n 's/^# lab: *//p' "$script" | head -n1)
	[ -n "$header" ] || continue
	name=$(basename "$script" .sh)
	while IFS= read -r ctl; do
		[ -n "$ctl" ] || continue
		ere=${ctl#*' ~ '}
		[ "$ere" != "$ctl" ] || { want "lab control: $name" && record "lab control: $name ('# lab-break:' line lacks ' ~ ERE')" 1 0 "$script"; continue; }
		cargs=() on='' cfull=0
		for a in ${ctl%%' ~ '*}; do
			case $a in on=*) on=${a#on=} ;; full) cfull=1 ;; *) cargs+=("$a") ;; esac
		done
		parse_header "$header"
		[ -n "$on" ] || { [ -n "$quick" ] && [ "$quick" != none ] && on=${quick%%,*}; } || on=${kernels%%,*}
		cname="lab $on: $name ${cargs[*]} (negative control, must fail)"
		# a test of make check-full only (quick=none) has its control there
		if [ "$FULL" != 1 ] && [ "$quick" = none ]; then
			skip_test "$cname" "quick=none: the test and its control run in make check-full only"
			continue
		fi
		if [ "$FULL" != 1 ] && [ $cfull = 1 ]; then
			skip_test "$cname" "'# lab-break: full': this control runs in make check-full only"
			continue
		fi
		if ! lab_kernel_ok "$on"; then
			skip_test "$cname" "kernel $on not in FXBLK_LAB_KERNELS=$LAB_KERNELS"
			continue
		fi
		lab_add "$cname" "$on" "$ere" "${opts[@]}" -- "$script" "${cargs[@]}"
	done < <(sed -n 's/^# lab-break: *//p' "$script")
done
lab_build() {	# a failure is a failed test; the runs then use what exists
	# (the compiler as module_build gave it, or kbuild would build again)
	local s
	for s in ${LAB_KERNELS//,/ }; do
		[[ " $NEW_KERNELS " != *" $s "* ]] || kernel_ready "$s" || continue
		make -s -C "$TOP" module KVER="$(kver "$s")" FXBLK_CCACHE=$CCACHE || return 1
	done
	if [ "$DEBUG_QUICK_ON" = 1 ]; then
		local d
		d=$(kver debug)
		make -s -C "$TOP" module KVER="$d" FXBLK_CCACHE=$CCACHE || return 1
		# 90-kmemleak's positive control, where make kernel-debug puts it
		mkdir -p "$TOP/build/lab-debug"
		cp "$CACHE/k/$d/root/lib/modules/$d/kernel/samples/kmemleak/kmemleak-test.ko" \
			"$TOP/build/lab-debug/" || return 1
	fi
	make -s -C "$TOP" fxctl
}

lab_batches

# ---- lab self-tests (in the same pool) ------------------------------------
st_kernel=6.1
lab_kernel_ok 6.1 || st_kernel=${LAB_KERNELS%%,*}
ST=$TOP/tests/lab/selftest/run.sh
pool_add "selftest: lab detects kernel WARNING ($st_kernel)" 300 "$ST" warn "$st_kernel"
pool_add "selftest: lab returns the script's exit status" 300 "$ST" status "$st_kernel"
pool_add "selftest: lab kills a hung VM after its timeout" 300 "$ST" timeout "$st_kernel"
pool_add "selftest: lab fails a run whose kernel panics mid-script" 300 "$ST" panic "$st_kernel"
pool_add "selftest: lab fails a run whose kernel logs an I/O error" 300 "$ST" ioerr "$st_kernel"
pool_add "selftest: lab passes an I/O error the script allows" 300 "$ST" ioerr-allowed "$st_kernel"
pool_add "selftest: lab fails a run whose kernel is tainted" 300 "$ST" taint "$st_kernel"
pool_add "selftest: lab checks boot 1's kernel log in a --boots 2 run" 300 "$ST" crash "$st_kernel"
pool_add "selftest: lab passes a known upstream lockdep report, not one with fxblk" 300 "$ST" known "$st_kernel"
pool_add "selftest: lab fails a --boots 2 run whose boot 1 does not crash" 300 "$ST" nocrash "$st_kernel"
pool_add "selftest: lab boots again after a stall before fxblk loads, not after" 300 "$ST" stall "$st_kernel"
pool_add "selftest: lab's fx_settle retries a slow udev event once, fails a stuck one" 300 "$ST" settle 6.12
pool_add "selftest: lab boots again after a stale int3 (TCG), not a real one" 60 "$ST" int3
pool_add "selftest: lab judges each test of a --batch boot on its own" 300 "$ST" batch "$st_kernel"
pool_add "selftest: lab boots again after a spurious #DB (TCG), not another problem" 150 "$ST" db 6.12

if printf '%s\n' "${POOL_NAMES[@]}" | grep -Eq '^(lab|selftest)'; then
	FILTER='' t "lab: build module + fxctl for the lab" lab_build
fi
pool_run "lab runs and self-tests, and tests that need no VM"

[ "$LIST" != 1 ] || exit 0
# the lab tests' times, for the next run's batches (lab_expected)
if [ -s "$LOGDIR/batch/times" ] && touch "$LAB_TIMES" 2>/dev/null; then
	awk -F'\t' '{t[$1] = $2} END {for (n in t) print n "\t" t[n]}' "$LAB_TIMES" "$LOGDIR/batch/times" |
		sort > "$LAB_TIMES.new" && mv "$LAB_TIMES.new" "$LAB_TIMES"
fi
# ---- summary --------------------------------------------------------------
T=$((SECONDS - T_ALL))
echo "check: $((T / 60))m$((T % 60))s, logs in ${LOGDIR#"$TOP"/}/"
# why each failed, in the output itself (CI shows the output, not the logs):
# a lab run's FAIL lines (script, kernel log, control), a unit test's
# doctest and sanitizer lines (ctest --output-on-failure), else the log's end
excerpt() {	# excerpt LOG
	local x
	x=$(grep -aE '^(FAIL: |CONTROL FAILED|lab: (FAIL|  |KNOWN)|# unexpected)' "$1" 2>/dev/null | head -n 12)
	[ -n "$x" ] || x=$(grep -aE '(^TEST CASE:|: (FATAL )?ERROR: |^  values: |^  logged: |^==[0-9]+==ERROR|runtime error: |^SUMMARY: |^[0-9]+: Test timeout|Failed +[0-9.]+ sec|\*\*\*Exception|\*\*\*Timeout)' "$1" 2>/dev/null | head -n 20)
	[ -n "$x" ] || x=$(grep -av '^# exit' "$1" 2>/dev/null | tail -n 8)
	printf '%s\n' "$x" | cut -c1-220 | sed 's/^/check:   | /'
}
for i in "${!FAILS[@]}"; do
	echo "check: failed: ${FAILS[$i]}"
	excerpt "${FAIL_LOGS[$i]}"
done
[ "$NOTES" = 0 ] || echo "check: skipped: $SKIPPED tests not run, $NOTES sub-checks inside tests (the 'note: SKIP:' lines above)"
echo "$PASSED passed, $FAILED failed$([ $((SKIPPED + NOTES)) = 0 ] || echo ", $((SKIPPED + NOTES)) skipped")"
[ "$FAILED" = 0 ]
