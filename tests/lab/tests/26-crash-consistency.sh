#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=256 persist boots=2 timeout=600
# lab-break: break=member-wt ~ acknowledged (metadata )?writes lost or changed by the crash
# Crash consistency: every acknowledged write survives a crash of the VM.
# Members are nvmet file-backed namespaces on the lab's persistent disk
# (--persist: the guest's page cache is their volatile write cache, only what
# the stack flushed survives); the VM boots twice on the same disk.
#
# Boot 1 (FX_BOOT=1): fxctl create over the 4 members, mkfs.xfs (or ext4)
# on the first 640 MiB of the volume, mount; then, all at once until both
# acknowledged writers have MIN_ACKS entries (at most MAX_SECS seconds):
#   - acknowledged file writes (buffered+RWF_DSYNC, O_DIRECT+RWF_DSYNC,
#     buffered+fsync, O_SYNC) into pre-created files, each in its own slot;
#   - acknowledged raw writes to the volume behind the file system
#     (O_DIRECT+RWF_DSYNC, i.e. FUA, and O_DIRECT+fdatasync), crossing chunks;
#   - unacknowledged buffered file churn and O_DIRECT raw writes without sync;
# after each acknowledgement a manifest line (where, length, sha256) is
# appended to $FX_PERSIST_DIR/manifest and fsync'd - on the persistent disk's
# own file system, not on the volume. Then the VM is reset (sysrq b, fx_crash)
# with all of that in flight.
# Boot 2 (FX_BOOT=2): re-create the volume with the same member order, chunk
# and data offset (there are no on-disk labels yet), mount + umount (log
# replay), xfs_repair -n must be clean, and every manifest entry must read
# back with its checksum. Prints
#   RESULT test=crash acked=N verified=N lost=0 fsck=clean ...
#
# Arguments (both boots get them): fs=xfs|ext4 (default xfs; ext4 is
# checked with e2fsck -fn), min-acks=N (default 20), max-secs=N
# (default 45). To see it fail: break=nofsync claims one buffered write
# acknowledged without any sync (boot 2 must then fail with lost=1);
# break=member-wt sets member 1's write cache to "write through" in boot 1, so
# the block layer drops the flushes and FUA that fxblk sends to it and its
# data stays in the member's volatile cache (as if fxblk did not forward
# them); break=corrupt overwrites one acknowledged raw block before the checks
# in boot 2.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}")
P=${FX_PERSIST_DIR:-}
[ -n "$P" ] && [ -d "$P" ] || fail "needs the lab's --persist (FX_PERSIST_DIR unset)"
case ${FX_BOOT:-} in 1|2) ;; *) fail "needs --boots 2 (FX_BOOT='${FX_BOOT:-}')" ;; esac

MIN_ACKS=20 MAX_SECS=45 BREAK= FS=xfs
for a in "$@"; do
	case $a in
	fs=xfs|fs=ext4) FS=${a#*=} ;;
	min-acks=*) MIN_ACKS=${a#*=} ;;
	max-secs=*) MAX_SECS=${a#*=} ;;
	break=nofsync|break=member-wt|break=corrupt) BREAK=${a#*=} ;;
	*) fail "unknown argument '$a' (fs=xfs|ext4 min-acks=N max-secs=N break=nofsync|member-wt|corrupt)" ;;
	esac
done

VOL=t26 CHUNK=64K DOFF=4M
MNT=/mnt/t26
MiB=1048576
FS_MB=640                     # the file system on [0, 640 MiB) of the volume
RAW_A=$((704 * MiB))          # acknowledged raw slots, 256 KiB each
RAW_A_SLOTS=400               # ... up to 804 MiB
RAW_U=$((832 * MiB))          # unacknowledged raw writes, 1 MiB each
RAW_U_SLOTS=64                # ... up to 896 MiB
NF=8                          # acknowledged files a/f0..f7, 128 KiB slots
SRC=/tmp/rand                 # 16 MiB of random data, sliced per write
MAN=$P/manifest               # acknowledged writes
UMAN=$P/manifest.unacked      # unacknowledged raw writes (for information)
mkdir -p $MNT

