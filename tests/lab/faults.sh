# shellcheck shell=bash
# Fault-injection helpers for lab tests; in the VM at /lab/faults.sh.
# Use after lib.sh:   . /lab/lib.sh; . /lab/faults.sh
#
# Names of the fabric as tests/lab/init builds it: member i is null_blk
# nullb<i> (configfs $FL_NULLB/nullb<i>), exported by nvmet subsystem
# $FL_NQN<i> on port 1 (rdma 10.0.0.1:4420), connected in order so that it
# is /dev/nvme<i>n1 until a test reconnects it.
#
# Figures for docs/reliability.md: fl_result prints one parsable line
#   RESULT test=<name> kernel=<release> key=value ...
# A sub-check that cannot run: fl_skip REASON prints "SKIP: <test>: REASON".

FL_NVMET=/sys/kernel/config/nvmet
FL_NULLB=/sys/kernel/config/nullb
FL_NQN=nqn.2026-11.io.fxblk.lab:member
FL_IP=10.0.0.1
FL_SKIPS=0
export DM_DISABLE_UDEV=1

# fl_result KEY=VALUE...: the test's figures, one line
fl_result() { echo "RESULT test=$FX_TEST kernel=${FX_KVER:-?} $*"; }

# fl_skip REASON...: a sub-check that cannot run here
fl_skip() { echo "SKIP: $FX_TEST: $*"; FL_SKIPS=$((FL_SKIPS + 1)); }

# fl_now: guest uptime in seconds (float)
fl_now() { cut -d' ' -f1 /proc/uptime; }
# fl_since T0: seconds since fl_now gave T0, one decimal
fl_since() { awk -v a="$1" -v b="$(fl_now)" 'BEGIN {printf "%.1f", b - a}'; }

# The debug kernel (KASAN, lockdep: make check-debug) runs the same work
# several times slower under TCG, and make check-debug gives each run three
# times its timeout: the bounds a test waits for scale the same way. On the
# Debian kernels of make check they are what the test says.
FL_SLOW=${FL_SLOW:-$(case "$(uname -r)" in *fxdebug*) echo 3 ;; *) echo 1 ;; esac)}

# fl_wait SECS CMD...: poll CMD every 0.2 s until it succeeds; 1 on timeout
# (SECS times FL_SLOW)
fl_wait() {
	local end
	end=$(awk -v n="$(fl_now)" -v s="$1" -v k="$FL_SLOW" 'BEGIN {print n + s * k}')
	shift
	until "$@"; do
		awk -v n="$(fl_now)" -v e="$end" 'BEGIN {exit !(n > e)}' && return 1
		sleep 0.2
	done
}

# fl_bounded SECS OUT CMD...: run CMD with stdout+stderr to OUT, give it SECS
# seconds; returns its status, or 124 if it is still running (it is left
# running: a task in uninterruptible I/O sleep ignores even SIGKILL, so
# timeout(1) would wait for it too)
fl_bounded() {
	local secs=$1 out=$2 p
	shift 2
	"$@" >"$out" 2>&1 &
	p=$!
	fl_wait "$secs" eval "! kill -0 $p 2>/dev/null" || return 124
	wait $p
}

# fl_ctrl I: the controller (nvmeX) connected to member I's subsystem
fl_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$FL_NQN$1" ] && { echo "${c##*/}"; return 0; }
	done
	return 1
}

# fl_ctrl_count: how many NVMe controllers the host has
fl_ctrl_count() { local n=0 c; for c in /sys/class/nvme/nvme*; do [ -e "$c" ] && n=$((n + 1)); done; echo $n; }
# fl_disconnect_all: delete every controller (the lab's connects too), wait until gone
fl_disconnect_all() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/delete_controller" ] && echo 1 >"$c/delete_controller"
	done
	fl_wait 20 eval '[ "$(fl_ctrl_count)" = 0 ]' || fail "controllers left after disconnect: $(ls /sys/class/nvme)"
}

# fl_ctrl_state CTRL: live, connecting, resetting, deleting, ... ("" if gone)
fl_ctrl_state() { cat "/sys/class/nvme/$1/state" 2>/dev/null; }

