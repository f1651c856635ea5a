#!/bin/bash
# Unit test of the cost kind's regression check (tests/bench/cost-history.sh),
# no VM: synthetic results against a synthetic history. Run by make check.
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
CH=$TOP/tests/bench/cost-history.sh
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# results.json with two rows; FX1 and FX2 are fxN's ns per I/O on them
results() { # results FX1 FX2 [IOMEM]
	jq -n --argjson a "$1" --argjson b "$2" --arg iomem "${3:-shmhuge}" '{
	  info: [{kind: "cost", kernel: "6.1.0-test", runtime_iops_s: "200ms", chunk_kb: 512, cpus: "1"},
	         {kind: "cost", member_attrs: "max_sectors=256", icount: "1", fio_iomem: $iomem, prefill_mib: 32}],
	  cost: [{kind: "cost", workload: "randread-4k-qd1", dev: {fx: {ns_per_io: $a}, single: {ns_per_io: 9000}}},
	         {kind: "cost", workload: "xread-512k-j16-uring", dev: {fx: {ns_per_io: $b}, single: {ns_per_io: 60000}}}]}'
}
check() { # check WANT_RC PATTERN RESULTS: run against $T/h.json
	local rc=0 out
	out=$(BENCH_COST_ROW_LIMITS="xread-512k-j16-uring=6" "$CH" "$3" "$T/h.json" 2 0 2>&1) || rc=$?
	[ "$rc" = "$1" ] || fail "exit $rc, expected $1: $out"
	grep -qE "$2" <<<"$out" || fail "no line matching '$2' in: $out"
	echo "ok: exit $rc, '$2'"
}
echo '[]' >"$T/h.json"
results 10000 40000 >"$T/base.json"
check 0 'no recorded run with these settings' "$T/base.json"
"$CH" "$T/base.json" "$T/h.json" 2 1 >/dev/null
[ "$(jq length "$T/h.json")" = 1 ] || fail "RECORD=1 did not append one entry"
check 0 'ok +randread-4k-qd1: fx 10000 ns/IO, was 10000' "$T/base.json"
results 10300 40000 >"$T/r.json"       # +3 % on a row with the default limit
check 1 'REGRESSION randread-4k-qd1' "$T/r.json"
results 9700 40000 >"$T/r.json"
check 0 'cheaper +randread-4k-qd1' "$T/r.json"
results 10000 41600 >"$T/r.json"       # +4 % on the row with its own 6 % limit
check 0 "ok +xread-512k-j16-uring: .*this row's limit 6 %" "$T/r.json"
results 10000 43000 >"$T/r.json"       # +7.5 % on it
check 1 'REGRESSION xread-512k-j16-uring' "$T/r.json"
results 12000 40000 malloc >"$T/r.json" # other settings: nothing to compare with
check 0 'no recorded run with these settings' "$T/r.json"
echo "PASS: cost-history.sh flags rows above their limit and only against like settings"
