#!/bin/bash
# make check-arm64: the arm64 part of fxblk's checks, not in the default
# `make check` (30-minute budget: the first cross build of fxctl takes 3-6
# minutes here and the two TCG aarch64 VMs about 5 minutes together).
# Same output as make check: one PASS/FAIL/SKIP line per test, logs under
# build/check-arm64/, last line "N passed, M failed[, K skipped]"; exit 1 if
# M > 0.
#
#   fxctl arm64: cross-build      make fxctl-arm64 (cmake/aarch64-linux-gnu.cmake
#                                 against the arm64 tree of make deps); fxctl and
#                                 the lab tools are aarch64 ELF executables
#   module arm64: cross-build     fxblk.ko for Debian's arm64 6.12 (also in make check)
#   lab arm64: NAME               tests/lab/run --arch arm64 -- tests/lab/tests/NAME
#                                 for 01-module-load.sh (smoke) and 10-fio-verify.sh
#                                 (stripe verify), one VM at a time
#
# A test whose prerequisite is missing (no arm64 tree, kernel or compiler:
# `make deps`) is listed as SKIP with the reason.
# Env: FXBLK_CHECK_FILTER=REGEX  run only tests whose name matches (grep -E)
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP" || exit 2
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
BUILD=${FXBLK_BUILD:-$TOP/build}
LOGDIR=$BUILD/check-arm64
FILTER=${FXBLK_CHECK_FILTER:-}
LAB_TESTS="01-module-load.sh 10-fio-verify.sh"
export FXBLK_WERROR=1
mkdir -p "$LOGDIR"
rm -f "$LOGDIR"/*.log
# shellcheck source=/dev/null
. "$CACHE/kernels.env" 2>/dev/null || true
KVER=${FXBLK_KVER_ARM64:-}

PASSED=0 FAILED=0 SKIPPED=0
skip_test() { SKIPPED=$((SKIPPED + 1)); printf 'SKIP  %-40s  %s\n' "$1" "$2"; }
t() {	# t NAME CMD...: one test, its output into its log
	local name=$1 log t0 rc
	shift
	if [ -n "$FILTER" ] && ! grep -Eq -- "$FILTER" <<< "$name"; then
		skip_test "$name" "not matched by FXBLK_CHECK_FILTER='$FILTER'"
		return 0
	fi
	log=$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9._-' '_' | sed 's/_*$//').log
	t0=$SECONDS
	{ echo "# $name"; echo "# $*"; } > "$log"
	"$@" >> "$log" 2>&1 < /dev/null
	rc=$?
	echo "# exit $rc" >> "$log"
	if [ $rc = 0 ]; then
		PASSED=$((PASSED + 1))
		printf 'PASS  %-40s %4ss\n' "$name" $((SECONDS - t0))
	else
		FAILED=$((FAILED + 1))
		printf 'FAIL  %-40s %4ss  log: %s\n' "$name" $((SECONDS - t0)) "${log#"$TOP"/}"
	fi
	grep -a '^SKIP: ' "$log" | sort -u | sed 's/^/      note: /'
}

SYSROOT=${FXBLK_ARM64_SYSROOT:-$CACHE/arm64/sysroot}
have_sysroot() { [ -f "$SYSROOT/.fxblk-stamp" ] && command -v aarch64-linux-gnu-g++ >/dev/null; }
have_kernel() { [ -n "$KVER" ] && [ -f "$CACHE/arm64/kernel/$KVER/Image" ] && command -v qemu-system-aarch64 >/dev/null; }

fxctl_arm64() {
	local f ok=0
	nice -n 10 make -s fxctl-arm64 BUILD="$BUILD" || return 1
	for f in fxctl fxblk-nltest fxblk-fuzz fxblk-labeltool; do
		if file "$BUILD/arm64/ctl/$f" | grep -q 'ELF 64-bit LSB .*executable, ARM aarch64'; then
			echo "$f: $(file -b "$BUILD/arm64/ctl/$f" | cut -d, -f1-2)"
		else
			echo "$f: not an aarch64 executable: $(file -b "$BUILD/arm64/ctl/$f" 2>&1)"; ok=1
		fi
	done
	aarch64-linux-gnu-readelf -l "$BUILD/arm64/ctl/fxctl" | grep -q 'interpreter: /lib/ld-linux-aarch64.so.1' ||
		{ echo "fxctl: not linked for the arm64 dynamic loader"; ok=1; }
	return $ok
}
module_arm64() {
	nice -n 10 make -s module KVER="$KVER" BUILD="$BUILD" || return 1
	file "$BUILD/kmod/$KVER/fxblk.ko" | grep -q 'ARM aarch64' || { echo "fxblk.ko is not an arm64 object"; return 1; }
}

if have_sysroot; then
	t "fxctl arm64: cross-build" fxctl_arm64
else
	skip_test "fxctl arm64: cross-build" "no arm64 tree in $SYSROOT or no aarch64-linux-gnu-g++: run 'make deps'"
fi
if [ -n "$KVER" ] && [ -f "$CACHE/k/$KVER/.done" ] && command -v aarch64-linux-gnu-gcc >/dev/null; then
	t "module arm64: cross-build -Werror ($KVER)" module_arm64
else
	skip_test "module arm64: cross-build -Werror" "no arm64 headers or aarch64-linux-gnu-gcc: run 'make deps'"
fi
for s in $LAB_TESTS; do
	if have_sysroot && have_kernel; then
		# (the builds above are the tests' builds: no --no-build, it is a no-op then)
		t "lab arm64: $s" nice -n 10 tests/lab/run --arch arm64 -- "tests/lab/tests/$s"
	else
		skip_test "lab arm64: $s" "no arm64 kernel, tree or qemu-system-aarch64: run 'make deps'"
	fi
done
echo "$PASSED passed, $FAILED failed$([ "$SKIPPED" = 0 ] || echo ", $SKIPPED skipped")"
[ "$FAILED" = 0 ]
