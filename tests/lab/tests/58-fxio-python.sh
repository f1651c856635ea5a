#!/bin/bash
# lab: kernels=6.12 members=6 hostfs timeout=1200
# lab-break: break=nopeer ~ path posix, expected direct
# lab-break: break=fsdev ~ fx58fs is not on /dev/fx
# The fxio Python package over a real /dev/fxN (4 NVMe-oF members, 64 KiB
# chunks) and over xfs on a second one (the other 2 members), with the host's python3, numpy and torch, which the initramfs
# does not have: the lab's --hostfs exports the host's / read-only over
# virtio-9p and lib.sh's fx_hostfs_run runs pytest chrooted in it, with the
# build tree's fxio package and libfxio (the same files ctest's fxio-python
# ran). ctl/fxio/python/tests/test_fxdev.py (FXIO_TEST_DEV=/dev/fxN): numpy
# arrays and torch CPU tensors (uint8, float16, bfloat16, int64) written
# with write_from and read back with read_into, and checked against
# os.pread/os.pwrite of another descriptor, on the posix path (never
# registered), the staged path with the host engine (registered as emulated
# device memory; registered host memory unaligned) and the direct path
# (registered host memory, block aligned: FXBLK_PEER_IOC_RW), over ranges
# aligned, inside one block, across chunks and members, larger than the
# bounce pool (2 slots of 256 KiB here); async futures and batches mixing
# the paths, each I/O's path and reason asserted; four threads on one File,
# each on its own path, seeing their own last_path after every I/O, and the
# file's counters adding up; the KV-cache store (fxio.kvcache) on the raw
# volume with torch blocks, posix and direct. test_fxfs.py
# (FXIO_TEST_FSDIR: xfs on the second fxN, FXIO_TEST_FSDEV names it and the
# test checks the directory is on it): a model file saved with
# fxio.safetensors.save and torch.save, read cold with fxio.safetensors.load
# (O_DIRECT into one buffer, and staged through the pool), open().read() +
# views and torch.load, every tensor equal. fxblk.ko always creates /dev/fxblk-peer, so
# direct is asserted (FXIO_TEST_DIRECT=1), never skipped; every test must
# pass, none skip. Arg break=nopeer hides /dev/fxblk-peer from the chroot
# (/dev/null bound over it) while direct is still expected: the direct
# assertions must fail (make check's negative control, which stops at
# pytest's first failure). Arg break=fsdev tells test_fxfs.py (run alone,
# -x) that the file system is on the raw volume: its check that the
# directory is on that device must fail (make check: about a minute
# of one VM). Logged, not asserted: how long python3 takes to import numpy
# and torch over 9p under TCG (cold; pytest imports them warm after it).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 6 ] || fail "needs 6 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
[ "${FX_HOSTFS:-0}" = 1 ] || fail "needs the lab's --hostfs (header word hostfs)"
# what the kernel lacks, not fxio: the debug kernel built before
# debug.config had CONFIG_9P_FS (tests/expected-skips says so for it)
if ! modprobe 9p 2>/dev/null && ! grep -qw 9p /proc/filesystems; then
	skip "no 9p file system in $(uname -r) (CONFIG_9P_FS): the host's Python cannot reach the VM, fxio over /dev/fxN not tried"
	pass "nothing tried without 9p"
fi
fx_load
FSMNT=/tmp/fx58fs	# in the VM's /tmp, which the chroot's /tmp is
cleanup() {
	umount "$FX_HOSTFS_ROOT$FSMNT" 2>/dev/null
	fxctl remove t58 >/dev/null 2>&1
	fxctl remove t58fs >/dev/null 2>&1
}
trap cleanup EXIT
fx_run fxctl create t58 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t58) || fail "no /dev/fxN for t58"
fx_run fxctl create t58fs --chunk 64K "${M[@]:4:2}"
FSDEV=$(fxdev t58fs) || fail "no /dev/fxN for t58fs"
mkfs.xfs -f -K -q "$FSDEV" >/tmp/mkfs.out 2>&1 || { cat /tmp/mkfs.out; fail "mkfs.xfs $FSDEV"; }
[ -c /dev/fxblk-peer ] || fail "/dev/fxblk-peer missing: fxblk.ko creates it, so direct must be there"

