#!/bin/bash
# In-VM half of `make bench` (run by tests/bench/run.sh through tests/lab/run).
#
#   vm-bench.sh KIND REPS RUNTIME_BW RUNTIME_IOPS [LOCAL_MBPS]
#     KIND fabric-bw   bandwidth rows on the lab's NVMe-oF members (run with --mbps)
#          fabric-iops IOPS rows on the lab's uncapped NVMe-oF members
#          local       both sets on local null_blk members made here through
#                      configfs: 4 capped at LOCAL_MBPS (bandwidth rows) and
#                      4 uncapped (IOPS rows); no fabric, so the driver's own
#                      cost is what differs between devices
#
# Devices, all over the same 4 members with the same 512 KiB chunk:
#   single  member 0 alone, same jobs/QD as the striped devices
#   fx      fxblk volume (fxctl create, default data offset)
#   dm      dm-stripe with the same chunk and data offset as fx
#   md      md raid0 (mdadm --build: no superblock, so no offset)
#   jbod    every member driven directly at once, one fio job per member
#           (J >= 4 jobs: job i on member i mod 4, same QD; J = 1: 4 jobs
#           with QD/4 each, so the total I/O in flight is equal)
# Within a repeat every device runs every workload of the set; the device
# order rotates per repeat; each repeat is one "pair" for the ratios.
#
# One line per workload run on stdout: `BENCH {json}` with IOPS, MiB/s,
# mean/p99 completion latency (us), CPU per I/O from fio ((usr+sys) x job
# runtime / I/Os) and from /proc/stat (whole VM, incl. softirq completions).
. /lab/lib.sh
KIND=${1:?kind}; REPS=${2:-5}; RT_BW=${3:-2}; RT_IOPS=${4:-3}; LOCAL_MBPS=${5:-200}
CHUNK_KB=512
export DM_DISABLE_UDEV=1
fx_load
modprobe dm_mod 2>/dev/null; modprobe raid0 2>/dev/null
NB=/sys/kernel/config/nullb

# workloads: id rw bs jobs qd
WL_BW="seqread-1m:read:1M:1:8 seqwrite-1m:write:1M:1:8 kv-512k-j8:randread:512k:8:1 kv-512k-j16:randread:512k:16:1"
WL_IOPS="randread-4k-qd1:randread:4k:1:1 randread-4k-qd32:randread:4k:1:32"
DEVS=(fx dm md single jbod)

nb_disk() { # nb_disk NAME: block device of configfs null_blk NAME (6.12 names
	# the disk after the directory, 6.1 nullb<index>)
	if [ -b /dev/$1 ]; then echo /dev/$1; else echo /dev/nullb$(cat $NB/$1/index); fi
}
mk_local() { # mk_local PREFIX MBPS: 4 configfs null_blk devices, prints their paths
	local p=$1 mbps=$2 i
	modprobe null_blk nr_devices=0 2>/dev/null
	for i in 0 1 2 3; do
		mkdir $NB/$p$i || fail "mkdir $NB/$p$i"
		echo 1024 >$NB/$p$i/size; echo 0 >$NB/$p$i/memory_backed
		[ "$mbps" = 0 ] || echo "$mbps" >$NB/$p$i/mbps
		echo 1 >$NB/$p$i/power || fail "power on null_blk $p$i"
		[ -b "$(nb_disk $p$i)" ] || fail "no block device for null_blk $p$i"
		nb_disk $p$i
	done
}
rm_local() { local d; for d in $NB/$1*; do echo 0 >$d/power; rmdir $d; done; }

