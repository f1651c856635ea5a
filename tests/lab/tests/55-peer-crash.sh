#!/bin/bash
# lab: kernels=6.1,6.12,7.3 quick=6.12 members=4 size-mb=64 persist boots=2 timeout=600 file=build/ctl/fxio-cp:/lab/bin/fxio-cp
# lab-break: break=nofua ~ acknowledged FUA peer writes lost or changed by the crash
# lab-break: break=nofsync ~ acknowledged fsync'd peer writes lost or changed by the crash
# Durability of peer writes over fxblk's own NVMe-oF queues (issue 20): a
# write that FXBLK_PEER_IOC_RW moved over the peer queues survives a crash
# of the VM when it carried FXBLK_PEER_RW_FUA, or when an fsync of /dev/fxN
# followed it - the crash test's method (26): members are loop devices over
# files on the lab's persistent disk behind the nvmet-rdma target, so the
# guest's page cache of those files is the members' volatile write cache;
# periodic writeback is off, only what the stack flushed (loop: a flush or
# a FUA write runs vfs_fsync) survives the reset.
#
# Boot 1 (fxblk peer_queues=1, volume over 4 NVMe-oF/RDMA members, 64 KiB
# chunks), each write a synchronous peer RW of registered host memory
# (peer-test rwfile), not chunk-aligned, crossing members:
#   B: 4 plain writes, then one fsync of /dev/fxN. Each member's peer queue
#      counts the writes' bytes (they went over the peer queues, not the
#      block path) and is "unflushed" until the fsync, which sends an NVMe
#      Flush on every association (flushes +1 each, unflushed 0 after): a
#      Flush covers only what its own controller completed;
#   L: 2 writes through libfxio (fxio-cp host: registered host memory,
#      fxio_last_path direct), each ended by fxio_sync (fdatasync of fxN):
#      flushes +1 on the members they touched;
#   A: 4 FUA writes, no fsync: the peer queues count FUA writes, no member
#      becomes unflushed;
#   C: 4 plain writes, no fsync, nothing after them (unacknowledged);
# then the VM is reset (fx_crash). A manifest (place, length, sha256) is
# kept on the persistent disk's own file system.
# Boot 2: the volume re-created over the same members (same chunk, data
# offset, order), every A and B range read back through the block path
# must equal what was written; C must not all have survived (else the crash
# kept unflushed data and the run could not have seen a loss). Prints
#   RESULT test=peer-crash acked=10 verified=10 lost=0 unacked_survived=N/4
# break=nofua: A without FUA; break=nofsync: B without the fsync, L without
# fxio_sync (FXIO_CP_NOSYNC=1) - each must fail boot 2 (make check's
# controls).
. /lab/lib.sh
fx_crash_setup
[ "$FX_BOOTS" = 2 ] || fail "needs --boots 2 (FX_BOOTS='$FX_BOOTS')"
fx_breaks nofua nofsync -- "$@"
PT=/lab/modules/peer-test
[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
DBG=/sys/kernel/debug/fxblk/peerq
VOL=t55 CHUNK=64K DOFF=4M
MiB=1048576
MAN=$P/manifest
grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"

create_volume() {	# [--force]: in boot 2, over the members labelled in boot 1
	fx_run fxctl create "$@" $VOL --chunk $CHUNK --data-offset $DOFF "${M[@]}"
	DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
	NAME=${DEV#/dev/}
}
# sum of FIELD=N over the volume's members (or member $2 only)
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
# sha256 of LEN bytes of FILE at OFF (O_DIRECT with direct)
read_sum() {
	local h
	h=$(dd if="$1" bs=512 skip=$(($2 / 512)) count=$(($3 / 512)) ${4:+iflag=direct} status=none |
		busybox sha256sum) || return 1
	echo "${h%% *}"
}

# pwrite_peer CLASS I OFF LEN MEM: peer write I of class CLASS (A, B, C) of LEN
# random bytes at OFF; acknowledged ones (A, B) go to the manifest once
# their RW (and, for the last B, the fsync) returned
pwrite_peer() {
	local f=/tmp/w.$1$2 sum w0
	head -c "$4" /dev/urandom > $f
	sum=$(busybox sha256sum < $f) sum=${sum%% *}
	w0=$(peer_sum write_bytes)
	fx_run $PT rwfile write "$DEV" 512 "$3" "$4" $f "$5"
	[ $(($(peer_sum write_bytes) - w0)) = "$4" ] ||
		fail "peer write $1$2: the peer queues moved $(($(peer_sum write_bytes) - w0)) bytes, not $4 (the block path took it?)"
	echo "$1 $2 $3 $4 $sum" >> "$MAN.pending"
}
commit() {	# the pending entries are acknowledged: into the manifest, durably
	cat "$MAN.pending" >> "$MAN" && rm -f "$MAN.pending" && sync "$MAN" ||
		fail "manifest on the persistent disk"
}

boot1() {
	[ ! -e "$MAN" ] || fail "boot 1 on a used persistent disk ($MAN exists)"
	modprobe fxblk peer_queues=1 || fail "modprobe fxblk peer_queues=1"
	[ -r $DBG ] || fail "no $DBG"
	create_volume
	local size i f0 fl0 fl1 fu
	size=$(blockdev --getsize64 "$DEV") || fail "blockdev --getsize64 $DEV"
	[ "$size" -ge $((96 * MiB)) ] || fail "$DEV has $size bytes, too small"
	# the associations open on the first peer RW; a read opens them
	head -c 65536 /dev/zero > /tmp/z
	fx_run $PT rwfile read "$DEV" 0 0 65536 /tmp/z host
	expect_eq "$(grep -c "^$NAME member=[0-3] .* state=live " $DBG)" 4 "live peer queues"
	: > "$MAN.pending"

	# B: plain writes, then fsync (each crosses chunks and members)
	f0=$(peer_sum flushes)
	for i in 1 2 3; do
		pwrite_peer B $i $((8 * MiB + i * 400 * 1024 + 3584)) $((200 * 1024 + i * 512)) host
	done
	for i in 0 1 2 3; do
		expect_eq "$(peer_sum unflushed $i)" 1 "member $i unflushed after plain peer writes"
	done
	expect_eq "$(peer_sum flushes)" "$f0" "no peer Flush before the fsync"
	if [ "$BREAK" = nofsync ]; then
		pwrite_peer B 4 $((12 * MiB + 1536)) $((300 * 1024)) host
		log "break=nofsync: the B writes acknowledged without an fsync"
	else
		pwrite_peer B 4 $((12 * MiB + 1536)) $((300 * 1024)) host+fsync
		for i in 0 1 2 3; do
			expect_eq "$(peer_sum unflushed $i)" 0 "member $i unflushed after the fsync"
			[ "$(peer_sum flushes $i)" -ge 1 ] || fail "member $i: no Flush on its peer queue after the fsync"
		done
		log "fsync: a Flush on each of the 4 peer queues ($(($(peer_sum flushes) - f0)) in all)"
	fi
	commit

	# L: through libfxio, direct, each ended by fxio_sync
	local out fl
	for i in 1 2; do
		local f=/tmp/w.L$i off=$((20 * MiB + i * 700 * 1024 + 4096)) len=$((260 * 1024)) sum w0
		head -c $len /dev/urandom > $f
		sum=$(busybox sha256sum < $f) sum=${sum%% *}
		w0=$(peer_sum write_bytes) fl=$(peer_sum flushes)
		if [ "$BREAK" = nofsync ]; then
			out=$(FXIO_CP_NOSYNC=1 /lab/bin/fxio-cp write host "$DEV" $off $len $f) || fail "fxio-cp write L$i"
		else
			out=$(/lab/bin/fxio-cp write host "$DEV" $off $len $f) || fail "fxio-cp write L$i"
		fi
		expect_match "$out" '^path=direct ' "libfxio write L$i"
		expect_eq $(($(peer_sum write_bytes) - w0)) $len "bytes the peer queues moved for L$i"
		if [ "$BREAK" != nofsync ]; then
			[ "$(peer_sum flushes)" -gt "$fl" ] || fail "fxio_sync after L$i sent no Flush on the peer queues"
			expect_eq "$(peer_sum unflushed)" 0 "members unflushed after fxio_sync"
		fi
		echo "L $i $off $len $sum" >> "$MAN.pending"
	done
	commit

	# A: FUA writes, no fsync
	fl0=$(peer_sum flushes) fu=$(peer_sum fua_writes)
	for i in 1 2 3 4; do
		if [ "$BREAK" = nofua ]; then
			pwrite_peer A $i $((32 * MiB + i * MiB + 2560)) $((130 * 1024 + i * 4096)) host
		else
			pwrite_peer A $i $((32 * MiB + i * MiB + 2560)) $((130 * 1024 + i * 4096)) host+fua
		fi
	done
	commit
	fl1=$(peer_sum flushes)
	expect_eq "$fl1" "$fl0" "no peer Flush during the FUA writes"
	if [ "$BREAK" = nofua ]; then
		log "break=nofua: the A writes acknowledged without FUA"
	else
		[ $(($(peer_sum fua_writes) - fu)) -ge 12 ] ||
			fail "the peer queues counted $(($(peer_sum fua_writes) - fu)) FUA writes for 4 writes across 4 members (>= 12 expected)"
		# (break=nofsync left B unflushed)
		[ "$BREAK" = nofsync ] || for i in 0 1 2 3; do
			expect_eq "$(peer_sum unflushed $i)" 0 "member $i unflushed after FUA writes only"
		done
	fi

	# C: unacknowledged, last
	for i in 1 2 3 4; do
		pwrite_peer C $i $((64 * MiB + i * MiB + 1024)) $((190 * 1024)) host
	done
	mv "$MAN.pending" "$MAN.unacked" && sync "$MAN.unacked" || fail "unacked manifest"
	log "$(wc -l < "$MAN") acknowledged peer writes, $(wc -l < "$MAN.unacked") unacknowledged; crashing now"
	fx_crash
}

boot2() {
	[ -s "$MAN" ] || fail "boot 1 left no manifest $MAN (did it reach the crash?)"
	fx_load
	create_volume --force
	trap 'fxctl remove $VOL >/dev/null 2>&1' EXIT
	local c n off len sum acked=0 verified=0 lostA=0 lostB=0 usurv=0 utot=0
	while read -r c n off len sum; do
		acked=$((acked + 1))
		if [ "$(read_sum "$DEV" "$off" "$len" direct)" = "$sum" ]; then
			verified=$((verified + 1))
		else
			log "lost: $c$n, $len bytes at $off"
			if [ "$c" = A ]; then lostA=$((lostA + 1)); else lostB=$((lostB + 1)); fi
		fi
	done < "$MAN"
	while read -r c n off len sum; do
		utot=$((utot + 1))
		[ "$(read_sum "$DEV" "$off" "$len" direct)" != "$sum" ] || usurv=$((usurv + 1))
	done < "$MAN.unacked"
	echo "RESULT test=peer-crash acked=$acked verified=$verified lost=$((lostA + lostB))" \
		"lost_fua=$lostA lost_fsync=$lostB unacked_survived=$usurv/$utot kernel=$FX_KVER"
	[ "$lostA" = 0 ] || fail "$lostA acknowledged FUA peer writes lost or changed by the crash"
	[ "$lostB" = 0 ] || fail "$lostB acknowledged fsync'd peer writes lost or changed by the crash"
	expect_eq "$acked" 10 "acknowledged writes in the manifest"
	expect_eq "$utot" 4 "unacknowledged writes in the manifest"
	[ "$usurv" -lt "$utot" ] ||
		fail "all $utot unflushed peer writes survived the crash: this run could not have seen a loss"
	fx_run fxctl remove $VOL
	trap - EXIT
	pass "10 acknowledged peer writes (4 FUA, 4 fsync'd, 2 libfxio + fxio_sync) survived the crash; $usurv of $utot unflushed ones did"
}

case $FX_BOOT in
1) boot1 ;;
2) boot2 ;;
*) fail "FX_BOOT=$FX_BOOT" ;;
esac
