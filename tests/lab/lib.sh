# shellcheck shell=bash
# Helpers for lab test scripts; in the VM at /lab/lib.sh.
# Use:  #!/bin/bash
#       # lab: kernels=5.10,6.1,6.12 members=4      (read by tests/check.sh)
#       . /lab/lib.sh
#
# Every helper that checks something calls fail on mismatch, which prints the
# reason plus the tail of the kernel log and exits 1. Scripts run with
# `set -o pipefail`; they need not add `set -e` (explicit checks read better).
# Environment from the lab: FX_MEMBERS ("/dev/nvme0n1 ..."), FX_KVER, FX_LAB=1.

set -o pipefail
FX_TEST=${FX_TEST:-$(basename "$0" .sh)}
read -r -a FX_MEMBER_LIST <<< "${FX_MEMBERS:-}"
export FX_MEMBER_LIST

# log MSG...: progress line with the guest uptime
log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $FX_TEST: $*"; }

# fail MSG...: report, show the last kernel messages, exit 1
fail() {
	echo "FAIL: $FX_TEST: $*" >&2
	echo "--- last kernel messages:" >&2
	dmesg | tail -n 20 >&2
	exit 1
}

# jv a.b.0.c FILE: value from a saved JSON document (dotted path, numbers index arrays)
jv() {
	local v
	v=$(jq -r ".$(sed 's/\.\([0-9][0-9]*\)/[\1]/g' <<<"$1")" "$2") || fail "bad JSON in $2"
	[ "$v" != null ] || fail "JSON from fxctl lacks $1 ($2)"
	echo "$v"
}

# fx_disks: the fxN disks that exist now, one name per line
fx_disks() {
	local d
	for d in /sys/block/fx*; do
		[ -e "$d" ] || continue
		echo "${d##*/}"
	done
}

# fxdev NAME: the /dev/fxN of volume NAME (from sysfs fxblk/name)
fxdev() {
	local d
	for d in /sys/block/fx*; do
		[ "$(cat "$d/fxblk/name" 2>/dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}

# pass [MSG]: final success line, exit 0
pass() { echo "PASS: $FX_TEST${1:+: $*}"; exit 0; }

# fx_run CMD...: run, echo the command, fail if it fails. Output goes to
# stdout and is kept in $FX_OUT (stdout+stderr).
fx_run() {
	log "+ $*"
	FX_OUT=$("$@" 2>&1)
	local rc=$?
	[ -z "$FX_OUT" ] || printf '%s\n' "$FX_OUT"
	[ $rc = 0 ] || fail "'$*' exited $rc"
}

# fx_expect_fail [--rc N] [--msg REGEX] CMD...: CMD must fail (with status N
# if given, with REGEX in its stdout+stderr if given). Output in $FX_OUT.
fx_expect_fail() {
	local want_rc='' want_msg=''
	while :; do
		case $1 in
		--rc) want_rc=$2; shift 2 ;;
		--msg) want_msg=$2; shift 2 ;;
		*) break ;;
		esac
	done
	log "+ (expect failure) $*"
	FX_OUT=$("$@" 2>&1)
	local rc=$?
	[ -z "$FX_OUT" ] || printf '%s\n' "$FX_OUT"
	[ $rc != 0 ] || fail "'$*' succeeded but should have failed"
	[ -z "$want_rc" ] || [ "$rc" = "$want_rc" ] || fail "'$*' exited $rc, expected $want_rc"
	[ -z "$want_msg" ] || grep -Eq -- "$want_msg" <<< "$FX_OUT" ||
		fail "'$*' output lacks /$want_msg/"
}

# expect_eq ACTUAL EXPECTED WHAT: compare strings
expect_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }

# expect_match TEXT REGEX WHAT: extended regex match
expect_match() { grep -Eq -- "$2" <<< "$1" || fail "$3: '$1' does not match /$2/"; }