DEV=
setup() { # setup KIND MEMBERS...: sets DEV (the target; jbod: members)
	local k=$1 per sz cap tab m; shift
	case $k in
	fx)
		DEV=$(fxctl -o json create bench --chunk ${CHUNK_KB}K "$@" | jq -r .volume.device) ||
			fail "fxctl create bench $*"
		OFF=$(fxctl -o json show bench | jq -r '.volume.members[0].data_offset_bytes')
		CAP=$(blockdev --getsize64 "$DEV") ;;
	dm)
		# same geometry as fx: offset, 1 MiB end reserve, whole chunks
		[ -n "${OFF:-}" ] || { setup fx "$@"; teardown fx; }
		tab="0 $((CAP / 512)) striped $# $((CHUNK_KB * 2))"
		for m in "$@"; do tab="$tab $m $((OFF / 512))"; done
		dmsetup create --noudevsync fxbench --table "$tab" || fail "dmsetup create: $tab"
		DEV=/dev/mapper/fxbench ;;
	md)
		mdadm --build /dev/md0 --level=0 --chunk=$CHUNK_KB --raid-devices=$# "$@" >/tmp/md.out 2>&1 ||
			{ cat /tmp/md.out; fail "mdadm --build /dev/md0 raid0 over $*"; }
		DEV=/dev/md0 ;;
	single) DEV=$1 ;;
	jbod) DEV="$*" ;;
	esac
}
teardown() {
	case $1 in
	fx) fxctl remove bench >/dev/null || fail "fxctl remove bench" ;;
	dm) dmsetup remove --noudevsync fxbench || fail "dmsetup remove fxbench" ;;
	md) mdadm --stop "$DEV" >/dev/null 2>&1 || fail "mdadm --stop $DEV" ;;
	esac
}
# fio start-up costs seconds under TCG, so each device runs all workloads of
# a set in ONE fio invocation: one reporting group per workload, serialised
# with stonewall. VM-wide CPU per group comes from /proc/stat snapshots taken
# by exec_prerun/exec_postrun (first clone to start, last clone to finish).
cat >/tmp/cpumark <<'SH'
#!/bin/sh
read -r _ u n s i w q sq st _ </proc/stat
f=/tmp/cpu.$1.$2
[ "$2" = 1 ] || [ ! -e $f ] || exit 0
echo $((u + n + s + q + sq + st)) >$f
SH
chmod +x /tmp/cpumark