# fl_member_dev I: /dev/nvmeXnY (the namespace head) of member I
fl_member_dev() {
	local b
	for b in /sys/block/nvme*n*; do
		[[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue	# not nvmeXcYnZ paths
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$FL_NQN$1" ] &&
			[ "$(cat "$b/size" 2>/dev/null)" != 0 ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# fl_reconnect I [--svcid N] NVME-CONNECT-OPTIONS...: disconnect member I and
# connect it again (through the port listening on service N, default 4420)
# with the options (e.g. --ctrl-loss-tmo=3 --reconnect-delay=1); sets FL_DEV
# to its namespace head. The device name may change.
fl_reconnect() {
	local i=$1 svc=4420
	shift
	[ "$1" != --svcid ] || { svc=$2; shift 2; }
	nvme disconnect -n "$FL_NQN$i" >/dev/null || fail "nvme disconnect $FL_NQN$i"
	fl_wait 20 eval '! fl_member_dev '"$i"' >/dev/null' || fail "member $i still present after disconnect"
	nvme connect -t rdma -a $FL_IP -s "$svc" -n "$FL_NQN$i" "$@" >/dev/null ||
		fail "nvme connect $FL_NQN$i $*"
	fl_wait 30 fl_member_dev "$i" >/dev/null || fail "namespace of $FL_NQN$i did not appear after reconnect"
	FL_DEV=$(fl_member_dev "$i")
	log "member $i reconnected as $FL_DEV ($(fl_ctrl "$i")) with: $*"
}

# fl_port_add N SVCID I...: a second nvmet port N (rdma, service SVCID)
# exporting members I...; fl_port_del N removes it: its controllers are
# dropped and new connects are refused at the transport (no listener), which
# hosts retry until ctrl_loss_tmo. (Unlinking a subsystem from a port that
# stays up is not a transient fault on 6.12: the target answers "invalid
# subsystem" with DNR and the host deletes the controller at once.)
fl_port_add() {
	local p=$FL_NVMET/ports/$1 i
	mkdir "$p" || fail "mkdir nvmet port $1"
	echo rdma >"$p/addr_trtype"; echo ipv4 >"$p/addr_adrfam"
	echo $FL_IP >"$p/addr_traddr"; echo "$2" >"$p/addr_trsvcid"
	shift 2
	for i in "$@"; do
		ln -s "$FL_NVMET/subsystems/$FL_NQN$i" "$p/subsystems/" || fail "link $FL_NQN$i to port $p"
	done
}
fl_port_del() {
	local p=$FL_NVMET/ports/$1
	[ -d "$p" ] || return 0
	rm -f "$p"/subsystems/*
	rmdir "$p" || fail "rmdir nvmet port $1"
}

# fl_stallable I: member I through a port of its own (port 2, service
# 4421; reconnect every second for up to 600 s), so that fl_port_del 2 stalls
# its I/O and fl_port_add 2 4421 I brings it back; sets FL_DEV.
# fl_stallable I TMO: the same with ctrl_loss_tmo TMO s (a member to lose).
# fl_stallable_end I: (for the EXIT trap) the port back, every volume
# removed (--force), member I disconnected and port 2 gone, as the lab's
# teardown (which knows port 1 only) needs.
fl_stallable() {
	fl_port_add 2 4421 "$1"
	fl_reconnect "$1" --svcid 4421 --reconnect-delay=1 --ctrl-loss-tmo="${2:-600}"
}
fl_stallable_end() {
	local v
	[ -d "$FL_NVMET/ports/2" ] || fl_port_add 2 4421 "$1"
	for v in $(fxctl -o json list 2>/dev/null | jq -r '.volumes[].name'); do
		fxctl remove --force "$v" >/dev/null 2>&1
	done
	nvme disconnect -n "$FL_NQN$1" >/dev/null 2>&1
	fl_port_del 2
}

# fl_nullb I: configfs directory of member I's null_blk (target side)
fl_nullb() { echo "$FL_NULLB/nullb$1"; }

# fl_dm NAME TABLE: dmsetup create without udev; fl_dm_remove NAME...
fl_dm() {
	modprobe dm_mod 2>/dev/null
	dmsetup create --noudevsync "$1" --table "$2" || fail "dmsetup create $1 '$2'"
	FL_DMS+=("$1")
}
fl_dm_remove() {
	local n
	for n in "$@"; do dmsetup remove --noudevsync "$n" >/dev/null 2>&1; done
}

# fl_dm_delay NAME DEV READ_MS WRITE_MS [FLUSH_MS]: dm-delay over DEV; with
# FLUSH_MS the 9-argument table (flushes as their own class, Linux 4.19+)
fl_dm_delay() {
	local sz t
	modprobe dm_delay 2>/dev/null || fail "modprobe dm_delay"
	sz=$(blockdev --getsz "$2") || fail "blockdev --getsz $2"
	t="0 $sz delay $2 0 $3 $2 0 $4"
	[ -z "${5:-}" ] || t+=" $2 0 $5"
	fl_dm "$1" "$t"
}

# fl_dev_id DEV: "major,minor" as block tracepoints print it
fl_dev_id() {
	local t
	t=$(stat -Lc '%t %T' "$1") || fail "stat $1"
	printf '%d,%d\n' "0x${t% *}" "0x${t#* }"
}

# fl_hung_task SECS: report tasks blocked longer than SECS (the lab fails
# the run on the "INFO: task ... blocked" report that follows a hang). Only
# lock and other uninterruptible waits are reported: block I/O waits
# (blk_io_schedule, submit_bio_wait) sleep in slices shorter than the timeout
# on purpose, so bound those by polling (fl_wait, fl_bounded).
fl_hung_task() {
	if [ -w /proc/sys/kernel/hung_task_timeout_secs ]; then
		echo "$1" > /proc/sys/kernel/hung_task_timeout_secs
		echo 1 > /proc/sys/kernel/hung_task_warnings 2>/dev/null || true
	else
		fl_skip "no /proc/sys/kernel/hung_task_timeout_secs: hangs are only caught by the time bounds"
	fi
}

# fl_jhas FILE FILTER: the jq FILTER on FILE yields something other than null
fl_jhas() { jq -e "$2 != null" "$1" >/dev/null 2>&1; }

# fl_events_start: record kernel uevents of block devices (KOBJ_CHANGE of
# fxN carries FXBLK_MEMBER / FXBLK_MEMBER_STATE) and, when a listener exists,
# the fxblk netlink events; fl_events_stop. Files: /tmp/fl-uevents, /tmp/fl-nlevents
FL_EV_PIDS=()
fl_events_start() {
	: > /tmp/fl-uevents; : > /tmp/fl-nlevents
	if command -v udevadm >/dev/null; then
		udevadm monitor --kernel --property --subsystem-match=block > /tmp/fl-uevents 2>&1 &
		FL_EV_PIDS+=($!)
	else
		fl_skip "udevadm not in the lab image: uevents not recorded"
	fi
	FL_NL_LISTENER=
	if fxctl monitor --help >/dev/null 2>&1; then
		FL_NL_LISTENER="fxctl monitor"
		fxctl -o json monitor > /tmp/fl-nlevents 2>&1 &
		FL_EV_PIDS+=($!)
	elif fxblk-nltest --help 2>&1 | grep -q -- '--listen'; then
		# shellcheck disable=SC2034 # read by the tests (21, 24)
		FL_NL_LISTENER="fxblk-nltest --listen"
		fxblk-nltest --listen > /tmp/fl-nlevents 2>&1 &
		FL_EV_PIDS+=($!)
	fi
	sleep 0.5	# listeners subscribed before the fault
}
fl_events_stop() {
	local p
	for p in "${FL_EV_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	FL_EV_PIDS=()
}

# fl_trace_start EVENT...: block tracepoints (e.g. block/block_bio_queue)
# into the trace buffer, cleared first; fl_trace_stop FILE saves it
FL_TRACE=/sys/kernel/tracing
# fl_tracefs: point FL_TRACE at a mounted tracefs (mounting it if needed)
fl_tracefs() {
	[ -d $FL_TRACE/events ] || mount -t tracefs nodev $FL_TRACE 2>/dev/null
	[ -d $FL_TRACE/events ] || FL_TRACE=/sys/kernel/debug/tracing
}
fl_trace_start() {
	local e
	fl_tracefs
	[ -d $FL_TRACE/events/block ] || fail "no block tracepoints in tracefs"
	echo 0 > $FL_TRACE/tracing_on
	echo 8192 > $FL_TRACE/buffer_size_kb
	: > $FL_TRACE/trace
	for e in "$@"; do echo 1 > "$FL_TRACE/events/$e/enable" || fail "enable tracepoint $e"; done
	echo 1 > $FL_TRACE/tracing_on
}
fl_trace_stop() {
	echo 0 > $FL_TRACE/tracing_on
	cat $FL_TRACE/trace > "$1"
	echo 0 > $FL_TRACE/events/enable
}