# errno_name N: EPERM, EINVAL, ... for small errno numbers (for messages)
errno_name() {
	case $1 in
	1) echo EPERM ;; 2) echo ENOENT ;; 12) echo ENOMEM ;; 13) echo EACCES ;;
	16) echo EBUSY ;; 17) echo EEXIST ;; 19) echo ENODEV ;; 22) echo EINVAL ;;
	28) echo ENOSPC ;; 95) echo EOPNOTSUPP ;; *) echo "errno$1" ;;
	esac
}

# as_nobody CMD...: run CMD as an unprivileged user (uid/gid 65534, no caps)
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		--bounding-set=-all -- "$@"
}

# dmesg markers: fx_mark NAME writes "fxlab-mark: NAME" to the kernel log;
# fx_dmesg_since NAME prints the kernel messages after that mark.
fx_mark() { echo "fxlab-mark: $1" > /dev/kmsg; }
fx_dmesg_since() { dmesg | sed -n "/fxlab-mark: $1\$/,\$p" | sed 1d; }

# fx_dmesg_clean_since NAME: fail if the kernel complained since the mark.
# (The lab also checks the whole log after the script; this pins it to a step.)
# Same two classes as tests/lab/run: FX_BAD_LOG always counts; FX_IOERR_LOG
# counts unless the line matches a "# lab-allow: ERE" line of this script.
FX_BAD_LOG='WARNING:|BUG:|BUG [^ :]+ \((Not t|T)ainted|Oops|KASAN|UBSAN|circular locking|recursive locking|INFO: |general protection|list_(del|add) corruption|Call Trace|kernel BUG|refcount_t:|blocked for more than'
FX_IOERR_LOG='I/O error|beyond end of device|fxblk: .* failed ([0-9]+ )?I/O|(critical [a-z ]+|timeout|recoverable transport|protection|kernel resource|device resource) error, dev|I/O Error \(sct'
FX_ALLOW_LOG=$(sed -n 's/^# lab-allow: *\(..*\)$/(\1)/p' "$0" 2>/dev/null | paste -sd'|')
fx_dmesg_clean_since() {
	local log bad
	log=$(fx_dmesg_since "$1")
	bad=$(grep -E "$FX_BAD_LOG" <<< "$log"
		if [ -n "$FX_ALLOW_LOG" ]; then
			grep -E "$FX_IOERR_LOG" <<< "$log" | grep -vE "$FX_ALLOW_LOG"
		else
			grep -E "$FX_IOERR_LOG" <<< "$log"
		fi)
	[ -z "$bad" ] || fail "kernel log after mark '$1': $bad"
}

