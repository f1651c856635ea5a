#!/bin/bash
# The cost kinds' regression check (issue 22), run by tests/bench/run.sh:
#   cost-history.sh RESULTS.json HISTORY.json LIMIT_PCT RECORD
# Compares fxN's guest ns per I/O on every row of RESULTS' .cost with the
# last entry of HISTORY (a JSON array kept in the repository,
# docs/bench/cost-history.json) for the same kind, guest kernel and
# settings (runtime, member attributes, chunk, icount, CPUs, fio buffers,
# prefill): a row where fxN costs more than LIMIT_PCT % more is a
# regression. Prints one line per
# row and a verdict; exit 1 on a regression, 0 otherwise (also when there
# is nothing to compare with). RECORD=1 appends this run's entries (one per
# kind: commit, time, settings, every device's ns per I/O) to HISTORY.
set -euo pipefail
RES=${1:?results.json} HIST=${2:?history.json} LIMIT=${3:-2} RECORD=${4:-0}
# Rows whose figure is not reproducible to LIMIT between boots get their own
# limit ("row=pct ..."): the 16-job io_uring row moved by up to 3.6 % between
# three boots of one commit (docs/benchmarks.md, cost stability).
ROW_LIMITS=${BENCH_COST_ROW_LIMITS-xread-512k-j16-uring=6}
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
commit=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo nogit)
git -C "$TOP" diff --quiet HEAD 2>/dev/null || commit+=-dirty
[ -f "$HIST" ] || echo '[]' >"$HIST.new"
[ -f "$HIST" ] || mv "$HIST.new" "$HIST"
# this run's entries, one per cost kind
NOW=$(jq -c --arg commit "$commit" --arg time "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '
	.info as $info
	| [ .cost | group_by(.kind)[] | .[0].kind as $k
	  | ($info | map(select(.kind == $k)) | add) as $i
	  | {kind: $k, commit: $commit, time: $time, kernel: $i.kernel,
	     settings: {runtime_s: $i.runtime_iops_s, member_attrs: ($i.member_attrs // null), chunk_kb: $i.chunk_kb,
	                icount: ($i.icount // "0"), cpus: $i.cpus,
	                fio_iomem: ($i.fio_iomem // "malloc"), prefill_mib: ($i.prefill_mib // 0)},
	     ns_per_io: (map({key: .workload, value: (.dev | map_values(.ns_per_io))}) | from_entries)} ]' "$RES")
rc=0
rowlim=$(printf '%s\n' $ROW_LIMITS | jq -Rn '[inputs | select(length > 0) | split("=") | {key: .[0], value: (.[1] | tonumber)}] | from_entries')
jq -r --argjson now "$NOW" --argjson limit "$LIMIT" --argjson rowlim "$rowlim" '
	. as $hist
	| $now[] as $n
	| ([ $hist[] | select(.kind == $n.kind and .kernel == $n.kernel and .settings == $n.settings) ] | last) as $p
	| if $p == null then "cost: \($n.kind) on \($n.kernel): no recorded run with these settings to compare with (BENCH_COST_RECORD=1 records this one)"
	  else
	    "cost: \($n.kind) on \($n.kernel): fxN against the recorded run of \($p.commit) (\($p.time)), limit +\($limit) %:",
	    ($n.ns_per_io | to_entries[] | .key as $w | .value as $v | $p.ns_per_io[$w] as $o
	     | if $o == null or $o.fx == null or $v.fx == null then "  \($w): not in the recorded run"
	       else (($v.fx / $o.fx - 1) * 100) as $d | ($rowlim[$w] // $limit) as $limit
	         | (if ($o.single // 0) > 0 and ($v.single // 0) > 0 then ($v.single / $o.single - 1) * 100 else null end) as $ds
	         | "  \(if $d > $limit then "REGRESSION" elif $d < -$limit then "cheaper   " else "ok        " end) \($w): fx \($v.fx | round) ns/IO, was \($o.fx | round) (\(if $d >= 0 then "+" else "" end)\($d * 100 | round / 100) %\(if $rowlim[$w] then ", this row'"'"'s limit \($limit) %" else "" end))"
	           + (if $ds != null and ($ds | fabs) > 0.5 then "; one member alone moved too (\($ds * 100 | round / 100) %): not fxN alone (kernel, fio, QEMU or the memory layout differ)" else "" end)
	       end)
	  end' "$HIST" | tee /tmp/cost-compare.$$ || rc=1
grep -q '^  REGRESSION' /tmp/cost-compare.$$ && rc=1
rm -f /tmp/cost-compare.$$
if [ "$rc" = 1 ]; then
	echo "cost: fxN is more than $LIMIT % dearer than in the last recorded run on the REGRESSION rows"
else
	echo "cost: no row of fxN more than $LIMIT % dearer than the last recorded run"
fi
if [ "$RECORD" = 1 ]; then
	jq --argjson now "$NOW" '. + $now' "$HIST" >"$HIST.tmp" && mv "$HIST.tmp" "$HIST"
	echo "cost: recorded this run ($commit) in $HIST"
fi
exit "$rc"
