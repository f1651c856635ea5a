#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=600 file=build/ctl/fxio-cp:/lab/bin/fxio-cp
# lab-break: break=nopeer ~ does not match /path=\(direct\) /
# libfxio against a real /dev/fxN (2 NVMe-oF members, 64 KiB chunks) with the
# host copy engine. Data both ways, checked against dd: libfxio writes, dd
# reads back; dd writes, libfxio reads; for a buffer never registered
# (posix), registered host memory (posix without /dev/fxblk-peer, direct
# with it) and emulated device memory (staged), over ranges that are
# aligned, unaligned at both ends, cross chunks and members, and exceed the
# bounce pool (2 slots of 256 KiB here). Registered host memory must take
# the direct path (FXBLK_PEER_IOC_RW) for the block-aligned range and the
# staged one for the others; the same again as a batch of 4 entries
# (FXIO_CP_BATCH). /dev/fxN stays open in this shell throughout,
# as a long-running reader (udev, an application) keeps it, so its page
# cache lives across the commands (the last close would drop it): dd reads
# back through that cache with no flush, which holds only because RW keeps
# the cache coherent as O_DIRECT does. Arg break=nopeer hides
# /dev/fxblk-peer from libfxio after it was seen (bind-mounted /dev/null):
# the direct path must then be missed and the test fail. Whether the staged
# path overlapped a read with a copy here depends on how the VM's threads
# were scheduled on the host, so it is logged, not
# asserted: the unit tests "staged read/write ... overlap" (test_fxio.cpp)
# assert the overlap with a copy engine whose copies take 0.1-2 ms, longer
# than a read of their in-memory disk. Then fxctl peer status says why
# direct is (not) available, and fxctl peer bench runs posix and staged.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
command -v fxio-cp >/dev/null || fail "fxio-cp not in the VM (build/ctl/fxio-cp)"
export FXIO_POOL_SLOTS=2 FXIO_SLOT_KIB=256
fx_load
cleanup() { fxctl remove t41 >/dev/null 2>&1; }
trap cleanup EXIT
fx_run fxctl create t41 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t41) || fail "no /dev/fxN for t41"
PEER=0
[ -c /dev/fxblk-peer ] && PEER=1
if [ "${1:-}" = break=nopeer ]; then
	mount --bind /dev/null /dev/fxblk-peer || fail "break=nopeer: bind mount"
	log "break=nopeer: /dev/fxblk-peer is /dev/null now; direct must be missed"
fi
# held open to the end (closed before the volume is removed)
exec 7<"$DEV"
cleanup() { exec 7<&-; fxctl remove t41 >/dev/null 2>&1; }

# expected path of MODE for a range (ALIGNED: 1 if buffer, offset and
# length are block aligned)
want_path() {
	case $1 in
	unreg) echo posix ;;
	host)
		if [ $PEER = 0 ]; then echo posix
		elif [ "$2" = 1 ]; then echo direct
		else echo staged
		fi ;;
	emulated) echo staged ;;
	esac
}

# dd_write OFF LEN FILE / dd_read OFF LEN FILE: the independent path
dd_write() { dd if="$3" of="$DEV" bs=1M iflag=count_bytes oflag=seek_bytes seek="$1" count="$2" conv=notrunc,fsync status=none; }
dd_read() { dd if="$DEV" of="$3" bs=1M iflag=skip_bytes,count_bytes skip="$1" count="$2" status=none; }

