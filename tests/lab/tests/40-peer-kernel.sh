#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=400
# Peer memory, kernel side (/dev/fxblk-peer; driver tests/peer/peer-test.c):
# - the module loads with no vendor module; PROVIDERS lists rocm and ascend
#   absent with the reason (their glue modules: 47-peer-vendor.sh), host
#   direct, dmabuf present but not direct;
#   PROVIDERS refuses a caller's count (its out field; C1 of the 2026-12-02
#   review: used as an index, it wrote past the array; badcount);
# - host memory: RW through /dev/fx0 (64 KiB chunks over 2 members) with a
#   range crossing chunks and members, checked byte for byte against
#   O_DIRECT; async RW with eventfd + REAP; every bad argument (alignment,
#   wrap-around, reserved fields, bad handle, double deregister, non-fxblk
#   fd) a clean errno; another process (fork, fork+exec) refused; a process
#   killed with memory registered leaves 0 pinned bytes; without
#   CAP_IPC_LOCK pins are charged to RLIMIT_MEMLOCK;
# - RW keeps /dev/fx0's page cache coherent as O_DIRECT does (a buffered
#   read after an RW write sees it, a dirty cached block neither overwrites
#   an RW write nor hides from an RW read) and a read-only disk (BLKROSET)
#   refuses RW writes with EPERM (cache);
# - revoke (test hook) with async I/Os in flight: handle REVOKED, new I/O
#   refused, the I/O drains, pinned bytes back to 0 (retried until QUERY
#   saw I/O in flight after the revoke; fails if it never does);
# - dmabuf through udmabuf (6.12; Debian's 6.1 has no udmabuf: SKIP): held,
#   not attached at registration (debugfs bufinfo lists no fxblk-peer; it
#   attaches only for a peer queue's NIC, lab 44), peer queues can move it,
#   not revocable;
# - the kernel log stays clean and fxblk unloads (no context leaked).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
PT=/lab/modules/peer-test
[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
cleanup() {
	fxctl remove t40 >/dev/null 2>&1
}
trap cleanup EXIT

fx_mark start
fx_load
[ -c /dev/fxblk-peer ] || fail "no /dev/fxblk-peer after loading fxblk"
expect_eq "$(stat -c %a /dev/fxblk-peer)" 666 "mode of /dev/fxblk-peer"
fx_run $PT providers
expect_match "$FX_OUT" '^host present=1 direct=1 .* reason=$' "host provider"
expect_match "$FX_OUT" '^rocm present=0 direct=0 .*reason=fxblk_rocm not loaded' \
	"rocm absent with its reason"
expect_match "$FX_OUT" '^ascend present=0 direct=0 .*reason=fxblk_ascend not loaded' \
	"ascend absent with its reason"
expect_match "$FX_OUT" "^dmabuf present=1 direct=0 .*reason=direct: only over fxblk's peer queues" \
	"dmabuf present, not direct, why"
fx_run $PT badcount

fx_run fxctl create t40 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t40) || fail "no /dev/fxN with sysfs name t40"
fx_run $PT host "$DEV"
fx_run $PT cache "$DEV"
fx_run $PT revoke-io "$DEV"
fx_run as_nobody $PT memlock

if [ -e /dev/udmabuf ] || modprobe udmabuf 2>/dev/null && [ -e /dev/udmabuf ]; then
	grep -q ' /sys/kernel/debug debugfs ' /proc/mounts ||
		mount -t debugfs debugfs /sys/kernel/debug ||
		fail "mount debugfs (the dma-buf attachment check reads its bufinfo)"
	fx_run $PT dmabuf "$DEV"
else
	skip "dmabuf provider not exercised: no udmabuf in $(uname -r) (CONFIG_UDMABUF is off in Debian's 6.1)"
fi

fx_run $PT providers
[ "$(grep -c ' pinned=0 regs=0 ' <<< "$FX_OUT")" = 4 ] ||
	fail "pinned bytes or registrations left: $FX_OUT"
fx_run fxctl remove t40
trap - EXIT
fx_unload
fx_dmesg_clean_since start
pass "providers (and a bad count), host RW sync/async, page cache, BLKROSET, errors, revoke, exit, dmabuf"
