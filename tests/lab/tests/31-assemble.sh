#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=320 udev timeout=600
# lab-break: --break primary ~ label source with its primary damaged
# Volumes come back by themselves, through the real udevd and our rules
# (udev/60-fxblk.rules, 61-fxblk-assembly.rules): create + mkfs.xfs + data,
# stop, disconnect every member and reconnect them in another order (kernel
# names change) -> the volume reappears with /dev/fx/<name> and the
# /dev/disk/by-uuid link of its file system, data intact. Then what must not
# assemble: 3 of 4 members (fxctl names the missing one; the 4th arriving
# completes it), a member left at an older label generation, two members
# claiming one index (member 0's label copied over member 1: the copy is
# foreign, member 1 missing). The target's null_blk backing devices carry
# the same labels without an NVMe identity: assemble ignores them (foreign
# copies beside the real members) with a warning. A member whose primary
# label is damaged (bad crc32c, magic intact) assembles from its backup; with
# both destroyed it is no member (fxctl names it missing), and with them
# restored the set is whole again. Only "add" events start assembly (review
# M6): a "change" event (the label writes here) on a member of a stopped
# volume leaves it stopped. --break primary leaves the primary label intact
# (the label source check must fail). At each step `fxctl assemble --scan`
# (changes nothing) must list the volume as stopped, running, incomplete.
. /lab/lib.sh
BREAK=
[ "${1:-}" = --break ] && BREAK=$2	# primary: member 1's primary label not destroyed
[ "${FX_UDEV:-0}" = 1 ] || fail "udevd is not running: the header needs 'udev' (tests/lab/run --udev)"
fx_load
read -r -a M <<< "$FX_MEMBERS"
V=kv-cache
all_members() { local i; for i in 0 1 2 3; do fx_member_dev $i; done; }
settle() { fx_settle; }
no_volume() {	# no_volume WHY: the volume must not be running
	settle
	sleep 1	# RUN+= programs finish before settle returns; one more breath
	settle
	! fxdev $V >/dev/null || { ls -R /run/fxblk; fail "$V was assembled: $1"; }
}
trap 'umount /mnt/v 2>/dev/null' EXIT
records() { ls /run/fxblk/"$VUUID" 2>/dev/null | wc -l; }
add_event() { udevadm trigger --action=add "$@" || fail "udevadm trigger --action=add $*"; }
# scan_expect STATUS WHEN: fxctl assemble --scan (changes nothing) lists
# the volume, by its UUID, with STATUS
scan_expect() {
	fx_json fxctl -o json assemble --scan
	expect_eq "$(jqr "[.volumes[] | select(.uuid == \"$VUUID\")] | length")" 1 "volumes with $V's UUID in assemble --scan $2"
	expect_eq "$(jqr ".volumes[] | select(.uuid == \"$VUUID\") | .status")" "$1" "$V's state in assemble --scan $2"
}

log "create, file system, data"
fx_run fxctl create $V --chunk 64K "${M[@]}"
settle
fx_wait_path /dev/fx/$V || fail "no /dev/fx/$V after create"
mkfs.xfs -q -f -K /dev/fx/$V || fail "mkfs.xfs /dev/fx/$V"
settle
FSUUID=$(blkid -s UUID -o value /dev/fx/$V)
[ -n "$FSUUID" ] || fail "blkid finds no file system UUID on /dev/fx/$V"
fx_wait_path /dev/disk/by-uuid/"$FSUUID" 10 || fail "no /dev/disk/by-uuid/$FSUUID for the xfs on /dev/fx/$V"
mkdir -p /mnt/v
mount -t xfs /dev/disk/by-uuid/"$FSUUID" /mnt/v || fail "mount by UUID"
dd if=/dev/urandom of=/mnt/v/data bs=1M count=16 status=none || fail "writing data"
SUM=$(sha256sum < /mnt/v/data)
umount /mnt/v || fail "umount"
settle
VUUID=$(fxctl examine --export "${M[0]}" | sed -n 's/^FXBLK_UUID=//p')
[ -n "$VUUID" ] || fail "fxctl examine --export ${M[0]} prints no FXBLK_UUID"
fx_run fxctl stop $V
settle
[ ! -e /dev/fx/$V ] || fail "/dev/fx/$V still there after stop"
scan_expect stopped "after stop"

log "reconnect in another order: the volume assembles itself"
fx_member_disconnect 0 1 2 3
fx_member_connect 3 1 0 2
[ "$(fx_member_dev 0)" != "${M[0]}" ] || fail "member 0 kept its name ${M[0]}: the reorder did not happen"
log "members now: $(all_members | tr '\n' ' ')"
settle
fx_wait_path /dev/fx/$V 30 || { ls -R /run/fxblk; fail "$V did not assemble after its members came back"; }
fx_json fxctl -o json show $V
for i in 0 1 2 3; do
	expect_eq "/dev/$(jqr ".volume.members[$i].disk")" "$(fx_member_dev $i)" "member $i of the assembled volume"
done
fx_wait_path /dev/disk/by-uuid/"$FSUUID" 10 || fail "no /dev/disk/by-uuid/$FSUUID after assembly"
mount -t xfs /dev/disk/by-uuid/"$FSUUID" /mnt/v || fail "mount by UUID after assembly"
expect_eq "$(sha256sum < /mnt/v/data)" "$SUM" "data after reassembly"
umount /mnt/v || fail "umount"
settle
scan_expect running "after reassembly"
expect_eq "/dev/$(jqr ".volumes[] | select(.uuid == \"$VUUID\") | .disk")" "$(readlink -f /dev/fx/$V)" "$V's disk in assemble --scan"
fx_run fxctl assemble $V
expect_match "$FX_OUT" "already running" "assemble of a running volume"
fx_run fxctl incremental "$(fx_member_dev 2)"
expect_match "$FX_OUT" "already running" "incremental for a running volume"
fx_run fxctl stop $V
settle

log "member 1's primary label damaged: the backup serves; both destroyed: not a member"
B=$(fx_member_dev 1)
SZ=$(blockdev --getsize64 "$B")
BK=$((SZ / 4096 - 4))	# the backup label's 4 KiB blocks (16 KiB, 4 KiB-aligned, below the end)
dd if="$B" of=/tmp/primary bs=4096 skip=1 count=4 iflag=direct status=none || fail "saving the primary label"
dd if="$B" of=/tmp/backup bs=4096 skip=$BK count=4 iflag=direct status=none || fail "saving the backup label"
# one byte of the volume name: the magic stays, the crc32c no longer matches
[ "$BREAK" = primary ] || printf 'X' | dd of="$B" bs=1 seek=$((4096 + 40)) conv=notrunc,fsync status=none ||
	fail "damaging the primary label"
fx_run fxctl examine --export "$B"
expect_match "$FX_OUT" '^FXBLK_LABEL=backup$' "$B: label source with its primary damaged"
# the write's "change" event, nor a rescan's (udevadm trigger --action=change,
# every member), starts the stopped volume; an "add" does
udevadm trigger --action=change --subsystem-match=block --sysname-match='nvme*' || fail "udevadm trigger --action=change"
no_volume "change events must not start a stopped volume"
add_event "/sys/class/block/${B#/dev/}"
settle
fx_wait_path /dev/fx/$V 30 || { ls -R /run/fxblk; fail "$V did not assemble with member 1's primary label damaged"; }
fx_run fxctl stop $V
settle
dd if=/dev/zero of="$B" bs=4096 seek=$BK count=4 conv=notrunc oflag=direct status=none || fail "zeroing the backup label"
add_event "/sys/class/block/${B#/dev/}"
no_volume "$B has neither label"
fx_expect_fail --rc 3 --msg "member 1 of 4 is missing: nsid 1 of ${FX_NQN_BASE}1" fxctl assemble $V
# both copies under one BSD lock: udevd holds the change events back until
# it is released
flock "$B" bash -c "dd if=/tmp/primary of=$B bs=4096 seek=1 conv=notrunc oflag=direct status=none &&
	dd if=/tmp/backup of=$B bs=4096 seek=$BK conv=notrunc oflag=direct status=none" || fail "restoring the labels"
no_volume "the labels' restore is a change event"
add_event "/sys/class/block/${B#/dev/}"
settle
fx_wait_path /dev/fx/$V 30 || fail "$V did not assemble once member 1's labels were back"
fx_run fxctl stop $V
settle

log "3 of 4 members: no volume, fxctl names the missing one"
fx_member_disconnect 0 1 2 3
fx_member_connect 0 1 3
no_volume "member 2 is not connected"
expect_eq "$(records)" 3 "members recorded under /run/fxblk/$VUUID"
fx_expect_fail --rc 3 --msg "member 2 of 4 is missing: nsid 1 of ${FX_NQN_BASE}2" fxctl assemble $V
fx_expect_fail --rc 3 --msg "member 2 of 4 is missing" fxctl assemble "$VUUID"
scan_expect incomplete "with member 2 away"
expect_match "$(jqr ".volumes[] | select(.uuid == \"$VUUID\") | .problems[]")" "member 2 of 4 is missing" "assemble --scan's reasons"
no_volume "assemble --scan changes nothing"
fx_member_connect 2
settle
fx_wait_path /dev/fx/$V 30 || fail "$V did not assemble when its last member came"
fx_run fxctl stop $V
settle

log "a member left at an older generation: refused"
G=$(fxblk-labeltool generation "$(fx_member_dev 3)") || fail "reading the generation"
for i in 0 1 2; do
	fxblk-labeltool generation "$(fx_member_dev $i)" $((G + 1)) || fail "bumping member $i's generation"
done
no_volume "member 3 is at generation $G, the others at $((G + 1))"
fx_expect_fail --rc 1 --msg "$(basename "$(fx_member_dev 3)") \(member 3\) has a stale label: generation $G" \
	fxctl assemble $V
# named against a member's namespace, not against a copy of the labels on the
# target's backing devices (nullbN, seen here too)
expect_match "$FX_OUT" "generation $G, but nvme[0-9]+n1 \(member [012]\) has generation $((G + 1)); .*\(member 3: nsid 1 of ${FX_NQN_BASE}3 \(nguid [0-9a-f]{32}\)\)" \
	"stale label: the newer member and the stale member's namespace"
! grep -E "nullb[0-9]+ \(member [0-9]\) has a stale label" <<<"$FX_OUT" || fail "a backing device's label copy reported as a stale member"
# brought up to date, the set is whole again: an add event assembles it
fxblk-labeltool generation "$(fx_member_dev 3)" $((G + 1)) || fail "bumping member 3's generation"
add_event "/sys/class/block/$(basename "$(fx_member_dev 3)")"
settle
fx_wait_path /dev/fx/$V 30 || fail "$V did not assemble once member 3 was at generation $((G + 1))"
fx_run fxctl stop $V
settle

log "member 0's label copied onto member 1: duplicated index, foreign member"
A=$(fx_member_dev 0) B=$(fx_member_dev 1)
SZ=$(blockdev --getsize64 "$A")
dd if="$A" of="$B" bs=4096 skip=1 seek=1 count=4 conv=notrunc oflag=direct status=none ||
	fail "copying the primary label"
dd if="$A" of="$B" bs=4096 skip=$((SZ / 4096 - 4)) seek=$((SZ / 4096 - 4)) count=4 \
	conv=notrunc oflag=direct status=none || fail "copying the backup label"
no_volume "$B carries member 0's label"
fx_expect_fail --rc 3 --msg "member 1 of 4 is missing" fxctl assemble $V
expect_match "$FX_OUT" "${A#/dev/} and ${B#/dev/} claim member index 0" "duplicated index reported"
expect_match "$FX_OUT" "${B#/dev/} \(member 0\) is foreign" "foreign member reported"
pass "assembled by udev after reordering; refused partial, stale and duplicated sets"
