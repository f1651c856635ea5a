#!/bin/bash
# lab: kernels=6.12,7.3 quick=6.12 members=4 timeout=600
# lab-allow: fxblk: .*member 3 .*failed|I/O error, dev nvme[0-9]+n1|attempt to access beyond end of device|nvme[0-9]+n1: rw=[0-9]+, sector=[0-9]+, nr_sectors = [0-9]+ limit=0
# Peer queues under faults (issue 20): fxblk's own NVMe-oF association to
# a member goes down with the member's target port and comes back by
# itself, peer I/O never hangs or returns wrong data meanwhile, writes an
# association completed and could not flush make the next fsync fail in
# the strict mode (peer_strict_flush=1; by default the member's own flush
# covers them: lab 72), and a member the volume lost gets no peer I/O.
# Member 2 reaches the target through a port of its own (faults.sh
# fl_stallable: port 2, service 4421, reconnect every second); fxblk
# peer_queues=1; a volume over the 4 members, 64 KiB chunks.
#  - a loop of peer writes, each read back by a peer read and compared, runs
#    while port 2 is removed for 4 s and added again: every RW succeeds with
#    the right bytes (a queue that went down sends the RW through the block
#    path, which waits for the kernel's controller to reconnect), none takes
#    longer than 30 s; member 2's association goes down ("down" in debugfs
#    and in fxctl peer status), is opened again after its back-off (the
#    kernel log says so once, live again, its counters move); back-off
#    messages "not opened ... (again in N s)" are shown if an RW tried
#    while the port was gone;
#  - a plain peer write across every member before the port went (not
#    flushed): where the member has a volatile write cache (Identify VWC
#    and its disk's write_cache: 6.12 over null_blk; 7.3 write through), its
#    association closed unflushed, so the next fsync of /dev/fxN fails with
#    EIO (peer_strict_flush=1) and the one after it succeeds; without one, the write was durable
#    on completion: no member is unflushed and the fsync succeeds;
#  - the Keep Alive Timeout: with fxblk's Keep Alives held back (module
#    parameter peer_ka_hold, lab only) the target drops every idle
#    association after its 5 s KATO; a peer RW then takes the block path;
#    once they resume, the associations reopen and stay live;
#  - member 3's kernel controller deleted (nvme disconnect): fxblk reports
#    the member gone (->mark_dead, 6.5+: hence 6.12 and 7.3 only); a peer
#    read across it fails with EIO through the block path, member 3's
#    association is stopped ("member gone") and its read counter stays;
#  - the volume is removed with the other associations open; the kernel log
#    stays clean but for the lost member's I/O errors.
. /lab/lib.sh
. /lab/faults.sh
fx_peer_members 4
VOL=t56 I=2 G=3
MiB=1048576
STOP=/tmp/t56.stop
cleanup() {
	: > $STOP
	fl_stallable_end $I
}
trap cleanup EXIT
grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"

