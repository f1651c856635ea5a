#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=900
# lab-break: on=6.12 --break one ~ C: (read|write) of volume chunk [0-9]+ \(member 3, bad range\) succeeded
# lab-allow: I/O error|critical medium error|Buffer I/O error|nvme[0-9]+(c[0-9]+)?n[0-9]+: I/O Cmd|fxblk.*(error|failing)
# Faults 20, 21 and 24 do not inject, each under fio crc32c verify of the
# whole volume (libaio, rate-limited so that the writes span the faults):
#  A. controller reset under I/O: `nvme reset` of member 1's controller,
#     RESETS (3) times, each time waiting for it to be live again. nvme-rdma
#     tears its queues down and re-connects (nvme_rdma_reset_ctrl_work,
#     drivers/nvme/host/rdma.c); I/O in flight is cancelled with a path error
#     and the multipath head that fxblk opened requeues it until the
#     controller is live (drivers/nvme/host/multipath.c, nvme_failover_req).
#     Expected on 6.1 and 6.12: no error reaches fxblk or fio, every block
#     verifies, fxctl stats counts no member error, member 1 stays live.
#  B. repeated flaps: member 2 is reconnected through its own nvmet port
#     (service 4421, --reconnect-delay=1 --ctrl-loss-tmo=60); that port is
#     removed for FLAP_S (2) s and created again, FLAPS (3) times, waiting for
#     the controller to be live between flaps. Expected as in A.
#  C. two failing members at once: null_blk badblocks behind members 1 and 3
#     (some of their chunks). Reads and writes of those chunks fail with EIO,
#     so does a 256 KiB write spanning all four members (its pieces on
#     members 0 and 2 succeed: the caller must still see EIO); fio verify
#     during the fault on members 0 and 2 only passes; data on members 0
#     and 2 written before is intact; fxctl stats counts errors on members 1
#     and 3 and on no other; both show `failing`, the volume too.
# --break one: only member 1 gets bad blocks in C, so the first EIO expected
# on member 3 does not come: the test must fail there (negative control).
# Not here: I/O timeout (59-io-timeout holds commands on the target with
# --target-dm) and memory pressure.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
V=t52 CH=65536
RESETS=3 FLAPS=3 FLAP_S=2 BAD=(1 3)
if [ "${1:-}" = --break ] && [ "${2:-}" = one ]; then
	BAD=(1)
	log "--break one: only member 1 fails in part C (A and B not run)"
	RESETS=0 FLAPS=0