# fx_mstat DEV FIELD: a member's block-layer counter (/sys/block/X/stat:
# 5 = write ios, 12 = discard ios, 16 = flush ios; write-zeroes counts as a
# write, op_stat_group()). With nvme multipath the head may not account I/O
# (iostats off on the head); its path disks nvmeXcYnZ do: the larger of the
# head's count and the paths' sum.
fx_mstat() {
	local n=${1#/dev/} f=$2 h s=0 p
	h=$(awk -v f="$f" '{print $f}' "/sys/block/$n/stat")
	for p in /sys/block/${n%n*}c*n${n##*n}; do
		[ -e "$p/stat" ] && s=$((s + $(awk -v f="$f" '{print $f}' "$p/stat")))
	done
	echo $((h > s ? h : s))
}

# fx_crash_setup: for a crash test (`--persist --boots N`, N >= 2, 4
# members): M = the first 4 of FX_MEMBERS, P = the persistent scratch dir
fx_crash_setup() {
	read -r -a M <<<"${FX_MEMBERS:-}"
	[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
	M=("${M[@]:0:4}")
	P=${FX_PERSIST_DIR:-}
	[ -n "$P" ] && [ -d "$P" ] || fail "needs the lab's --persist (FX_PERSIST_DIR unset)"
	[[ ${FX_BOOT:-} =~ ^[0-9]+$ ]] && [ "${FX_BOOTS:-1}" -ge 2 ] ||
		fail "needs --boots N, N >= 2 (FX_BOOT='${FX_BOOT:-}' FX_BOOTS='${FX_BOOTS:-}')"
}

# fx_peerq_sum FXN FIELD [MEMBER]: the sum of FIELD=N over the lines of
# fxN's members (or member MEMBER's) in fxblk's debugfs peerq file
fx_peerq_sum() {
	awk -v f="$2" -v m="${3:-}" -v v="$1" '
		$1 == v && (m == "" || $2 == "member=" m) {
			for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) s += kv[2] } }
		END { print s + 0 }' /sys/kernel/debug/fxblk/peerq
}

# fx_peerq_field FXN MEMBER FIELD: FIELD of member MEMBER's line of fxN in
# fxblk's debugfs peerq file (a number, a state, a name)
fx_peerq_field() {
	sed -n "s/^$1 member=$2 .* $3=\([^ ]*\).*/\1/p" /sys/kernel/debug/fxblk/peerq
}

# fx_fill_ref DEV MIB: MIB MiB of random data written to DEV and fsynced,
# kept in /tmp/ref; REF_MIB and REF_SUM (its md5) for fx_expect_ref
fx_fill_ref() {
	dd if=/dev/urandom of=/tmp/ref bs=1M count="$2" status=none || fail "make reference data"
	dd if=/tmp/ref of="$1" bs=1M oflag=direct conv=fsync status=none || fail "write $1"
	REF_MIB=$2
	REF_SUM=$(md5sum </tmp/ref | cut -d' ' -f1)
}
# fx_expect_ref DEV WHAT: DEV's first REF_MIB MiB read back (O_DIRECT)
# equal what fx_fill_ref wrote
fx_expect_ref() {
	expect_eq "$(dd if="$1" bs=1M count="$REF_MIB" iflag=direct status=none | md5sum |
		cut -d' ' -f1)" "$REF_SUM" "$2"
}