modprobe fxblk peer_queues=1 peer_strict_flush=1 || fail "modprobe fxblk peer_queues=1 peer_strict_flush=1"
fl_stallable $I
M[I]=$FL_DEV
fx_run fxctl create $VOL --chunk 64K "${M[@]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
peer_field() { fx_peerq_field "$NAME" "$@"; }
peer_state() { peer_field "$1" state; }
head -c $((8 * MiB)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct status=none || fail "dd the reference"
fx_run $PT rwfile read "$DEV" 0 0 65536 /tmp/z host
expect_eq "$(grep -c "^$NAME member=[0-3] .* state=live " $DBG)" 4 "live peer queues"
CNTLID0=$(peer_field $I cntlid)

# peer_rw J: peer write of range J, then a peer read of it, compared
# (ranges of 200.5 KiB at 1 MiB + J * 211 KiB + 1.5 KiB: across chunks)
peer_rw() {
	local off=$((MiB + $1 * 211 * 1024 + 1536)) len=$((200 * 1024 + 512))
	head -c $len /dev/urandom > /tmp/w.$1
	$PT rwfile write "$DEV" 512 $off $len /tmp/w.$1 host > /tmp/rw.out 2>&1 &&
		$PT rwfile read "$DEV" 1024 $off $len /tmp/r.$1 host >> /tmp/rw.out 2>&1 &&
		cmp -s /tmp/w.$1 /tmp/r.$1 || { cat /tmp/rw.out; echo "peer RW $1 at $off: failed or wrong bytes"; return 1; }
}
# the loop: RW J = 1, 2, ... until $STOP; one line per RW: J SECONDS
rw_loop() {
	local j=0 t0 t1
	while [ ! -e $STOP ] && [ $j -lt 30 ]; do
		j=$((j + 1))
		t0=$(fl_now)
		peer_rw $j || return 1
		t1=$(fl_now)
		echo "$j $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" >> /tmp/rw.times
	done
}

# an unflushed peer write across every member, before the fault: unflushed
# where the member has a volatile write cache (its controller's Identify VWC
# and the kernel's disk both say so: 6.12 over null_blk; 7.3's nvme host
# calls the same namespace write through)
WC=$(cat /sys/block/${M[I]#/dev/}/queue/write_cache)
VWC=$([ "$(peer_field $I vwc)" = 1 ] && [ "$WC" = "write back" ] && echo 1 || echo 0)
log "member $I: Identify VWC $(peer_field $I vwc), its disk '$WC': volatile write cache $VWC"
fx_run $PT rwfile write "$DEV" 0 $((6 * MiB)) $((256 * 1024)) /tmp/ref host
expect_eq "$(peer_sum unflushed $I)" "$VWC" "member $I unflushed after a plain peer write (VWC $VWC)"

fx_mark ports
: > /tmp/rw.times
rm -f $STOP
rw_loop & LOOP=$!
fl_wait 30 eval '[ "$(wc -l < /tmp/rw.times)" -ge 3 ]' || fail "the peer RW loop made no progress before the fault"
log "port 2 (member $I) removed"
fl_port_del 2
fl_wait 20 eval '[ "$(peer_state $I)" != live ]' || fail "member $I's peer queue still live 20 s after its port went"
log "member $I's peer queue: $(peer_state $I) ($(peer_field $I why))"
fx_json fxctl -o json peer status
expect_eq "$(jqr ".volumes[] | select(.name == \"$VOL\") | .peer_queues[$I].state")" "$(peer_state $I)" \
	"fxctl peer status: member $I's peer queue state"
# shellcheck disable=SC2034 # read in the fl_wait eval below
N0=$(wc -l < /tmp/rw.times)
sleep 4
fl_port_add 2 4421 $I
log "port 2 back"
fl_wait 60 eval '[ "$(peer_state $I)" = live ]' || fail "member $I's peer queue not live again 60 s after its port came back (state $(peer_state $I))"
CNTLID1=$(peer_field $I cntlid)
# nvmet may hand out the freed cntlid again: the kernel log tells
expect_eq "$(fx_dmesg_since ports | grep -c "peer queues of member $I (.*cntlid $CNTLID1,")" 1 \
	"messages 'peer queues of member $I ... opened' since the port went"
R0=$(peer_field $I reads)
fl_wait 30 eval '[ "$(wc -l < /tmp/rw.times)" -ge $((N0 + 3)) ]' || fail "the peer RW loop stalled after the port came back"
: > $STOP
wait $LOOP || fail "a peer RW failed or returned wrong bytes across the port's removal"
N=$(wc -l < /tmp/rw.times)
MAXT=$(sort -k2 -n -r /tmp/rw.times | head -n1 | cut -d' ' -f2)
log "$N peer RWs, the slowest $MAXT s; member $I's association: cntlid $CNTLID0, then $CNTLID1"
awk -v m="$MAXT" 'BEGIN {exit !(m < 30)}' || fail "a peer RW took $MAXT s across the port's removal (bound 30 s)"
[ "$(peer_field $I reads)" -gt "$R0" ] || [ "$(peer_field $I reads)" -gt 0 ] ||
	fail "member $I's new association moved nothing"
# every RW's range, read through the block path
for j in $(cut -d' ' -f1 /tmp/rw.times); do
	off=$((MiB + j * 211 * 1024 + 1536)) len=$((200 * 1024 + 512))
	dd if="$DEV" of=/tmp/b.$j bs=512 skip=$((off / 512)) count=$((len / 512)) iflag=direct status=none ||
		fail "block read of RW $j"
	cmp -s /tmp/w.$j /tmp/b.$j || fail "RW $j: the block path reads other bytes than were written"
done
fx_dmesg_since ports > /tmp/dm.ports
grep -E "peer queues of member $I .*not opened: .*\(again in [0-9]+ s\)" /tmp/dm.ports | sed 's/^/   /' | head -5
grep -qE "peer queues of [^ ]+ .*down: " /tmp/dm.ports || fail "no 'peer queues of ... down' message for member $I"

# its writes were never flushed by the old association: the fsync says so
# in the strict mode (with a volatile write cache; without, they were
# durable on completion)
if [ "$VWC" = 1 ]; then
	if xfs_io -c fsync "$DEV" > /tmp/fsync.out 2>&1 && ! grep -qi error /tmp/fsync.out; then
		fail "fsync of $DEV succeeded although member $I's old association closed with unflushed writes"
	fi
	grep -qi 'Input/output error' /tmp/fsync.out || { cat /tmp/fsync.out; fail "the fsync did not fail with EIO"; }
	log "fsync after the lost association: $(tr '\n' ' ' < /tmp/fsync.out)"
fi
xfs_io -c fsync "$DEV" > /tmp/fsync.out 2>&1 && ! grep -qi error /tmp/fsync.out ||
	{ cat /tmp/fsync.out; fail "the fsync after the lost association failed (VWC $VWC: the first with it must not)"; }

# Keep Alive Timeout: fxblk holds back its Keep Alives (peer_ka_hold, lab
# only), the target's KATO (5 s) expires on the idle associations and it
# drops them; a peer RW then goes through the block path; once the Keep
# Alives resume, the associations are opened again after their back-off
fx_mark kato
echo 1 > /sys/module/fxblk/parameters/peer_ka_hold
live_count() { grep -c "^$NAME member=[0-3] .* state=live " $DBG; }
fl_wait 30 eval '[ "$(live_count)" = 0 ]' ||
	fail "$(live_count) associations still live 30 s after their Keep Alives stopped (KATO 5 s)"
log "every association down after its KATO: $(peer_field 0 why)"
peer_rw 40 || fail "a peer RW while the associations were down"
echo 0 > /sys/module/fxblk/parameters/peer_ka_hold
fl_wait 90 eval 'peer_rw 41 && [ "$(live_count)" = 4 ]' ||
	fail "associations not all live again 90 s after the Keep Alives resumed ($(live_count) live)"
fx_dmesg_since kato | grep -iE 'keep-?alive' | head -3 | sed 's/^/   /'
fx_dmesg_since kato | grep -qiE 'nvmet.*keep-?alive' || fail "no keep-alive expiry reported by nvmet"
sleep 7	# longer than KATO: live with Keep Alives
expect_eq "$(live_count)" 4 "live associations 7 s after the Keep Alives resumed"

# member 3 lost: no peer I/O to it
GR=$(peer_field $G reads)
nvme disconnect -n "$FX_NQN_BASE$G" > /dev/null || fail "nvme disconnect member $G"
fl_wait 20 eval '[ "$(fxctl -o json show $VOL | jq -r ".volume.members[$G].state")" = gone ]' ||
	fail "member $G not gone 20 s after its controller was deleted"
if $PT rwfile read "$DEV" 0 $((3 * 64 * 1024)) $((128 * 1024)) /tmp/g host > /tmp/g.out 2>&1; then
	cat /tmp/g.out; fail "a peer read across gone member $G succeeded"
fi
grep -q 'Input/output error' /tmp/g.out || { cat /tmp/g.out; fail "the peer read across gone member $G did not fail with EIO"; }
expect_eq "$(peer_field $G reads)" "$GR" "peer reads of gone member $G's association"
expect_eq "$(peer_state $G)" down "member $G's association once it is gone"
expect_eq "$(peer_field $G why)" member "why member $G's association is down (first word)"

fx_run fxctl remove --force $VOL
expect_eq "$(grep -c "^$NAME " $DBG)" 0 "peer queue lines of $VOL after its removal"
trap - EXIT
cleanup
pass "peer RWs across a port removal: $N, slowest $MAXT s, association reopened; volatile write cache $VWC: $([ $VWC = 1 ] && echo "lost unflushed writes fail the fsync once" || echo "writes durable on completion, fsync ok"); a gone member gets no peer I/O"
