#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=256 persist boots=3 timeout=600
# lab-break: on=6.12 break=drop-fua ~ acknowledged (metadata |FUA )?writes lost or changed by the crash
# Crash consistency: every acknowledged write survives a crash of the VM, at
# several crash points per run, on xfs and ext4 and behind them.
# Members are loop devices over files on the lab's persistent disk
# (--persist: the guest's page cache is their volatile write cache, only what
# the stack flushed survives); the VM boots N times (header boots=3: two
# crash points) on the same disk. On the volume, each through dm-linear:
# xfs on [0, 320 MiB), ext4 on [320, 640 MiB); acknowledged raw slots behind.
#
# Boot 1: fxctl create over the 4 members, mkfs.xfs and mkfs.ext4, then
# round 1. Boot K (1 < K < N): re-create the volume, check (below) what
# rounds 1..K-1 acknowledged, then round K. Boot N: the check only.
# A round, all at once until both acknowledged writers reach this round's
# crash point (a random number of acknowledgements, 3..12, from the seed;
# at most MAX_SECS seconds):
#   - acknowledged file writes, alternately on xfs and ext4 (buffered +
#     RWF_DSYNC, O_DIRECT + RWF_DSYNC, write + fsync, O_SYNC);
#   - acknowledged raw writes to the volume (O_DIRECT, crossing chunks) in
#     group commits: 1..5 writes without any sync, then ONE fdatasync, then
#     all of them are acknowledged - the workload does not flush after every
#     write, so a flush that does not cover earlier completed writes on every
#     member loses data;
#   - unacknowledged buffered file churn (both file systems) and O_DIRECT raw
#     writes without sync;
# then those writers stop (nothing synced) and a FUA-only phase follows:
# 16 O_DIRECT + RWF_DSYNC overwrites of a file written and fsync'd before
# (xfs and ext4 alternately): iomap sends such a write as one FUA write and
# no flush (fs/iomap/direct-io.c, IOMAP_DIO_WRITE_THROUGH), so only the FUA
# makes it durable; fxctl stats must show FUA writes on the members, member
# 1 among them; and the VM is reset (sysrq b, fx_crash) right after the
# last acknowledgement, with the churn still unflushed.
# After each acknowledgement a manifest line (where, length, sha256) is
# appended to $FX_PERSIST_DIR/manifest.r<K>.* and fsync'd - on the persistent
# disk's own file system, not on the volume.
# The check (boots 2..N): re-create the volume with the same member order,
# chunk and data offset, mount + umount both file systems (log replay),
# xfs_repair -n and e2fsck -fn must be clean, and every manifest entry of
# every earlier round must read back with its checksum (rounds write to
# disjoint places). Prints per boot
#   RESULT test=crash boot=K acked=N verified=N lost=0 fsck=clean ...
#
# Arguments (every boot gets them): seed=N (default: random, printed in
# boot 1 and kept in $FX_PERSIST_DIR/params: the crash points, write sizes
# and places replay, the interleaving of the writers does not),
# max-secs=N (default 45). To see it fail: break=drop-fua loads
# fxlab_dropfua.ko (tests/lab/modules) in every crash boot, which strips
# REQ_FUA from the writes sent to member 1: it acknowledges FUA writes
# without persisting them (flushes still pass) - make check's control;
# break=nofsync claims one buffered write acknowledged without any sync;
# break=member-wt sets member 1's write cache to "write through", so the
# block layer drops the flushes and FUA sent to it; break=corrupt overwrites
# one acknowledged raw block before the check in boot 2.
. /lab/lib.sh
fx_crash_setup
K=$FX_BOOT LAST=$FX_BOOTS

MAX_SECS=45 BREAK='' SEED=''
for a in "$@"; do
	case $a in
	seed=*) SEED=${a#*=}; [[ $SEED =~ ^[0-9]+$ ]] || fail "seed=N: N a number" ;;
	max-secs=*) MAX_SECS=${a#*=} ;;
	break=nofsync|break=member-wt|break=corrupt|break=drop-fua) BREAK=${a#*=} ;;
	*) fail "unknown argument '$a' (seed=N max-secs=N break=drop-fua|nofsync|member-wt|corrupt)" ;;
	esac