create_volume() {	# [--force]: boot 2, over the members labelled in boot 1
	fx_run fxctl create "$@" $VOL --chunk $CHUNK --data-offset $DOFF "${M[@]}"
	DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
	SIZE=$(blockdev --getsize64 "$DEV") || fail "blockdev --getsize64 $DEV"
	[ "$SIZE" -ge $((RAW_U + RAW_U_SLOTS * MiB)) ] || fail "$DEV has $SIZE bytes, too small for the layout"
}

# slice S LEN: sha256 of LEN bytes of $SRC from byte S (both 4 KiB multiples)
slice_sum() {
	local h
	h=$(dd if=$SRC bs="$2" iflag=skip_bytes,count_bytes skip="$1" count="$2" 2>/dev/null | busybox sha256sum) || return 1
	echo "${h%% *}"
}
# read_sum FILE OFF LEN [direct]: sha256 of LEN bytes of FILE at OFF (one read)
read_sum() {
	local h
	h=$(dd if="$1" bs="$3" iflag=skip_bytes,count_bytes${4:+,direct} skip="$2" count="$3" 2>/dev/null |
		busybox sha256sum) || return 1
	echo "${h%% *}"
}
# ack LINE: durably record an acknowledged write
ack() {
	echo "$1" >> "$2" && sync "$2"
}

# ---- boot 1: write, then crash ---------------------------------------------
ack_fs() {	# acknowledged file writes until killed by the crash
	local i=0 f off len s sum fl
	while :; do
		f=a/f$((i % NF))
		len=$(((1 + RANDOM % 24) * 4096))
		off=$(((i / NF) * 131072 + (RANDOM % 8) * 4096))
		s=$(((i * 7919 % 3000) * 4096))
		sum=$(slice_sum $s $len) || { log "ack_fs: reading $SRC failed"; return 1; }
		case $((i % 4)) in
		0) fl=(-c "pwrite -q -i $SRC -s $s -b $len -V 1 -D $off $len") ;;	# RWF_DSYNC
		1) fl=(-d -c "pwrite -q -i $SRC -s $s -b $len -V 1 -D $off $len") ;;	# O_DIRECT+RWF_DSYNC
		2) fl=(-c "pwrite -q -i $SRC -s $s -b $len -W $off $len") ;;	# write+fsync
		3) fl=(-s -c "pwrite -q -i $SRC -s $s -b $len $off $len") ;;	# O_SYNC
		esac
		if [ "$BREAK" = nofsync ] && [ $i = 5 ]; then
			f=a/nosync	# its own file, so no later fsync covers it
			fl=(-c "pwrite -q -i $SRC -s $s -b $len $off $len")
			log "break=nofsync: $f $off+$len written WITHOUT sync, recorded as acknowledged"
		fi
		xfs_io "${fl[@]}" "$MNT/$f" || { log "ack_fs: write $i to $f failed"; return 1; }
		ack "fs $f $off $len $sum" "$MAN.fs" || { log "ack_fs: manifest append failed"; return 1; }
		i=$((i + 1))
	done
}
ack_raw() {	# acknowledged raw writes (FUA and write+fdatasync), O_DIRECT
	local i off len s sum sync
	for ((i = 0; i < RAW_A_SLOTS; i++)); do
		len=$(((1 + RANDOM % 48) * 4096))
		off=$((RAW_A + i * 262144 + (RANDOM % 8) * 4096))
		s=$(((i * 4567 % 3000) * 4096))
		sum=$(slice_sum $s $len) || { log "ack_raw: reading $SRC failed"; return 1; }
		if [ $((i % 2)) = 0 ]; then sync="-V 1 -D"; else sync=-w; fi
		xfs_io -d -c "pwrite -q -i $SRC -s $s -b $len $sync $off $len" "$DEV" ||
			{ log "ack_raw: write $i failed"; return 1; }
		ack "raw - $off $len $sum" "$MAN.raw" || { log "ack_raw: manifest append failed"; return 1; }
	done
	log "ack_raw: all $RAW_A_SLOTS slots written"
	sleep 3600
}
unacked_fs() {	# buffered churn, never synced: may be lost, must not corrupt
	local k=0
	while :; do
		xfs_io -f -c "pwrite -q -i $SRC -s $(((k % 8) * MiB)) -b $MiB 0 $((2 * MiB))" $MNT/u/s$((k % 6)) || return 1
		mv $MNT/u/s$((k % 6)) $MNT/u/t$((k % 5)) || return 1
		k=$((k + 1))
		sleep 0.3
	done
}
unacked_raw() {	# O_DIRECT writes without sync; recorded after the fact
	local k off s sum
	for ((k = 0; k < RAW_U_SLOTS; k++)); do
		off=$((RAW_U + k * MiB)) s=$(((k * 37 % 15) * MiB))
		sum=$(slice_sum $s $MiB) || return 1
		xfs_io -d -c "pwrite -q -i $SRC -s $s -b $MiB $off $MiB" "$DEV" || return 1
		ack "$off $MiB $sum" "$UMAN" || return 1
		sleep 0.2
	done
	sleep 3600
}

