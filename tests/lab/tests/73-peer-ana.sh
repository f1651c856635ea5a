#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=400
# An ANA state the target reports on a peer command takes the RW to the
# block path; it is not an I/O error (issue 34, review 2026-12-06-peer
# H4). fxblk peer_queues=1, a volume over 2 NVMe-oF/RDMA members (both
# namespaces in ANA group 1 of the target's one port), 64 KiB chunks.
#  1. Associations live (a peer read equal to the block path).
#  2. The port's ANA group 1 set to inaccessible: a peer read across both
#     members gets ANA Inaccessible (status 0x302, no DNR; nvmet sets
#     More too) on its commands: the associations stop ("path error"), the
#     RW goes to the block path, where nvme multipath waits for a usable
#     path; 4 s later the group is optimized again (nvmet sends the ANA
#     change event) and the RW returns the right bytes, not EIO. The
#     kernel log shows the 0x2302 status (the control that the peer path
#     met the ANA state).
#  3. The associations are opened again after their back-off and carry a
#     peer read (read counters move).
# Seen failing before the change (every non-zero status was EIO): the
# RW in step 2 failed with EIO at once.
. /lab/lib.sh
. /lab/faults.sh
fx_peer_members 2
VOL=t73
KiB=1024
ANA=(/sys/kernel/config/nvmet/ports/*/ana_groups/1/ana_state)
ana_set() {
	local f
	for f in "${ANA[@]}"; do echo "$1" > "$f" || return 1; done
}
cleanup() {
	ana_set optimized 2>/dev/null
	wait
}
trap cleanup EXIT
[ -e "${ANA[0]}" ] || fail "no nvmet ANA group 1 state under /sys/kernel/config/nvmet/ports"
fx_peerq_load
fx_run fxctl create $VOL --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
live_count() { grep -c "^$NAME member=[01] .* state=live " $DBG; }
head -c $((1024 * KiB)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct conv=fsync status=none || fail "write the reference to $DEV"
# peer_read OFF LEN OUT: a peer read, compared with the reference
peer_read() {
	$PT rwfile read "$DEV" 0 "$1" "$2" "$3" host > "$3.out" 2>&1 || { cat "$3.out"; return 1; }
	dd if=/tmp/ref of="$3.want" bs=64K skip=$(($1 / 65536)) count=$(($2 / 65536)) status=none
	cmp -s "$3" "$3.want" || { echo "peer read at $1: other bytes than the block path"; return 1; }
}

# 1. live
peer_read 0 $((128 * KiB)) /tmp/r1 || fail "peer read before the ANA change"
expect_eq "$(live_count)" 2 "live associations"

# 2. inaccessible under a peer read
fx_mark ana
ana_set inaccessible || fail "set ANA group 1 inaccessible"
{ sleep 4; ana_set optimized; } &
CHG=$!
t0=$(date +%s)
peer_read $((256 * KiB)) $((256 * KiB)) /tmp/r2 || fail "the peer read while ANA group 1 was inaccessible failed"
t1=$(date +%s)
wait $CHG || fail "set ANA group 1 optimized again"
fx_dmesg_since ana > /tmp/dm.ana
grep -E "peer queue of .* failed: status|peer queues of .* down" /tmp/dm.ana | head -4 | sed 's/^/   /'
# SCT 3h SC 02h, the More bit (0x2000) set by nvmet (an error log entry)
grep -qE "peer queue of .* read failed: status 0x2?302$" /tmp/dm.ana ||
	fail "no peer read failed with ANA Inaccessible (0x302): the peer path never met the ANA state"
grep -qE "peer queues of .* down: path error" /tmp/dm.ana || fail "no association stopped for the path error"
log "the peer read across the ANA change returned the right bytes after $((t1 - t0)) s"

# 3. opened again, and used
fl_wait 40 eval 'peer_read 0 $((64 * KiB)) /tmp/r3 && [ "$(live_count)" = 2 ]' ||
	fail "associations not live again 40 s after the ANA group was optimized ($(live_count) live)"
r0=$(peer_sum reads)
peer_read $((512 * KiB)) $((128 * KiB)) /tmp/r4 || fail "peer read after the associations reopened"
[ "$(peer_sum reads)" -gt "$r0" ] || fail "the peer read after reopening did not go over the peer queues"
fx_run fxctl stop $VOL
pass "ANA Inaccessible on peer commands: the RW took the block path and returned the right bytes after $((t1 - t0)) s; the associations reopened"