# fx_peer_members N: M, the members from FX_MEMBERS (at least N); PT, the
# peer-test tool; DBG, fxblk's debugfs peerq file; PARAM, its parameters
fx_peer_members() {
	# shellcheck disable=SC2034 # for the test that sources this file
	read -r -a M <<<"${FX_MEMBERS:-}"
	[ "${#M[@]}" -ge "$1" ] || fail "needs $1 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
	PT=/lab/modules/peer-test
	[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
	# shellcheck disable=SC2034
	DBG=/sys/kernel/debug/fxblk/peerq PARAM=/sys/module/fxblk/parameters
}

# fx_peerq_load [off]: debugfs mounted (its peerq file), fxblk loaded with
# peer_queues=1, or without it for "off" (a negative control)
fx_peerq_load() {
	grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
		mount -t debugfs debugfs /sys/kernel/debug || fail "mount debugfs"
	if [ "${1:-}" = off ]; then
		modprobe fxblk || fail "modprobe fxblk"
	else
		modprobe fxblk peer_queues=1 || fail "modprobe fxblk peer_queues=1"
	fi
}

# fx_peer_check_rw DEV: a peer read and a peer write of DEV (fxN, 64 KiB
# chunks, 2 members or more) through /lab/modules/peer-test, host memory,
# each equal to the block path (labs 67, 69)
fx_peer_check_rw() {
	local dev=$1 pt=/lab/modules/peer-test
	[ -x $pt ] || fail "$pt missing (tests/lab/modules/build.sh builds it)"
	head -c $((2 << 20)) /dev/urandom >/tmp/ref
	dd if=/tmp/ref of="$dev" bs=1M oflag=direct status=none || fail "dd the reference to $dev"
	# 200 KiB at 100 KiB + 512: both members, no chunk boundary aligned
	fx_run $pt rwfile read "$dev" 512 102912 204800 /tmp/got host
	dd if=/tmp/ref of=/tmp/want bs=512 skip=201 count=400 status=none
	cmp -s /tmp/got /tmp/want || fail "peer read of $dev differs from the block path"
	head -c 131072 /dev/urandom >/tmp/new
	fx_run $pt rwfile write "$dev" 0 65536 131072 /tmp/new host
	dd if="$dev" of=/tmp/back bs=512 skip=128 count=256 iflag=direct status=none ||
		fail "dd read back of $dev"
	cmp -s /tmp/new /tmp/back || fail "peer write to $dev not read back by the block path"
	log "ok: peer read and write of $dev equal the block path"
}

# skip REASON: a sub-check that cannot run here says so (make check shows
# these lines as notes under the test); the test goes on.
skip() { echo "SKIP: $FX_TEST: $*"; }

# fx_slab NAME: active object count of a slab cache (0 if absent), for leak
# checks: before=$(fx_slab fxblk_io); ...; expect_eq "$(fx_slab fxblk_io)" "$before" leak
fx_slab() { awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print 0}' /proc/slabinfo; }

# fx_module_refcnt: reference count of the fxblk module
fx_module_refcnt() { cat "/sys/module/fxblk/refcnt"; }

# fx_load: modprobe fxblk and check it is there
fx_load() {
	modprobe fxblk || fail "modprobe fxblk failed"
	[ -d /sys/module/fxblk ] || fail "/sys/module/fxblk missing after modprobe"
}

# fx_unload: rmmod fxblk and check it is gone
fx_unload() {
	rmmod fxblk || fail "rmmod fxblk failed (refcnt $(fx_module_refcnt))"
	[ ! -d /sys/module/fxblk ] || fail "/sys/module/fxblk still present after rmmod"
}

# fx_json CMD... : run CMD (e.g. fxctl -o json show v), check it printed
# valid JSON, keep it in $FX_JSON;  jqr FILTER: jq -r FILTER on $FX_JSON
fx_json() {
	fx_run "$@"
	FX_JSON=$(printf '%s' "$FX_OUT" | jq -c . 2>/dev/null) || fail "'$*' did not print valid JSON"
}
jqr() { printf '%s' "$FX_JSON" | jq -r "$1"; }

# fx_crash: end boot K < N of a `--persist --boots N` run the way a power
# cut would: no sync, no unmount, no teardown. Tells the host that this death
# is intended (the marker) and sends it the kernel log so far (checked like
# any run's), then resets the VM with sysrq b. Boot K+1 runs the script again
# with FX_BOOT=K+1 on the same members.
fx_crash() {
	[[ ${FX_BOOT:-} =~ ^[0-9]+$ ]] && [ "$FX_BOOT" -lt "${FX_BOOTS:-1}" ] ||
		fail "fx_crash only in boots before the last of a --persist --boots N run (FX_BOOT=${FX_BOOT:-unset} FX_BOOTS=${FX_BOOTS:-unset})"
	# closing ttyS1 waits until the UART has sent it all
	{
		echo "FXLAB crash-marker $(cut -d' ' -f1 /proc/uptime)"
		echo "FXLAB dmesg-begin"
		dmesg
		echo "FXLAB dmesg-end"
	} > /dev/ttyS1
	log "crashing the VM on purpose (sysrq b)"
	echo b > /proc/sysrq-trigger
	sleep 10
	fail "still running 10 s after sysrq b"
}

# NVMe-oF members by their target subsystem (init connects member I to
# subsystem $FX_NQN_BASE<I> at $FX_TARGET_IP), for tests that disconnect and
# reconnect members: kernel names (nvmeXnY) change, the subsystems do not.
FX_TARGET_IP=10.0.0.1
FX_NQN_BASE=nqn.2026-11.io.fxblk.lab:member
# fx_member_dev I: /dev/nvmeXnY of member I now, or fail-free status 1 if absent
fx_member_dev() {
	local d
	for d in /sys/block/nvme*n*; do
		case ${d##*/} in *c*) continue ;; esac	# multipath path nodes
		[ "$(cat "$d/device/subsysnqn" 2>/dev/null)" = "$FX_NQN_BASE$1" ] &&
			[ "$(cat "$d/size" 2>/dev/null)" != 0 ] && { echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
# fx_member_connect I...: connect members I... in that order, each waited for
fx_member_connect() {
	local i w
	for i in "$@"; do
		nvme connect -t rdma -a $FX_TARGET_IP -s 4420 -n "$FX_NQN_BASE$i" >/dev/null ||
			fail "nvme connect member $i"
		for ((w = 0; w < 600; w++)); do
			fx_member_dev "$i" >/dev/null && [ -b "$(fx_member_dev "$i")" ] && break
			sleep 0.05
		done
		fx_member_dev "$i" >/dev/null || fail "member $i: no namespace 30 s after connecting"
	done
}
# fx_member_disconnect I...: disconnect members I..., waiting until they are gone
fx_member_disconnect() {
	local i w
	for i in "$@"; do
		nvme disconnect -n "$FX_NQN_BASE$i" >/dev/null || fail "nvme disconnect member $i"
		for ((w = 0; w < 600; w++)); do
			fx_member_dev "$i" >/dev/null || break
			sleep 0.05
		done
		! fx_member_dev "$i" >/dev/null || fail "member $i still present 30 s after disconnecting"
	done
}
# fx_udev_busy: what udevd is doing now (for a failed settle): the queue
# file, and every process below udevd with its state, kernel wait channel
# and command line, so that a stuck RUN+= program is named in the log
fx_udev_busy() {
	local p c pp set=" "
	echo "--- udev queue: $([ -e /run/udev/queue ] && echo not empty || echo empty)" >&2
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = systemd-udevd ] && set+="${p#/proc/} "
	done
	for _ in 1 2; do	# udevd's workers, then what they run
		for p in /proc/[0-9]*; do
			pp=$(awk '{print $4}' "$p/stat" 2>/dev/null) || continue
			[[ $set == *" $pp "* && $set != *" ${p#/proc/} "* ]] && set+="${p#/proc/} "
		done
	done
	for p in $set; do
		c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
		echo "--- pid $p $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) wchan=$(cat "/proc/$p/wchan" 2>/dev/null): $c" >&2
	done
}
# fx_settle [SECONDS]: udevadm settle (default 60 s) or fail. A settle that
# fails is tried once more with twice the time, and both failures are shown
# (udevadm's own message, the queue, udevd's workers), because under a
# loaded host TCG guests have been seen to fail one settle (CI of f294277,
# 52-assembly-trust on 6.12, the cause not in the summary); an event that is
# really stuck fails the second settle too, naming what it waits on.
fx_settle() {
	local t=${1:-60} err
	err=$(udevadm settle --timeout="$t" 2>&1) && return 0
	echo "NOTE: $FX_TEST: udevadm settle --timeout=$t failed (${err:-no message}); once more with $((2 * t)) s" >&2
	fx_udev_busy
	err=$(udevadm settle --timeout=$((2 * t)) 2>&1) && return 0
	fx_udev_busy
	fail "udevadm settle failed twice (${err:-no message}): udev events still queued, see the processes above"
}
# fx_breaks MODE... -- "$@": sets BREAK to MODE for a script argument
# break=MODE (a negative control), empty without one; any other argument
# fails the run, naming the modes
fx_breaks() {
	local modes=() a
	while [ "$1" != -- ]; do modes+=("$1"); shift; done
	shift
	BREAK=
	for a in "$@"; do
		if [[ $a == break=* && " ${modes[*]} " == *" ${a#break=} "* ]]; then
			# shellcheck disable=SC2034 # read by the calling test
			BREAK=${a#break=}
		else
			fail "unknown argument '$a' (break=$(IFS='|'; echo "${modes[*]}"))"
		fi
	done
}
# fx_wait_path PATH [SECONDS]: wait (default 30 s) until PATH exists
fx_wait_path() {
	local w
	for ((w = 0; w < ${2:-30} * 10; w++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# --hostfs (header word hostfs): the host's / exported read-only over
# virtio-9p (mount tag fxhost), for what the initramfs lacks (python3,
# numpy, torch). fx_hostfs_run [VAR=VAL...] CMD [ARGS...]: CMD chrooted in
# it, with the VM's /dev, /proc, /sys and /tmp bound over the host's, a
# clean environment (PATH, HOME=/tmp, LANG) plus the VARs, and the build
# tree's fxio package and libfxio on PYTHONPATH and LD_LIBRARY_PATH. Those
# and the source tree's fxio tests and examples are copied from the export
# into the VM's /tmp/fxhost first (FX_HOSTFS_PY, FX_HOSTFS_LIB,
# FX_HOSTFS_TESTS, FX_HOSTFS_EXAMPLES):
# a tree under the host's /tmp (a CI clone) is hidden by the VM's /tmp
# once that is bound. Mounted at the first call and left mounted (the page
# cache of what was read stays warm for the next call); init unmounts it
# after the script. Returns CMD's status.
FX_HOSTFS_ROOT=/lab/host
FX_HOSTFS_PY=/tmp/fxhost/py FX_HOSTFS_LIB=/tmp/fxhost/lib FX_HOSTFS_TESTS=/tmp/fxhost/tests
FX_HOSTFS_EXAMPLES=/tmp/fxhost/examples
fx_hostfs_mount() {
	local r=$FX_HOSTFS_ROOT d
	[ "${FX_HOSTFS:-0}" = 1 ] || fail "needs the lab's --hostfs (header word hostfs)"
	awk -v r="$r" '$2 == r {f = 1} END {exit !f}' /proc/mounts && return 0
	modprobe 9pnet_virtio || fail "modprobe 9pnet_virtio (mkbase.sh MODS)"
	modprobe 9p || fail "modprobe 9p (mkbase.sh MODS)"
	mkdir -p "$r"
	# cache=loose: the export cannot change under a read-only mount's reader
	# during a run, so the guest may cache its files and metadata
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 fxhost "$r" ||
		fail "mount -t 9p fxhost (the host's /, --hostfs)"
	[ -d "$r$FX_HOSTFS_CTL/ctl/fxio/python/fxio" ] ||
		fail "no fxio package at $FX_HOSTFS_CTL/ctl/fxio/python in the host's build tree (make fxctl)"
	mkdir -p $FX_HOSTFS_PY $FX_HOSTFS_LIB || fail "mkdir /tmp/fxhost"
	cp -a "$r$FX_HOSTFS_CTL/ctl/fxio/python/fxio" $FX_HOSTFS_PY/ &&
		cp -a "$r$FX_HOSTFS_CTL/ctl/fxio/"libfxio.so* $FX_HOSTFS_LIB/ &&
		cp -a "$r$FX_HOSTFS_TOP/ctl/fxio/python/tests" $FX_HOSTFS_TESTS &&
		cp -a "$r$FX_HOSTFS_TOP/ctl/fxio/python/examples" $FX_HOSTFS_EXAMPLES ||
		fail "copy the fxio package, libfxio and the fxio tests and examples from the export"
	for d in dev proc sys tmp; do
		mount --bind "/$d" "$r/$d" || fail "bind /$d into the host's / at $r/$d"
	done
}
fx_hostfs_run() {
	fx_hostfs_mount
	chroot "$FX_HOSTFS_ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 \
		PYTHONPATH=$FX_HOSTFS_PY LD_LIBRARY_PATH=$FX_HOSTFS_LIB \
		PYTHONDONTWRITEBYTECODE=1 "$@"
}