boot1() {
	local pids p t
	[ ! -e "$P/params" ] || fail "boot 1 on a used persistent disk ($P/params exists)"
	fx_load
	if [ "$BREAK" = member-wt ]; then
		log "break=member-wt: ${M[1]} write cache -> write through (its flushes and FUA are dropped)"
		echo "write through" > "/sys/block/${M[1]#/dev/}/queue/write_cache" || fail "break=member-wt: cannot set write_cache"
	fi
	create_volume
	head -c $((16 * MiB)) /dev/urandom > $SRC || fail "random source"
	if [ "$FS" = xfs ]; then
		fx_run mkfs.xfs -f -K -q -d size=${FS_MB}m "$DEV"
	else
		fx_run mkfs.ext4 -F -q -E nodiscard "$DEV" ${FS_MB}M
	fi
	fx_run mount -t "$FS" "$DEV" $MNT
	mkdir -p $MNT/a $MNT/u || fail "mkdir on the file system"
	for ((p = 0; p < NF; p++)); do : > $MNT/a/f$p || fail "create a/f$p"; done
	: > $MNT/a/nosync || fail "create a/nosync"
	sync	# file system, directories and files are now acknowledged too
	: > "$MAN.fs"; : > "$MAN.raw"; : > "$UMAN"
	ack "chunk=$CHUNK data_offset=$DOFF size=$SIZE members=${M[*]} fs=$FS fs_mb=$FS_MB" "$P/params" ||
		fail "writing $P/params"
	log "boot 1: $DEV ($SIZE bytes) over ${M[*]}; writing until $MIN_ACKS file and raw acks (at most ${MAX_SECS}s), then crashing"
	ack_fs & pids="$!"
	ack_raw & pids+=" $!"
	unacked_fs & pids+=" $!"
	unacked_raw & pids+=" $!"
	t=$((SECONDS + MAX_SECS))
	while [ "$SECONDS" -lt "$t" ]; do
		sleep 1
		for p in $pids; do
			kill -0 "$p" 2>/dev/null || fail "a writer (pid $p) stopped before the crash (see its message above)"
		done
		[ "$(wc -l < "$MAN.fs")" -lt "$MIN_ACKS" ] || [ "$(wc -l < "$MAN.raw")" -lt "$MIN_ACKS" ] || break
	done
	log "boot 1: $(wc -l < "$MAN.fs") file and $(wc -l < "$MAN.raw") raw writes acknowledged," \
		"$(wc -l < "$UMAN") unacknowledged raw writes issued; crashing now"
	fx_crash
}

# ---- boot 2: re-create, check, verify ----------------------------------------
verify() {	# verify MANIFEST: entries in N_ENTRIES; adds to ACKED/VERIFIED/LOST
	local kind f off len sum got n=0 torn=0 line
	while IFS= read -r line; do
		if ! [[ $line =~ ^(fs|raw)\ ([a-z0-9/-]+)\ ([0-9]+)\ ([0-9]+)\ ([0-9a-f]{64})$ ]]; then
			torn=$((torn + 1))
			log "torn manifest line (not counted): '$line'"
			continue
		fi
		kind=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} off=${BASH_REMATCH[3]}
		len=${BASH_REMATCH[4]} sum=${BASH_REMATCH[5]}
		n=$((n + 1))
		if [ "$kind" = fs ]; then
			got=$(read_sum "$MNT/$f" "$off" "$len") || got=unreadable
		else
			got=$(read_sum "$DEV" "$off" "$len" direct) || got=unreadable
		fi
		if [ "$got" = "$sum" ]; then
			VERIFIED=$((VERIFIED + 1))
		else
			LOST=$((LOST + 1))
			echo "LOST: acknowledged $kind write $f offset $off length $len: sha256 $got, expected $sum" >&2
		fi
	done < "$1"
	ACKED=$((ACKED + n)) N_ENTRIES=$n
	[ "$torn" -le 1 ] || fail "$torn torn lines in $1 (only the last append can be torn)"
}

