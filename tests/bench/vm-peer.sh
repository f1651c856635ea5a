#!/bin/bash
# In-VM half of make bench's peer rows (issue 8), run by tests/bench/run.sh
# (kind "peer") through tests/lab/run.
#
#   vm-peer.sh REPS SIZE_MIB BLOCK_KIB DEPTH
#
# fxN over the lab's members (512 KiB chunk); each repeat runs
# `fxctl peer bench` once per path, the order rotating per repeat:
#   posix   O_DIRECT reads into plain host memory (the reference)
#   staged  reads into emulated device memory through libfxio's pinned
#           bounce pool and the host copy engine (memcpy): the staged path
#           as it runs without a GPU
#   direct  reads into registered host memory through /dev/fxblk-peer (the
#           module's peer I/O: bios carrying the pages, through nvme-rdma);
#           "ran": false with the reason when absent
#   peerq   the same with fxblk's own NVMe-oF queues to the members
#           (peer_queues=1 for that run): the target RDMA-writes into the
#           registered pages; peerq_bytes (debugfs) must equal the bytes read
#   posix-16m, staged-16m  posix and staged with 16 MiB requests, one in
#           flight: the issue's model-load shape, where the staged path must
#           keep several disk reads in flight within one request to reach
#           >= 0.9x posix
# One line per path and repeat: `BENCHPEER {json}` with MiB/s, the ratio to
# the posix run of the same repeat (posix-16m for the 16 MiB rows), the staged path's overlapped slots,
# cpu_s_per_gib (busy time of all VM CPUs from /proc/stat over the run, per
# GiB read: Soft-RoCE's copies included, which a real NIC does not make)
# and peerq_bytes.
. /lab/lib.sh
REPS=${1:-3}; SIZE=${2:-64}; BLOCK=${3:-1024}; DEPTH=${4:-4}
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs at least 2 members (got '${FX_MEMBERS:-}')"
fx_load
grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"
PQ=/sys/module/fxblk/parameters/peer_queues
[ -w $PQ ] || fail "no $PQ (fxblk without peer queues?)"
fx_run fxctl create bpeer --chunk 512K "${M[@]}"
trap 'fxctl remove bpeer >/dev/null 2>&1' EXIT
DEV=$(fxdev bpeer) || fail "no /dev/fxN named bpeer"
NAME=${DEV#/dev/}
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)	# USER_HZ: 100 on x86 and arm64
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# data to read: written once, so reads are not of never-written blocks
dd if=/dev/urandom of="$DEV" bs=1M count="$SIZE" oflag=direct status=none || fail "fill $DEV"
PATHS=(posix staged direct peerq posix-16m staged-16m)
for ((r = 0; r < REPS; r++)); do
	posix='' posix16=''
	for ((i = 0; i < ${#PATHS[@]}; i++)); do
		p=${PATHS[$(((i + r) % ${#PATHS[@]}))]}
		fp=${p%-16m} blk=$BLOCK dep=$DEPTH
		[ "$fp" = "$p" ] || { blk=16384; dep=1; }
		if [ "$p" = peerq ]; then
			fp=direct
			echo 1 > $PQ
		fi
		q0=$(fx_peerq_sum "$NAME" read_bytes)
		b0=$(busy)
		fxctl -o json peer bench bpeer --paths "$fp" --size "${SIZE}M" --block "${blk}K" \
			--depth "$dep" >/tmp/pb.json 2>/tmp/pb.err ||
			fail "fxctl peer bench --paths $fp: $(cat /tmp/pb.err)"
		b1=$(busy)
		q1=$(fx_peerq_sum "$NAME" read_bytes)
		echo 0 > $PQ
		jq -c --argjson rep "$r" --arg path "$p" --argjson cpu "$(((b1 - b0)))" --argjson hz "$HZ" \
			--argjson pq "$((q1 - q0))" '.results[0] |
			{rep: $rep, path: $path, ran, reason, bytes, ios, seconds,
			 mibs: (if .ran and .seconds > 0 then .bytes / 1048576 / .seconds else null end),
			 overlapped_slots,
			 cpu_s_per_gib: (if .ran and .bytes > 0 then $cpu / $hz / (.bytes / 1073741824) else null end),
			 peerq_bytes: $pq}' /tmp/pb.json >"/tmp/pb.$p" || fail "fxctl peer bench JSON: $(cat /tmp/pb.json)"
		[ "$p" != posix ] || posix=$(jq '.mibs' "/tmp/pb.$p")
		[ "$p" != posix-16m ] || posix16=$(jq '.mibs' "/tmp/pb.$p")
		# the peer-queue row is the peer queues' only if they moved it all
		if [ "$p" = peerq ] && [ "$(jq '.ran' "/tmp/pb.$p")" = true ]; then
			[ "$((q1 - q0))" = "$(jq '.bytes' "/tmp/pb.$p")" ] ||
				fail "peerq: the peer queues read $((q1 - q0)) bytes of $(jq '.bytes' "/tmp/pb.$p")"
		elif [ "$((q1 - q0))" != 0 ]; then
			fail "$p: the peer queues moved $((q1 - q0)) bytes with peer_queues=0"
		fi
	done
	for p in "${PATHS[@]}"; do
		ref=$posix
		[ "${p%-16m}" = "$p" ] || ref=$posix16
		echo "BENCHPEER $(jq -c --argjson posix "${ref:-null}" \
			'. + {ratio_to_posix: (if .mibs != null and $posix != null and $posix > 0 then .mibs / $posix else null end)}' "/tmp/pb.$p")"
	done
done
echo "BENCHPEERINFO $(jq -nc --arg kver "$(uname -r)" --argjson reps "$REPS" --argjson size_mib "$SIZE" \
	--argjson block_kib "$BLOCK" --argjson depth "$DEPTH" --argjson members "${#M[@]}" \
	'{kernel: $kver, reps: $reps, size_mib: $size_mib, block_kib: $block_kib, depth: $depth, members: $members, chunk_kib: 512}')"
pass "peer bench: $REPS repeats of posix, staged, direct and peerq, and posix and staged with 16 MiB requests"
