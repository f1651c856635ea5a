#!/bin/bash
# `make demo`: the main job end to end, inside the lab VM
# (tests/lab/run --udev --members 4 -- tests/demo.sh), with systemd-udevd and
# the project's udev rules running as on a host:
#   NVMe-oF targets up -> `fxctl connect-all` from /etc/nvme/config.json ->
#   `fxctl doctor` -> a labelled striped volume, XFS on it -> the members
#   disconnected and connected again -> udev assembles the volume by itself
#   -> the file system mounted by UUID -> fio -> `fxctl stats`.
# Between create and mkfs: "GPU" memory written to and read from the
# volume over fxblk's own NVMe-oF/RDMA queues (peer_queues=1), with the
# lab's stand-in for a GPU said plainly: tests/peer/fake_amdkfd.c exports
# AMD's amd_rdma API 2 over host pages, fxblk_rocm.ko is the real glue
# built against it, Soft-RoCE needs peer_virt_dma=1 (lab 44 tests this
# path; here it is shown, with the bytes the peer queues moved). After fio: a safetensors model saved and loaded from Python
# through libfxio (fxio.safetensors, the host's python3 and numpy over the
# lab's --hostfs), with its time.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
N=${#M[@]}
[ "$N" -ge 2 ] || fail "the demo needs NVMe-oF members (FX_MEMBERS is '${FX_MEMBERS:-}')"
[ "${FX_UDEV:-0}" = 1 ] || fail "the demo needs udevd: tests/lab/run --udev"
step() { echo; echo "### $*"; }
show() { echo "\$ $*"; "$@" || fail "'$*' failed"; }
members() { seq 0 $((N - 1)); }
cleanup() {
	umount "$FX_HOSTFS_ROOT/tmp/demo" /mnt/demo 2>/dev/null
	fxctl stop demo >/dev/null 2>&1
	rmmod fxblk_rocm fake_amdkfd 2>/dev/null
}
trap cleanup EXIT

step "The lab's NVMe-oF targets: $N subsystems over RDMA (Soft-RoCE), kernel nvmet over null_blk."
step "Write libnvme's configuration (what nvme-cli's connect-all reads too) and connect:"
# shellcheck disable=SC2046 # one argument per member
fx_member_disconnect $(members)
{
	printf '[{"hostnqn": "%s", "hostid": "%s", "subsystems": [' "$(cat /etc/nvme/hostnqn)" "$(cat /etc/nvme/hostid)"
	for i in $(members); do
		[ "$i" = 0 ] || printf ','
		printf '{"nqn": "%s%s", "ports": [{"transport": "rdma", "traddr": "%s", "trsvcid": "4420"}]}' \
			"$FX_NQN_BASE" "$i" "$FX_TARGET_IP"
	done
	printf ']}]\n'
} | jq . >/etc/nvme/config.json || fail "writing /etc/nvme/config.json"
show cat /etc/nvme/config.json
show fxctl connect-all
show nvme list
for i in $(members); do M[i]=$(fx_member_dev "$i") || fail "member $i not connected"; done

step "Load fxblk and check the host:"
show modprobe fxblk
show fxctl version
echo "\$ fxctl doctor"
fxctl doctor
echo "(exit status $?: 0 without error findings)"

step "Stripe the $N namespaces into volume 'demo' (labels written on each member):"
show fxctl create demo --chunk 512K "${M[@]}"
show ls -l /dev/fx/demo
show fxctl show demo
show fxctl examine "${M[0]}"

step "GPU memory to and from the volume, no host copy: fxblk's own NVMe-oF/RDMA queues, the NIC moving it"
echo "(The lab's stand-in, not a GPU: fake_amdkfd exports AMD's amd_rdma API 2 over host pages;"
echo " fxblk_rocm is fxblk's ROCm glue built against it; Soft-RoCE needs peer_virt_dma=1, a lab-only setting.)"
show insmod /lab/modules/fake_amdkfd.ko api=2
show insmod /lab/modules/amd-v2/fxblk_rocm.ko
P=/sys/module/fxblk/parameters
echo "\$ echo 1 > $P/peer_queues; echo 1 > $P/peer_virt_dma"
{ echo 1 > $P/peer_queues && echo 1 > $P/peer_virt_dma; } || fail "setting peer_queues and peer_virt_dma"
grep -q ' /sys/kernel/debug debugfs ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
FXN=$(basename "$(readlink -f /dev/fx/demo)")
# dma_bytes: what the peer queues moved between the NIC and DMA-only
# memory (the block path cannot move such memory at all: lab 44)
head -c $((4 << 20)) /dev/urandom >/tmp/weights
d0=$(fx_peerq_sum "$FXN" dma_bytes)
for op in write read; do
	f=$([ $op = write ] && echo /tmp/weights || echo /tmp/back)
	echo "\$ fxio-cp $op rocm /dev/fx/demo 0 4194304 $f"
	out=$(fxio-cp $op rocm /dev/fx/demo 0 $((4 << 20)) $f) || fail "fxio-cp $op rocm"
	echo "  $out"
	[[ $out == path=direct* ]] || fail "the $op of ROCm memory did not go direct"
done
cmp -s /tmp/weights /tmp/back || fail "the ROCm memory read back differs from what was written"
d1=$(fx_peerq_sum "$FXN" dma_bytes)
echo "  4 MiB written from fake ROCm memory and read back into it, equal; the peer queues'"
echo "  NIC moved $((d1 - d0)) bytes of device memory, all of it (a block device cannot move it)"
[ $((d1 - d0)) = $((8 << 20)) ] || fail "not all of it over the peer queues"
echo "\$ fxctl peer status   (this volume's queues)"
fxctl peer status | grep -A1 "^volume demo" || fail "fxctl peer status shows no volume demo"
echo 0 > $P/peer_virt_dma
show rmmod fxblk_rocm fake_amdkfd

step "Put XFS on it:"
modprobe xfs 2>/dev/null
show mkfs.xfs -q -f -K /dev/fx/demo
udevadm settle --timeout=60
FSUUID=$(blkid -s UUID -o value /dev/fx/demo)
[ -n "$FSUUID" ] || fail "no file system UUID on /dev/fx/demo"
fx_wait_path "/dev/disk/by-uuid/$FSUUID" 10 || fail "no /dev/disk/by-uuid/$FSUUID"
echo "file system UUID $FSUUID -> $(readlink -f /dev/disk/by-uuid/$FSUUID)"

step "Stop the volume and disconnect every member (as at shutdown):"
show fxctl stop demo
show fxctl disconnect --config /etc/nvme/config.json
[ ! -e /dev/fx/demo ] || fail "/dev/fx/demo still there"

step "Connect again: udev sees each namespace, 'fxctl incremental' records it, the last one assembles the volume:"
show fxctl connect-all
fx_wait_path /dev/fx/demo 60 || { ls -R /run/fxblk; fail "the volume did not assemble by itself"; }
udevadm settle --timeout=60
show fxctl show demo
fx_wait_path "/dev/disk/by-uuid/$FSUUID" 10 || fail "no /dev/disk/by-uuid/$FSUUID after assembly"

step "Mount it by UUID (as an fstab line UUID=$FSUUID would) and run fio:"
mkdir -p /mnt/demo
show mount -t xfs "/dev/disk/by-uuid/$FSUUID" /mnt/demo
show df -h /mnt/demo
# fio_summary LABEL FIO-ARGS...: run fio, print one line from its JSON
fio_summary() {
	local label=$1; shift
	echo "\$ fio $*"
	fio --eta=never --output-format=json "$@" >/tmp/demo-fio.json || fail "fio $label failed"
	jq -r --arg l "$label" '.jobs[0] | (if .read.io_bytes > 0 then .read else .write end) as $d |
		"  \($l): \($d.bw / 1024 | floor) MiB/s, \($d.iops | floor) IOPS, mean latency \($d.clat_ns.mean / 1000 | floor) us, p99 \(($d.clat_ns.percentile["99.000000"] // 0) / 1000 | floor) us"' \
		/tmp/demo-fio.json
}
fio_summary "checkpoint write" --name=demo-write --filename=/mnt/demo/model.bin --size=128M --rw=write \
	--bs=1M --direct=1 --ioengine=libaio --iodepth=8 --end_fsync=1
fio_summary "KV-cache random read" --name=demo-read --filename=/mnt/demo/model.bin --size=128M \
	--rw=randread --bs=512k --direct=1 --ioengine=libaio --iodepth=8 --runtime=5 --time_based
echo "(Soft-RoCE under TCG emulation: ~100 MiB/s for the whole fabric; see 'make bench' for comparisons)"

step "Save and load a model from Python: safetensors through libfxio (the host's python3 and numpy):"
fx_hostfs_mount
{ mkdir -p "$FX_HOSTFS_ROOT/tmp/demo" && mount --bind /mnt/demo "$FX_HOSTFS_ROOT/tmp/demo"; } ||
	fail "bind /mnt/demo into the host's / for python3"
echo "\$ python3: fxio.safetensors.save and load of 16 tensors, 32 MiB, on /mnt/demo"
fx_hostfs_run python3 - <<'EOF' || fail "the model's save and load from Python"
import time
import numpy as np
from fxio import safetensors as st
rng = np.random.default_rng(1)
model = {"layers.%d.weight" % i: rng.integers(0, 2**31, (512, 1024), dtype=np.int32)
         for i in range(16)}
path = "/tmp/demo/model.safetensors"
t0 = time.monotonic()
size = st.save(model, path)
t1 = time.monotonic()
got = st.load(path)
t2 = time.monotonic()
assert sorted(got) == sorted(model) and all(np.array_equal(got[k], v) for k, v in model.items())
mib = size / 2**20
print("  saved %.0f MiB in %.2f s (durable); loaded %d tensors in %.2f s (%.0f MiB/s, O_DIRECT "
      "into one buffer); every tensor equal" % (mib, t1 - t0, len(got), t2 - t1, mib / (t2 - t1)))
EOF
umount "$FX_HOSTFS_ROOT/tmp/demo" || fail "umount the bind of /mnt/demo"

step "Per-member counters kept by fxblk:"
show fxctl stats demo

step "Unmount and stop (the labels stay: the next connect assembles it again):"
show umount /mnt/demo
show fxctl stop demo
show fxctl list
trap - EXIT
echo
echo "### demo done"
