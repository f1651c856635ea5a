#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=600
# /proc/diskstats and blktrace of /dev/fxN: every bio fio submits is ONE I/O
# of fxN, also when fxblk splits it at chunk boundaries (96 KiB I/O over 64
# KiB chunks: every one crosses a boundary), with its full size in sectors;
# and the block tracepoints show the stack: a block_split on fxN per cut and
# a block_bio_remap from fxN to a member per piece.
# Before fxblk accounted the original bio, each piece was an I/O (twice the
# fio count here) and no split/remap event was traced.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
fx_load
cleanup() {
	fxctl remove t34 >/dev/null 2>&1
	echo 0 > $FL_TRACE/tracing_on 2>/dev/null
	echo 0 > $FL_TRACE/events/enable 2>/dev/null
}
trap cleanup EXIT
fx_run fxctl create t34 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t34) || fail "no /dev/fxN with sysfs name t34"
NAME=${DEV#/dev/}
MAJMIN=$(cat /sys/block/$NAME/dev)
udevadm settle 2>/dev/null || sleep 2
# stat NAME: "reads read-sectors writes write-sectors" from /sys/block/NAME/stat
stat4() { awk '{print $1, $3, $5, $7}' /sys/block/$NAME/stat; }
NIO=128 BS=96k		# 12 MiB; each 96 KiB I/O crosses one or two boundaries
SECT=$((NIO * 96 * 2))

for dir in write read; do
	read -r r0 rs0 w0 ws0 < <(stat4)
	fl_trace_start block/block_split block/block_bio_remap
	fx_run fio --name=acct-$dir --filename="$DEV" --direct=1 --ioengine=libaio \
		--rw=$dir --bs=$BS --iodepth=4 --size=$((NIO * 96))k --eta=never
	fl_trace_stop /tmp/trace-$dir
	read -r r1 rs1 w1 ws1 < <(stat4)
	if [ $dir = read ]; then n=$((r1 - r0)) s=$((rs1 - rs0)); else n=$((w1 - w0)) s=$((ws1 - ws0)); fi
	log "$dir: $n I/Os, $s sectors in $NAME/stat for $NIO fio I/Os of $BS"
	expect_eq "$n" "$NIO" "$dir I/Os of $NAME in diskstats (one per fio bio, not per chunk piece)"
	expect_eq "$s" "$SECT" "$dir sectors of $NAME in diskstats"
	grep -q 'LOST' /tmp/trace-$dir && fail "trace buffer overflowed"
	# block_split: "MAJ,MIN RWBS SECTOR / NEW_SECTOR"; block_bio_remap:
	# "MAJ,MIN RWBS SECTOR + N <- (FXMAJ,FXMIN) FXSECTOR"
	splits=$(grep -cE "block_split: ${MAJMIN/:/,} " /tmp/trace-$dir)
	remaps=$(grep -cE "block_bio_remap: .* <- \(${MAJMIN/:/,}\) " /tmp/trace-$dir)
	log "$dir: $splits block_split on $NAME, $remaps block_bio_remap from $NAME"
	[ "$splits" -ge "$NIO" ] || fail "$dir: $splits block_split events on $NAME, expected >= $NIO"
	[ "$remaps" -ge $((NIO + splits)) ] ||
		fail "$dir: $remaps block_bio_remap events from $NAME, expected >= $((NIO + splits)) (one per piece)"
done
fx_run fxctl remove t34
trap - EXIT
cleanup
pass "one diskstats I/O per bio; split and remap traced"
