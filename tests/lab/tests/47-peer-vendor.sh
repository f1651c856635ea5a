#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=600
# Peer memory, vendor glue (fxblk_rocm.ko, fxblk_ascend.ko) against fakes
# that behave as the real drivers (tests/peer/fake_*.c: amd_rdma v1 frees on
# its callback, v2 never calls back and keeps the buffer, Ascend page table
# version 0x1 with 2 MiB pages), each glue built against the fake's header
# and Module.symvers as DKMS builds it against the vendor's
# (tests/lab/modules/build.sh). Driver: tests/peer/peer-test.c "gpu".
# - load order: fxblk alone loads and lists rocm/ascend absent with why; a
#   glue without its vendor driver, or without fxblk, fails to load and
#   leaves nothing behind; a loaded glue holds its vendor and fxblk
#   (rmmod of either refused); a pinned registration holds the glue;
# - amd_rdma v1: revocation through the free callback and by the owner's
#   free, no put_pages after a callback (the fake counts and WARNs),
#   registration from a thread that exits (thread-group pid), exit cleanup;
# - amd_rdma v2: no callback, the owner's free leaves the memory pinned
#   until DEREGISTER, exit cleanup;
# - Ascend with 2 MiB device pages: page size reported, an unaligned VA
#   refused (EOPNOTSUPP), callback then put_pages after it, exit cleanup;
# - every pin released in fxblk and in the fakes, unload in order, log clean.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
LM=/lab/modules
PT=$LM/peer-test
for f in $PT $LM/fake_amdkfd.ko $LM/fake_ascend.ko $LM/amd-v1/fxblk_rocm.ko \
	$LM/amd-v2/fxblk_rocm.ko $LM/fxblk_ascend.ko; do
	[ -e "$f" ] || fail "$f missing (tests/lab/modules/build.sh builds it)"
done
cleanup() {
	fxctl remove t47 >/dev/null 2>&1
	rmmod fxblk_rocm fxblk_ascend 2>/dev/null
	rmmod fake_amdkfd fake_ascend 2>/dev/null
}
trap cleanup EXIT
gone() { [ ! -d "/sys/module/$1" ] || fail "$1 loaded after a failed insmod"; }

fx_mark start
# a glue needs fxblk: without it, it does not load
insmod $LM/fake_amdkfd.ko api=2 || fail "insmod fake_amdkfd"
fx_expect_fail --msg 'Unknown symbol' insmod $LM/amd-v2/fxblk_rocm.ko
gone fxblk_rocm
rmmod fake_amdkfd || fail "rmmod fake_amdkfd"

fx_load
fx_run $PT providers
expect_match "$FX_OUT" '^rocm present=0 direct=0 .*reason=fxblk_rocm not loaded: DKMS builds it where amdgpu-dkms' \
	"rocm absent, why"
expect_match "$FX_OUT" '^ascend present=0 direct=0 .*reason=fxblk_ascend not loaded' "ascend absent, why"
# a glue without its vendor driver fails cleanly
fx_expect_fail --msg 'Unknown symbol' insmod $LM/amd-v1/fxblk_rocm.ko
gone fxblk_rocm
fx_expect_fail --msg 'Unknown symbol' insmod $LM/fxblk_ascend.ko
gone fxblk_ascend
expect_match "$(fx_dmesg_since start)" 'fxblk_rocm: Unknown symbol amdkfd_query_rdma_interface' \
	"the kernel names the vendor symbol"
expect_eq "$(fx_module_refcnt)" 0 "fxblk refcount after the failed loads"

insmod $LM/fake_amdkfd.ko api=1 || fail "insmod fake_amdkfd api=1"
insmod $LM/amd-v1/fxblk_rocm.ko || fail "insmod fxblk_rocm (amd_rdma v1)"
insmod $LM/fake_ascend.ko page_size=2097152 || fail "insmod fake_ascend (2 MiB)"
insmod $LM/fxblk_ascend.ko || fail "insmod fxblk_ascend"
expect_match "$(fx_dmesg_since start)" 'fxblk_rocm: amd_rdma API v1' "glue built for API v1"
fx_run $PT providers
# v1 gives no mapping for a NIC: staged only; Ascend: over peer queues
# (FXBLK_PEER_F_PEERQ 0x20) where a volume has them
expect_match "$FX_OUT" '^rocm present=1 direct=0 flags=0xd .*reason=direct: no' "rocm (API v1) present through its glue"
expect_match "$FX_OUT" "^ascend present=1 direct=0 flags=0x2d .*reason=direct: only over fxblk's peer queues" \
	"ascend present through its glue"
# the glue holds the vendor driver and fxblk
fx_expect_fail rmmod fake_amdkfd
fx_expect_fail rmmod fake_ascend
fx_expect_fail rmmod fxblk

fx_run fxctl create t47 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t47) || fail "no /dev/fxN with sysfs name t47"
fx_run $PT gpu rocm "$DEV"
expect_match "$FX_OUT" 'amd_rdma API 1' "the fake served API v1"
fx_run $PT gpu ascend "$DEV"
expect_match "$FX_OUT" 'device page 2097152' "the fake served 2 MiB pages"
expect_eq "$(cat /sys/module/fake_amdkfd/parameters/double_frees)" 0 "v1 pins put after their callback"
[ "$(cat /sys/module/fake_amdkfd/parameters/callbacks)" -ge 2 ] ||
	fail "the v1 fake made no free callbacks"

rmmod fxblk_rocm || fail "rmmod fxblk_rocm (v1), no registration left"
rmmod fake_amdkfd || fail "rmmod fake_amdkfd after its glue"
insmod $LM/fake_amdkfd.ko api=2 || fail "insmod fake_amdkfd api=2"
insmod $LM/amd-v2/fxblk_rocm.ko || fail "insmod fxblk_rocm (amd_rdma v2)"
fx_run $PT gpu rocm "$DEV"
expect_match "$FX_OUT" 'amd_rdma API 2' "the fake served API v2"
expect_eq "$(cat /sys/module/fake_amdkfd/parameters/callbacks)" 0 "v2 made no free callback"

fx_run $PT providers
[ "$(grep -c ' pinned=0 regs=0 ' <<< "$FX_OUT")" = 4 ] ||
	fail "pinned bytes or registrations left: $FX_OUT"
for f in fake_amdkfd fake_ascend; do
	expect_eq "$(cat /sys/module/$f/parameters/pins)" 0 "pins left in $f"
done
# unload in order: glue, then vendor; fxblk lists them absent again
rmmod fxblk_rocm fxblk_ascend || fail "rmmod of the glue modules"
rmmod fake_amdkfd fake_ascend || fail "rmmod of the fakes after their glue"
fx_run $PT providers
expect_match "$FX_OUT" '^rocm present=0 ' "rocm absent after its glue went"
expect_match "$FX_OUT" '^ascend present=0 ' "ascend absent after its glue went"
fx_run fxctl remove t47
trap - EXIT
fx_unload
fx_dmesg_clean_since start
pass "glue load order, amd_rdma v1 and v2 lifetimes, Ascend 2 MiB, cleanup, unload order"
