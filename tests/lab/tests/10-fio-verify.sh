#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.12 members=4 timeout=1200
# fio verify (crc32c, verify_fatal) through /dev/fxN: random and sequential
# writes, 512 B..4 MiB blocks incl. chunk-crossing sizes, QD 1..64, libaio and
# io_uring, near the end of the volume too. Sizes are capped so the whole test
# stays well under a minute of TCG time at ~100 MiB/s (Soft-RoCE).
# Proves the checker can fail: a sector corrupted behind fxblk's back (written
# to a member directly) must make a verify-only pass fail with a verify error
# (any other fio failure does not count). io_uring runs are required: only a
# kernel with io_uring switched off (sysctl) turns them into libaio, with SKIP.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
fx_load
trap 'fxctl remove t10 >/dev/null 2>&1' EXIT

# fio_verify LABEL FIO-ARGS... : write then read back and check every block
fio_verify() {
	local label=$1 t0 rc; shift
	t0=$(cut -d" " -f1 /proc/uptime)
	fio --name="$label" --filename="$DEV" --direct=1 --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --output=/tmp/fio.out --eta=never \
		--output-format=normal "$@"
	rc=$?
	if [ $rc -ne 0 ] || grep -qiE 'verify: bad|crc32c: verify failed|err= *[1-9]' /tmp/fio.out; then
		cat /tmp/fio.out
		fail "fio verify '$label' on $DEV (chunk $CHUNK): rc=$rc"
	fi
	printf '   ok %-28s %6.1fs  %s\n' "$label" \
		"$(awk -v a="$t0" '{print $1 - a}' /proc/uptime)" "$*"
}

# io_uring: Debian enables it on every lab kernel. Only a sysctl that switches
# it off makes its runs use libaio (with SKIP); fio failing to use it
# otherwise is a failure, not a silent fallback.
URING=1
if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" != 0 ]; then
	URING=0; skip "io_uring runs use libaio: /proc/sys/kernel/io_uring_disabled=$(cat /proc/sys/kernel/io_uring_disabled)"
elif ! fio --eta=never --name=probe --ioengine=io_uring --filename=/dev/null --rw=write \
		--bs=4k --size=4k >/tmp/probe.out 2>&1; then
	cat /tmp/probe.out
	fail "fio cannot use io_uring on $(uname -r), which has it enabled"
fi
uring() { [ $URING = 1 ] && echo io_uring || echo libaio; }

# Volume 1: 64 KiB chunk, so a 4-member stripe is 256 KiB and crossing is common.
CHUNK=64K
fxctl create t10 --chunk $CHUNK "${M[@]:0:4}" || fail "fxctl create t10"
DEV=$(fxdev t10) || fail "no /dev/fxN with sysfs name t10"
CAP=$(blockdev --getsize64 "$DEV") || fail "blockdev $DEV"
log "$DEV chunk $CHUNK capacity $CAP bytes"
fio_verify rand-512-qd1      --rw=randwrite --bs=512 --iodepth=1 --ioengine=libaio --size=1M
fio_verify rand-512..256k-qd16 --rw=randwrite --bsrange=512-256k --iodepth=16 --ioengine=libaio --size=16M --offset=3M
fio_verify rand-4k-qd64      --rw=randwrite --bs=4k --iodepth=64 --ioengine="$(uring)" --size=4M --offset=64M
fio_verify seq-96k-qd64      --rw=write --bs=96k --iodepth=64 --ioengine=libaio --size=24M --offset=100M
fio_verify seq-4m-qd4        --rw=write --bs=4M --iodepth=4 --ioengine="$(uring)" --size=32M --offset=130M
fio_verify seq-33k5-qd8-odd  --rw=write --bs=33280 --iodepth=8 --ioengine=libaio --size=8M --offset=$((200 * 1048576 + 512))
fio_verify rand-8k..1m-qd32  --rw=randwrite --bsrange=8k-1M --iodepth=32 --ioengine="$(uring)" --size=16M --offset=300M
# the last stripes of the volume: mapping at the top end, no I/O past it
fio_verify tail-128k-qd8     --rw=write --bs=128k --iodepth=8 --ioengine=libaio --size=8M --offset=$((CAP - 8 * 1048576))
# reading at the end must give EOF, not data from past the last stripe
n=$(dd if="$DEV" bs=512 skip=$((CAP / 512)) count=8 2>/dev/null | wc -c)
[ "$n" = 0 ] || fail "read past the end of $DEV returned $n bytes"

# The verifier must be able to fail: corrupt 4 KiB of volume chunk 1 (member 1,
# first chunk after its data offset) directly on the member, verify-only again.
fio --eta=never --name=neg --filename="$DEV" --direct=1 --verify=crc32c --rw=write --bs=64k \
	--size=1M --ioengine=libaio --iodepth=4 --output=/tmp/neg.out || fail "neg write"
OFF=$(fxctl -o json show t10 | jq -r '.volume.members[1].data_offset_bytes')
[[ $OFF =~ ^[0-9]+$ ]] || fail "fxctl -o json show t10 has no data_offset_bytes"
dd if=/dev/urandom of="${M[1]}" bs=4096 count=1 seek=$((OFF / 4096)) oflag=direct conv=notrunc 2>/dev/null ||
	fail "corrupting ${M[1]} at $OFF"
if fio --eta=never --name=neg --filename="$DEV" --direct=1 --verify=crc32c --rw=write --bs=64k \
	--size=1M --ioengine=libaio --verify_only=1 --output=/tmp/neg.out >/tmp/neg.err 2>&1; then
	cat /tmp/neg.out /tmp/neg.err
	fail "verify-only did not notice a corrupted block on ${M[1]} (at $OFF): checker is blind"
fi
# it must have failed BECAUSE of the corruption: a verify error at volume
# offset 65536 (the corrupted 4 KiB are the start of the second 64 KiB block)
VERR=$(grep -hE 'verify: bad magic header|verify failed|bad header' /tmp/neg.out /tmp/neg.err)
if ! grep -qE 'offset 65536' <<< "$VERR"; then
	cat /tmp/neg.out /tmp/neg.err
	fail "verify-only failed, but not with a verify error at offset 65536 (the corrupted block): checker not proven"
fi
log "corruption behind fxblk's back detected by fio verify: $(head -n1 <<< "$VERR")"
fxctl remove t10 || fail "fxctl remove t10"

# Volume 2: default chunk (512 KiB); large I/O and 4 MiB blocks spanning 2 stripes.
CHUNK=512K
fxctl create t10 "${M[@]:0:4}" || fail "fxctl create t10 (default chunk)"
DEV=$(fxdev t10) || fail "no /dev/fxN with sysfs name t10"
log "$DEV chunk $CHUNK (default)"
fio_verify seq-4m-qd16       --rw=write --bs=4M --iodepth=16 --ioengine=libaio --size=48M
fio_verify rand-1m-qd8       --rw=randwrite --bs=1M --iodepth=8 --ioengine="$(uring)" --size=16M --offset=64M
fio_verify rand-512..4m-qd4  --rw=randwrite --bsrange=512-4M --iodepth=4 --ioengine=libaio --size=24M --offset=96M
fio_verify rand-4k-qd1-uring --rw=randwrite --bs=4k --iodepth=1 --ioengine="$(uring)" --size=1M --offset=200M
fxctl remove t10 || fail "fxctl remove t10"
trap - EXIT
pass "fio verify"
