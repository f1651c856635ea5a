#!/bin/bash
# In-VM half of make bench's ai rows (issue 21), run by tests/bench/run.sh
# (kind "ai") through tests/lab/run --hostfs (the host's python3, numpy,
# torch and the build tree's fxio package, chrooted: lib.sh fx_hostfs_run).
#
#   vm-ai.sh REPS MODEL_MIB KV_BLOCK_KIB KV_BLOCKS
#
# fxN over the lab's members (512 KiB chunk), then:
#   kv     ctl/fxio/python/examples/kvcache_trace.py on the raw fxN: the
#          stored trace (kvcache-trace.txt) against KVCacheStore with
#          KV_BLOCKS blocks of KV_BLOCK_KIB, engine fxio (batches through
#          libfxio) and pread (one O_DIRECT preadv/pwritev per block), the
#          engines alternating, REPS runs each: hit rate, MiB/s, p50/p99
#          of the batched gets and puts
#   model  xfs on the same fxN, ctl/fxio/python/examples/bench_load.py:
#          a MODEL_MIB file of float16/bfloat16/float32 tensors saved with
#          fxio.safetensors.save and torch.save (both durable), loaded cold
#          with fxio.safetensors.load (O_DIRECT), the same staged through
#          libfxio's pool (memory="emulated"), open().read() + views and
#          torch.load, the order rotating, REPS runs each
# One line per run: `BENCHAI {json}` ({"bench": "kv"|"model", ...} as the
# scripts print it with --json); BENCHAIINFO once.
. /lab/lib.sh
REPS=${1:-3}; MIB=${2:-48}; KVKIB=${3:-64}; KVBLOCKS=${4:-256}
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs at least 2 members (got '${FX_MEMBERS:-}')"
fx_load
fx_run fxctl create bai --chunk 512K "${M[@]}"
MNT=/tmp/fxai	# in the VM's /tmp, which is the chroot's /tmp
cleanup() {
	umount "$FX_HOSTFS_ROOT$MNT" 2>/dev/null
	fxctl remove bai >/dev/null 2>&1
}
trap cleanup EXIT
DEV=$(fxdev bai) || fail "no /dev/fxN named bai"
fx_hostfs_mount
EX=$FX_HOSTFS_EXAMPLES

t0=$(date +%s)
fx_hostfs_run python3 "$EX/kvcache_trace.py" "$DEV" --engine fxio,pread --reps "$REPS" \
	--block-kib "$KVKIB" --blocks "$KVBLOCKS" --json >/tmp/kv.out 2>/tmp/kv.err ||
	fail "kvcache_trace.py on $DEV: $(tail -n 20 /tmp/kv.err)"
log "kv trace: $(($(date +%s) - t0)) s"
[ "$(wc -l </tmp/kv.out)" = $((2 * REPS)) ] || fail "kvcache_trace.py: $(wc -l </tmp/kv.out) runs, expected $((2 * REPS))"
sed 's/^{/BENCHAI {"bench": "kv", /' /tmp/kv.out

mkfs.xfs -f -K -q "$DEV" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; fail "mkfs.xfs $DEV"; }
mkdir -p "$FX_HOSTFS_ROOT$MNT" && mount -t xfs "$DEV" "$FX_HOSTFS_ROOT$MNT" || fail "mount xfs of $DEV"
t0=$(date +%s)
fx_hostfs_run python3 "$EX/bench_load.py" "$MNT" --mib "$MIB" --runs "$REPS" --json \
	>/tmp/model.out 2>/tmp/model.err || fail "bench_load.py on xfs over $DEV: $(tail -n 20 /tmp/model.err)"
log "model load/save: $(($(date +%s) - t0)) s"
[ "$(wc -l </tmp/model.out)" = $((6 * REPS)) ] || fail "bench_load.py: $(wc -l </tmp/model.out) runs, expected $((6 * REPS))"
sed 's/^{/BENCHAI {"bench": "model", /' /tmp/model.out

echo "BENCHAIINFO $(jq -nc --arg kver "$(uname -r)" --argjson reps "$REPS" --argjson model_mib "$MIB" \
	--argjson kv_block_kib "$KVKIB" --argjson kv_blocks "$KVBLOCKS" --argjson members "${#M[@]}" \
	'{kernel: $kver, reps: $reps, model_mib: $model_mib, kv_block_kib: $kv_block_kib,
	  kv_blocks: $kv_blocks, members: $members, chunk_kib: 512, fs: "xfs"}')"
pass "ai bench: $REPS runs of the KV trace (fxio, pread) and of the model load/save (fxio, staged, plain, torch)"
