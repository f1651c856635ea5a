#!/bin/bash
# lab: kernels=6.1,6.12 quick=none members=2 file=udev/60-fxblk.rules:/etc/udev/rules.d/60-fxblk.rules
# udev/60-fxblk.rules gives every volume /dev/fx/<name>: the module's
# /sys/block/fxN/fxblk/name, read by the rule through `udevadm test` (the lab
# runs no udev daemon; `udevadm test` applies the rules and creates the links
# itself). After re-creating under another name the link follows the name,
# and partitions get no link of their own. The volume's UUID: the module's
# /sys/block/fxN/fxblk/uuid is the members' labels' (fxctl passed it at
# create), `fxctl show` reports it, and the rule links
# /dev/disk/by-id/fxblk-uuid-<uuid> to the disk.
. /lab/lib.sh
set -- $FX_MEMBERS
[ -f /etc/udev/rules.d/60-fxblk.rules ] || fail "rule file not in the VM"
mkdir -p /run/udev
modprobe fxblk || fail "modprobe fxblk"

udev_add() {	# udev_add SYSPATH: apply the rules as for an "add" uevent
	udevadm test --action=add "$1" > /tmp/udev.out 2>&1 || { cat /tmp/udev.out; fail "udevadm test $1"; }
}

fx_run fxctl create kv-cache.0 --chunk 64K "$1" "$2"
D=$(fxdev kv-cache.0) || fail "no device for kv-cache.0"
[ "$(cat /sys/block/${D#/dev/}/fxblk/name)" = kv-cache.0 ] || fail "sysfs fxblk/name is not kv-cache.0"
udev_add /sys/block/${D#/dev/}
grep -q "DEVLINKS=.*/dev/fx/kv-cache.0" /tmp/udev.out || { cat /tmp/udev.out; fail "no /dev/fx/kv-cache.0 in DEVLINKS"; }
[ "$(readlink -f /dev/fx/kv-cache.0)" = "$D" ] || fail "/dev/fx/kv-cache.0 -> $(readlink -f /dev/fx/kv-cache.0), not $D"
grep -q "FXBLK_NAME=kv-cache.0" /tmp/udev.out || fail "FXBLK_NAME not set"
fx_json fxctl -o json examine "$1"
U=$(jqr .label.volume_uuid)
expect_match "$U" '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' "label's volume uuid"
expect_eq "$(cat /sys/block/${D#/dev/}/fxblk/uuid)" "$U" "sysfs fxblk/uuid"
fx_json fxctl -o json show kv-cache.0
expect_eq "$(jqr .volume.uuid)" "$U" "show's uuid"
grep -q "DEVLINKS=.*/dev/disk/by-id/fxblk-uuid-$U" /tmp/udev.out || { cat /tmp/udev.out; fail "no by-id fxblk-uuid link in DEVLINKS"; }
expect_eq "$(readlink -f /dev/disk/by-id/fxblk-uuid-$U)" "$D" "/dev/disk/by-id/fxblk-uuid-$U"
fx_run fxctl remove kv-cache.0
# no udevd here to process the "remove" uevent: drop the links by hand
rm -rf /dev/fx "/dev/disk/by-id/fxblk-uuid-$U"

# same members, another name: the link follows the name
fx_run fxctl create models "$1" "$2"
D=$(fxdev models) || fail "no device for models"
udev_add /sys/block/${D#/dev/}
[ "$(readlink -f /dev/fx/models)" = "$D" ] || fail "/dev/fx/models missing after re-create"
# a new volume, a new UUID, and its own link
U2=$(cat /sys/block/${D#/dev/}/fxblk/uuid)
[ -n "$U2" ] && [ "$U2" != "$U" ] || fail "re-created volume's uuid '$U2' (was $U)"
expect_eq "$(readlink -f /dev/disk/by-id/fxblk-uuid-$U2)" "$D" "/dev/disk/by-id/fxblk-uuid-$U2"

# a partition is not a volume: no /dev/fx/ link for it
# one MBR entry: type 0x83, LBA 2048, 8192 sectors; then the 0x55AA signature
printf '\000\000\000\000\203\000\000\000\000\010\000\000\000\040\000\000' |
	dd of="$D" bs=1 seek=446 conv=notrunc 2>/dev/null || fail "cannot write an MBR to $D"
printf '\125\252' | dd of="$D" bs=1 seek=510 conv=notrunc 2>/dev/null || fail "cannot sign the MBR"
blockdev --rereadpt "$D" 2>/dev/null || true
P=/sys/block/${D#/dev/}/${D#/dev/}p1
[ -d "$P" ] || fail "no partition ${D}p1 after partitioning"
udev_add "$P"
grep -q "DEVLINKS=.*/dev/fx/" /tmp/udev.out && fail "partition got a /dev/fx/ link"
grep -q "DEVLINKS=.*fxblk-uuid-" /tmp/udev.out && fail "partition got a by-id fxblk-uuid link"
fx_run fxctl remove models
pass "udev rule links /dev/fx/<name> and /dev/disk/by-id/fxblk-uuid-<label uuid> to the volume, follows renames, skips partitions"