overlap_seen=0
# both_ways MODE OFF LEN BUF_OFF: libfxio writes and dd reads back, dd
# writes and libfxio reads, each on the path MODE must take there
both_ways() {
	local mode=$1 off=$2 len=$3 boff=$4 al=0 how=${FXIO_CP_BATCH:+" (batch of $FXIO_CP_BATCH)"}
	[ $((off % 4096)) = 0 ] && [ $((len % 4096)) = 0 ] && [ $((boff % 4096)) = 0 ] && al=1
	head -c "$len" /dev/urandom > /tmp/in
	fx_run fxio-cp write "$mode" "$DEV" "$off" "$len" /tmp/in "$boff"
	expect_match "$FX_OUT" "path=($(want_path "$mode" $al)) " "write $mode $off+$len path$how"
	dd_read "$off" "$len" /tmp/back
	cmp /tmp/in /tmp/back || fail "$mode: dd does not read back what libfxio wrote at $off+$len$how"
	head -c "$len" /dev/urandom > /tmp/in
	dd_write "$off" "$len" /tmp/in
	fx_run fxio-cp read "$mode" "$DEV" "$off" "$len" /tmp/out "$boff"
	expect_match "$FX_OUT" "path=($(want_path "$mode" $al)) " "read $mode $off+$len path$how"
	cmp /tmp/in /tmp/out || fail "$mode: libfxio does not read what dd wrote at $off+$len$how"
}
# off len buf_off: aligned; inside one block; crossing a chunk and a member;
# crossing many chunks, larger than the pool, unaligned at both ends
for r in "0 1048576 0" "100 300 7" "65436 200000 1" "123457 1300001 4095"; do
	read -r off len boff <<<"$r"
	for mode in unreg host emulated; do
		both_ways "$mode" "$off" "$len" "$boff"
		if [ "$mode" = emulated ] && [[ $FX_OUT =~ overlapped=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
			overlap_seen=1
		fi
	done
	log "range $off+$len (buffer +$boff): posix, host, staged both ways OK"
done
log "staged path overlapped a disk I/O with a copy in this run: $([ $overlap_seen = 1 ] && echo yes || echo no)"
# The same through one fxio batch: fxio-cp splits the range into 4 entries
# at 4 KiB boundaries of the disk, all in flight at once, each on the path
# (registered host memory: direct for the aligned range, with the control
# node), every entry done, the data checked against dd.
for r in "0 1048576 0" "123457 1300001 4095"; do
	read -r off len boff <<<"$r"
	for mode in unreg host emulated; do
		FXIO_CP_BATCH=4 both_ways "$mode" "$off" "$len" "$boff"
	done
	log "range $off+$len (buffer +$boff) as a batch of 4: posix, host, staged both ways OK"
done

fx_json fxctl -o json peer status
if [ $PEER = 1 ]; then
	expect_eq "$(jqr .control_node.usable)" true "peer status: control node usable"
	log "peer status: host memory path $(jqr '.paths[0].path')"
else
	expect_eq "$(jqr .control_node.usable)" false "peer status: control node"
	expect_match "$(jqr .control_node.reason)" "absent" "peer status: why not"
	expect_eq "$(jqr '.paths[0].path')" posix "peer status: host memory path"
	skip "direct path: /dev/fxblk-peer absent in this module build"
fi
# the volume's P2PDMA verdict, from the module: NVMe-oF members take no
# P2PDMA pages, and Debian's kernels up to 6.12 have no CONFIG_PCI_P2PDMA
# (7.2 and 7.3 have it: there the members are named, both of them)
expect_eq "$(jqr '.volumes[] | select(.name == "t41") | .p2pdma')" false "peer status: t41 PCI P2PDMA"
expect_match "$(jqr '.volumes[] | select(.name == "t41") | .p2pdma_reason')" \
	'^(the kernel has no PCI P2PDMA|members [^ ]+, [^ ]+ .*do not support PCI P2PDMA)' "peer status: t41 why not P2PDMA"
fxctl peer status

fx_json fxctl -o json peer bench t41 --size 8M --block 1M --depth 2
expect_eq "$(jqr '.results[0].ran')" true "bench posix ran"
expect_eq "$(jqr '.results[1].ran')" true "bench staged ran"
expect_eq "$(jqr '.results[1].bytes')" 8388608 "bench staged bytes"
# Overlap is asserted on the long ranges above; here two workers share the
# 2-slot pool, so a pipeline often waits for a slot until its copy is done.
log "bench: staged overlapped slots $(jqr '.results[1].overlapped_slots')"
fx_run fxctl peer bench t41 --size 8M --block 1M --depth 2
# gdsio's other modes: random reads from 4 threads (each its own handle);
# a write mode refuses a block device without --yes, and writes with it
fx_json fxctl -o json peer bench t41 --rw randread --threads 4 --size 8M --block 1M --depth 2 \
	--paths posix,staged
expect_eq "$(jqr '[.results[] | "\(.path):\(.bytes):\(.ios)"] | join(" ")')" \
	"posix:8388608:8 staged:8388608:8" "bench randread x4 threads: bytes and I/Os per path"
expect_match "$(jqr '.results[1].latency_us.p99')" '^[0-9.]+$' "bench randread: p99 latency"
fx_expect_fail --msg "overwrites the first 8 MiB of /dev/fx[0-9]+, whose data is then lost; add --yes" \
	fxctl peer bench t41 --rw write --size 8M --block 1M
fx_run fxctl peer bench t41 --rw write --yes --size 8M --block 1M --threads 2 --paths posix,staged
expect_match "$FX_OUT" "sequential writes of 1 MiB at depth 4 x 2 threads" "bench write with --yes"
exec 7<&-
pass "libfxio data both ways on posix and staged paths, peer status and bench"