run_dev() { # run_dev SET DEVKIND REP "WORKLOADS": all workloads on $DEV
	local set=$1 k=$2 rep=$3 wls=$4 RT args=() wl id rw bs j d g=0 i nj qd sec ids=() rc
	RT=$([ "$set" = bw ] && echo "$RT_BW" || echo "$RT_IOPS")
	rm -f /tmp/cpu.*
	for wl in $wls; do
		IFS=: read -r id rw bs j d <<<"$wl"
		ids+=("$id:$j:$d")
		sec=(--rw="$rw" --bs="$bs" --direct=1 --ioengine=libaio --time_based --runtime="$RT"
			--norandommap --randrepeat=0)
		mark=(--exec_prerun="/tmp/cpumark $g 0" --exec_postrun="/tmp/cpumark $g 1")
		if [ "$k" = jbod ]; then
			local mem=($DEV)
			nj=$j; qd=$d
			[ "$j" -ge ${#mem[@]} ] || { nj=${#mem[@]}; qd=$(((j * d + nj - 1) / nj)); }
			for ((i = 0; i < nj; i++)); do
				args+=(--name="$id.$i" --filename="${mem[$((i % ${#mem[@]}))]}" --iodepth="$qd" "${sec[@]}" "${mark[@]}")
				[ $i != 0 ] || args+=(--stonewall --new_group)
			done
		else
			args+=(--name="$id" --filename="$DEV" --numjobs="$j" --iodepth="$d" "${sec[@]}" "${mark[@]}" --stonewall --new_group)
		fi
		g=$((g + 1))
	done
	fio --eta=never --thread --group_reporting --output-format=json "${args[@]}" >/tmp/fio.out 2>/tmp/fio.err
	rc=$?
	# exec_prerun/postrun make fio print "Saving output of ..." before the JSON
	sed -n '/^{/,$p' /tmp/fio.out >/tmp/fio.json
	[ -s /tmp/fio.json ] || echo '{}' >/tmp/fio.json
	# one jq for all groups (jq start-up is ~1 s under TCG)
	local meta="[" c0 c1
	for ((g = 0; g < ${#ids[@]}; g++)); do
		IFS=: read -r id j d <<<"${ids[$g]}"
		c0=$(cat /tmp/cpu.$g.0 2>/dev/null || echo 0); c1=$(cat /tmp/cpu.$g.1 2>/dev/null || echo 0)
		meta+="$([ $g = 0 ] || echo ,){\"wl\":\"$id\",\"jobs\":$j,\"qd\":$d,\"cpu_ms\":$(((c1 - c0) * 10))}"
	done
	meta+="]"
	jq -r --arg kind "$KIND" --arg set "$set" --arg dev "$k" --argjson rep "$rep" \
		--argjson meta "$meta" --argjson rc "$rc" --arg err "$(tail -c 300 /tmp/fio.err)" \
		--argjson t "$(cut -d' ' -f1 /proc/uptime)" '
		(try .jobs catch []) as $jobs
		| $meta | to_entries[] | .key as $g | .value as $m
		| {kind: $kind, set: $set, dev: $dev, wl: $m.wl, rep: $rep, jobs: $m.jobs, qd: $m.qd, t: $t} +
		  ([$jobs[]? | select(.groupid == $g)][0] as $J
		   | if $rc != 0 or $J == null then {error: ("fio exit \($rc): " + $err)} else
		     ($J.read.total_ios + $J.write.total_ios) as $ios
		     | (if $J.read.total_ios >= $J.write.total_ios then $J.read else $J.write end) as $D
		     | {ios: $ios,
			iops: ($J.read.iops + $J.write.iops),
			mibs: (($J.read.bw + $J.write.bw) / 1024),
			lat_mean_us: ($D.clat_ns.mean / 1000),
			lat_p99_us: (($D.clat_ns.percentile["99.000000"] // 0) / 1000),
			cpu_us_per_io: (if $ios > 0 then ($J.usr_cpu + $J.sys_cpu) / 100 * $J.job_runtime * 1000 / $ios else null end),
			sys_us_per_io: (if $ios > 0 and $m.cpu_ms > 0 then $m.cpu_ms * 1000 / $ios else null end),
			error: (if $J.error != 0 then ($J.error | tostring) else null end)} end)
		| "BENCH " + tojson' /tmp/fio.json 2>/tmp/jq.err ||
		{ cat /tmp/jq.err; fail "jq could not read fio's JSON for $k (fio exit $rc): $(tail -c 300 /tmp/fio.err)"; }
}

run_set() { # run_set SET "WORKLOADS" MEMBERS...
	local set=$1 wls=$2 rep i k wl; shift 2
	OFF=; CAP=
	setup fx "$@"; teardown fx # geometry for dm
	for ((rep = 1; rep <= REPS; rep++)); do
		for ((i = 0; i < ${#DEVS[@]}; i++)); do
			k=${DEVS[$(((i + rep - 1) % ${#DEVS[@]}))]}
			setup "$k" "$@"
			run_dev "$set" "$k" "$rep" "$wls"
			teardown "$k"
		done
		log "$KIND/$set: repeat $rep of $REPS done"
	done
}

echo "BENCHINFO $(jq -nc --arg kind "$KIND" --arg kver "$(uname -r)" --argjson reps "$REPS" \
	--argjson rt_bw "$RT_BW" --argjson rt_iops "$RT_IOPS" --argjson chunk_kb $CHUNK_KB --arg members "${FX_MEMBERS:-}" \
	--arg cpus "$(nproc)" '{kind: $kind, kernel: $kver, reps: $reps, runtime_bw_s: $rt_bw, runtime_iops_s: $rt_iops,
	chunk_kb: $chunk_kb, fabric_members: $members, cpus: $cpus}')"
case $KIND in
fabric-bw)
	read -r -a M <<<"${FX_MEMBERS:-}"; [ ${#M[@]} -ge 4 ] || fail "no fabric members"
	run_set bw "$WL_BW" "${M[@]:0:4}" ;;
fabric-iops)
	read -r -a M <<<"${FX_MEMBERS:-}"; [ ${#M[@]} -ge 4 ] || fail "no fabric members"
	run_set iops "$WL_IOPS" "${M[@]:0:4}" ;;
local)
	mapfile -t C < <(mk_local nbcap "$LOCAL_MBPS")
	echo "BENCHINFO {\"kind\":\"local\",\"capped_members\":\"${C[*]}\",\"local_mbps\":$LOCAL_MBPS}"
	run_set bw "$WL_BW" "${C[@]}"
	rm_local nbcap
	mapfile -t U < <(mk_local nbunc 0)
	echo "BENCHINFO {\"kind\":\"local\",\"uncapped_members\":\"${U[*]}\"}"
	run_set iops "$WL_IOPS" "${U[@]}"
	rm_local nbunc ;;
*) fail "unknown kind $KIND" ;;
esac
pass "bench $KIND"
