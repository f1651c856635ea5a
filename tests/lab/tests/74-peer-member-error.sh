#!/bin/bash
# lab: kernels=6.12 quick=6.12 members=4 target-dm timeout=400
# A member that fails peer commands for good is reported as failing,
# as for a block-path error (issue 34, review 2026-12-06-peer M6).
# fxblk peer_queues=1, a volume over 4 NVMe-oF/RDMA members whose target
# namespaces are dm-linear devices (--target-dm); 64 KiB chunks.
#  1. Associations live, every member live.
#  2. Member 1's target device swapped to dm's error target: nvmet
#     answers every I/O with Internal Error and Do Not Retry. A peer read
#     across all four members fails (EIO); member 1 is "failing" in fxctl
#     show, the others live; fxctl stats counts no block-path error on
#     member 1 (the control: its state came from the peer path alone).
#  3. The table put back: a peer read succeeds again.
# Seen failing before the change (peer errors never reached the health
# state): member 1 stayed live.
. /lab/lib.sh
. /lab/faults.sh
fx_peer_members 4
VOL=t74 BAD=1
KiB=1024
TGT=fxtgt$BAD
dmsetup info $TGT > /dev/null || fail "no target dm device $TGT (--target-dm)"
TABLE=$(dmsetup table $TGT) || fail "dmsetup table $TGT"
cleanup() {
	if [ -n "${SWAPPED:-}" ]; then
		dmsetup suspend $TGT && dmsetup load $TGT --table "$TABLE" && dmsetup resume $TGT
	fi 2>/dev/null
}
trap cleanup EXIT
fx_peerq_load
fx_run fxctl create $VOL --chunk 64K "${M[@]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
live_count() { grep -c "^$NAME member=[0-3] .* state=live " $DBG; }
states() { fxctl -o json show $VOL | jq -r '[.volume.members[].state] | join(" ")'; }
block_errors() {
	fxctl -o json stats $VOL |
		jq -r ".volume.members[$1] | .read.errors + .write.errors + .flush.errors + .discard.errors"
}
head -c $((512 * KiB)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=256K oflag=direct conv=fsync status=none || fail "write the reference"

# 1.
fx_run $PT rwfile read "$DEV" 0 0 $((256 * KiB)) /tmp/r1 host
expect_eq "$(live_count)" 4 "live associations"
expect_eq "$(states)" "live live live live" "member states"

# 2. member 1's namespace fails every I/O
fx_mark bad
dmsetup suspend $TGT || fail "suspend $TGT"
dmsetup load $TGT --table "0 $(echo "$TABLE" | cut -d' ' -f2) error" || fail "load the error table into $TGT"
SWAPPED=1
dmsetup resume $TGT || fail "resume $TGT"
if $PT rwfile read "$DEV" 0 0 $((256 * KiB)) /tmp/r2 host > /tmp/r2.out 2>&1; then
	fail "a peer read across member $BAD succeeded while its namespace fails every I/O"
fi
log "the peer read: $(tail -n1 /tmp/r2.out)"
fx_dmesg_since bad | grep -E "peer queue of .* failed: status" | head -2 | sed 's/^/   /'
fx_dmesg_since bad | grep -qE "peer queue of ${M[BAD]#/dev/}: read failed: status 0x[46]006$" ||
	fail "no peer read of member $BAD failed with Internal Error and DNR (0x4006; 0x6006 with More)"
fl_wait 10 eval '[ "$(states)" = "live failing live live" ]' ||
	fail "member states after the peer error: $(states), expected member $BAD failing alone"
expect_eq "$(block_errors $BAD)" 0 "block-path errors on member $BAD (its state must come from the peer path)"

# 3. back
dmsetup suspend $TGT && dmsetup load $TGT --table "$TABLE" && dmsetup resume $TGT ||
	fail "put $TGT's table back"
SWAPPED=
fx_run $PT rwfile read "$DEV" 0 0 $((256 * KiB)) /tmp/r3 host
head -c $((256 * KiB)) /tmp/ref | cmp -s - /tmp/r3 || fail "the peer read after the table came back differs from the block path"
fx_run fxctl stop $VOL
pass "a peer read failed for good on member $BAD made it failing, the others live, with no block-path error"
