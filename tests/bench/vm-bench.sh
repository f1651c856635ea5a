#!/bin/bash
# In-VM half of `make bench` (run by tests/bench/run.sh through tests/lab/run).
#
#   vm-bench.sh KIND REPS RUNTIME_BW RUNTIME_IOPS [LOCAL_MBPS [SEED_MIB [RUNTIME_SEED]]]
#     KIND fabric-bw   bandwidth rows on the lab's capped NVMe-oF members
#          fabric-iops IOPS rows on the lab's uncapped NVMe-oF members, and
#                      polled rows if they have poll queues
#          local       both sets on local null_blk members made here through
#                      configfs: 4 capped at LOCAL_MBPS (bandwidth rows) and
#                      4 uncapped (IOPS rows); no fabric, so the driver's own
#                      cost is what differs between devices
#          seed        seed workloads (SEED_RAW, SEED_FS below) on 4 capped
#                      memory-backed local members, raw and through xfs
#          seed-scale  a subset of them at 2, 4 and 8 members
#          cost        CPU cost rows (WL_COST) on 4 uncapped local null_blk
#                      members, for a guest under QEMU instruction counting
#                      (tests/lab/run --icount, one vCPU): IOPS at a fixed
#                      instruction clock, so guest time per I/O is the cost
#          cost-fabric the 4 KiB, 128 KiB and KV-cache rows (WL_COST_FAB) on
#                      the lab's 4 uncapped NVMe-oF members, under icount:
#                      the host's nvme-rdma, Soft-RoCE and the target's
#                      nvmet-rdma and null_blk all run on the one vCPU
#
# Devices, all over the same members with the same 512 KiB chunk:
#   single  member 0 alone, same jobs/QD as the striped devices
#   fx      fxblk volume (fxctl create, default data offset)
#   dm      dm-stripe with the same chunk and data offset as fx
#   md      md raid0 (mdadm --build: no superblock, so no offset)
#   jbod    every member driven directly at once, as many I/Os in flight as
#           the stacked devices (jbod_jobs); through xfs: one xfs per member
# Within a repeat every device runs every workload of the set; the device
# order rotates per repeat; each repeat is one "pair" for the ratios.
#
# One line per workload run on stdout: `BENCH {json}` with IOPS, MiB/s,
# MiB/s to the end of the last job (dmibs), wall time, mean/p50/p99
# completion latency (us), CPU per I/O from fio ((usr+sys) x job runtime /
# I/Os) and from /proc/stat (whole VM, incl. softirq completions); `error`
# set when fio failed or did no I/O.
. /lab/lib.sh
KIND=${1:?kind}; REPS=${2:-5}; RT_BW=${3:-2}; RT_IOPS=${4:-3}; LOCAL_MBPS=${5:-200}; SEED_MIB=${6:-32}; RT_SEED=${7:-2}
CHUNK_KB=512
export DM_DISABLE_UDEV=1
fx_load
modprobe dm_mod 2>/dev/null; modprobe raid0 2>/dev/null
NB=/sys/kernel/config/nullb

