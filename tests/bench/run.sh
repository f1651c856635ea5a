#!/bin/bash
# make bench: fio on fxblk vs dm-stripe vs md raid0 vs JBOD vs one member, in
# the lab VM, on three kinds of members (one lab boot each):
#   fabric-bw    4 NVMe-oF/RDMA namespaces, null_blk behind them capped at
#                BENCH_FABRIC_MBPS (default 20) MiB/s each: bandwidth rows
#                (Soft-RoCE is CPU-bound under TCG; only capped members show
#                aggregation, with <= 0.5% spread)
#   fabric-iops  the same, uncapped: IOPS / latency rows
#   local        local null_blk members (no fabric): capped at BENCH_LOCAL_MBPS
#                (default 200) for bandwidth rows, uncapped for IOPS rows, so
#                the driver's own cost is what differs
# Workloads (tests/bench/vm-bench.sh): 1 MiB seq read and write (1 job, QD 8),
# 4 KiB random read QD 1 and QD 32, 512 KiB random read with 8 and 16 jobs
# (KV-cache pattern). Devices alternate within a boot, BENCH_REPS (default 5)
# repeats, BENCH_RUNTIME_BW (default 2) / BENCH_RUNTIME_IOPS (default 3)
# seconds per fio run: short, to keep the whole bench < ~25 min of emulated
# time (capped rows are steady within 0.5%, so 2 s is enough; uncapped rows
# are noisy, +-10-20%, which is why the report gives medians of per-repeat
# ratios and CPU time per I/O).
#
# Output: build/bench/results.json (raw samples + medians + ratios),
# results.md (tables), results.png (ratios plot), <kind>.log (lab output).
#   tests/bench/run.sh [--report-only] [--kinds "fabric-bw fabric-iops local"]
# Env: BENCH_KERNEL (6.1), BENCH_REPS, BENCH_RUNTIME_BW, BENCH_RUNTIME_IOPS, BENCH_FABRIC_MBPS,
#      BENCH_LOCAL_MBPS, BENCH_LAB_OPTS (extra tests/lab/run options).
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
OUT=${BENCH_OUT:-$TOP/build/bench}
KERNEL=${BENCH_KERNEL:-6.1}
REPS=${BENCH_REPS:-5}
RT_BW=${BENCH_RUNTIME_BW:-2}
RT_IOPS=${BENCH_RUNTIME_IOPS:-3}
FCAP=${BENCH_FABRIC_MBPS:-20}
LCAP=${BENCH_LOCAL_MBPS:-200}
KINDS="fabric-bw fabric-iops local"
REPORT_ONLY=0
while [ $# -gt 0 ]; do
	case $1 in
	--report-only) REPORT_ONLY=1 ;;
	--kinds) KINDS=${2:?}; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
command -v jq >/dev/null || { echo "bench: jq missing (make deps)" >&2; exit 1; }
mkdir -p "$OUT"
T0=$(date +%s)

if [ $REPORT_ONLY = 0 ]; then
	for kind in $KINDS; do
		case $kind in
		fabric-bw)   opts=(--members 4 --mbps "$FCAP" --memory-backed 0); nwl=4; rt=$RT_BW ;;
		fabric-iops) opts=(--members 4 --memory-backed 0); nwl=2; rt=$RT_IOPS ;;
		local)       opts=(--no-fabric); nwl=6; rt=$RT_IOPS ;;
		*) echo "bench: unknown kind $kind" >&2; exit 2 ;;
		esac
		# 5 devices x workloads x repeats x (runtime + fio start-up), plus boot
		tmo=$((180 + 5 * nwl * REPS * (rt + 8)))
		echo "bench: $kind on $KERNEL: $((5 * nwl * REPS)) fio runs of ${RT_BW}s (bandwidth) / ${RT_IOPS}s (IOPS) (timeout ${tmo}s)"
		set +e
		# shellcheck disable=SC2086
		# no_timer_check: on a loaded host the emulated IO-APIC timer check
		# can fail at boot under TCG ("IO-APIC + timer doesn't work!" panic)
		"$TOP/tests/lab/run" --kernel "$KERNEL" "${opts[@]}" --timeout "$tmo" \
			--append no_timer_check ${BENCH_LAB_OPTS:-} \
			-- "$TOP/tests/bench/vm-bench.sh" "$kind" "$REPS" "$RT_BW" "$RT_IOPS" "$LCAP" 2>&1 |
			tee "$OUT/$kind.log" | grep --line-buffered -E '^(\[|PASS|FAIL|lab:)'
		rc=${PIPESTATUS[0]}
		set -e
		[ "$rc" = 0 ] || { echo "bench: lab run for $kind failed (exit $rc), see $OUT/$kind.log" >&2; exit 1; }
	done
fi

