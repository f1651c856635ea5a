#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1 members=4 timeout=600 file=/usr/bin/split:/lab/bin/split
# lab-allow: I/O error|critical medium error|Buffer I/O error|nvme[0-9]+(c[0-9]+)?n[0-9]+: I/O Cmd|fxblk.*(error|failing)
# Flaky member: null_blk badblocks on the target side of member 1 (a range of
# its chunks) while fio verifies data on the other members. The range is set
# in pieces of at most 512 sectors, in ascending order: Debian's 6.1 stores a
# longer range as several entries in the wrong order and then fails no I/O.
#  - reads and writes of /dev/fxN that touch the bad range fail with EIO, a
#    read of a good chunk of the same member still works;
#  - fxctl stats counts the errors on member 1 only;
#  - the other members' data is intact: fio verify (crc32c) running during
#    the fault over the chunks of members 0, 2, 3 only (rw=write:192k with
#    64 KiB blocks steps over member 1's chunks), and sha256 of every 64 KiB
#    chunk written before the fault compared afterwards;
#  - member health (module with FXBLK_FEAT_HEALTH): member 1 failing, the
#    others live, a change uevent and (with a listener) a MEMBER_ERROR event.
. /lab/lib.sh
. /lab/faults.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
BAD=1
CH=65536
NA=128			# region A: volume chunks 0..127 (8 MiB), checksummed
BLO=64 BHI=127		# member 1's chunks among volume chunks 64..127 go bad
fx_load
NB=$(fl_nullb $BAD)
[ -e "$NB/badblocks" ] || fail "null_blk on $FX_KVER has no configfs badblocks attribute"
cleanup() {
	fl_events_stop
	kill "${FIO:-}" 2>/dev/null
	# only the ranges set, as set (on 7.2/7.3 clearing 0..2^40 spins in
	# badblocks_clear() with interrupts off: RCU stall, the VM hangs)
	local a
	for ((a = ${S:-1}; a <= ${E:-0}; a += 512)); do
		echo "-$a-$((a + 511 > E ? E : a + 511))" > "$NB/badblocks" 2>/dev/null
	done
	fxctl remove t21 >/dev/null 2>&1
}
trap cleanup EXIT
fl_hung_task 20
fx_run fxctl create t21 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t21) || fail "no /dev/fxN named t21"
OFF=$(fxctl -o json show t21 | jq -r ".volume.members[$BAD].data_offset_bytes")
[[ $OFF =~ ^[0-9]+$ ]] || fail "no data_offset_bytes for member $BAD"

# region A: random data, a checksum per chunk
# chunksums FILE: "chunk sha256" for every 64 KiB chunk of FILE
chunksums() {
	rm -rf /tmp/cs; mkdir /tmp/cs
	split -b $CH -a 3 "$1" /tmp/cs/c || fail "split $1"
	sha256sum /tmp/cs/c* | awk '{print NR - 1, substr($1, 1, 16)}'
}
head -c $((NA * CH)) /dev/urandom >/tmp/a.bin
dd if=/tmp/a.bin of="$DEV" bs=1M oflag=direct conv=fsync 2>/dev/null || fail "writing region A"
chunksums /tmp/a.bin >/tmp/sumA
fxctl -o json stats t21 >/tmp/s0 || fail "stats"

# the fault: member 1's stripes BLO/4..BHI/4 (its own chunk index) go bad
S=$((OFF / 512 + BLO / 4 * CH / 512))
E=$((OFF / 512 + (BHI / 4 + 1) * CH / 512 - 1))
fl_events_start
fx_mark fault
for ((a = S; a <= E; a += 512)); do
	b=$((a + 511 > E ? E : a + 511))
	echo "+$a-$b" >"$NB/badblocks" || fail "set badblocks +$a-$b on $NB"
done
[ "$(awk '{n += $2} END {print n}' "$NB/badblocks")" = $((E + 1 - S)) ] ||
	{ cat "$NB/badblocks"; fail "null_blk did not record the bad range $S-$E"; }
log "badblocks $S-$E on nullb$BAD (member $BAD ${M[$BAD]}): volume chunks $BLO..$BHI of member $BAD"

# fio verify meanwhile on members 0, 2, 3 only (region B: 16..48 MiB)
B=$((16 << 20))
fio --eta=never --direct=1 --ioengine=libaio --iodepth=8 --bs=64k --rw=write:192k --size=32M \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --filename="$DEV" --output-format=json \
	--output=/tmp/fio.json --name=m0 --offset=$B --name=m2 --offset=$((B + 2 * CH)) \
	--name=m3 --offset=$((B + 3 * CH)) & FIO=$!

# I/O touching the bad range: every one must fail, with EIO
NFAIL=0 NTRY=0
for c in $(seq $BLO 4 $BHI | sed -n '2p;5p;9p;13p'); do
	c=$((c + BAD))			# volume chunk on member 1
	for op in read write; do
		NTRY=$((NTRY + 1))
		if [ $op = read ]; then
			out=$(dd if="$DEV" of=/dev/null bs=$CH skip=$c count=1 iflag=direct 2>&1)
		else
			out=$(head -c $CH /dev/zero | dd of="$DEV" bs=$CH seek=$c count=1 oflag=direct 2>&1)
		fi && fail "$op of volume chunk $c (member $BAD, bad range) succeeded"
		grep -qi 'Input/output error' <<<"$out" || fail "$op of chunk $c failed without EIO: $out"
		NFAIL=$((NFAIL + 1))
	done