# workloads: id:rw:bs:jobs:qd[:engine[:hipri]] (engine default libaio)
WL_BW="seqread-1m:read:1M:1:8 seqwrite-1m:write:1M:1:8 kv-512k-j8:randread:512k:8:1 kv-512k-j16:randread:512k:16:1"
WL_IOPS="randread-4k-qd1:randread:4k:1:1 randread-4k-qd32:randread:4k:1:32"
# polled rows (fabric-iops, members connected with poll queues): io_uring
# QD8 interrupt-driven and --hipri; md does not poll (its polled row is
# skipped, with a SKIP line)
WL_POLL="randread-4k-qd8-uring:randread:4k:1:8:io_uring randread-4k-qd8-hipri:randread:4k:1:8:io_uring:hipri"
DEVS=(fx dm md single jbod)
# cost rows (kind cost): fields 6-8 are engine, hipri, extra fio options
# (comma-separated); every random row repeats its offsets (randrepeat=1)
# so that runs are identical instruction for instruction. Members take
# 128 KiB per command (COST_ATTRS; configfs null_blk's default is 127 KiB);
# x-512k reads start 4 KiB into the device, so each crosses a 512 KiB chunk.
# WL_COST_MB runs on memory-backed members with a write cache (null_blk
# has discard and a cache only then): flush-write is a 4 KiB write followed
# by fsync (a flush of the volume's write cache, which reaches every
# member) per I/O; discard is 1 MiB BLKDISCARDs.
WL_COST="randread-4k-qd1:randread:4k:1:1 randread-4k-qd32:randread:4k:1:32
randwrite-4k-qd1:randwrite:4k:1:1 randwrite-4k-qd32:randwrite:4k:1:32
randread-128k-qd8:randread:128k:1:8 seqread-1m-qd8:read:1M:1:8 seqwrite-1m-qd8:write:1M:1:8
xread-512k-qd8:randread:512k:1:8:::--offset=4k
xread-512k-j16-uring:randread:512k:16:1:io_uring::--offset=4k"
WL_COST_MB="flush-write-4k-qd1:write:4k:1:1:psync::--fsync=1 discard-1m-qd1:randtrim:1M:1:1:psync"
# NVMe-oF members: the target's null_blk is not memory-backed, so it has no
# write cache and no discard to measure; 1 MiB rows cost ~10 ms of guest
# time per I/O there, nearly all of it Soft-RoCE's, and are left out
WL_COST_FAB="randread-4k-qd1:randread:4k:1:1 randread-4k-qd32:randread:4k:1:32
randwrite-4k-qd32:randwrite:4k:1:32 randread-128k-qd8:randread:128k:1:8
xread-512k-j16-uring:randread:512k:16:1:io_uring::--offset=4k"
COST_ATTRS=${COST_ATTRS:-max_sectors=256}
COST_ATTRS_MB=${COST_ATTRS_MB:-max_sectors=256 cache_size=64}
# Memory-backed null_blk allocates a page (and radix-tree nodes) the first
# time a sector is written: the first device to run the flush row on fresh
# members paid for that, the next ones wrote over pages already there (fxN,
# measured first, cost 1.09x dm-stripe per write + fsync; with the pages
# there, the same; docs/benchmarks.md). So before each device the members'
# first COST_PREFILL_MIB are written and flushed (prefill_members).
COST_PREFILL_MIB=${COST_PREFILL_MIB:-32}
PREP_DEV=
# Cost rows take their buffers from 2 MiB hugetlb pages (fio --iomem=shmhuge):
# with 4 KiB pages the number of physically contiguous runs in a large
# buffer, so the bio segments and the splitting work per I/O, depended on
# the boot (the 1 MiB rows moved by up to 25 % between boots of the same
# commit). COST_HUGEPAGES of them are reserved in the guest.
COST_HUGEPAGES=${COST_HUGEPAGES:-64}
# seed set: SEED_MIB per reader/writer file or region, 4 readers/writers

nb_disk() { # nb_disk NAME: block device of configfs null_blk NAME (6.12 names
	# the disk after the directory, 6.1 nullb<index>)
	if [ -b /dev/$1 ]; then echo /dev/$1; else echo "/dev/nullb$(cat $NB/$1/index)"; fi
}
# Capped members without null_blk's `mbps` (its bandwidth timer is restarted
# from the submission path without serialisation and WARNs in
# hrtimer_forward() under concurrent submitters): timer completions
# (irqmode=2) after a fixed service time, 4 tags, 128 KiB commands, so a
# member serves at most 4 x 128 KiB per service time = MBPS MiB/s nominal.
cap_attrs() { # cap_attrs MBPS: "name=value ..." (empty for 0)
	[ "$1" = 0 ] || echo "irqmode=2 hw_queue_depth=4 max_sectors=256 completion_nsec=$((4 * 128 * 1000000000 / 1024 / $1))"
}
mk_local() { # mk_local PREFIX MBPS MEMORY_BACKED N: N configfs null_blk devices, prints their paths
	local p=$1 mbps=$2 mb=${3:-0} n=${4:-4} i a
	modprobe null_blk nr_devices=0 2>/dev/null
	for ((i = 0; i < n; i++)); do
		mkdir $NB/$p$i || fail "mkdir $NB/$p$i"
		echo 1024 >$NB/$p$i/size; echo "$mb" >$NB/$p$i/memory_backed; echo 1 >$NB/$p$i/discard
		for a in $(cap_attrs "$mbps") ${EXTRA_ATTRS:-}; do
			echo "${a#*=}" >$NB/$p$i/${a%%=*} || fail "null_blk $p$i: $a"
		done
		echo 1 >$NB/$p$i/power || fail "power on null_blk $p$i"
		[ -b "$(nb_disk $p$i)" ] || fail "no block device for null_blk $p$i"
		nb_disk $p$i
	done
}
rm_local() { local d; for d in $NB/$1*; do echo 0 >$d/power; rmdir $d; done; }

