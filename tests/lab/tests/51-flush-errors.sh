#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1,6.12 members=4 size-mb=256 timeout=600 nullb-attr=cache_size=64 file=/usr/sbin/blkdiscard:/lab/bin/blkdiscard
# lab-allow: fxblk: [^ ]+: member 1 \(dm-[0-9]+\) (failed|is )|Buffer I/O error on dev fx[0-9]+|lost async page write|I/O error, dev fx[0-9]+
# Flush, FUA, discard and write-zeroes errors on one member, and a bio
# spanning all members that fails on one piece. Member 1 is a dm device
# over its NVMe-oF namespace: dm-linear while healthy, swapped (suspend, load,
# resume) for dm-flakey "0 1 1 error_writes" (always down: every bio that
# writes fails with EIO - plain and FUA writes, empty flushes, discards,
# write-zeroes; reads pass) while faulty. dm-flakey (drivers/md/dm-flakey.c,
# target 1.5.0; read in Debian's linux-source-6.12, and in torvalds/linux at
# 03b18887 from before error_reads, as on 6.1): error_writes and
# drop_writes exist on both (6.12 adds error_reads, random_*_corrupt);
# flakey_map() fails every bio with bio_data_dir() == WRITE, which covers
# empty flushes, FUA writes and discards; num_flush_bios = num_discard_bios
# = 1 and no num_write_zeroes_bios, so member 1's write-zeroes piece is
# refused (EOPNOTSUPP) and blkdev_issue_zeroout() falls back to writing
# zeroes, which fail with EIO. With member 1 faulty:
#  - fsync of data that lives on member 0 only (buffered write to chunk 0,
#    then fsync): the flush fails on member 1, fsync must return EIO;
#  - an O_DIRECT|O_SYNC (FUA) write to member 1's chunk fails; one to member
#    0's chunk lands there (reads back) but fails too: the block device's
#    sync flush after it fails on member 1;
#  - discard and write-zeroes over all members fail with EIO;
#  - a 256 KiB O_DIRECT write over chunks 8-11 (all members) fails with EIO
#    (its pieces on members 0, 2, 3 succeed: the caller must still see it);
#  - data written before the fault (fio crc32c over all members) verifies,
#    on every member: nothing was lost or overwritten by the failed I/O;
#  - fxctl stats counts errors on member 1 only (flush, write, discard).
# Then member 1 is healthy again: the same operations succeed, the volume
# verifies, and it is removed.
# --break nofault: member 1 stays healthy (dm-linear), so the first EIO
# expected does not come: the test must fail there (make check's control)
# lab-break: --break nofault ~ succeeded with member 1 failing every write \(the error was lost\)
. /lab/lib.sh
. /lab/faults.sh
BREAK=
[ "${1:-}" = --break ] && BREAK=$2
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
V=t51 F=fl51m1 CH=65536
fx_load
modprobe dm_flakey || fail "modprobe dm_flakey (in the lab image: tests/lab/mkbase.sh)"
cleanup() {
	dmsetup resume $F >/dev/null 2>&1
	fxctl remove $V >/dev/null 2>&1
	fl_dm_remove $F
}
trap cleanup EXIT
SZ=$(blockdev --getsz "${M[1]}") || fail "blockdev --getsz ${M[1]}"
LINEAR="0 $SZ linear ${M[1]} 0"
FLAKEY="0 $SZ flakey ${M[1]} 0 0 1 1 error_writes"
fl_dm $F "$LINEAR"
VM=("${M[@]}")
VM[1]=/dev/mapper/$F
fx_run fxctl create $V --chunk 64K "${VM[@]}"
DEV=$(fxdev $V) || fail "no /dev/fxN named $V"
expect_eq "$(cat /sys/block/${DEV#/dev/}/queue/write_cache)" "write back" "$DEV write cache (flushes reach fxblk)"
swap() {	# swap TABLE: member 1's dm table, live under the volume
	dmsetup suspend --noudevsync $F || fail "dmsetup suspend $F"
	dmsetup load --noudevsync $F --table "$1" || fail "dmsetup load $F '$1'"
	dmsetup resume --noudevsync $F || fail "dmsetup resume $F"
	log "member 1 ($F): $(dmsetup table $F)"
}
stats() { fxctl -o json stats $V >"$1" || fail "fxctl -o json stats $V"; }
errs() {	# errs I: member I's error counters since /tmp/s0, "flush write discard"
	local k out=
	for k in flush write discard; do
		out+="$(($(jv "volume.members.$1.$k.errors" /tmp/s1) - $(jv "volume.members.$1.$k.errors" /tmp/s0))) "
	done
	echo "${out% }"
}
# dsync_write FILE OFFSET LEN: FILE's first LEN bytes written to $DEV at
# OFFSET with O_DIRECT|O_SYNC, one write (REQ_FUA on a FUA device);
# xfs_io (busybox dd has no oflag=dsync) prints nothing on success (-q)
dsync_write() {
	local out
	out=$(xfs_io -d -s -c "pwrite -q -i $1 -b $3 $2 $3" "$DEV" 2>&1)
	[ -z "$out" ] || { echo "$out"; return 1; }
}
expect_eio() {	# expect_eio WHAT CMD...: CMD must fail with EIO
	local what=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ $rc != 0 ] || fail "$what: succeeded with member 1 failing every write (the error was lost)"
	grep -q 'Input/output error' <<<"$out" || fail "$what: failed, but not with EIO: $out"
	log "   ok: $what: EIO"
}

