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
#           module's peer I/O); "ran": false with the reason when absent
# One line per path and repeat: `BENCHPEER {json}` with MiB/s, the ratio to
# the posix run of the same repeat and the staged path's overlapped slots.
. /lab/lib.sh
REPS=${1:-3}; SIZE=${2:-64}; BLOCK=${3:-1024}; DEPTH=${4:-4}
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs at least 2 members (got '${FX_MEMBERS:-}')"
fx_load
fx_run fxctl create bpeer --chunk 512K "${M[@]}"
trap 'fxctl remove bpeer >/dev/null 2>&1' EXIT
DEV=$(fxdev bpeer) || fail "no /dev/fxN named bpeer"
# data to read: written once, so reads are not of never-written blocks
dd if=/dev/urandom of="$DEV" bs=1M count="$SIZE" oflag=direct status=none || fail "fill $DEV"
PATHS=(posix staged direct)
for ((r = 0; r < REPS; r++)); do
	posix=
	for ((i = 0; i < ${#PATHS[@]}; i++)); do
		p=${PATHS[$(((i + r) % ${#PATHS[@]}))]}
		fxctl -o json peer bench bpeer --paths "$p" --size "${SIZE}M" --block "${BLOCK}K" \
			--depth "$DEPTH" >/tmp/pb.json 2>/tmp/pb.err ||
			fail "fxctl peer bench --paths $p: $(cat /tmp/pb.err)"
		jq -c --argjson rep "$r" --arg path "$p" '.results[0] |
			{rep: $rep, path: $path, ran, reason, bytes, ios, seconds,
			 mibs: (if .ran and .seconds > 0 then .bytes / 1048576 / .seconds else null end),
			 overlapped_slots}' /tmp/pb.json >"/tmp/pb.$p" || fail "fxctl peer bench JSON: $(cat /tmp/pb.json)"
		[ "$p" != posix ] || posix=$(jq '.mibs' "/tmp/pb.$p")
	done
	for p in "${PATHS[@]}"; do
		echo "BENCHPEER $(jq -c --argjson posix "${posix:-null}" \
			'. + {ratio_to_posix: (if .mibs != null and $posix != null and $posix > 0 then .mibs / $posix else null end)}' "/tmp/pb.$p")"
	done
done
echo "BENCHPEERINFO $(jq -nc --arg kver "$(uname -r)" --argjson reps "$REPS" --argjson size_mib "$SIZE" \
	--argjson block_kib "$BLOCK" --argjson depth "$DEPTH" --argjson members "${#M[@]}" \
	'{kernel: $kver, reps: $reps, size_mib: $size_mib, block_kib: $block_kib, depth: $depth, members: $members, chunk_kib: 512}')"
pass "peer bench: $REPS repeats of posix, staged and direct"