DEV=
setup() { # setup KIND MEMBERS...: sets DEV (the target; jbod: members)
	local k=$1 tab m; shift
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
	[ "$k" = jbod ] || [ -b "$DEV" ] || fail "$k: $DEV is not a block device"
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
# with stonewall. VM-wide CPU and wall time per group come from /proc/stat
# and /proc/uptime snapshots taken by a marker job (null engine, 4 KiB, its
# own stonewalled group) before every group and after the last one: group
# g runs from mark g to mark g+1, which includes fio's set-up of g's jobs
# (thread start, file open/creation), and costs one fork per group (an
# exec_prerun/postrun per job cost 2 forks of fio per job: seconds for 16
# jobs under TCG, inside the measured window).
cat >/tmp/cpumark <<'SH'
#!/bin/sh
read -r _ u n s i w q sq st _ </proc/stat
read -r up _ </proc/uptime
echo "$((u + n + s + q + sq + st)) $up $((i + w))" >/tmp/cpu.$1
SH
chmod +x /tmp/cpumark
marker() { # marker G: args for the marker job before group G
	args+=(--name="_mark$1" --ioengine=null --rw=read --size=4k --filename=/dev/null
		--exec_prerun="/tmp/cpumark $1" --stonewall --new_group)
}

# JBOD at the same number of I/Os in flight as the stacked devices: J jobs
# of QD D are T = J x D I/Os in flight. J >= members: J jobs of QD D, job i
# on member i mod M. Fewer: min(M, T) jobs on members 0.., QD T / jobs
# (the first T mod jobs one more), so QD1 is one job on one member.
# Prints "member-index qd" per job.
jbod_jobs() { # jbod_jobs J D M
	local j=$1 d=$2 m=$3 t nj i
	if [ "$j" -ge "$m" ]; then
		for ((i = 0; i < j; i++)); do echo "$((i % m)) $d"; done
	else
		t=$((j * d)); nj=$((t < m ? t : m))
		for ((i = 0; i < nj; i++)); do echo "$i $((t / nj + (i < t % nj ? 1 : 0)))"; done
	fi
}

# Seed workloads (model load, checkpoint save, KV cache), as group specs
#   id:jobs:qd:target:metric:fio-options (options space-separated, no spaces inside)
# target: rawjob  each job its own SEED_MIB region of the raw device (BASE:
#                 the regions start at 4 x SEED_MIB instead of 0)
#         rawkv   all jobs over one region of 4 x SEED_MIB (jbod: 1/M per member)
#         fsjob   each job its own file m.N / c.N on xfs
#         fskv    all jobs over the 4 model files m.0..m.3 on xfs
# metric: mibs (fio's bandwidth), iops, dmibs (bytes / wall time from the
# first job's start to the last job's end, incl. the final fsync: "to
# durable"). Groups whose id starts with _ prepare data and are not reported.
# KV "u" rows start 4 KiB into the region/file, so every 512 KiB read
# crosses a 512 KiB chunk boundary (split in two on a stripe).
SEED_RAW="_prep-raw:4:1:rawjob:mibs:--rw=write,--bs=8M,--direct=1,--ioengine=psync
load-raw-direct:4:1:rawjob:mibs:--rw=read,--bs=8M,--direct=1,--ioengine=psync
load-raw-buffered:4:1:rawjob:mibs:--rw=read,--bs=8M,--direct=0,--ioengine=psync
kv-raw-a-j8-uring:8:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB
kv-raw-u-j8-uring:8:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB,--offset=4k
kv-raw-a-j16-uring:16:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB
kv-raw-u-j16-uring:16:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB,--offset=4k
kv-raw-a-j16-aio:16:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=libaio,TB
kv-raw-u-j16-aio:16:1:rawkv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=libaio,TB,--offset=4k
ckpt-raw:4:1:rawjob:dmibs:--rw=write,--bs=4M,--direct=0,--ioengine=psync,--end_fsync=1,BASE"
SEED_FS="_prep-fs:4:1:fsjob:mibs:--rw=write,--bs=8M,--direct=1,--ioengine=psync,--fallocate=native,F=m
load-fs-direct:4:1:fsjob:mibs:--rw=read,--bs=8M,--direct=1,--ioengine=psync,F=m
load-fs-buffered:4:1:fsjob:mibs:--rw=read,--bs=8M,--direct=0,--ioengine=psync,F=m
kv-fs-u-j8-uring:8:1:fskv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB,--offset=4k
kv-fs-a-j16-uring:16:1:fskv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB
kv-fs-u-j16-uring:16:1:fskv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=io_uring,TB,--offset=4k
kv-fs-u-j16-aio:16:1:fskv:iops:--rw=randread,--bs=512k,--direct=1,--ioengine=libaio,TB,--offset=4k
ckpt-fs:4:1:fsjob:dmibs:--rw=write,--bs=4M,--direct=0,--ioengine=psync,--end_fsync=1,--fallocate=none,F=c"
# scaling kind: a subset at 2, 4 and 8 members
SCALE_PICK="_prep-raw load-raw-direct kv-raw-u-j16-uring ckpt-raw _prep-fs load-fs-direct kv-fs-u-j16-uring ckpt-fs"

MNT=/tmp/mnt
mkfs_mount() { # mkfs_mount KIND: xfs on $DEV (jbod: on every member) at $MNT/0.. (-K: no discard)
	local i=0 d
	for d in $DEV; do
		mkfs.xfs -f -q -K "$d" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; fail "mkfs.xfs $d"; }
		mkdir -p $MNT/$i
		mount -t xfs "$d" $MNT/$i || fail "mount $d"
		i=$((i + 1))
		[ "$1" = jbod ] || break
	done
}
umount_all() {
	local m
	for m in $(awk -v p="$MNT/" 'index($2, p) == 1 {print $2}' /proc/mounts); do
		umount "$m" || fail "umount $m"
	done
}