boot2() {
	local params nfs nraw usurv=0 utot=0 off len sum fsck=clean
	params=$(cat "$P/params" 2>/dev/null) || fail "boot 1 left no $P/params (did it reach the write phase?)"
	log "boot 2: boot 1 had: $params"
	expect_match "$params" "chunk=$CHUNK data_offset=$DOFF .* members=${M[*]} fs=$FS " "boot 1 parameters"
	fx_load
	create_volume --force
	expect_match "$params" " size=$SIZE " "volume size in boot 2 ($SIZE) vs boot 1"
	trap 'umount $MNT 2>/dev/null; fxctl remove $VOL >/dev/null 2>&1' EXIT
	if [ "$BREAK" = corrupt ]; then
		read -r _ _ off len _ < "$MAN.raw" || fail "break=corrupt: no raw entry to corrupt"
		log "break=corrupt: zeroing 4 KiB of the acknowledged raw write at $off"
		dd if=/dev/zero of="$DEV" bs=4096 seek=$((off / 4096)) count=1 oflag=direct conv=notrunc 2>/dev/null ||
			fail "break=corrupt: write failed"
	fi
	# log replay, then the check (xfs_repair -n refuses a dirty log; e2fsck
	# -n would not replay the journal). A log that does not replay means
	# flushed metadata was lost (seen with break=member-wt: xfs found a
	# corrupt inode buffer during recovery and shut down)
	mount -t "$FS" "$DEV" $MNT || fail "the file system does not mount after the crash (log replay failed): acknowledged metadata writes lost or changed by the crash"
	fx_run umount $MNT
	if [ "$FS" = xfs ]; then
		xfs_repair -n "$DEV" > /tmp/repair.out 2>&1 || fsck=NOT-clean
	else
		e2fsck -fn "$DEV" > /tmp/repair.out 2>&1 || fsck=NOT-clean
	fi
	[ "$fsck" = clean ] || tail -n 30 /tmp/repair.out
	fx_run mount -t "$FS" "$DEV" $MNT
	ACKED=0 VERIFIED=0 LOST=0
	verify "$MAN.fs"; nfs=$N_ENTRIES
	verify "$MAN.raw"; nraw=$N_ENTRIES
	# unacknowledged raw writes: whether they survived is up to timing (any
	# later flush on the volume writes them out); shown, not judged
	while read -r off len sum; do
		[[ $sum =~ ^[0-9a-f]{64}$ ]] || continue
		utot=$((utot + 1))
		[ "$(read_sum "$DEV" "$off" "$len" direct)" != "$sum" ] || usurv=$((usurv + 1))
	done < "$UMAN"
	log "acknowledged: $nfs file writes, $nraw raw writes; unacknowledged raw: $usurv of $utot survived"
	echo "RESULT test=crash acked=$ACKED verified=$VERIFIED lost=$LOST fsck=$fsck" \
		"fs=$FS acked_fs=$nfs acked_raw=$nraw unacked_raw_survived=$usurv/$utot kernel=$FX_KVER"
	[ "$fsck" = clean ] || fail "$([ "$FS" = xfs ] && echo xfs_repair -n || echo e2fsck -fn) found problems after the crash"
	[ "$LOST" = 0 ] || fail "$LOST acknowledged writes lost or changed by the crash"
	[ "$nfs" -ge 5 ] && [ "$nraw" -ge 5 ] ||
		fail "too few acknowledged writes before the crash to mean anything ($nfs file, $nraw raw)"
	[ "$VERIFIED" = "$ACKED" ] || fail "verified $VERIFIED of $ACKED"
	fx_run umount $MNT
	fx_run fxctl remove $VOL
	trap - EXIT
	pass "$ACKED acknowledged writes survived the crash, $FS clean"
}

if [ "$FX_BOOT" = 1 ]; then boot1; else boot2; fi
