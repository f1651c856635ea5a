#!/bin/bash
# lab: kernels=6.12 quick=6.12 members=4 size-mb=64 persist boots=2 hostfs timeout=1200
# lab-break: full break=nondurable ~ LOST: acknowledged put of key
# A persistent KV-cache store (fxio.kvcache, persistent=True, issue 35) on a
# raw /dev/fxN keeps its keys across a crash of the VM in the middle of its
# puts: after the reboot and the volume's re-assembly every hit is byte for
# byte the value put under its key (misses allowed), and every put that
# returned (durable=True: File.sync, a flush of every member) is a hit.
# Members are loop devices over files on the lab's persistent disk
# (--persist: the guest's page cache is their volatile write cache, only what
# the stack flushed survives); the host's python3 and numpy run in the VM
# through --hostfs (as in 58), with the build tree's fxio and
# ctl/fxio/python/tests/kvcrash.py, the writer and checker test_kvcache_persist.py
# uses on the host.
#
# Boot 1: fxctl create over the 4 members (64 KiB chunks); kvcrash.py put on
#   the fxN (64 KiB blocks, keys of 1 byte to 64 KiB, 1-4 a batch, durable),
#   each batch's stored keys appended to a manifest on the persistent disk
#   and fsync'd; once it holds a random 10..60 keys the VM is reset
#   (sysrq b, fx_crash) with the writer still putting.
# Boot 2: fxctl assemble from the members' labels; kvcrash.py check: every
#   hit byte-exact with its meta, no key of the manifest lost. Prints
#     RESULT loaded=N hits=N wrong=0 acked=N lost=0 torn=N
# Argument break=nondurable (both boots; make check's control): the writer
# does not sync, so the acknowledged puts are lost with the members' cache:
# the check must report them LOST.
. /lab/lib.sh
fx_crash_setup
K=$FX_BOOT
BREAK=
for a in "$@"; do
	case $a in
	break=nondurable) BREAK=${a#*=} ;;
	*) fail "unknown argument '$a' (break=nondurable)" ;;
	esac
done
VOL=t68 PD=/tmp/p68	# PD: the persistent directory, as the chroot sees it
MAN=manifest

# the host's Python in the chroot, with $P bound where it can write it
hostfs_up() {
	fx_hostfs_mount
	mkdir -p "$FX_HOSTFS_ROOT$PD" && mount --bind "$P" "$FX_HOSTFS_ROOT$PD" ||
		fail "bind $P at $FX_HOSTFS_ROOT$PD"
	CLEANUP="umount $FX_HOSTFS_ROOT$PD 2>/dev/null; fxctl remove $VOL >/dev/null 2>&1"
	# shellcheck disable=SC2064 # $CLEANUP is the command itself, expanded now
	trap "$CLEANUP" EXIT
}

boot1() {
	local seed target n pid
	seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	RANDOM=$seed
	target=$((10 + RANDOM % 51))
	fx_load
	fx_run fxctl create $VOL --chunk 64K "${M[@]}"
	DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
	hostfs_up
	: > "$P/$MAN" && sync "$P/$MAN" || fail "create $P/$MAN"
	log "seed $seed: putting on $DEV until $target puts are acknowledged, then crashing${BREAK:+ (break=$BREAK: no sync)}"
	fx_hostfs_run python3 "$FX_HOSTFS_TESTS/kvcrash.py" put "$DEV" --first 0 --seed "$seed" \
		--manifest "$PD/$MAN" ${BREAK:+--nondurable} > /tmp/put.out 2>&1 &
	pid=$!
	for ((n = 0; n < 3000; n++)); do	# 0.2 s a turn: at most 10 min (imports under TCG)
		[ "$(wc -l < "$P/$MAN")" -lt "$target" ] || break
		kill -0 $pid 2>/dev/null || { cat /tmp/put.out; fail "the writer ended before $target puts"; }
		sleep 0.2
	done
	[ "$(wc -l < "$P/$MAN")" -ge "$target" ] || { cat /tmp/put.out; fail "$target puts not acknowledged in 10 min"; }
	kill -0 $pid 2>/dev/null || { cat /tmp/put.out; fail "the writer ended before the crash"; }
	cat /tmp/put.out
	log "$(wc -l < "$P/$MAN") puts acknowledged, the writer still putting: crashing now"
	fx_crash
}

boot2() {
	local rc
	fx_load
	fx_run fxctl assemble $VOL
	DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL after fxctl assemble"
	hostfs_up
	log "checking the store on $DEV against $(wc -l < "$P/$MAN") acknowledged puts"
	fx_hostfs_run python3 "$FX_HOSTFS_TESTS/kvcrash.py" check "$DEV" --first 0 \
		--manifest "$PD/$MAN" 2>&1 | tee /tmp/check.out
	rc=${PIPESTATUS[0]}
	grep -q '^RESULT ' /tmp/check.out || fail "kvcrash.py check printed no RESULT (exit $rc)"
	[ "$rc" = 0 ] || fail "kvcrash.py check: wrong bytes served or acknowledged puts lost (exit $rc)"
	expect_match "$(grep '^RESULT ' /tmp/check.out)" ' hits=[1-9][0-9]* wrong=0 acked=[1-9][0-9]* lost=0 ' "the store after the crash"
	fx_run fxctl remove $VOL
	umount "$FX_HOSTFS_ROOT$PD"
	trap - EXIT
	pass "after a crash during puts: $(sed -n 's/^RESULT //p' /tmp/check.out) on $DEV"
}

if [ "$K" = 1 ]; then boot1; else boot2; fi