# seed_args KIND "SPECS" RT: fio sections for the seed groups into args, ids into ids
seed_args() {
	local k=$1 specs=$2 rt=$3 line id j d tgt met o opt fa mem=() nm mi q i F base tg
	if [ "$k" = jbod ]; then read -r -a mem <<<"$DEV"; else mem=("$DEV"); fi
	nm=${#mem[@]}
	g=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		IFS=: read -r id j d tgt met o <<<"$line"
		if [ -n "${PICK:-}" ] && [[ " $PICK " != *" $id "* ]]; then continue; fi
		fa=() F="" base=0
		IFS=, read -r -a opt <<<"$o"
		for o in "${opt[@]}"; do
			case $o in
			TB) fa+=(--time_based --runtime="$rt" --norandommap --randrepeat=0) ;;
			F=*) F=${o#F=} ;;
			BASE) base=$((4 * SEED_MIB)) ;;
			*) fa+=("$o") ;;
			esac
		done
		ids+=("$id:$j:$d:$met")
		marker $g
		if [ "$k" != jbod ]; then
			case $tgt in
			rawjob) tg=(--filename="$DEV" --size="${SEED_MIB}M" --offset="${base}M" --offset_increment="${SEED_MIB}M") ;;
			rawkv) tg=(--filename="$DEV" --size=$((4 * SEED_MIB))M) ;;
			fsjob) tg=(--directory="$MNT/0" --filename_format="$F.\$jobnum" --size="${SEED_MIB}M") ;;
			fskv) tg=(--filename="$MNT/0/m.0:$MNT/0/m.1:$MNT/0/m.2:$MNT/0/m.3") ;;
			esac
			args+=(--name="$id" --numjobs="$j" --iodepth="$d" "${tg[@]}" "${fa[@]}" --stonewall --new_group)
		else
			i=0
			while read -r mi q; do
				case $tgt in
				rawjob) tg=(--filename="${mem[$mi]}" --size="${SEED_MIB}M" --offset="$((base + i / nm * SEED_MIB))M") ;;
				rawkv) tg=(--filename="${mem[$mi]}" --size=$((4 * SEED_MIB / nm))M) ;;
				fsjob) tg=(--filename="$MNT/$mi/$F.$i" --size="${SEED_MIB}M") ;;
				fskv) tg=(--filename="$MNT/$((mi % 4))/m.$((mi % 4))") ;;
				esac
				args+=(--name="$id.$i" --iodepth="$q" "${tg[@]}" "${fa[@]}")
				[ $i != 0 ] || args+=(--stonewall --new_group)
				i=$((i + 1))
			done < <(jbod_jobs "$j" "$d" "$nm")
		fi
		g=$((g + 1))
	done <<<"$specs"
}

