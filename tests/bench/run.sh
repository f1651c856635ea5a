#!/bin/bash
# make bench: fio on fxblk vs dm-stripe vs md raid0 vs JBOD vs one member, in
# the lab VM, on these kinds of members (one lab boot each):
#   fabric-bw    4 NVMe-oF/RDMA namespaces, null_blk behind them capped at
#                BENCH_FABRIC_MBPS (default 20) MiB/s each: bandwidth rows
#                (Soft-RoCE is CPU-bound under TCG; only capped members show
#                aggregation)
#   fabric-iops  the same, uncapped, connected with one poll queue each:
#                IOPS / latency rows, and polled rows (io_uring --hipri) for
#                every device but md (which does not poll)
#   local        local null_blk members (no fabric): capped at BENCH_LOCAL_MBPS
#                (default 200) for bandwidth rows, uncapped for IOPS rows, so
#                the driver's own cost is what differs
#   seed         the seed workloads on 4 local memory-backed null_blk members
#                capped like local's: model load (4 readers, 8 MiB reads,
#                direct and buffered), checkpoint save (4 writers, 4 MiB
#                buffered writes to new files + fsync: MiB/s to durable),
#                KV cache (512 KiB random reads, 8 and 16 jobs, chunk-aligned
#                and not, io_uring and libaio), through the raw device and
#                through xfs (O_DIRECT on preallocated files)
#   seed-scale   (not default) a subset of the seed rows at 2, 4 and 8
#                members, BENCH_SCALE_REPS (default 1) repeats
#   peer         GPU peer-memory paths (issue 8; tests/bench/vm-peer.sh): fxN
#                over 4 NVMe-oF members capped like fabric-bw's; fxctl peer
#                bench reads BENCH_PEER_MIB (128) MiB in 1 MiB reads, depth 4,
#                per path: posix (O_DIRECT into host memory), staged (libfxio's
#                bounce pool into emulated device memory, host copy engine),
#                direct (registered host memory through /dev/fxblk-peer),
#                peerq (the same over fxblk's own NVMe-oF queues, issue 20),
#                each with CPU s per GiB (busy time of all VM CPUs); the
#                staged ÷ posix ratio is the issue's target (>= 0.9)
#   ai           the Python AI-stack rows (issue 21;
#                tests/bench/vm-ai.sh, the lab's --hostfs): fxN over 4 memory-backed
#                NVMe-oF members capped like fabric-bw's; the KV-cache trace
#                (ctl/fxio/python/examples/kvcache_trace.py, the stored trace,
#                BENCH_AI_KV_BLOCKS (256) blocks of BENCH_AI_KV_KIB (64) KiB)
#                through fxio batches vs one O_DIRECT pread per block; then
#                xfs on it and a BENCH_AI_MIB (48) MiB model file
#                (examples/bench_load.py) loaded by fxio.safetensors.load,
#                the same staged, open().read() + views and torch.load, saved
#                by fxio.safetensors.save and torch.save + fsync;
#                BENCH_AI_REPS (3) runs each; on BENCH_AI_KERNEL (6.12)
#   peer-p2p     the direct path with PCI P2PDMA pages (tests/bench/vm-p2p.sh):
#                O_DIRECT reads into an emulated NVMe CMB (p2pmem) and into
#                host memory, on fxN over two emulated nvme-pci namespaces and
#                on one of them alone; needs the lab's debug kernel (make
#                kernel-debug: CONFIG_PCI_P2PDMA) and QEMU q35, else SKIP
#   cost         (not default) guest CPU per I/O, deterministic: one vCPU under
#                QEMU instruction counting (tests/lab/run --icount), 4 uncapped
#                local null_blk members (128 KiB commands, write cache), the
#                rows of WL_COST in tests/bench/vm-bench.sh, BENCH_RUNTIME_COST_MS
#                (200) guest ms each; guest ns per I/O = 1e9 / IOPS, the
#                added cost over one member, fx vs dm/md (.cost in
#                results.json). Compared with the last run recorded in
#                BENCH_COST_HISTORY (docs/bench/cost-history.json) for the same
#                kernel and settings: fxN more than 2 % dearer on a row is a
#                regression (reported; exit 1 unless BENCH_COST_GATE=0);
#                BENCH_COST_RECORD=1 appends this run to the history
#   cost-fabric  (not default) the same over the lab's 4 NVMe-oF members
#                (WL_COST_FAB: 4 KiB, 128 KiB and the KV-cache rows;
#                BENCH_RUNTIME_COST_FAB_MS (1000) guest ms each); the fabric's
#                both ends run on the one vCPU, so each row's cost includes
#                Soft-RoCE, nvme-rdma, nvmet and the target's null_blk
# Caps: null_blk's `mbps` timer WARNs under concurrent submitters (and a
# WARN fails the lab run), so members are capped by service time instead:
# timer completions, 4 tags, 128 KiB commands (tests/bench/vm-bench.sh
# cap_attrs; tests/lab/run --nullb-attr for the fabric).
# Workloads (tests/bench/vm-bench.sh): 1 MiB seq read and write (1 job, QD 8),
# 4 KiB random read QD 1 and QD 32, 512 KiB random read with 8 and 16 jobs
# (KV-cache pattern), plus the seed rows. Devices alternate within a boot,
# BENCH_REPS (default 5; seed BENCH_SEED_REPS, default 3) repeats,
# BENCH_RUNTIME_BW (default 2) / BENCH_RUNTIME_IOPS (default 3) seconds per
# time-based fio run. JBOD runs with as many I/Os in flight as the stacked
# devices. The report gives medians with min-max over the repeats and
# medians of per-repeat ratios; CPU per I/O is the busy time of all VM CPUs
# (/proc/stat) from the first job's start to the last job's end / I/Os.
#
# Output: build/bench/results.json (raw samples + medians + ratios; schema
# in docs/benchmarks.md), results.md (tables), results.png (ratios plot),
# <kind>.log (lab output), history/<time>-<commit>.json (every report).
# Exits 1 if a lab run or any fio run failed (after writing the report,
# whose "FAILED" lines say which).
#   tests/bench/run.sh [--report-only] [--kinds "fabric-bw fabric-iops local seed"]
#   make bench [BENCH_KINDS=seed-scale] (BENCH_KINDS: the same as --kinds)
# Env: BENCH_KERNEL (6.1), BENCH_REPS, BENCH_SEED_REPS, BENCH_SCALE_REPS,
#      BENCH_RUNTIME_BW, BENCH_RUNTIME_IOPS, BENCH_FABRIC_MBPS, BENCH_LOCAL_MBPS,
#      BENCH_SEED_MIB (32: MiB per model/checkpoint file and reader),
#      BENCH_RUNTIME_SEED (2: seconds per KV-cache run),
#      BENCH_EXPECT_FAIL (ERE on "DEV WORKLOAD ERROR" of failures that are a
#      known result, default: dm-stripe's EAGAIN on raw io_uring KV reads),
#      BENCH_LAB_OPTS (extra tests/lab/run options), BENCH_OUT (build/bench).
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
OUT=${BENCH_OUT:-$TOP/build/bench}
KERNEL=${BENCH_KERNEL:-6.1}
REPS=${BENCH_REPS:-5}
RT_BW=${BENCH_RUNTIME_BW:-2}
RT_IOPS=${BENCH_RUNTIME_IOPS:-3}
FCAP=${BENCH_FABRIC_MBPS:-20}
LCAP=${BENCH_LOCAL_MBPS:-200}
SEED_REPS=${BENCH_SEED_REPS:-3}
SCALE_REPS=${BENCH_SCALE_REPS:-1}
SEED_MIB=${BENCH_SEED_MIB:-32}
RT_SEED=${BENCH_RUNTIME_SEED:-2}
# fio failures that are a result, not a broken run (listed as expected in the report):
# dm-stripe fails 512 KiB io_uring reads on the raw device with EAGAIN (6.1,
# members with 128 KiB max_sectors: a REQ_NOWAIT bio dm would have to split)
EXPECT_FAIL=${BENCH_EXPECT_FAIL-^dm kv-raw-.*-uring fio job error 11 }
PEER_MIB=${BENCH_PEER_MIB:-128}
AI_REPS=${BENCH_AI_REPS:-3}
AI_MIB=${BENCH_AI_MIB:-48}
AI_KV_KIB=${BENCH_AI_KV_KIB:-64}
AI_KV_BLOCKS=${BENCH_AI_KV_BLOCKS:-256}
RT_COST=${BENCH_RUNTIME_COST_MS:-200}
# an NVMe-oF row costs 0.1-5 ms of guest time per I/O (Soft-RoCE's copies
# and CRCs): 1 s rows, so that the large ones count a few hundred I/Os
RT_COST_FAB=${BENCH_RUNTIME_COST_FAB_MS:-1000}
COST_REPS=${BENCH_COST_REPS:-1}
COST_HISTORY=${BENCH_COST_HISTORY:-$TOP/docs/bench/cost-history.json}
COST_LIMIT=${BENCH_COST_LIMIT:-2}
KINDS=${BENCH_KINDS:-fabric-bw fabric-iops local seed peer peer-p2p ai}
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
		reps=$REPS
		vmscript=()
		rt_iops=$RT_IOPS
		kernel=$KERNEL
		case $kind in
		fabric-bw)   opts=(--members 4 --memory-backed 0)
			for x in irqmode=2 hw_queue_depth=4 max_sectors=256 completion_nsec=$((4 * 128 * 1000000000 / 1024 / FCAP)); do
				opts+=(--nullb-attr "$x")
			done
			nrun=$((5 * 4)); rt=$RT_BW ;;
		fabric-iops) opts=(--members 4 --memory-backed 0 --poll-queues 1); nrun=$((5 * 2 + 4 * 2)); rt=$RT_IOPS ;;
		local)       opts=(--no-fabric); nrun=$((5 * 6)); rt=$RT_IOPS ;;
		# seed: 2 fio runs of 17 groups per device, ~6 s of set-up (mkfs, prep)
		seed)        opts=(--no-fabric --mem 4G); reps=$SEED_REPS; nrun=$((5 * 17)); rt=$((RT_SEED + 2)) ;;
		seed-scale)  opts=(--no-fabric --mem 4G); reps=$SCALE_REPS; nrun=$((3 * 5 * 8)); rt=$((RT_SEED + 3)) ;;
		peer)        opts=(--members 4 --memory-backed 0)
			for x in irqmode=2 hw_queue_depth=4 max_sectors=256 completion_nsec=$((4 * 128 * 1000000000 / 1024 / FCAP)); do
				opts+=(--nullb-attr "$x")
			done
			vmscript=("$TOP/tests/bench/vm-peer.sh" "$reps" "$PEER_MIB" 1024 4)
			nrun=3; rt=$((PEER_MIB / 4 / FCAP + 4)) ;;
		# memory-backed (the default): xfs and the tensors read back must be kept
		ai)          opts=(--members 4 --hostfs)
			for x in irqmode=2 hw_queue_depth=4 max_sectors=256 completion_nsec=$((4 * 128 * 1000000000 / 1024 / FCAP)); do
				opts+=(--nullb-attr "$x")
			done
			reps=$AI_REPS
			# --hostfs as lab 58 runs it: on 6.12 (6.1's 9pnet_virtio finds
			# no channel for the export: "no channels available")
			kernel=${BENCH_AI_KERNEL:-6.12}
			vmscript=("$TOP/tests/bench/vm-ai.sh" "$reps" "$AI_MIB" "$AI_KV_KIB" "$AI_KV_BLOCKS")
			# python3 + torch imports over 9p under TCG (15-60 s each, two
			# processes), then ~(2 KV runs + 6 model runs) per repeat
			# (384 s for 3 repeats on 2026-12-05, 254 s of it the KV trace,
			# whose pread baseline waits out each 64 KiB I/O of a capped member)
			nrun=1; rt=$((200 + AI_MIB * 8 / 4 / FCAP + 20)) ;;
		peer-p2p)
			# shellcheck source=/dev/null
			kernel=$(. "${FXBLK_CACHE:-/var/cache/fxblk}/kernels.env" 2>/dev/null; echo "${FXBLK_KVER_DEBUG:-}")
			if [ -z "$kernel" ] || [ ! -f "${FXBLK_CACHE:-/var/cache/fxblk}/k/$kernel/vmlinux" ]; then
				echo "SKIP: bench peer-p2p: no kernel with CONFIG_PCI_P2PDMA in the lab (make kernel-debug builds one)" |
					tee "$OUT/$kind.log"
				continue
			fi
			opts=(--members 1 --size-mb 256 --machine q35 --nvme-pci 3 --cmb-mb 64)
			vmscript=("$TOP/tests/bench/vm-p2p.sh" "$reps" 32 1024)
			# the debug kernel boots in minutes under TCG
			nrun=8; rt=60 ;;
		# under icount a guest second takes several host seconds (more on a
		# loaded host): rt is host seconds per group
		# (~25 at load 15 on 2 cores); fio adds ~0.6 guest s per group
		cost)        opts=(--no-fabric --icount); reps=$COST_REPS; rt_iops=${RT_COST}ms; nrun=44; rt=$(((RT_COST + 600) * 30 / 1000)) ;;
		# Soft-RoCE and the NVMe-oF target run in the same guest
		cost-fabric) opts=(--members 4 --memory-backed 0 --icount); reps=$COST_REPS; rt_iops=${RT_COST_FAB}ms; nrun=20; rt=$(((RT_COST_FAB + 600) * 30 / 1000)) ;;
		*) echo "bench: unknown kind $kind" >&2; exit 2 ;;
		esac
		# after the case, which sets the kind's repeats (seed: BENCH_SEED_REPS)
		[ ${#vmscript[@]} -gt 0 ] ||
			vmscript=("$TOP/tests/bench/vm-bench.sh" "$kind" "$reps" "$RT_BW" "$rt_iops" "$LCAP" "$SEED_MIB" "$RT_SEED")
		# fio groups x repeats x (runtime + start-up), plus boot
		tmo=$((240 + nrun * reps * (rt + 6)))
		echo "bench: $kind on $kernel: $nrun fio groups x $reps repeats (timeout ${tmo}s)"
		set +e
		# shellcheck disable=SC2086
		# no_timer_check: on a loaded host the emulated IO-APIC timer check
		# can fail at boot under TCG ("IO-APIC + timer doesn't work!" panic)
		"$TOP/tests/lab/run" --kernel "$kernel" "${opts[@]}" --timeout "$tmo" \
			--append no_timer_check ${BENCH_LAB_OPTS:-} \
			-- "${vmscript[@]}" 2>&1 |
			tee "$OUT/$kind.log" | grep --line-buffered -E '^(\[|PASS|FAIL|SKIP|lab:|bench:)'
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
sed -n 's/^BENCHPEER //p' "${LOGS[@]}" | jq -s . >"$OUT/peer-samples.json"
sed -n 's/^BENCHP2P //p' "${LOGS[@]}" | jq -s . >"$OUT/p2p-samples.json"
NP=$(jq -s 'map(length) | add' "$OUT/peer-samples.json" "$OUT/p2p-samples.json")
sed -n 's/^BENCHAI //p' "${LOGS[@]}" | jq -s . >"$OUT/ai-samples.json"
NA=$(jq length "$OUT/ai-samples.json")
for kind in $KINDS; do	# a peer kind that ran must have given samples
	case $kind in peer) pat='^BENCHPEER ' ;; peer-p2p) pat='^BENCHP2P ' ;; ai) pat='^BENCHAI ' ;; *) continue ;; esac
	grep -q '^SKIP: ' "$OUT/$kind.log" || grep -q "$pat" "$OUT/$kind.log" ||
		{ echo "bench: no samples in $OUT/$kind.log" >&2; exit 1; }
