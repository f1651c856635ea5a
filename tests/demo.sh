#!/bin/bash
# `make demo`: the main job end to end, inside the lab VM
# (tests/lab/run --udev --members 4 -- tests/demo.sh), with systemd-udevd and
# the project's udev rules running as on a host:
#   NVMe-oF targets up -> `fxctl connect-all` from /etc/nvme/config.json ->
#   `fxctl doctor` -> a labelled striped volume, XFS on it -> the members
#   disconnected and connected again -> udev assembles the volume by itself
#   -> the file system mounted by UUID -> fio -> `fxctl stats`.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
N=${#M[@]}
[ "$N" -ge 2 ] || fail "the demo needs NVMe-oF members (FX_MEMBERS is '${FX_MEMBERS:-}')"
[ "${FX_UDEV:-0}" = 1 ] || fail "the demo needs udevd: tests/lab/run --udev"
step() { echo; echo "### $*"; }
show() { echo "\$ $*"; "$@" || fail "'$*' failed"; }
members() { seq 0 $((N - 1)); }
trap 'umount /mnt/demo 2>/dev/null; fxctl stop demo >/dev/null 2>&1' EXIT

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

step "Per-member counters kept by fxblk:"
show fxctl stats demo

step "Unmount and stop (the labels stay: the next connect assembles it again):"
show umount /mnt/demo
show fxctl stop demo
show fxctl list
trap - EXIT
echo
echo "### demo done"