# wl_args KIND "WORKLOADS" RT: fio sections of the bw/iops/poll sets
wl_args() {
	local k=$1 wls=$2 RT=$3 wl id rw bs j d eng hp x i mi q sec mem xo met
	g=0
	for wl in $wls; do
		IFS=: read -r id rw bs j d eng hp x <<<"$wl"
		eng=${eng:-libaio}
		xo=()
		[ -z "$x" ] || IFS=, read -r -a xo <<<"$x"
		if [ -n "$hp" ] && [ "$k" = md ]; then
			echo "SKIP: $KIND $id on md: md raid0 does not poll (--hipri fails with EOPNOTSUPP)"
			continue
		fi
		met=mibs
		[ "$bs" != 4k ] && [ "$set" != cost ] || met=iops
		ids+=("$id:$j:$d:$met")
		sec=(--rw="$rw" --bs="$bs" --direct=1 --ioengine="$eng" --time_based --runtime="$RT"
			--norandommap --randrepeat="$([ "$set" = cost ] && echo 1 || echo 0)" ${hp:+--hipri} "${xo[@]}")
		[ "$set" != cost ] || sec+=(--iomem=shmhuge)
		marker $g
		if [ "$k" = jbod ]; then
			read -r -a mem <<<"$DEV"
			i=0
			while read -r mi q; do
				args+=(--name="$id.$i" --filename="${mem[$mi]}" --iodepth="$q" "${sec[@]}")
				[ $i != 0 ] || args+=(--stonewall --new_group)
				i=$((i + 1))
			done < <(jbod_jobs "$j" "$d" ${#mem[@]})
		else
			args+=(--name="$id" --filename="$DEV" --numjobs="$j" --iodepth="$d" "${sec[@]}" --stonewall --new_group)
		fi
		g=$((g + 1))
	done
}

FIO_RUNS=0
# fio_groups SET DEVKIND REP: run fio with args/ids, print one BENCH line per
# reported group (jobs found by name: the group's first section is ID or ID.0)
fio_groups() {
	local set=$1 k=$2 rep=$3 rc meta="[" c0 c1 id j d met g nmem b0 u0 i0 b1 u1 i1
	nmem=$(wc -w <<<"$MEMBERS_NOW")
	marker ${#ids[@]}
	fio --eta=never --thread --group_reporting --output-format=json "${args[@]}" >/tmp/fio.out 2>/tmp/fio.err
	rc=$?
	FIO_RUNS=$((FIO_RUNS + 1))
	# exec_prerun makes fio print "Saving output of ..." before the JSON
	sed -n '/^{/,$p' /tmp/fio.out >/tmp/fio.json
	[ -s /tmp/fio.json ] || echo '{}' >/tmp/fio.json
	# one jq for all groups (jq start-up is ~1 s under TCG)
	for ((g = 0; g < ${#ids[@]}; g++)); do
		IFS=: read -r id j d met <<<"${ids[$g]}"
		c0=$(cat /tmp/cpu.$g 2>/dev/null || echo "0 0 0"); c1=$(cat /tmp/cpu.$((g + 1)) 2>/dev/null || echo "0 0 0")
		read -r b0 u0 i0 <<<"$c0"; read -r b1 u1 i1 <<<"$c1"
		meta+="$([ $g = 0 ] || echo ,){\"wl\":\"$id\",\"jobs\":$j,\"qd\":$d,\"metric\":\"$met\",\"cpu_ms\":$(((b1 - b0) * 10)),\"idle_ms\":$(((i1 - i0) * 10)),\"wall_s\":$(awk -v a="$u0" -v b="$u1" 'BEGIN{print b - a}')}"
	done
	meta+="]"
	jq -r --arg kind "$KIND" --arg set "$set" --arg dev "$k" --argjson rep "$rep" --argjson members "$nmem" \
		--argjson meta "$meta" --argjson rc "$rc" --arg err "$(grep -v '^fio: io_u error' /tmp/fio.err | tail -n 3 | tr '\n' ' ' | tail -c 200)" \
		--arg ioerr "$(grep -m1 '^fio: io_u error' /tmp/fio.err | tail -c 200)" \
		--argjson t "$(cut -d' ' -f1 /proc/uptime)" '
		(try .jobs catch []) as $jobs
		| ([$jobs[]? | select(.error != 0)] | length) as $nerr
		| $meta[] as $m | select($m.wl | startswith("_") | not)
		| {kind: $kind, set: $set, dev: $dev, wl: $m.wl, rep: $rep, members: $members, jobs: $m.jobs, qd: $m.qd,
		   metric: $m.metric, t: $t} +
		  ([$jobs[]? | select(.jobname == $m.wl or .jobname == ($m.wl + ".0"))][0] as $J
		   | if $J == null then {error: ("no result from fio (exit \($rc)): " + $err)}
		     elif $J.error != 0 then {error: ("fio job error \($J.error) (exit \($rc)): " + $ioerr + " " + $err)}
		     elif $rc != 0 and $nerr == 0 then {error: ("fio exit \($rc): " + $err)} else
		     ($J.read.total_ios + $J.write.total_ios + ($J.trim.total_ios // 0)) as $ios
		     | ($J.read.io_bytes + $J.write.io_bytes + ($J.trim.io_bytes // 0)) as $bytes
		     | ([$J.read, $J.write, ($J.trim // $J.read)] | max_by(.total_ios)) as $D
		     | {ios: $ios, bytes: $bytes, wall_s: $m.wall_s,
			iops: ($J.read.iops + $J.write.iops + ($J.trim.iops // 0)),
			mibs: (($J.read.bw + $J.write.bw + ($J.trim.bw // 0)) / 1024),
			dmibs: (if $m.wall_s > 0 then $bytes / 1048576 / $m.wall_s else null end),
			lat_mean_us: ($D.clat_ns.mean / 1000),
			lat_p50_us: (($D.clat_ns.percentile["50.000000"] // 0) / 1000),
			lat_p99_us: (($D.clat_ns.percentile["99.000000"] // 0) / 1000),
			cpu_us_per_io: (if $ios > 0 then ($J.usr_cpu + $J.sys_cpu) / 100 * $J.job_runtime * 1000 / $ios else null end),
			sys_us_per_io: (if $ios > 0 and $m.cpu_ms > 0 then $m.cpu_ms * 1000 / $ios else null end),
			# guest ns per I/O at the group rate: the cost measure under
			# --icount with one vCPU that is never idle (idle_frac ~ 0)
			ns_per_io: (($J.read.iops + $J.write.iops + ($J.trim.iops // 0)) as $r | if $r > 0 then 1e9 / $r else null end),
			idle_frac: (if $m.wall_s > 0 then $m.idle_ms / 1000 / $m.wall_s else null end),
			error: (if $ios == 0 then "no I/O" elif $m.wall_s <= 0 then "no time marks" else null end)} end)
		| "BENCH " + tojson' /tmp/fio.json 2>/tmp/jq.err ||
		{ cat /tmp/jq.err; fail "jq could not read fio's JSON for $k (fio exit $rc): $(tail -c 300 /tmp/fio.err)"; }
	[ "$rc" = 0 ] || { echo "bench: fio failed on $k ($set rep $rep), exit $rc:"; grep -m3 . /tmp/fio.err; }
}

run_dev() { # run_dev SET DEVKIND REP "WORKLOADS": all workloads on $DEV
	local set=$1 k=$2 rep=$3 wls=$4 args=() ids=() g
	rm -f /tmp/cpu.*
	case $set in
	seed)
		seed_args "$k" "$SEED_RAW" "$RT_SEED"
		fio_groups "$set" "$k" "$rep"
		args=() ids=(); rm -f /tmp/cpu.*
		mkfs_mount "$k"
		seed_args "$k" "$SEED_FS" "$RT_SEED"
		fio_groups "$set" "$k" "$rep"
		umount_all ;;
	bw) wl_args "$k" "$wls" "$RT_BW"; fio_groups "$set" "$k" "$rep" ;;
	*) wl_args "$k" "$wls" "$RT_IOPS"; fio_groups "$set" "$k" "$rep" ;;
	esac
}

# cost_prepare: the devices, and hugetlb pages for fio's buffers
cost_prepare() {
	[ "$(nproc)" = 1 ] || echo "bench: note: cost rows on $(nproc) CPUs: guest time per I/O is not the CPU cost (tests/lab/run --icount)"
	read -ra DEVS <<< "${COST_DEVS:-fx dm md single}"
	echo "$COST_HUGEPAGES" >/proc/sys/vm/nr_hugepages
	[ "$(awk '/^HugePages_Total/ {print $2}' /proc/meminfo)" -ge "$COST_HUGEPAGES" ] ||
		fail "could not reserve $COST_HUGEPAGES hugetlb pages for fio's buffers"
}

# prefill_members MEMBERS...: write and flush each member's first
# COST_PREFILL_MIB (see COST_PREFILL_MIB); outside the measured groups
prefill_members() {
	local m
	for m in "$@"; do
		dd if=/dev/zero of="$m" bs=1M count="$COST_PREFILL_MIB" oflag=direct conv=fsync status=none ||
			fail "prefill $m"
	done
}

run_set() { # run_set SET "WORKLOADS" MEMBERS...
	local set=$1 wls=$2 rep i k wl; shift 2
	OFF=; CAP=; MEMBERS_NOW="$*"
	setup fx "$@"; teardown fx # geometry for dm
	for ((rep = 1; rep <= REPS; rep++)); do
		for ((i = 0; i < ${#DEVS[@]}; i++)); do
			k=${DEVS[$(((i + rep - 1) % ${#DEVS[@]}))]}
			[ -z "$PREP_DEV" ] || "$PREP_DEV" "$@"
			setup "$k" "$@"
			run_dev "$set" "$k" "$rep" "$wls"
			teardown "$k"
			# xfs made on md, a member or JBOD's members starts at a
			# member's byte 0, and fxctl create refuses a member that
			# carries a filesystem: wipe the signatures for the next device
			if [ "$set" = seed ] && [[ $k =~ ^(md|single|jbod)$ ]]; then
				wipefs -a -q "$@" || fail "wipefs $*"
			fi
		done
		log "$KIND/$set: repeat $rep of $REPS done"
	done
}

echo "BENCHINFO $(jq -nc --arg kind "$KIND" --arg kver "$(uname -r)" --argjson reps "$REPS" \
	--argjson rt_bw "$RT_BW" --argjson rt_iops "$(jq -n --arg v "$RT_IOPS" '$v | tonumber? // $v')" --argjson rt_seed "$RT_SEED" --argjson chunk_kb $CHUNK_KB --arg members "${FX_MEMBERS:-}" \
	--arg cpus "$(nproc)" --arg caps "$(cap_attrs "$LOCAL_MBPS")" '{kind: $kind, kernel: $kver, reps: $reps,
	runtime_bw_s: $rt_bw, runtime_iops_s: $rt_iops, runtime_seed_s: $rt_seed,
	chunk_kb: $chunk_kb, fabric_members: $members, cpus: $cpus, local_cap_attrs: $caps}')"
modprobe xfs 2>/dev/null
case $KIND in
fabric-bw)
	read -r -a M <<<"${FX_MEMBERS:-}"; [ ${#M[@]} -ge 4 ] || fail "no fabric members"
	run_set bw "$WL_BW" "${M[@]:0:4}" ;;
fabric-iops)
	read -r -a M <<<"${FX_MEMBERS:-}"; [ ${#M[@]} -ge 4 ] || fail "no fabric members"
	run_set iops "$WL_IOPS" "${M[@]:0:4}"
	if grep -q . /sys/block/${M[0]#/dev/}/queue/io_poll 2>/dev/null && [ "$(cat /sys/block/${M[0]#/dev/}/queue/io_poll)" = 1 ]; then
		run_set poll "$WL_POLL" "${M[@]:0:4}"
	else
		echo "SKIP: $KIND polled rows: members have no poll queues (tests/lab/run --poll-queues 1)"
	fi ;;
local)
	mapfile -t C < <(mk_local nbcap "$LOCAL_MBPS")
	echo "BENCHINFO {\"kind\":\"local\",\"capped_members\":\"${C[*]}\",\"local_mbps\":$LOCAL_MBPS}"
	run_set bw "$WL_BW" "${C[@]}"
	rm_local nbcap
	mapfile -t U < <(mk_local nbunc 0)
	echo "BENCHINFO {\"kind\":\"local\",\"uncapped_members\":\"${U[*]}\"}"
	run_set iops "$WL_IOPS" "${U[@]}"
	rm_local nbunc ;;
seed)
	# memory-backed (xfs needs its metadata back), capped like local's bw set
	mapfile -t C < <(mk_local nbseed "$LOCAL_MBPS" 1 4)
	echo "BENCHINFO {\"kind\":\"seed\",\"members\":\"${C[*]}\",\"local_mbps\":$LOCAL_MBPS,\"seed_mib\":$SEED_MIB}"
	run_set seed "" "${C[@]}"
	rm_local nbseed ;;
seed-scale)
	# a subset of the seed rows at 2, 4 and 8 members (same member cap)
	PICK=$SCALE_PICK
	for n in 2 4 8; do
		mapfile -t C < <(mk_local nbs${n}_ "$LOCAL_MBPS" 1 $n)
		echo "BENCHINFO {\"kind\":\"seed-scale\",\"members\":\"${C[*]}\",\"local_mbps\":$LOCAL_MBPS,\"seed_mib\":$SEED_MIB}"
		run_set seed "" "${C[@]}"
		rm_local nbs${n}_
	done ;;
cost-fabric)
	read -r -a M <<<"${FX_MEMBERS:-}"; [ ${#M[@]} -ge 4 ] || fail "no fabric members"
	cost_prepare
	echo "BENCHINFO {\"kind\":\"cost-fabric\",\"members\":\"${M[*]:0:4}\",\"member_attrs\":\"nvme-rdma, $(cat /sys/block/${M[0]#/dev/}/queue/max_sectors_kb) KiB per command\",\"icount\":\"${FX_ICOUNT:-0}\",\"fio_iomem\":\"shmhuge\",\"prefill_mib\":0}"
	run_set cost "$WL_COST_FAB" "${M[@]:0:4}" ;;
cost)
	# uncapped (the CPU is the limit), not memory-backed (no copy per byte)
	cost_prepare
	mapfile -t C < <(EXTRA_ATTRS=$COST_ATTRS mk_local nbcost 0)
	echo "BENCHINFO {\"kind\":\"cost\",\"members\":\"${C[*]}\",\"member_attrs\":\"$COST_ATTRS; $COST_ATTRS_MB\",\"icount\":\"${FX_ICOUNT:-0}\",\"fio_iomem\":\"shmhuge\",\"prefill_mib\":$COST_PREFILL_MIB}"
	run_set cost "$WL_COST" "${C[@]}"
	rm_local nbcost
	mapfile -t C < <(EXTRA_ATTRS=$COST_ATTRS_MB mk_local nbcmb 0 1)
	[ "$(cat /sys/block/${C[0]#/dev/}/queue/write_cache)" = "write back" ] ||
		fail "memory-backed null_blk with cache_size has no write cache"
	PREP_DEV=prefill_members
	run_set cost "$WL_COST_MB" "${C[@]}"
	PREP_DEV=
	rm_local nbcmb ;;
*) fail "unknown kind $KIND" ;;
esac
pass "bench $KIND ($FIO_RUNS fio runs)"