# ---- report ------------------------------------------------------------------
LOGS=()
for kind in $KINDS; do
	[ -f "$OUT/$kind.log" ] || { echo "bench: $OUT/$kind.log missing" >&2; exit 1; }
	LOGS+=("$OUT/$kind.log")
done
sed -n 's/^BENCH //p' "${LOGS[@]}" | jq -s . >"$OUT/samples.json"
sed -n 's/^BENCHINFO //p' "${LOGS[@]}" | jq -s . >"$OUT/info.json"
NS=$(jq length "$OUT/samples.json")
[ "$NS" -gt 0 ] || { echo "bench: no samples in ${LOGS[*]}" >&2; exit 1; }

jq -n --slurpfile s "$OUT/samples.json" --slurpfile info "$OUT/info.json" \
	--argjson fcap "$FCAP" --argjson lcap "$LCAP" --arg kernel "$KERNEL" '
def median: map(select(. != null)) | sort |
	if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def mode: if startswith("fabric") then "nvme-rdma" else "null_blk-local" end;
def metric: if .set == "bw" then "mibs" else "iops" end;
($s[0]) as $all
| ($all | map(select(.error == null))) as $ok
| {
  schema_version: 1,
  kernel: $kernel,
  caps_mibs: {"nvme-rdma": $fcap, "null_blk-local": $lcap},
  info: $info[0],
  failed_runs: ($all | map(select(.error != null))),
  samples: $all,
  rows: [ $ok | group_by([(.kind | mode), .wl])[] |
    (.[0] | {mode: (.kind | mode), wl, set, metric: metric}) as $h
    | . as $g
    | ($h.metric) as $m
    | {mode: $h.mode, workload: $h.wl, set: $h.set, metric: (if $m == "mibs" then "MiB/s" else "IOPS" end),
       jobs: .[0].jobs, qd: .[0].qd,
       median: ($g | group_by(.dev) | map({key: .[0].dev, value: {
           value: (map(.[$m]) | median | r3),
           lat_mean_us: (map(.lat_mean_us) | median | r3),
           lat_p99_us: (map(.lat_p99_us) | median | r3),
           cpu_us_per_io: (map(.cpu_us_per_io) | median | r3),
           sys_us_per_io: (map(.sys_us_per_io) | median | r3),
           n: length}}) | from_entries),
       ratios: ([ "dm", "md", "jbod", "single" ] | map(. as $o | {key: ("fxblk/" + ({"dm": "dm-stripe", "md": "md-raid0", "jbod": "JBOD", "single": "single"}[$o])),
         value: ([ $g[] | select(.dev == "fx") ] as $fx
           | [ $fx[] as $f | $g[] | select(.dev == $o and .rep == $f.rep) | {f: $f, o: .} ] as $pairs
           | {pairs: ($pairs | length),
              throughput: ($pairs | map(if .o[$m] > 0 then .f[$m] / .o[$m] else null end) | median | r3),
              lat_mean: ($pairs | map(if .o.lat_mean_us > 0 then .f.lat_mean_us / .o.lat_mean_us else null end) | median | r3),
              lat_p99: ($pairs | map(if .o.lat_p99_us > 0 then .f.lat_p99_us / .o.lat_p99_us else null end) | median | r3),
              cpu_per_io: ($pairs | map(if (.o.cpu_us_per_io // 0) > 0 then .f.cpu_us_per_io / .o.cpu_us_per_io else null end) | median | r3),
              vm_cpu_per_io: ($pairs | map(if (.o.sys_us_per_io // 0) > 0 then .f.sys_us_per_io / .o.sys_us_per_io else null end) | median | r3)})}) | from_entries)
     }
     | if .set == "bw" then .fx_vs_cap_sum = ((.median.fx.value // 0) / (4 * (if .mode == "nvme-rdma" then $fcap else $lcap end)) | r3) else . end
  ]
}' >"$OUT/results.json"

# markdown
jq -r '
def f(d): if . == null then "–" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
def order: {"seqread-1m": 0, "seqwrite-1m": 1, "kv-512k-j8": 2, "kv-512k-j16": 3, "randread-4k-qd1": 4, "randread-4k-qd32": 5}[.workload] // 9;
"# fxblk bench (kernel \(.kernel))",
"",
"Median of per-repeat ratios fxblk ÷ other device (same boot, devices alternated).",
"Throughput = MiB/s for bandwidth rows (members capped: nvme-rdma \(.caps_mibs["nvme-rdma"]) MiB/s,",
"null_blk-local \(.caps_mibs["null_blk-local"]) MiB/s each; cap sum = 4 × cap), IOPS for the others (uncapped).",
"Latency and CPU ratios < 1 mean fxblk is better. CPU/IO (fio) = fio (usr+sys) ÷ I/Os;",
"CPU/IO (VM) = whole-VM busy time from /proc/stat ÷ I/Os (includes completion softirqs).",
"",
(.rows | group_by(.mode) | reverse[] |
  "## members: \(.[0].mode)", "",
  "| workload | jobs×QD | metric | fxblk | ÷dm-stripe | ÷md-raid0 | ÷JBOD | ÷single | ÷cap sum | lat fx/dm | p99 fx/dm | lat fx/md | CPU/IO fx/dm (fio) | CPU/IO fx/dm (VM) | CPU/IO fx/md (VM) |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  (sort_by(order)[] |
   "| \(.workload) | \(.jobs)×\(.qd) | \(.metric) | \(.median.fx.value | f(1)) | \(.ratios["fxblk/dm-stripe"].throughput | f(3)) | \(.ratios["fxblk/md-raid0"].throughput | f(3)) | \(.ratios["fxblk/JBOD"].throughput | f(3)) | \(.ratios["fxblk/single"].throughput | f(3)) | \(.fx_vs_cap_sum | f(3)) | \(.ratios["fxblk/dm-stripe"].lat_mean | f(3)) | \(.ratios["fxblk/dm-stripe"].lat_p99 | f(3)) | \(.ratios["fxblk/md-raid0"].lat_mean | f(3)) | \(.ratios["fxblk/dm-stripe"].cpu_per_io | f(3)) | \(.ratios["fxblk/dm-stripe"].vm_cpu_per_io | f(3)) | \(.ratios["fxblk/md-raid0"].vm_cpu_per_io | f(3)) |"),
  "",
  "Absolute medians (value; mean/p99 latency µs; VM CPU µs per I/O):", "",
  "| workload | fxblk | dm-stripe | md-raid0 | JBOD | single |",
  "|---|---|---|---|---|---|",
  (sort_by(order)[] | . as $r |
   "| \(.workload) (\(.metric)) | " + ([ "fx", "dm", "md", "jbod", "single" ] | map($r.median[.] as $d |
     if $d == null then "–" else "\($d.value | f(1)); \($d.lat_mean_us | f(0))/\($d.lat_p99_us | f(0)); \($d.sys_us_per_io | f(1))" end) | join(" | ")) + " |"),
  ""),
"Runs: \(.samples | length) fio runs, \(.failed_runs | length) failed.",
(.failed_runs[] | "- FAILED: \(.kind) \(.dev) \(.wl) rep \(.rep): \(.error)")
' "$OUT/results.json" >"$OUT/results.md"

# plot: throughput ratios per row (gnuplot, clustered bars, line at 1.0)
jq -r '
def order: {"seqread-1m": 0, "seqwrite-1m": 1, "kv-512k-j8": 2, "kv-512k-j16": 3, "randread-4k-qd1": 4, "randread-4k-qd32": 5}[.workload] // 9;
.rows | sort_by(.mode, order)[] |
[ ((if .mode == "nvme-rdma" then "rdma" else "local" end) + ":" + .workload) ] +
([ "fxblk/dm-stripe", "fxblk/md-raid0", "fxblk/JBOD", "fxblk/single" ] as $k | [ $k[] as $x | (.ratios[$x].throughput // "NaN") ]) +
([ "fxblk/dm-stripe", "fxblk/md-raid0", "fxblk/JBOD" ] as $k | [ $k[] as $x | (.ratios[$x].vm_cpu_per_io // "NaN") ]) | @tsv' \
	"$OUT/results.json" >"$OUT/ratios.tsv"
if command -v gnuplot >/dev/null; then
	gnuplot <<GP || echo "bench: gnuplot failed; no plot" >&2
set terminal pngcairo size 1400,900 font ",10"
set output "$OUT/results.png"
set multiplot layout 2,1 title "fxblk vs other devices over the same 4 members, kernel $KERNEL (median of per-repeat ratios)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile separator "\t"
set datafile missing "NaN"
set xtics rotate by -20 noenhanced font ",9"
set grid ytics
set key outside right top
set yrange [0:*]
set ylabel "throughput fxblk / other"
plot "$OUT/ratios.tsv" using 2:xtic(1) title "÷ dm-stripe", '' using 3 title "÷ md-raid0", \
	'' using 4 title "÷ JBOD", 1 with lines lw 2 lc rgb "black" title "1.0"
set ylabel "CPU per I/O fxblk / other (VM)"
plot "$OUT/ratios.tsv" using 6:xtic(1) title "÷ dm-stripe", '' using 7 title "÷ md-raid0", \
	'' using 8 title "÷ JBOD", 1 with lines lw 2 lc rgb "black" title "1.0"
unset multiplot
GP
fi
cat "$OUT/results.md"
echo
echo "bench: $NS fio runs; results in $OUT/results.{json,md,png}; took $(($(date +%s) - T0)) s"