elif [ $# -gt 0 ]; then
	fail "unknown arguments '$*' (--break one)"
fi
FIO=
fx_load
cleanup() {
	kill "${FIO:-}" 2>/dev/null
	local a nb
	for nb in 1 3; do
		for ((a = ${S[nb]:-1}; a <= ${E[nb]:-0}; a += 512)); do
			echo "-$a-$((a + 511 > E[nb] ? E[nb] : a + 511))" > "$(fl_nullb $nb)/badblocks" 2>/dev/null
		done
	done
	fxctl remove $V >/dev/null 2>&1
	nvme disconnect -n "${FL_NQN}2" >/dev/null 2>&1
	fl_port_del 2
}
trap cleanup EXIT
fl_hung_task 30
fl_port_add 2 4421 2
fl_reconnect 2 --svcid 4421 --reconnect-delay=1 --ctrl-loss-tmo=60
M[2]=$FL_DEV
fx_run fxctl create $V --chunk 64K "${M[@]}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
member_errors() {	# member_errors FILE: errors per member, "e0 e1 e2 e3"
	jq -r '[.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors] | map(tostring) | join(" ")' "$1"
}
fio_start() {	# fio_start LABEL SIZE_MB: rate-limited write + verify over all members
	fio --eta=never --name="$1" --filename="$DEV" --direct=1 --ioengine=libaio --iodepth=8 \
		--rw=randwrite --bsrange=4k-256k --size="$2"M --offset=$((64 << 20)) --rate=3m \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=json --output=/tmp/fio-$1.json & FIO=$!
}
fio_end() {	# fio_end LABEL: fio passed, every block verified
	local rc
	fl_wait 180 eval '! kill -0 $FIO 2>/dev/null' || fail "fio $1 still running 180 s after the faults"
	wait $FIO; rc=$?
	FIO=
	[ $rc = 0 ] && [ "$(jq '.jobs[0].error' /tmp/fio-$1.json)" = 0 ] ||
		{ cat /tmp/fio-$1.json; fail "$1: fio verify across the faults: rc $rc (an I/O error reached the caller)"; }
	WIOS=$(jq '.jobs[0].write.total_ios' /tmp/fio-$1.json) VIOS=$(jq '.jobs[0].read.total_ios' /tmp/fio-$1.json)
}
assocs() {	# nvmet associations of member 1 so far
	dmesg | grep -cE "nvmet: creating (nvm )?controller [0-9]+ for subsystem ${FL_NQN}1 "
}
live_within() {	# live_within CTRL SECS
	fl_wait "$2" eval "[ \"\$(fl_ctrl_state $1)\" = live ]"
}

# --- A. controller reset under I/O ------------------------------------------
part_a() {
C1=$(fl_ctrl 1) || fail "no controller for member 1"
[ -c /dev/$C1 ] || fail "no /dev/$C1 to reset"
fxctl -o json stats $V >/tmp/s0 || fail "stats"
fio_start reset 30
sleep 2
fx_mark resets
for ((r = 1; r <= RESETS; r++)); do
	t0=$(fl_now) n0=$(assocs)
	nvme reset /dev/$C1 || fail "nvme reset /dev/$C1 (reset $r)"
	live_within $C1 30 || fail "controller $C1 is '$(fl_ctrl_state $C1)' 30 s after reset $r"
	# the target logs every new association (nvmet_alloc_ctrl): the reset
	# tore the old one down and connected again
	[ "$(assocs)" -gt "$n0" ] || fail "A: no new nvmet controller for member 1 after nvme reset $r: no reset happened"
	log "reset $r of $C1 (member 1): re-connected, live again after $(awk -v a="$t0" -v b="$(fl_now)" 'BEGIN {printf "%.1f", b - a}') s"
	sleep 1.5
done
fio_end reset
fxctl -o json stats $V >/tmp/s1 || fail "stats"
ERR=$(jq -s 'map([.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors] | add) | .[1] - .[0]' /tmp/s0 /tmp/s1)
[ "$ERR" = 0 ] || fail "A: $ERR member errors counted across $RESETS controller resets ($(member_errors /tmp/s1))"
ST=$(fxctl -o json show $V | jq -r '.volume.members[1].state // "unknown"')
[ "$ST" = live ] || fail "A: member 1 is '$ST' after resets that lost no I/O"
fx_dmesg_clean_since resets
fl_result "part=reset resets=$RESETS ios_written=$WIOS ios_verified=$VIOS member_errors=0"
log "A: $RESETS controller resets of member 1 under fio: $WIOS writes, $VIOS verified reads, no error"
}

# --- B. repeated flaps ---------------------------------------------------------
part_b() {
C2=$(fl_ctrl 2) || fail "no controller for member 2"
cp /tmp/s1 /tmp/s0
fio_start flaps 30
sleep 2
fx_mark flaps
SEEN=
for ((f = 1; f <= FLAPS; f++)); do
	fl_port_del 2
	t0=$(fl_now)
	fl_wait 10 eval '[ "$(fl_ctrl_state $C2)" != live ]' ||
		fail "B: controller $C2 still live 10 s after its port was removed (flap $f): the fault was not injected"
	SEEN+=" $(fl_ctrl_state $C2)"
	sleep $FLAP_S
	fl_port_add 2 4421 2
	live_within $C2 30 || fail "B: controller $C2 is '$(fl_ctrl_state $C2)' 30 s after the port came back (flap $f)"
	log "flap $f of member 2: down $FLAP_S s, live again $(awk -v a="$t0" -v b="$(fl_now)" 'BEGIN {printf "%.1f", b - a}') s after the port went"
	sleep 1
done
fio_end flaps
fxctl -o json stats $V >/tmp/s1 || fail "stats"
ERR=$(jq -s 'map([.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors] | add) | .[1] - .[0]' /tmp/s0 /tmp/s1)
[ "$ERR" = 0 ] || fail "B: $ERR member errors counted across $FLAPS flaps shorter than ctrl_loss_tmo ($(member_errors /tmp/s1))"
ST=$(fxctl -o json show $V | jq -r '.volume.members[2].state // "unknown"')
[ "$ST" = live ] || fail "B: member 2 is '$ST' after flaps that lost no I/O"
fx_dmesg_clean_since flaps
fl_result "part=flaps flaps=$FLAPS flap_s=$FLAP_S ctrl_states=$(echo $SEEN | tr ' ' ,) ios_written=$WIOS ios_verified=$VIOS member_errors=0"
log "B: $FLAPS flaps of member 2 (states seen:$SEEN): $WIOS writes, $VIOS verified reads, no error"
}
[ "$RESETS" = 0 ] || part_a
[ "$FLAPS" = 0 ] || part_b

# --- C. two failing members at once ---------------------------------------------
# region R: volume chunks 0..127 (8 MiB) written first, checksummed
head -c $((128 * CH)) /dev/urandom >/tmp/r.bin
dd if=/tmp/r.bin of="$DEV" bs=1M oflag=direct conv=fsync 2>/dev/null || fail "writing region R"
fxctl -o json stats $V >/tmp/s0 || fail "stats"
# members 1 and 3: their stripes 16..31 (volume chunks 64..127 of theirs) go bad
declare -a S E
for nb in 1 3; do
	off=$(fxctl -o json show $V | jq -r ".volume.members[$nb].data_offset_bytes")
	[[ $off =~ ^[0-9]+$ ]] || fail "no data_offset_bytes for member $nb"
	S[nb]=$((off / 512 + 16 * CH / 512)) E[nb]=$((off / 512 + 32 * CH / 512 - 1))
	[ -e "$(fl_nullb $nb)/badblocks" ] || fail "null_blk on $FX_KVER has no configfs badblocks attribute"
done
fx_mark two
for nb in "${BAD[@]}"; do
	for ((a = S[nb]; a <= E[nb]; a += 512)); do
		echo "+$a-$((a + 511 > E[nb] ? E[nb] : a + 511))" >"$(fl_nullb $nb)/badblocks" || fail "set badblocks on nullb$nb"
	done
done
log "C: members ${BAD[*]} fail their stripes 16..31 (volume chunks 64..127 on them)"
B=$((16 << 20))
fio --eta=never --direct=1 --ioengine=libaio --iodepth=8 --bs=64k --rw=write:192k --size=16M \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --filename="$DEV" --output-format=json \
	--output=/tmp/fio-two.json --name=m0 --offset=$B --name=m2 --offset=$((B + 2 * CH)) & FIO=$!
NFAIL=0
for c in 69 81 101 125 71 87 103 127; do	# chunks of member 1 (c % 4 == 1), then 3
	for op in read write; do
		if [ $op = read ]; then
			out=$(dd if="$DEV" of=/dev/null bs=$CH skip=$c count=1 iflag=direct 2>&1)
		else
			out=$(head -c $CH /dev/zero | dd of="$DEV" bs=$CH seek=$c count=1 oflag=direct 2>&1)
		fi && fail "C: $op of volume chunk $c (member $((c % 4)), bad range) succeeded"
		grep -qi 'Input/output error' <<<"$out" || fail "C: $op of chunk $c failed without EIO: $out"
		NFAIL=$((NFAIL + 1))
	done
done
# a write spanning all four members (chunks 96..99): EIO although two pieces land
head -c $((4 * CH)) /dev/urandom >/tmp/span.bin
out=$(dd if=/tmp/span.bin of="$DEV" bs=$((4 * CH)) seek=24 count=1 oflag=direct 2>&1) &&
	fail "C: a 256 KiB write over members 0-3 with members 1 and 3 failing succeeded (the error was lost)"
grep -qi 'Input/output error' <<<"$out" || fail "C: the spanning write failed without EIO: $out"
wait $FIO; rc=$?
FIO=
[ $rc = 0 ] && [ "$(jq '[.jobs[].error] | add' /tmp/fio-two.json)" = 0 ] ||
	{ cat /tmp/fio-two.json; fail "C: fio verify on members 0 and 2 during the fault: rc $rc"; }
# region R on members 0 and 2, chunks 0..95 (not touched since): intact
for c in 0 2 4 6 32 34 60 62 64 66 88 94; do
	cmp -s <(dd if=/tmp/r.bin bs=$CH skip=$c count=1 2>/dev/null) \
		<(dd if="$DEV" bs=$CH skip=$c count=1 iflag=direct 2>/dev/null) ||
		fail "C: chunk $c (member $((c % 4))) changed while members 1 and 3 failed"
done
fxctl -o json stats $V >/tmp/s1 || fail "stats"
read -r e0 e1 e2 e3 <<<"$(jq -rs 'map([.volume.members[] | .read.errors + .write.errors + .flush.errors + .discard.errors]) | [range(4) as $i | .[1][$i] - .[0][$i]] | map(tostring) | join(" ")' /tmp/s0 /tmp/s1)"
[ "$e0" = 0 ] && [ "$e2" = 0 ] || fail "C: errors counted on healthy members 0 ($e0) or 2 ($e2)"
[ "$e1" -ge 8 ] && [ "$e3" -ge 8 ] || fail "C: members 1 and 3 count $e1 and $e3 errors for at least 8 failed I/Os each"
fxctl -o json show $V >/tmp/show.json || fail "show"
ST=$(jq -r '[.volume.members[].state] | join(" ")' /tmp/show.json) VST=$(jq -r '.volume.state' /tmp/show.json)
[ "$ST" = "live failing live failing" ] || fail "C: member states '$ST', expected 'live failing live failing'"
[ "$VST" = failing ] || fail "C: the volume is '$VST' with two failing members"
fx_dmesg_clean_since two
fl_result "part=two-failing failed_ios=$NFAIL errors=$e0,$e1,$e2,$e3 states=$(tr ' ' , <<<"$ST") volume=$VST"
log "C: $NFAIL I/Os on members 1 and 3 and a spanning write failed with EIO; members 0, 2 intact; errors $e0/$e1/$e2/$e3"
trap - EXIT
cleanup
[ ${#BAD[@]} = 2 ] || fail "--break one: part C passed with member 3 healthy"
pass "$RESETS controller resets and $FLAPS flaps without an error; two failing members at once reported exactly"