# data before the fault: crc32c-stamped blocks over every member
fio --eta=never --name=pre --filename="$DEV" --direct=1 --rw=write --bs=96k --size=16M --offset=4M \
	--ioengine=libaio --iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1 --output=/tmp/pre.out ||
	{ cat /tmp/pre.out; fail "fio before the fault"; }
head -c $((4 * CH)) /dev/urandom >/tmp/old
dd if=/tmp/old of="$DEV" bs=$CH seek=8 oflag=direct conv=notrunc status=none || fail "write chunks 8-11"
fx_run sync

fx_mark fault
[ "$BREAK" = nofault ] || swap "$FLAKEY"
stats /tmp/s0
# 1. fsync of data on member 0 only: the flush to member 1 fails
head -c $CH /dev/urandom >/tmp/c0
expect_eio "buffered write to chunk 0 (member 0) + fsync" \
	dd if=/tmp/c0 of="$DEV" bs=$CH count=1 conv=fsync,notrunc status=none
# 2. FUA writes: member 1's chunk fails, member 0's succeeds
expect_eio "O_DIRECT|O_SYNC write to chunk 1 (member 1)" dsync_write /tmp/c0 $CH $CH
# to member 0's chunk: its FUA write succeeds there, but an O_SYNC write to
# a block device is followed by a cache flush of the whole device
# (blkdev_write_iter() -> generic_write_sync() -> blkdev_fsync()), which
# fails on member 1: EIO as well, and the data is on member 0
head -c $CH /dev/urandom >/tmp/c4
expect_eio "O_DIRECT|O_SYNC write to chunk 4 (member 0; the sync flush fails on member 1)" \
	dsync_write /tmp/c4 $((4 * CH)) $CH
cmp -s /tmp/c4 <(dd if="$DEV" bs=$CH skip=4 count=1 iflag=direct status=none) ||
	fail "chunk 4 (member 0) does not read back what its FUA write there wrote"
# 3. discard and write-zeroes over all members
expect_eio "discard of chunks 12-15 (all members)" blkdiscard -o $((12 * CH)) -l $((4 * CH)) "$DEV"
expect_eio "write-zeroes of chunks 12-15 (all members)" blkdiscard -z -o $((12 * CH)) -l $((4 * CH)) "$DEV"
# 4. one bio over all members, failing on member 1's piece only
head -c $((4 * CH)) /dev/urandom >/tmp/new
expect_eio "256 KiB O_DIRECT write over chunks 8-11 (one bio, all members)" \
	dd if=/tmp/new of="$DEV" bs=$((4 * CH)) seek=2 count=1 oflag=direct conv=notrunc status=none
stats /tmp/s1
# member 1's piece of it was not written: its chunk (9) still holds the old data
cmp -s <(dd if=/tmp/old bs=$CH skip=1 count=1 status=none) <(dd if="$DEV" bs=$CH skip=9 count=1 iflag=direct status=none) ||
	fail "chunk 9 (member 1) changed although its write failed"
# the data from before the fault, on every member, reads back intact
fio --eta=never --name=pre --filename="$DEV" --direct=1 --rw=write --bs=96k --size=16M --offset=4M \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_only=1 --verify_fatal=1 --output=/tmp/pre.out ||
	{ cat /tmp/pre.out; fail "data written before the fault does not verify during it"; }
# errors counted on member 1 only, for each kind of operation
read -r fe we de <<<"$(errs 1)"
log "member 1 errors since the fault: flush $fe, write $we, discard/write-zeroes $de"
[ "$fe" -ge 1 ] || fail "member 1: no flush error counted (fsync failed there)"
[ "$we" -ge 2 ] || fail "member 1: $we write errors counted, expected >= 2 (the FUA write and the spanning write)"
[ "$de" -ge 1 ] || fail "member 1: no discard error counted"
for i in 0 2 3; do expect_eq "$(errs $i)" "0 0 0" "member $i error counters (flush write discard) during member 1's fault"; done
fx_dmesg_clean_since fault

# healthy again: the same operations succeed
swap "$LINEAR"
dd if=/tmp/c0 of="$DEV" bs=$CH count=1 conv=fsync,notrunc status=none || fail "fsync after member 1 recovered"
dsync_write /tmp/new $((8 * CH)) $((4 * CH)) || fail "spanning O_SYNC write after member 1 recovered"
cmp -s /tmp/new <(dd if="$DEV" bs=$((4 * CH)) skip=2 count=1 iflag=direct status=none) || fail "chunks 8-11 after recovery"
blkdiscard -o $((12 * CH)) -l $((4 * CH)) "$DEV" || fail "discard after member 1 recovered"
blkdiscard -z -o $((12 * CH)) -l $((4 * CH)) "$DEV" || fail "write-zeroes after member 1 recovered"
fio --eta=never --name=pre --filename="$DEV" --direct=1 --rw=write --bs=96k --size=16M --offset=4M \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_only=1 --verify_fatal=1 --output=/tmp/pre.out ||
	{ cat /tmp/pre.out; fail "data written before the fault does not verify after it"; }
fl_result "fsync_eio=1 fua_eio=1 discard_eio=1 zeroout_eio=1 span_eio=1 flush_errors=$fe write_errors=$we discard_errors=$de"
fx_run fxctl remove $V
trap - EXIT
cleanup
pass "flush, FUA, discard, write-zeroes and a spanning write failing on one member reach the caller as EIO; other data intact"