fx_hostfs_mount
# mounted inside the bound /tmp, so the chroot sees it
mkdir -p "$FX_HOSTFS_ROOT$FSMNT" && mount -t xfs "$FSDEV" "$FX_HOSTFS_ROOT$FSMNT" ||
	fail "mount xfs of $FSDEV at $FX_HOSTFS_ROOT$FSMNT"
# a control stops at pytest's first failure (-x) and leaves out the import
# timings: it has to show that the assertions catch the break, not run the
# whole suite again (each torch import costs 15-60 s under TCG)
T=$FX_HOSTFS_TESTS/test_fxdev.py TFS=$FX_HOSTFS_TESTS/test_fxfs.py
XARGS=() PASSES=(cold) TESTS=("$T" "$TFS") FSDEV_TOLD=$FSDEV
if [ "${1:-}" = break=nopeer ]; then
	mount --bind /dev/null "$FX_HOSTFS_ROOT/dev/fxblk-peer" || fail "break=nopeer: bind mount"
	log "break=nopeer: /dev/fxblk-peer is /dev/null in the chroot; direct is still expected (pytest -x)"
	XARGS=(-x) PASSES=()
fi
if [ "${1:-}" = break=fsdev ]; then
	FSDEV_TOLD=$DEV
	log "break=fsdev: test_fxfs.py alone (pytest -x) is told $FSMNT is on $DEV (it is on $FSDEV): its check must fail"
	XARGS=(-x) PASSES=() TESTS=("$TFS")
fi

# the cost of the host's Python under TCG over 9p: the first import reads
# every file through the export (pytest's, next, reads the guest's cache)
for pass in "${PASSES[@]}"; do
	fx_run fx_hostfs_run python3 -c '
import time
t0 = time.monotonic(); import numpy
t1 = time.monotonic(); import torch
t2 = time.monotonic(); import fxio
t3 = time.monotonic()
print("import numpy %.1f s, torch %.1f s, fxio %.2f s (torch %s, numpy %s, fxio %s from %s)" % (
    t1 - t0, t2 - t1, t3 - t2, torch.__version__, numpy.__version__, fxio.VERSION, fxio.__file__))'
	log "python3 in the guest ($pass): $FX_OUT"
done

log "pytest ${TESTS[*]}: test_fxdev.py on $DEV, test_fxfs.py on xfs on $FSDEV"
# faulthandler: a test still running after 300 s prints every thread's stack
fx_hostfs_run FXIO_TEST_DEV="$DEV" FXIO_TEST_DIRECT=1 FXIO_POOL_SLOTS=2 FXIO_SLOT_KIB=256 \
	FXIO_TEST_FSDIR=$FSMNT FXIO_TEST_FSDEV="$FSDEV_TOLD" \
	python3 -m pytest -v -rA --durations=0 -o faulthandler_timeout=300 -p no:cacheprovider \
	--basetemp=/tmp/pytest58 "${XARGS[@]}" "${TESTS[@]}" 2>&1 | tee /tmp/pytest.out
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || fail "pytest over $DEV exited $rc"
# every test ran and passed: the summary line names nothing but passed (and
# warnings)
sum=$(grep -E '^=+ .* in [0-9.]+s' /tmp/pytest.out | tail -n1)
expect_match "$sum" '^=+ [0-9]+ passed(, [0-9]+ warnings?)? in ' "pytest summary over $DEV"
n=$(sed -E 's/^=+ ([0-9]+) passed.*/\1/' <<< "$sum")
[ "$n" -ge 10 ] || fail "pytest over $DEV: only $n tests passed"
grep -q 'test_fxfs.py::test_model_file_on_the_file_system PASSED' /tmp/pytest.out ||
	fail "the safetensors test on xfs over $FSDEV did not pass"
pass "fxio (numpy, torch) over $DEV: $n pytest tests on the posix, staged and direct paths; safetensors on xfs over $FSDEV"
