#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1,6.12 members=4 timeout=600 nullb-attr=cache_size=64
# Flush ordering: the data of a PREFLUSH write must not be issued before every
# member's flush completed (Documentation/block/writeback_cache_control.rst;
# dm flushes all targets, waits, then sends the data without PREFLUSH).
# Members have a volatile write cache (null_blk cache_size, header above): on
# 7.x nvmet reports VWC only when its backing device has one.
#
# Members 0, 2, 3 are dm-delay devices whose flushes take FLUSH_MS (the
# 9-argument table: reads and writes undelayed, flushes delayed); member 1,
# the owner of the written sector, is the plain NVMe-oF namespace. The lab's
# test module fxlab_flushw submits ONE write bio with REQ_PREFLUSH|REQ_FUA at
# a sector of member 1 on /dev/fxN and waits for it. Block tracepoints
# (block_bio_queue / block_bio_complete, with timestamps) show when each
# delayed member's flush completed on its dm device and when fxblk queued the
# data to member 1: the data must come after the last of those completions,
# and keep its FUA. The delay itself is checked too (a flush that was not
# delayed would prove nothing), and the written block must read back.
# fxblk before the ordered-flush fix fails here: it sent the data (with
# PREFLUSH) to member 1 at once, ~1 s before the other members' flushes
# completed.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
KO=/lab/modules/fxlab_flushw.ko
[ -f $KO ] || fail "$KO missing (tests/lab/modules/build.sh did not build it for $FX_KVER)"
FLUSH_MS=${FL_FLUSH_MS:-1000}
OWNER=1
CH=65536
fx_load
cleanup() {
	rmmod fxlab_flushw 2>/dev/null
	fxctl remove t23 >/dev/null 2>&1
	fl_dm_remove fl23d0 fl23d2 fl23d3
}
trap cleanup EXIT

VM=()
for i in 0 1 2 3; do
	if [ $i = $OWNER ]; then VM+=("${M[$i]}"); continue; fi
	fl_dm_delay "fl23d$i" "${M[$i]}" 0 0 "$FLUSH_MS"
	t=$(dmsetup table "fl23d$i")
	[ "$(wc -w <<<"$t")" = 12 ] || fail "dm-delay on $FX_KVER did not keep the flush class: table '$t'"
	VM+=("/dev/mapper/fl23d$i")
done
fx_run fxctl create t23 --chunk 64K "${VM[@]}"
DEV=$(fxdev t23) || fail "no /dev/fxN named t23"
DISK=${DEV#/dev/}
[ "$(cat /sys/block/$DISK/queue/write_cache)" = "write back" ] ||
	fail "$DEV is '$(cat /sys/block/$DISK/queue/write_cache)': the block layer would drop PREFLUSH before fxblk"
fxctl -o json show t23 >/tmp/show.json || fail "fxctl show t23"
OFF=$(jv volume.members.$OWNER.data_offset_bytes /tmp/show.json)
# volume chunk 1 is member 1's first chunk: volume sector 128+8 -> member 1
# sector data_offset/512 + 8
VSEC=$((CH / 512 + 8))
MSEC=$((OFF / 512 + 8))
OWN_ID=$(fl_dev_id "${M[$OWNER]}")
declare -A DM_ID
for i in 0 2 3; do DM_ID[$i]=$(fl_dev_id "/dev/mapper/fl23d$i"); done
FX_ID=$(fl_dev_id "$DEV")
log "$DEV ($FX_ID): PREFLUSH|FUA write at volume sector $VSEC -> member $OWNER ${M[$OWNER]} ($OWN_ID) sector $MSEC;" \
	"flushes delayed ${FLUSH_MS} ms on dm devices ${DM_ID[*]}"

fl_trace_start block/block_bio_queue block/block_bio_complete
t0=$(fl_now)
insmod $KO dev="$DEV" sector=$VSEC fua=1 fill=0xa5 || fail "insmod fxlab_flushw"
t1=$(fl_now)
fl_trace_stop /tmp/trace
ST=$(cat /sys/module/fxlab_flushw/parameters/status)
US=$(cat /sys/module/fxlab_flushw/parameters/usecs)
rmmod fxlab_flushw || fail "rmmod fxlab_flushw"
log "the PREFLUSH|FUA write completed with status $ST in $US us (insmod took $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') s)"
[ "$ST" = 0 ] || fail "PREFLUSH|FUA write on $DEV failed: $ST"
cmp -s <(dd if="$DEV" bs=4096 skip=$((VSEC / 8)) count=1 iflag=direct 2>/dev/null) \
	<(head -c 4096 /dev/zero | tr '\000' '\245') || fail "the PREFLUSH write's data does not read back from $DEV"

# trace lines: "comm-pid [cpu] flags TS: block_bio_queue: MAJ,MIN RWBS SECTOR + NR [comm]"
# -> "TS event dev rwbs sector nr"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^block_bio_(queue|complete):$/) {
	ts = $(i - 1); sub(/:$/, "", ts); ev = $i; sub(/:$/, "", ev)
	print ts, ev, $(i + 1), $(i + 2), $(i + 3), $(i + 5); next } }' /tmp/trace >/tmp/ev