done
[ "$NS" -gt 0 ] || [ "$NP" -gt 0 ] || [ "$NA" -gt 0 ] || { echo "bench: no samples in ${LOGS[*]}" >&2; exit 1; }

jq -n --slurpfile s "$OUT/samples.json" --slurpfile info "$OUT/info.json" \
	--argjson fcap "$FCAP" --argjson lcap "$LCAP" --arg kernel "$KERNEL" --arg xf "$EXPECT_FAIL" '
def median: map(select(. != null)) | sort |
	if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
# {median, min, max} of a list (nulls dropped)
def spread: map(select(. != null)) | {median: (median | r3), min: (min | r3), max: (max | r3)};
def mode: if . == "cost-fabric" then "icount-nvme-rdma" elif startswith("cost") then "icount-null_blk-local"
	elif startswith("fabric") then "nvme-rdma" elif startswith("seed") then "null_blk-local-mem" else "null_blk-local" end;
def cap($m): if $m == "nvme-rdma" then $fcap else $lcap end;
($s[0]) as $all
| ($all | map(select(.error == null))) as $ok
| {
  schema_version: 2,
  kernel: $kernel,
  caps_mibs: {"nvme-rdma": $fcap, "null_blk-local": $lcap, "null_blk-local-mem": $lcap},
  info: $info[0],
  failed_runs: ($all | map(select(.error != null) | .expected = ($xf != "" and ("\(.dev) \(.wl) \(.error)" | test($xf))))),
  samples: $all,
  rows: [ $ok | group_by([(.kind | mode), (.members // 4), .set, .wl])[] |
    . as $g
    | (.[0].metric // (if .[0].set == "bw" then "mibs" else "iops" end)) as $m
    | {mode: (.[0].kind | mode), members: (.[0].members // 4), workload: .[0].wl, set: .[0].set, metric: $m,
       unit: {"mibs": "MiB/s", "iops": "IOPS", "dmibs": "MiB/s to durable"}[$m],
       jobs: .[0].jobs, qd: .[0].qd,
       failed: (.[0] as $h | [ $all[] | select(.error != null and (.kind | mode) == ($h.kind | mode) and (.members // 4) == ($h.members // 4)
           and .set == $h.set and .wl == $h.wl) ] | group_by(.dev) | map({key: .[0].dev, value: length}) | from_entries),
       median: ($g | group_by(.dev) | map({key: .[0].dev, value: ({
           value: (map(.[$m]) | median | r3),
           min: (map(.[$m]) | min | r3),
           max: (map(.[$m]) | max | r3),
           wall_s: (map(.wall_s) | spread),
           lat_mean_us: (map(.lat_mean_us) | median | r3),
           lat_p50_us: (map(.lat_p50_us) | spread),
           lat_p99_us: (map(.lat_p99_us) | spread),
           cpu_us_per_io: (map(.cpu_us_per_io) | median | r3),
           sys_us_per_io: (map(.sys_us_per_io) | spread),
           n: length})}) | from_entries),
       ratios: ([ "dm", "md", "jbod", "single" ] | map(. as $o | {key: ("fxblk/" + ({"dm": "dm-stripe", "md": "md-raid0", "jbod": "JBOD", "single": "single"}[$o])),
         value: ([ $g[] | select(.dev == "fx") ] as $fx
           | [ $fx[] as $f | $g[] | select(.dev == $o and .rep == $f.rep) | {f: $f, o: .} ] as $pairs
           | {pairs: ($pairs | length),
              throughput: ($pairs | map(if .o[$m] > 0 then .f[$m] / .o[$m] else null end) | spread),
              lat_mean: ($pairs | map(if .o.lat_mean_us > 0 then .f.lat_mean_us / .o.lat_mean_us else null end) | median | r3),
              lat_p50: ($pairs | map(if .o.lat_p50_us > 0 then .f.lat_p50_us / .o.lat_p50_us else null end) | spread),
              lat_p99: ($pairs | map(if .o.lat_p99_us > 0 then .f.lat_p99_us / .o.lat_p99_us else null end) | spread),
              cpu_per_io: ($pairs | map(if (.o.cpu_us_per_io // 0) > 0 then .f.cpu_us_per_io / .o.cpu_us_per_io else null end) | median | r3),
              vm_cpu_per_io: ($pairs | map(if (.o.sys_us_per_io // 0) > 0 then .f.sys_us_per_io / .o.sys_us_per_io else null end) | spread)})}) | from_entries)
     }
     | if .set == "bw" or (.workload | test("^(load|ckpt)")) then .fx_vs_cap_sum = ((.median.fx.value // 0) / (.members * cap(.mode)) | r3) else . end
  ]
}' >"$OUT/results.json"
# peer rows (issue 8): .peer {libfxio, p2pdma, info, skipped}
jq -n --slurpfile peer "$OUT/peer-samples.json" --slurpfile p2p "$OUT/p2p-samples.json" \
	"\$peer[0] as \$peer | \$p2p[0] as \$p2p | $(grep -v '^#' "$TOP/tests/bench/peer-rows.jq")" >"$OUT/peer.json"
jq --slurpfile p "$OUT/peer.json" \
	--argjson pinfo "$(sed -n 's/^BENCHPEERINFO //p; s/^BENCHP2PINFO //p' "${LOGS[@]}" | jq -s .)" \
	--argjson pskip "$(sed -n 's/^SKIP: bench //p' "${LOGS[@]}" | jq -R . | jq -s .)" \
	'.peer = ($p[0] + {info: $pinfo, skipped: $pskip})' "$OUT/results.json" >"$OUT/results.json.tmp" &&
	mv "$OUT/results.json.tmp" "$OUT/results.json"
# ai rows (issue 21): .ai {kv, model, info}
jq --argjson a "$(jq -n --slurpfile ai "$OUT/ai-samples.json" \
		"\$ai[0] as \$ai | $(grep -v '^#' "$TOP/tests/bench/ai-rows.jq")")" \
	--argjson ainfo "$(sed -n 's/^BENCHAIINFO //p' "${LOGS[@]}" | jq -s .)" \
	'.ai = (if $a == null then null else $a + {info: $ainfo} end)' "$OUT/results.json" >"$OUT/results.json.tmp" &&
	mv "$OUT/results.json.tmp" "$OUT/results.json"

# markdown
jq -r '
def f(d): if . == null then "–" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
def sp(d): if . == null or .median == null then "–" else "\(.median | f(d)) (\(.min | f(d))–\(.max | f(d)))" end;
# rc(dev; field; d): ratio cell fx/dev, "failed ×N" where dev had failed runs and no pairs
def rc($r; $o; $k; d): ($r.ratios["fxblk/" + {"dm": "dm-stripe", "md": "md-raid0", "jbod": "JBOD", "single": "single"}[$o]][$k]) as $v
	| if ($v == null or $v.median == null) and (($r.failed[$o] // 0) > 0 or ($r.failed.fx // 0) > 0)
	  then "failed ×\(($r.failed[$o] // 0) + ($r.failed.fx // 0))" else ($v | sp(d)) end;
def order: {"seqread-1m": 0, "seqwrite-1m": 1, "kv-512k-j8": 2, "kv-512k-j16": 3, "randread-4k-qd1": 4, "randread-4k-qd32": 5,
	"randread-4k-qd8-uring": 6, "randread-4k-qd8-hipri": 7}[.workload] // 9;
"# fxblk bench (kernel \(.kernel))",
"",
"Medians over the repeats with (min–max); ratios are medians of per-repeat ratios fxblk ÷ other",
"device (same boot, devices alternated). Throughput: MiB/s for bandwidth, model-load and KV rows",
"measured in MiB/s, IOPS for 4 KiB rows, MiB/s to durable (bytes ÷ time from the start of the first writer",
"start to the last fsync) for checkpoint rows. Members capped by service time (nominal cap:",
"nvme-rdma \(.caps_mibs["nvme-rdma"]) MiB/s, local \(.caps_mibs["null_blk-local"]) MiB/s each; cap sum = members × cap);",
"IOPS rows uncapped. Latency and CPU ratios < 1 mean fxblk is better. CPU/IO = busy time of all",
"VM CPUs (/proc/stat) ÷ I/Os, µs (includes fio and completion softirqs).",
"",
(.rows | group_by(.mode) | reverse[] | group_by(.members)[] |
  "## members: \(.[0].members) × \(.[0].mode)", "",
  "| workload | jobs×QD | metric | fxblk | ÷dm-stripe | ÷md-raid0 | ÷JBOD | ÷single | ÷cap sum | p50 fx/dm | p99 fx/dm | p99 fx/md | CPU/IO fx µs | CPU/IO fx/dm | CPU/IO fx/md |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  (sort_by(order, .workload)[] | . as $r |
   "| \(.workload) | \(.jobs)×\(.qd) | \(.unit) | \(.median.fx | if . == null then "–" else {median: .value, min, max} | sp(1) end) | \(rc($r; "dm"; "throughput"; 3)) | \(rc($r; "md"; "throughput"; 3)) | \(rc($r; "jbod"; "throughput"; 3)) | \(rc($r; "single"; "throughput"; 3)) | \(.fx_vs_cap_sum | f(3)) | \(rc($r; "dm"; "lat_p50"; 3)) | \(rc($r; "dm"; "lat_p99"; 3)) | \(rc($r; "md"; "lat_p99"; 3)) | \(.median.fx.sys_us_per_io | sp(0)) | \(rc($r; "dm"; "vm_cpu_per_io"; 3)) | \(rc($r; "md"; "vm_cpu_per_io"; 3)) |"),
  "",
  "Absolute medians (min–max): value; p50/p99 µs; CPU µs per I/O (VM); checkpoint and model-load rows also time in s:", "",
  "| workload | fxblk | dm-stripe | md-raid0 | JBOD | single |",
  "|---|---|---|---|---|---|",
  (sort_by(order, .workload)[] | . as $r |
   "| \(.workload) (\(.unit)) | " + ([ "fx", "dm", "md", "jbod", "single" ] | map($r.median[.] as $d |
     if $d == null then (if ($r.failed[.] // 0) > 0 then "failed ×\($r.failed[.])" else "–" end) else "\({median: $d.value, min: $d.min, max: $d.max} | sp(1)); \($d.lat_p50_us.median | f(0))/\($d.lat_p99_us.median | f(0)); \($d.sys_us_per_io | sp(0))" +
       (if ($r.workload | test("^(load|ckpt)")) then "; \($d.wall_s | sp(2)) s" else "" end) end) | join(" | ")) + " |"),
  ""),
"Runs: \(.samples | length) workload runs, \(.failed_runs | map(select(.expected | not)) | length) failed, \(.failed_runs | map(select(.expected)) | length) failed as expected.",
(.failed_runs[] | "- \(if .expected then "failed as expected" else "FAILED" end): \(.kind) \(.members // 4) members \(.dev) \(.wl) rep \(.rep): \(.error)")
' "$OUT/results.json" >"$OUT/results.md"
jq -r '
def f(d): if . == null then "–" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
def sp(d): if . == null or .median == null then "–" else "\(.median | f(d)) (\(.min | f(d))–\(.max | f(d)))" end;
.peer | select(.libfxio != null or .p2pdma != null or (.skipped | length) > 0) |
"", "## GPU peer-memory paths (issue 8)", "",
(if .libfxio != null then
  "libfxio via `fxctl peer bench` on fxN over NVMe-oF members (no GPU: \"device memory\" is emulated,",
  "the staged path copies with the host engine). Medians (min–max) over \(.libfxio.posix.mibs.n // 0) repeats; target: staged ÷ posix ≥ 0.9.", "",
  "| path | MiB/s | ÷ posix (same repeat) | CPU s/GiB | note |", "|---|---|---|---|---|",
  (.libfxio | to_entries | sort_by({"posix": 0, "staged": 1, "direct": 2, "peerq": 3}[.key] // 9)[] | "| \(.key) | \(.value.mibs | sp(1)) | \(.value.ratio_to_posix | sp(3)) | \(.value.cpu_s_per_gib | sp(2)) | \(if .value.ran then .value.reason else "not run: " + .value.reason end)\(if .key == "peerq" then " (peer queues moved \(.value.peerq_bytes) bytes)" else "" end) |"),
  "" else empty end),
(if .p2pdma != null then
  "O_DIRECT reads into PCI P2PDMA memory (an emulated NVMe CMB standing in for GPU VRAM) and into host",
  "memory, QEMU q35, lab debug kernel; fx = fxN over two emulated nvme-pci namespaces, single = one of them:", "",
  "| device | into P2PDMA MiB/s | into host MiB/s | P2PDMA ÷ host |", "|---|---|---|---|",
  (.p2pdma | to_entries[] | "| \(.key) | \(.value.p2pdma_mibs | sp(1)) | \(.value.host_mibs | sp(1)) | \(.value.ratio_p2pdma_to_host | sp(3)) |"),
  "" else empty end),
(.skipped[] | "SKIP: \(.)"), ""
' "$OUT/results.json" >>"$OUT/results.md"

# ai rows (issue 21): two tables
jq -r '
def f(d): if . == null then "–" else (. * pow(10; d) | round) / pow(10; d) | tostring end;
def sp(d): if . == null or .median == null then "–" else "\(.median | f(d)) (\(.min | f(d))–\(.max | f(d)))" end;
.ai | select(. != null) |
"", "## Python AI-stack rows (issue 21)", "",
(.info[0] // {}) as $i |
"Kernel \($i.kernel // "?"); fxN over \($i.members // "?") NVMe-oF members (capped, memory-backed, \($i.chunk_kib // "?") KiB chunk), the host'"'"'s python3/torch in the VM (--hostfs).",
"Medians (min–max) over \($i.reps // "?") runs; ratios per run (same repeat, same boot).", "",
"KV-cache trace (kvcache_trace.py, stored trace, \(.kv.fxio.requests // "?") requests, \(.kv.fxio.lookups // "?") lookups, \(.kv.fxio.capacity_blocks // "?") blocks of \(.kv.fxio.block_kib // "?") KiB, raw fxN):", "",
"| engine | hit rate | MiB/s | ÷ pread | get p50 ms | get p99 ms | put p50 ms | put p99 ms |", "|---|---|---|---|---|---|---|---|",
(.kv | to_entries | sort_by(.key)[] | "| \(.key) | \(.value.hit_rate | sp(3)) | \(.value.mibs | sp(1)) | \(.value.ratio_to_pread | sp(3)) | \(.value.get_p50_ms | sp(2)) | \(.value.get_p99_ms | sp(2)) | \(.value.put_p50_ms | sp(2)) | \(.value.put_p99_ms | sp(2)) |"),
"", "Model file (bench_load.py, \($i.model_mib // "?") MiB of tensors, xfs on the fxN; loads cold, saves durable):", "",
"| op | method | MiB/s | s | ratio | to |", "|---|---|---|---|---|---|",
(.model | to_entries | sort_by(.value.op, ({"fxio": 0, "fxio-staged": 1, "plain": 2, "torch.load": 3, "fxio.save": 4, "torch.save": 5}[.value.method] // 9))[] |
  "| \(.value.op) | \(.value.method) | \(.value.mibs | sp(1)) | \(.value.seconds | sp(3)) | \(.value.ratio | sp(3)) | ÷ \(.value.ratio_to) |"),
""
' "$OUT/results.json" >>"$OUT/results.md"

# cost kinds (issue 22): .cost, a table, and the comparison with the history
jq --argjson c "$(jq -f "$TOP/tests/bench/cost-rows.jq" "$OUT/results.json")" '.cost = $c' "$OUT/results.json" \
	>"$OUT/results.json.tmp" && mv "$OUT/results.json.tmp" "$OUT/results.json"
jq -r '
def f: if . == null then "–" else (. | round | tostring) end;
def f3: if . == null then "–" else ((. * 1000 | round) / 1000 | tostring) end;
select((.cost | length) > 0) |
"", "## CPU cost per I/O (kind cost: one vCPU under QEMU instruction counting)", "",
"Guest ns per I/O = 1e9 ÷ IOPS with one vCPU that is never idle, i.e. instructions executed per I/O",
"(-icount shift=0: 1 ns each), fio and the whole kernel path included. \"added\" = the device minus one",
"member alone (single). Ratios < 1: fxN is cheaper. See docs/benchmarks.md (cost).", "",
(.cost | group_by(.kind)[] |
  "### \(.[0].kind)", "",
  "| workload | jobs×QD | single | fx | dm | md | jbod | fx added | dm added | md added | fx÷dm | fx÷md | fx added ÷ dm added | ÷ md added | fx ns/MiB |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  (.[] | "| \(.workload) | \(.jobs)×\(.qd) | \(.dev.single.ns_per_io | f) | \(.dev.fx.ns_per_io | f) | \(.dev.dm.ns_per_io | f) | \(.dev.md.ns_per_io | f) | \(.dev.jbod.ns_per_io | f) | \(.added_ns_over_single.fx | f) | \(.added_ns_over_single.dm | f) | \(.added_ns_over_single.md | f) | \(.ratios["fx/dm"] | f3) | \(.ratios["fx/md"] | f3) | \(.ratios["fx_added/dm_added"] | f3) | \(.ratios["fx_added/md_added"] | f3) | \(.dev.fx.ns_per_mib | f) |"),
  "")
' "$OUT/results.json" >>"$OUT/results.md"
COST_RC=0
if [ "$(jq '.cost | length' "$OUT/results.json")" -gt 0 ]; then
	"$TOP/tests/bench/cost-history.sh" "$OUT/results.json" "$COST_HISTORY" "$COST_LIMIT" \
		"${BENCH_COST_RECORD:-0}" | tee "$OUT/cost-compare.txt" || COST_RC=$?
	cat "$OUT/cost-compare.txt" >>"$OUT/results.md"
fi

# plot: throughput ratios per row (gnuplot, clustered bars, line at 1.0)
jq -r '
def order: {"seqread-1m": 0, "seqwrite-1m": 1, "kv-512k-j8": 2, "kv-512k-j16": 3, "randread-4k-qd1": 4, "randread-4k-qd32": 5}[.workload] // 9;
.rows | sort_by(.mode, .members, order, .workload)[] |
[ ({"nvme-rdma": "rdma", "null_blk-local": "local", "null_blk-local-mem": "seed"}[.mode] + "\(.members):" + .workload) ] +
([ "fxblk/dm-stripe", "fxblk/md-raid0", "fxblk/JBOD", "fxblk/single" ] as $k | [ $k[] as $x | (.ratios[$x].throughput.median // "NaN") ]) +
([ "fxblk/dm-stripe", "fxblk/md-raid0", "fxblk/JBOD" ] as $k | [ $k[] as $x | (.ratios[$x].vm_cpu_per_io.median // "NaN") ]) | @tsv' \
	"$OUT/results.json" >"$OUT/ratios.tsv"
if command -v gnuplot >/dev/null; then
	gnuplot <<GP || echo "bench: gnuplot failed; no plot" >&2
set terminal pngcairo size 1800,1000 font ",9"
set output "$OUT/results.png"
set multiplot layout 2,1 title "fxblk vs other devices over the same members, kernel $KERNEL (median of per-repeat ratios)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile separator "\t"
set datafile missing "NaN"
set xtics rotate by -45 noenhanced font ",8"
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
mkdir -p "$OUT/history"
H=$OUT/history/$(date -u +%Y%m%dT%H%M%SZ)-$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo nogit)$(git -C "$TOP" diff --quiet HEAD 2>/dev/null || echo -dirty).json
cp "$OUT/results.json" "$H"
cat "$OUT/results.md"
echo
NF=$(jq '.failed_runs | map(select(.expected | not)) | length' "$OUT/results.json")
echo "bench: $NS workload runs, $NP peer samples, $NA ai samples; results in $OUT/results.{json,md,png} (copy: $H); took $(($(date +%s) - T0)) s"
if [ "$COST_RC" != 0 ]; then
	if [ "${BENCH_COST_GATE:-1}" = 0 ]; then
		echo "bench: cost: fxN got dearer (above), not failing: BENCH_COST_GATE=0" >&2
	else
		echo "bench: FAILED: fxN costs more than in the last recorded cost run (above; BENCH_COST_GATE=0 to only report)" >&2
		[ "$NF" -gt 0 ] || exit 1
	fi
fi
if [ "$NF" -gt 0 ]; then
	echo "bench: FAILED: $NF workload runs failed (listed above and in results.json .failed_runs); their rows lack those samples" >&2
	exit 1
fi