done

VOL=t26 CHUNK=64K DOFF=4M XFS=t26xfs EXT=t26ext
MNTX=/mnt/t26x MNTE=/mnt/t26e  # file systems by the first letter of a path: x/..., e/...
MiB=1048576
XFS_MB=320 EXT_MB=320         # xfs on [0, 320 MiB), ext4 on [320, 640 MiB)
RAW_A=$((704 * MiB))          # acknowledged raw slots, 256 KiB each
RAW_A_SLOTS=130               # ... per round, rounds after each other (3 at most)
RAW_U=$((832 * MiB))          # unacknowledged raw writes, 1 MiB each
RAW_U_SLOTS=64                # ... up to 896 MiB
NF=8                          # acknowledged files per fs and round, 128 KiB slots
NFUA=16                       # FUA-only writes per round, into a 4 MiB file
SRC=$P/rand                   # 16 MiB of random data, sliced per write (kept for later boots)
STOP=/tmp/t26.stop
mkdir -p $MNTX $MNTE
export DM_DISABLE_UDEV=1

create_volume() {	# [--force]: boots 2..N, over the members labelled in boot 1
	fx_run fxctl create "$@" $VOL --chunk $CHUNK --data-offset $DOFF "${M[@]}"
	DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
	SIZE=$(blockdev --getsize64 "$DEV") || fail "blockdev --getsize64 $DEV"
	[ "$SIZE" -ge $((RAW_U + RAW_U_SLOTS * MiB)) ] || fail "$DEV has $SIZE bytes, too small for the layout"
	# each file system on a dm-linear slice of the volume (a mount would
	# claim all of fxN for itself); raw writes go to fxN behind them
	modprobe dm_mod 2>/dev/null
	fx_run dmsetup create --noudevsync $XFS --table "0 $((XFS_MB * 2048)) linear $DEV 0"
	fx_run dmsetup create --noudevsync $EXT --table "0 $((EXT_MB * 2048)) linear $DEV $((XFS_MB * 2048))"
	XDEV=/dev/mapper/$XFS EDEV=/dev/mapper/$EXT
	[ -b $XDEV ] && [ -b $EDEV ] || fail "no $XDEV or $EDEV after dmsetup create"
}
CLEANUP='umount $MNTX $MNTE 2>/dev/null; dmsetup remove --noudevsync $XFS $EXT >/dev/null 2>&1; fxctl remove $VOL >/dev/null 2>&1'