log "$(grep -c . /tmp/ev) block events traced"
# first TS of: event dev, rwbs matching RE, sector (or any), nr (or any)
first() {
	awk -v e="$1" -v d="$2" -v re="$3" -v s="$4" -v n="$5" \
		'$2 == e && $3 == d && $4 ~ re && (s == "*" || $5 == s) && (n == "*" || $6 == n) {print $1; exit}' /tmp/ev
}
ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) * 1000}'; }
T_FX=$(first block_bio_queue "$FX_ID" '^F' "$VSEC" '*')
[ -n "$T_FX" ] || { head -n 40 /tmp/trace; fail "no block_bio_queue of the PREFLUSH write on $DEV ($FX_ID) in the trace"; }
T_DATA=$(first block_bio_queue "$OWN_ID" 'W' "$MSEC" 8)
[ -n "$T_DATA" ] || { grep " $OWN_ID " /tmp/ev; fail "fxblk never queued the data (sector $MSEC + 8) to ${M[$OWNER]} ($OWN_ID)"; }
RWBS=$(awk -v t="$T_DATA" -v d="$OWN_ID" '$1 == t && $3 == d {print $4; exit}' /tmp/ev)
log "t=0: PREFLUSH|FUA write queued on $DEV; data queued to ${M[$OWNER]} at +$(ms "$T_FX" "$T_DATA") ms as '$RWBS'"
LATE=0 WORST=
for i in 0 2 3; do
	q=$(first block_bio_queue "${DM_ID[$i]}" '^F' '*' 0)
	c=$(first block_bio_complete "${DM_ID[$i]}" '^F' '*' 0)
	[ -n "$q" ] && [ -n "$c" ] || { grep " ${DM_ID[$i]} " /tmp/ev; fail "member $i (fl23d$i): no empty flush queued and completed on it"; }
	log "member $i: flush queued +$(ms "$T_FX" "$q") ms, completed +$(ms "$T_FX" "$c") ms"
	awk -v q="$q" -v c="$c" -v d="$FLUSH_MS" 'BEGIN {exit !((c - q) * 1000 >= 0.8 * d)}' ||
		fail "member $i: its flush took only $(ms "$q" "$c") ms: dm-delay did not delay it, the test would prove nothing"
	if awk -v t="$T_DATA" -v c="$c" 'BEGIN {exit !(t < c)}'; then
		LATE=$((LATE + 1))
		WORST+=" member $i: data $(ms "$T_DATA" "$c") ms before its flush completed;"
	fi
done
GAP=$(ms "$(sort -n <<<"$(for i in 0 2 3; do first block_bio_complete "${DM_ID[$i]}" '^F' '*' 0; done)" | tail -n1)" "$T_DATA")
fl_result "preflush_writes=1 delayed_members=3 flush_delay_ms=$FLUSH_MS data_after_last_flush_ms=$GAP order_violations=$LATE"
[ "$LATE" = 0 ] ||
	fail "PREFLUSH ordering broken: fxblk issued the data to ${M[$OWNER]} before the other members' flushes completed ($WORST)"
[[ $RWBS == *W*F* ]] || fail "the data reached ${M[$OWNER]} as '$RWBS': FUA was dropped"
fx_run fxctl remove t23
trap - EXIT
fl_dm_remove fl23d0 fl23d2 fl23d3
pass "PREFLUSH data issued $GAP ms after the last member flush completed (delayed ${FLUSH_MS} ms), FUA kept"