done
# the same member outside the bad range still works
dd if="$DEV" of=/dev/null bs=$CH skip=$((4 + BAD)) count=1 iflag=direct 2>/dev/null ||
	fail "read of a good chunk of member $BAD failed"
log "$NFAIL of $NTRY I/Os into the bad range failed with EIO; good chunks of member $BAD still readable"
wait $FIO; rc=$?
FIO=
[ $rc = 0 ] && [ "$(jq '[.jobs[].error] | add' /tmp/fio.json)" = 0 ] ||
	{ cat /tmp/fio.json; fail "fio verify on members 0, 2, 3 during the fault: rc $rc"; }
VIOS=$(jq '[.jobs[] | .read.total_ios] | add' /tmp/fio.json)
WIOS=$(jq '[.jobs[] | .write.total_ios] | add' /tmp/fio.json)
log "fio verify on members 0, 2, 3 during the fault: $WIOS writes, $VIOS verified reads, no error"

# region A: chunks outside the bad range unchanged, bad ones unreadable
# (dd conv=noerror,sync: a chunk that cannot be read becomes zeroes, and
# one error line each)
dd if="$DEV" of=/tmp/a2.bin bs=$CH count=$NA iflag=direct conv=noerror,sync 2>/tmp/a2.err
UNREAD=$(grep -c 'Input/output error' /tmp/a2.err)
# at once: a member is "failing" for 30 s after its last error, then live
fxctl -o json show t21 >/tmp/show.json || fail "show"
chunksums /tmp/a2.bin >/tmp/sumA2
log "region A read back: $UNREAD chunks unreadable"
CORRUPT=0 NBAD=0
while read -r c sum now; do
	if [ $((c % 4)) = $BAD ] && [ "$c" -ge $BLO ] && [ "$c" -le $BHI ]; then
		NBAD=$((NBAD + 1))
		continue
	fi
	[ "$now" = "$sum" ] || { CORRUPT=$((CORRUPT + 1)); echo "   chunk $c (member $((c % 4))): $sum -> $now"; }
done < <(awk 'NR == FNR {a[$1] = $2; next} {print $1, a[$1], $2}' /tmp/sumA /tmp/sumA2)
[ "$UNREAD" = "$NBAD" ] || { cat /tmp/a2.err; fail "reading region A: $UNREAD chunks failed, expected exactly the $NBAD in the bad range"; }
NTRY=$((NTRY + UNREAD)) NFAIL=$((NFAIL + UNREAD))

fxctl -o json stats t21 >/tmp/s1 || fail "stats"
ERRS=()
for i in 0 1 2 3; do
	e=0
	for op in read write flush discard; do
		e=$((e + $(jv volume.members.$i.$op.errors /tmp/s1) - $(jv volume.members.$i.$op.errors /tmp/s0)))
	done
	ERRS[i]=$e
	echo "   member $i ${M[$i]}: $e errors counted"
done
fl_result "ios_verified=$VIOS ios_written=$WIOS faults_injected=$NTRY eio_seen=$NFAIL" \
	"errors_member$BAD=${ERRS[$BAD]} errors_others=$((ERRS[0] + ERRS[2] + ERRS[3])) corruptions=$CORRUPT"
[ "$CORRUPT" = 0 ] || fail "$CORRUPT chunks outside the bad range changed"
[ "${ERRS[$BAD]}" -ge "$NFAIL" ] || fail "member $BAD: ${ERRS[$BAD]} errors counted for $NFAIL failed I/Os"
for i in 0 2 3; do [ "${ERRS[$i]}" = 0 ] || fail "member $i: ${ERRS[$i]} errors counted, but only member $BAD is flaky"; done

# member health: states, uevent, event (FXBLK_FEAT_HEALTH ships: asserted)
fxctl -o json version | jq -e '.module.features | index("health")' >/dev/null ||
	fail "module does not report the health feature (fxctl version): member states are shipped"
st=$(jq -r ".volume.members | map(.state | tostring) | join(\" \")" /tmp/show.json)
vs=$(jq -r '.volume.state | tostring' /tmp/show.json)
log "member states: $st; volume state: $vs"
expect_eq "$(jq -r ".volume.members[$BAD].state | tostring" /tmp/show.json)" failing "member $BAD state ($st)"
for i in 0 2 3; do
	expect_eq "$(jq -r ".volume.members[$i].state | tostring" /tmp/show.json)" live "member $i state ($st)"
done
expect_eq "$vs" failing "volume state"
fl_wait 5 grep -q "FXBLK_MEMBER_STATE" /tmp/fl-uevents ||
	{ cat /tmp/fl-uevents; fail "no change uevent with FXBLK_MEMBER_STATE on ${DEV#/dev/}"; }
grep -A12 '^KERNEL.*change' /tmp/fl-uevents | grep -E 'FXBLK_MEMBER(_STATE)?=' | sort -u | sed 's/^/   uevent: /'
grep -q "FXBLK_MEMBER=$BAD" /tmp/fl-uevents || fail "the change uevent does not name member $BAD"
[ -n "$FL_NL_LISTENER" ] || fail "no netlink event listener (fxctl monitor): fxctl ships one"
fl_wait 5 grep -qi 'member_error\|MEMBER_ERROR' /tmp/fl-nlevents ||
	{ cat /tmp/fl-nlevents; fail "no MEMBER_ERROR event seen by $FL_NL_LISTENER"; }
fl_events_stop
fx_run fxctl remove t21
trap - EXIT
cleanup
pass "EIO on the bad range only ($NFAIL I/Os), errors on member $BAD only, no corruption ($VIOS reads verified, $NA chunks checked)"