mnt() {
	# before the mount: xfs queues its first log-worker run at mount time
	modprobe xfs || fail "modprobe xfs"
	echo 720000 > /proc/sys/fs/xfs/xfssyncd_centisecs || fail "fs.xfs.xfssyncd_centisecs"
	fx_run mount -t xfs $XDEV $MNTX
	fx_run mount -t ext4 $EXT_MOUNT_OPTS $EDEV $MNTE
}
umnt() { fx_run umount $MNTX; fx_run umount $MNTE; }
fpath() {	# fpath x/r1/f3 -> /mnt/t26x/r1/f3
	case $1 in x/*) echo "$MNTX/${1#x/}" ;; e/*) echo "$MNTE/${1#e/}" ;; *) return 1 ;; esac
}
# ext4: commit every 600 s instead of 5 s, xfs: log worker every 7200 s (the
# most fs.xfs.xfssyncd_centisecs takes) instead of 30 s, so that no
# background journal commit (a flush) falls into the FUA-only phase: a flush
# there covers the FUA writes before it, so that break=drop-fua's control
# could not lose them (CI's run of 2026-12-05 saw that control pass; the
# flushes found in the phase then are in fua_phase and boot1).
EXT_MOUNT_OPTS="-o commit=600"

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
# ack LINE FILE: durably record an acknowledged write
ack() {
	echo "$1" >> "$2" && sync "$2"
}
stopped() { [ -e $STOP ]; }

# ---- a round: write, then crash ----------------------------------------------
ack_fs() {	# acknowledged file writes, xfs and ext4 alternately, until stopped
	local i=0 f off len s sum xio
	while ! stopped; do
		f=$( ((i % 2)) && echo e || echo x)/r$K/f$((i / 2 % NF))
		len=$(((1 + RANDOM % 24) * 4096))
		off=$(((i / (2 * NF)) * 131072 + (RANDOM % 8) * 4096))
		s=$(((i * 7919 % 3000) * 4096))
		sum=$(slice_sum $s $len) || { log "ack_fs: reading $SRC failed"; return 1; }
		case $((i / 2 % 4)) in
		0) xio=(-c "pwrite -q -i $SRC -s $s -b $len -V 1 -D $off $len") ;;	# RWF_DSYNC
		1) xio=(-d -c "pwrite -q -i $SRC -s $s -b $len -V 1 -D $off $len") ;;	# O_DIRECT+RWF_DSYNC
		2) xio=(-c "pwrite -q -i $SRC -s $s -b $len -W $off $len") ;;	# write+fsync
		3) xio=(-s -c "pwrite -q -i $SRC -s $s -b $len $off $len") ;;	# O_SYNC
		esac
		if [ "$BREAK" = nofsync ] && [ $K = 1 ] && [ $i = 5 ]; then
			f=e/r$K/nosync	# its own file, so no later fsync covers it
			xio=(-c "pwrite -q -i $SRC -s $s -b $len $off $len")
			log "break=nofsync: $f $off+$len written WITHOUT sync, recorded as acknowledged"
		fi
		xfs_io "${xio[@]}" "$(fpath $f)" || { log "ack_fs: write $i to $f failed"; return 1; }
		ack "fs $f $off $len $sum" "$MAN.fs" || { log "ack_fs: manifest append failed"; return 1; }
		i=$((i + 1))
	done
}
ack_raw() {	# acknowledged raw writes, O_DIRECT, in group commits
	local i=0 b n off len s sums cmds lines
	while ! stopped && [ $i -lt $RAW_A_SLOTS ]; do
		n=$((1 + RANDOM % 5)) cmds=() lines=()
		for ((b = 0; b < n && i < RAW_A_SLOTS; b++, i++)); do
			len=$(((1 + RANDOM % 48) * 4096))
			off=$((RAW_A + ((K - 1) * RAW_A_SLOTS + i) * 262144 + (RANDOM % 8) * 4096))
			s=$((((K * 131 + i) * 4567 % 3000) * 4096))
			sums=$(slice_sum $s $len) || { log "ack_raw: reading $SRC failed"; return 1; }
			cmds+=(-c "pwrite -q -i $SRC -s $s -b $len $off $len")
			lines+=("raw - $off $len $sums")
		done
		# n writes, none of them synced, then one fdatasync (a flush) for all
		xfs_io -d "${cmds[@]}" -c fdatasync "$DEV" || { log "ack_raw: group of $n writes failed"; return 1; }
		for b in "${lines[@]}"; do
			ack "$b" "$MAN.raw" || { log "ack_raw: manifest append failed"; return 1; }
		done
	done
	stopped || log "ack_raw: all $RAW_A_SLOTS slots of round $K written"
	until stopped; do sleep 0.2; done
}
unacked_fs() {	# buffered churn, never synced: may be lost, must not corrupt
	local k=0 d
	while ! stopped; do
		d=$( ((k % 2)) && echo $MNTE || echo $MNTX)/u
		xfs_io -f -c "pwrite -q -i $SRC -s $(((k % 8) * MiB)) -b $MiB 0 $((2 * MiB))" $d/s$((k % 6)) || return 1
		mv $d/s$((k % 6)) $d/t$((k % 5)) || return 1
		k=$((k + 1))
		sleep 0.3
	done
}
unacked_raw() {	# O_DIRECT writes without sync; recorded after the fact
	local k off s sum
	for ((k = 0; k < RAW_U_SLOTS; k++)); do
		stopped && return 0
		off=$((RAW_U + k * MiB)) s=$((((k + K) * 37 % 15) * MiB))
		sum=$(slice_sum $s $MiB) || return 1
		xfs_io -d -c "pwrite -q -i $SRC -s $s -b $MiB $off $MiB" "$DEV" || return 1
		ack "$off $MiB $sum" "$UMAN" || return 1
		sleep 0.2
	done
	until stopped; do sleep 0.2; done
}
fua_write() {	# fua_write J: FUA-phase write J (< 24: slots of 320 KiB in a 4 MiB file)
	local j=$1 f off len s sum
	f=$( ((j % 2)) && echo e || echo x)/r$K/fua
	len=$(((1 + RANDOM % 16) * 4096))
	off=$(((j / 2) * 327680 + (RANDOM % 8) * 4096))	# 5 chunks apart: member after member
	s=$((((K * 17 + j) * 2903 % 3000) * 4096))
	sum=$(slice_sum $s $len) || fail "reading $SRC failed"
	xfs_io -d -c "pwrite -q -i $SRC -s $s -b $len -V 1 -D $off $len" "$(fpath $f)" ||
		fail "FUA phase: write $j to $f failed"
	ack "fs $f $off $len $sum" "$MAN.fua" || fail "manifest append failed"
}
m1_flushes() {
	fxctl -o json stats $VOL > /tmp/stm1 || fail "fxctl -o json stats $VOL"
	jv volume.members.1.flush.ios /tmp/stm1
}
# dropfua_tail: break=drop-fua, right before the crash. A flush to member 1
# persists the dropped FUA writes before it, and the phase is kept free of
# them only by what fua_phase and boot1 know of xfs and ext4 (a journal
# commit could still come): the control needs a dropped write that no flush
# to member 1 followed. Add writes (slots 8..11) until one was dropped with
# no flush to member 1 during it; the crash follows.
dropfua_tail() {
	local j f0 n0
	for ((j = NFUA; j < NFUA + 8; j++)); do
		f0=$(m1_flushes) n0=$(cat /sys/module/fxlab_dropfua/parameters/dropped)
		fua_write $j
		[ "$(cat /sys/module/fxlab_dropfua/parameters/dropped)" -gt "$n0" ] &&
			[ "$(m1_flushes)" = "$f0" ] && break
	done
	log "break=drop-fua: $((j - NFUA + 1)) more FUA-phase writes, the last dropped with no flush to member 1 after it"
	[ $j -lt $((NFUA + 8)) ] || fail "break=drop-fua: no FUA write to member 1 was dropped without a flush after it (the control tests nothing)"
}
# fua_phase: NFUA O_DIRECT+RWF_DSYNC overwrites of x|e/r$K/fua, nothing else
# writing; member FUA and flush counts before and after
fua_phase() {
	local j f i d0 d1 fua=0 fl=0 m1fua m1fl dr0=0 dr
	# The first RWF_DSYNC write to an xfs file after other changes to it
	# forces xfs's log (a flush on every member; seen in the lab on 6.12):
	# one such write per file first, of the bytes already there, so that
	# the phase itself is FUA writes only
	for f in x e; do
		xfs_io -d -c "pwrite -q -S 0x5a -b 4096 -V 1 -D 0 4096" "$(fpath $f/r$K/fua)" ||
			fail "FUA phase: the first write to $f/r$K/fua failed"
	done
	fxctl -o json stats $VOL > /tmp/st0 || fail "fxctl -o json stats $VOL"
	[ "$BREAK" != drop-fua ] || dr0=$(cat /sys/module/fxlab_dropfua/parameters/dropped)
	for ((j = 0; j < NFUA; j++)); do fua_write $j; done
	fxctl -o json stats $VOL > /tmp/st1 || fail "fxctl -o json stats $VOL"
	FUA_LOG=
	for i in 0 1 2 3; do
		d0=$(($(jv "volume.members.$i.write.fua" /tmp/st1) - $(jv "volume.members.$i.write.fua" /tmp/st0)))
		d1=$(($(jv "volume.members.$i.flush.ios" /tmp/st1) - $(jv "volume.members.$i.flush.ios" /tmp/st0)))
		fua=$((fua + d0)) fl=$((fl + d1))
		[ $i != 1 ] || m1fua=$d0 m1fl=$d1
		FUA_LOG+=" m$i:fua=$d0,flush=$d1"
	done
	if [ "$BREAK" = drop-fua ]; then
		# fxblk counts a FUA write when it completes, by its flags, which
		# fxlab_dropfua has stripped by then: count those it dropped
		dr=$(($(cat /sys/module/fxlab_dropfua/parameters/dropped) - dr0))
		FUA_LOG+=" (m1: $dr FUA writes dropped by fxlab_dropfua)"
		fua=$((fua + dr)) m1fua=$((m1fua + dr))
		[ "$m1fl" = 0 ] || log "note: break=drop-fua: $m1fl flushes reached member 1 during the FUA phase; they persist the dropped writes before them, so this round may lose nothing"
	fi
	log "FUA phase of round $K: $NFUA O_DIRECT+RWF_DSYNC overwrites; fxblk sent to the members:$FUA_LOG"
	# the phase is what it claims: FUA writes reached the members, member 1
	# (the control's) among them
	[ "$fua" -ge "$NFUA" ] || fail "FUA phase: only $fua FUA writes reached the members for $NFUA O_DIRECT+RWF_DSYNC overwrites (not a FUA workload)"
	[ "$m1fua" -ge 1 ] || fail "FUA phase: no FUA write reached member 1"
	[ "$fl" = 0 ] || log "note: $fl flushes during the FUA phase (not expected; a journal commit?): FUA writes before it are covered by it"
}
round() {
	local pids p t target
	MAN=$P/manifest.r$K UMAN=$P/manifest.r$K.unacked
	RANDOM=$((SEED + K * 7919))
	target=$((3 + RANDOM % 10))
	rm -f $STOP
	for p in $MNTX $MNTE; do
		mkdir -p $p/r$K $p/u || fail "mkdir on $p"
		for ((t = 0; t < NF; t++)); do : > $p/r$K/f$t || fail "create $p/r$K/f$t"; done
		: > $p/r$K/nosync || fail "create $p/r$K/nosync"
		# the FUA phase overwrites written blocks only (no allocation, no
		# unwritten extents: no journal, no flush)
		xfs_io -f -c "pwrite -q -S 0x5a -b $MiB 0 $((4 * MiB))" -c fsync $p/r$K/fua >/dev/null ||
			fail "write $p/r$K/fua"
	done
	sync	# directories and files are acknowledged too
	: > "$MAN.fs"; : > "$MAN.raw"; : > "$MAN.fua"; : > "$UMAN"
	if [ "$BREAK" = drop-fua ]; then
		local mm
		mm=$(stat -Lc '%t %T' "${M[1]}") || fail "stat ${M[1]}"
		insmod /lab/modules/fxlab_dropfua.ko major=$((0x${mm% *})) minor=$((0x${mm#* })) ||
			fail "break=drop-fua: insmod fxlab_dropfua.ko"
		log "break=drop-fua: ${M[1]} ($((0x${mm% *})):$((0x${mm#* }))) now acknowledges FUA writes without FUA"
	fi
	log "round $K: crash point at $target file and $target raw acknowledgements (at most ${MAX_SECS}s), then the FUA phase"
	ack_fs & pids="$!"
	ack_raw & pids+=" $!"
	unacked_fs & pids+=" $!"
	unacked_raw & pids+=" $!"
	t=$((SECONDS + MAX_SECS))
	while [ "$SECONDS" -lt "$t" ]; do
		sleep 0.5
		for p in $pids; do
			kill -0 "$p" 2>/dev/null || fail "a writer (pid $p) stopped before the crash (see its message above)"
		done
		[ "$(wc -l < "$MAN.fs")" -lt "$target" ] || [ "$(wc -l < "$MAN.raw")" -lt "$target" ] || break
	done
	: > $STOP	# the writers finish the write in hand (nothing synced) and leave
	for p in $pids; do wait "$p" || fail "a writer (pid $p) failed (see its message above)"; done
	fua_phase
	if [ "$BREAK" = drop-fua ]; then
		local nd
		nd=$(cat /sys/module/fxlab_dropfua/parameters/dropped)
		log "break=drop-fua: $nd FUA writes to ${M[1]} acknowledged without FUA"
		[ "$nd" -gt 0 ] || fail "break=drop-fua: fxlab_dropfua dropped no FUA write (the control tests nothing)"
	fi
	log "round $K: $(wc -l < "$MAN.fs") file, $(wc -l < "$MAN.raw") raw (group-committed) and" \
		"$(wc -l < "$MAN.fua") FUA-only writes acknowledged, $(wc -l < "$UMAN") unacknowledged raw writes issued; crashing now"
	[ "$BREAK" != drop-fua ] || dropfua_tail
	fx_crash
}

boot1() {
	[ ! -e "$P/params" ] || fail "boot 1 on a used persistent disk ($P/params exists)"
	[ -n "$SEED" ] || SEED=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	log "seed $SEED (replay: seed=$SEED)"
	fx_load
	if [ "$BREAK" = member-wt ]; then
		log "break=member-wt: ${M[1]} write cache -> write through (its flushes and FUA are dropped)"
		echo "write through" > "/sys/block/${M[1]#/dev/}/queue/write_cache" || fail "break=member-wt: cannot set write_cache"
	fi
	create_volume
	head -c $((16 * MiB)) /dev/urandom > $SRC && sync $SRC || fail "random source"
	# shellcheck disable=SC2064 # $CLEANUP is the command itself, expanded now
	trap "$CLEANUP" EXIT
	fx_run mkfs.xfs -f -K -q $XDEV
	# no lazy init: ext4lazyinit zeroes inode tables in the background after
	# the mount and flushes after each group (ext4_init_inode_table), at
	# times that depend on the host's speed - a flush in the FUA phase
	fx_run mkfs.ext4 -F -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 $EDEV
	mnt
	ack "seed=$SEED chunk=$CHUNK data_offset=$DOFF size=$SIZE members=${M[*]} boots=$LAST" "$P/params" ||
		fail "writing $P/params"
	log "boot 1 of $LAST: $DEV ($SIZE bytes) over ${M[*]}, xfs on $XDEV, ext4 on $EDEV"
	round
}

# ---- boots 2..N: re-create, check, verify -----------------------------------
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
			got=$(read_sum "$(fpath $f)" "$off" "$len") || got=unreadable
		else
			got=$(read_sum "$DEV" "$off" "$len" direct) || got=unreadable
		fi
		if [ "$got" = "$sum" ]; then
			VERIFIED=$((VERIFIED + 1))
		else
			LOST=$((LOST + 1))
			echo "LOST: acknowledged $kind write ($2) $f offset $off length $len: sha256 $got, expected $sum" >&2
		fi
	done < "$1"
	ACKED=$((ACKED + n)) N_ENTRIES=$n
	[ "$torn" -le 1 ] || fail "$torn torn lines in $1 (only the last append can be torn)"
}

check_boot() {
	local params r nfs=0 nraw=0 nfua=0 usurv=0 utot=0 off len sum fsck=clean lfua=0
	params=$(cat "$P/params" 2>/dev/null) || fail "boot 1 left no $P/params (did it reach the write phase?)"
	log "boot $K of $LAST: boot 1 had: $params"
	expect_match "$params" "chunk=$CHUNK data_offset=$DOFF .* members=${M[*]} boots=$LAST\$" "boot 1 parameters"
	[[ $params =~ seed=([0-9]+) ]] || fail "no seed in $P/params"
	[ -z "$SEED" ] || [ "$SEED" = "${BASH_REMATCH[1]}" ] || fail "seed=$SEED given, boot 1 used ${BASH_REMATCH[1]}"
	SEED=${BASH_REMATCH[1]}
	log "seed $SEED (replay: seed=$SEED)"
	fx_load
	create_volume --force
	expect_match "$params" " size=$SIZE " "volume size in boot $K ($SIZE) vs boot 1"
	# shellcheck disable=SC2064 # $CLEANUP is the command itself, expanded now
	trap "$CLEANUP" EXIT
	if [ "$BREAK" = corrupt ] && [ $K = 2 ]; then
		read -r _ _ off len _ < "$P/manifest.r1.raw" || fail "break=corrupt: no raw entry to corrupt"
		log "break=corrupt: zeroing 4 KiB of the acknowledged raw write at $off"
		dd if=/dev/zero of="$DEV" bs=4096 seek=$((off / 4096)) count=1 oflag=direct conv=notrunc 2>/dev/null ||
			fail "break=corrupt: write failed"
	fi
	# log replay, then the check (xfs_repair -n refuses a dirty log; e2fsck
	# -n would not replay the journal). A log that does not replay means
	# flushed metadata was lost (seen with break=member-wt: xfs found a
	# corrupt inode buffer during recovery and shut down)
	mount -t xfs $XDEV $MNTX || fail "xfs does not mount after the crash (log replay failed): acknowledged metadata writes lost or changed by the crash"
	mount -t ext4 $EXT_MOUNT_OPTS $EDEV $MNTE || fail "ext4 does not mount after the crash (journal replay failed): acknowledged metadata writes lost or changed by the crash"
	umnt
	xfs_repair -n $XDEV > /tmp/repair.out 2>&1 || { fsck=NOT-clean; tail -n 30 /tmp/repair.out; }
	e2fsck -fn $EDEV > /tmp/e2fsck.out 2>&1 || { fsck=NOT-clean; tail -n 30 /tmp/e2fsck.out; }
	mnt
	ACKED=0 VERIFIED=0 LOST=0
	for ((r = 1; r < K; r++)); do
		verify "$P/manifest.r$r.fs" r$r; nfs=$((nfs + N_ENTRIES))
		verify "$P/manifest.r$r.raw" r$r; nraw=$((nraw + N_ENTRIES))
		local l0=$LOST
		verify "$P/manifest.r$r.fua" r$r-fua; nfua=$((nfua + N_ENTRIES)) lfua=$((lfua + LOST - l0))
	done
	# unacknowledged raw writes of the last round: whether they survived is
	# up to timing (a later flush writes them out); shown, not judged
	while read -r off len sum; do
		[[ $sum =~ ^[0-9a-f]{64}$ ]] || continue
		utot=$((utot + 1))
		[ "$(read_sum "$DEV" "$off" "$len" direct)" != "$sum" ] || usurv=$((usurv + 1))
	done < "$P/manifest.r$((K - 1)).unacked"
	log "rounds 1..$((K - 1)) acknowledged: $nfs file writes, $nraw raw writes, $nfua FUA-only writes;" \
		"unacknowledged raw writes of round $((K - 1)): $usurv of $utot survived"
	echo "RESULT test=crash boot=$K acked=$ACKED verified=$VERIFIED lost=$LOST lost_fua=$lfua fsck=$fsck" \
		"fs=xfs+ext4 acked_fs=$nfs acked_raw=$nraw acked_fua=$nfua unacked_raw_survived=$usurv/$utot seed=$SEED kernel=$FX_KVER"
	[ "$lfua" = 0 ] || fail "$lfua acknowledged FUA writes lost or changed by the crash"
	[ "$LOST" = 0 ] || fail "$LOST acknowledged writes lost or changed by the crash"
	[ "$fsck" = clean ] || fail "xfs_repair -n or e2fsck -fn found problems after the crash"
	# NFUA FUA-phase writes per round (break=drop-fua adds some: dropfua_tail)
	[ "$nfua" = $((NFUA * (K - 1))) ] || { [ "$BREAK" = drop-fua ] && [ "$nfua" -gt $((NFUA * (K - 1))) ]; } ||
		fail "$nfua FUA-phase writes acknowledged in rounds 1..$((K - 1)), not $NFUA per round"
	[ "$nfs" -ge $((2 * (K - 1))) ] && [ "$nraw" -ge $((2 * (K - 1))) ] ||
		fail "too few acknowledged writes before the crashes to mean anything ($nfs file, $nraw raw, $nfua FUA)"
	[ "$VERIFIED" = "$ACKED" ] || fail "verified $VERIFIED of $ACKED"
	if [ "$K" -lt "$LAST" ]; then
		round
	fi
	umnt
	fx_run dmsetup remove --noudevsync $XFS $EXT
	fx_run fxctl remove $VOL
	trap - EXIT
	pass "$ACKED acknowledged writes of $((K - 1)) crash points survived, xfs and ext4 clean (seed $SEED)"
}

if [ "$K" = 1 ]; then boot1; else check_boot; fi
