#!/bin/bash
# `make demo`: the main job so far, inside the lab VM (tests/lab/run --members 4
# -- tests/demo.sh): a striped fxblk volume over four NVMe-oF/RDMA namespaces,
# an XFS file system on it, a short fio run, `fxctl show` and `fxctl stats`.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "the demo needs NVMe-oF members (FX_MEMBERS is '${FX_MEMBERS:-}')"
step() { echo; echo "### $*"; }
show() { echo "\$ $*"; "$@" || fail "'$*' failed"; }
trap 'umount /mnt/demo 2>/dev/null; fxctl remove demo >/dev/null 2>&1' EXIT

step "The lab connected ${#M[@]} NVMe-oF namespaces over RDMA (Soft-RoCE, nvme-rdma):"
show nvme list
for m in "${M[@]}"; do
	d=${m#/dev/}
	echo "  $m: $(($(cat /sys/block/$d/size) / 2048)) MiB, transport $(cat /sys/block/$d/device/transport 2>/dev/null || cat /sys/class/nvme/${d%n*}/transport 2>/dev/null), $(cat /sys/block/$d/device/subsysnqn 2>/dev/null)"
done

step "Load the fxblk module and ask it for its version over generic netlink:"
show modprobe fxblk
show fxctl version

step "Stripe all ${#M[@]} namespaces into one volume 'demo' (512 KiB chunks):"
show fxctl create demo --chunk 512K "${M[@]}"
show fxctl list
show fxctl show demo
DEV=$(fxctl -o json show demo | jq -r .volume.device)
[ -b "$DEV" ] || fail "$DEV is not a block device"
echo "(the kernel sees $DEV with holders: $(ls /sys/block/${DEV#/dev/}/slaves | tr '\n' ' '))"

step "Put XFS on $DEV (stripe unit/width come from the volume's io_min/io_opt) and mount it:"
modprobe xfs 2>/dev/null
show mkfs.xfs -f -K "$DEV"
mkdir -p /mnt/demo
show mount "$DEV" /mnt/demo
show df -h /mnt/demo

step "A short fio run on a file in it: 1 MiB direct writes, then 128 KiB random reads (QD 16):"
# fio_summary LABEL FIO-ARGS...: run fio, print one line from its JSON
fio_summary() {
	local label=$1; shift
	echo "\$ fio $*"
	fio --eta=never --output-format=json "$@" >/tmp/demo-fio.json || fail "fio $label failed"
	jq -r --arg l "$label" '.jobs[0] | (if .read.io_bytes > 0 then .read else .write end) as $d |
		"  \($l): \($d.bw / 1024 | floor) MiB/s, \($d.iops | floor) IOPS, mean latency \($d.clat_ns.mean / 1000 | floor) us, p99 \(($d.clat_ns.percentile["99.000000"] // 0) / 1000 | floor) us"' \
		/tmp/demo-fio.json
}
fio_summary write --name=demo-write --filename=/mnt/demo/model.bin --size=128M --rw=write --bs=1M \
	--direct=1 --ioengine=libaio --iodepth=8 --end_fsync=1
fio_summary randread --name=demo-read --filename=/mnt/demo/model.bin --size=128M --rw=randread --bs=128k \
	--direct=1 --ioengine=libaio --iodepth=16 --runtime=5 --time_based
echo "(Soft-RoCE under TCG emulation: ~100 MiB/s for the whole fabric; see 'make bench' for comparisons)"

step "Per-member counters kept by fxblk (I/Os, sectors, latency histogram):"
show fxctl stats demo
echo "(the same as JSON for tools: fxctl -o json stats demo | jq '.volume.members[] | {disk, reads: .read.ios, writes: .write.ios, flushes: .flush.ios}')"
fxctl -o json stats demo | jq -c '.volume.members[] | {disk, reads: .read.ios, writes: .write.ios, flushes: .flush.ios}'

step "Unmount and remove the volume (data stays on the members; re-create to get it back):"
show umount /mnt/demo
show fxctl remove demo
show fxctl list
trap - EXIT
echo
echo "### demo done"
