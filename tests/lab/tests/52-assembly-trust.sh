#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=64 udev timeout=900
# lab-break: break=change ~ trust was assembled: change events on the members of a stopped volume
# lab-break: break=nomkfs ~ trust was assembled: member 1 was reused by mkfs.ext4
# lab-break: break=owner ~ trust was assembled: its labels say it belongs to nqn
# Assembly an admin can trust (issue 19), through the real udevd and the
# project's rules (udev/61-fxblk-assembly.rules); make check runs it on 6.12
# with its three controls, make check-full on 6.1 too.
# - Review M6: a "change" event on the members of a stopped volume
#   (udevadm trigger --action=change) leaves it stopped; an "add" starts it.
# - M2: member 1 reused by mkfs.ext4 over its first 32 MiB (the primary label
#   at 4 KiB overwritten, the backup at the end left: mke2fs zeroes the last
#   64 KiB of the file system it makes, so over the whole device it would
#   erase the backup too and the disk would simply be no member): the rule
#   publishes the other members as ID_FS_TYPE=fxblk_member while member 1
#   keeps ext4; an add event does not assemble; fxctl assemble refuses naming
#   member 1 and ext4; assemble --force erases the ext4 signature, rewrites
#   every label (generation + 1, M3) and assembles; fxctl wipe refuses a
#   running volume's member, needs --yes without a terminal, and wipes the
#   backup label of a reused disk leaving its ext4 alone; assemble then
#   reports member 1 missing and names its namespace, now ext4 without a
#   label.
# - M1: labels record this host's NQN; labels owned by another host (rewritten
#   with fxblk-labeltool owner, as that host's fxctl writes them) are not
#   assembled by add events, skipped by assemble --all and refused by
#   assemble NAME; assemble --import takes the volume (owner = this host,
#   generation + 1) and add events assemble it again. fxblk.auto=0 on the
#   kernel command line (a file bind-mounted over /proc/cmdline) and
#   "AUTO -all" in /etc/fxblk/fxblk.conf keep add events from assembling;
#   "AUTO +all" admits a foreign volume.
# Break modes (the run must fail): break=change sends add instead of change
# events, break=nomkfs leaves member 1 a member, break=owner leaves the labels
# owned by this host.
. /lab/lib.sh
fx_breaks change nomkfs owner -- "$@"
[ "${FX_UDEV:-0}" = 1 ] || fail "udevd is not running: the header needs 'udev' (tests/lab/run --udev)"
fx_load
read -r -a M <<< "$FX_MEMBERS"
V=trust
HOST=$(cat /etc/nvme/hostnqn) || fail "no /etc/nvme/hostnqn"
OTHER=nqn.2014-08.org.nvmexpress:uuid:0f0f0f0f-0000-4000-8000-00000000b0b0
settle() { fx_settle; }
no_volume() {	# no_volume WHY: the volume must not be running
	settle
	sleep 1	# RUN+= programs finish before settle returns; one more breath
	settle
	! fxdev $V >/dev/null || { ls -R /run/fxblk; fail "$V was assembled: $1"; }
}
assembled() {	# assembled WHY: the volume must come up by itself
	settle
	fx_wait_path /dev/fx/$V 30 || { ls -R /run/fxblk; fail "$V did not assemble: $1"; }
}
events() {	# events ACTION: one event of that kind for every NVMe namespace
	udevadm trigger --action="$1" --subsystem-match=block --sysname-match='nvme*' ||
		fail "udevadm trigger --action=$1"
}
# udev's blkid on a new fxN holds it open for a moment: settle before a stop
stop_v() { settle; fx_run fxctl stop $V; }
fs_type() { udevadm info -q property "$1" | sed -n 's/^ID_FS_TYPE=//p'; }
reuse() {	# reuse DEV: a 32 MiB ext4 at the start of DEV
	mkfs.ext4 -q -F -b 4096 -E nodiscard "$1" 32M || fail "mkfs.ext4 $1"
}
label_field() { fxctl -o json examine "$1" | jq -r "$2"; }
cleanup() { umount /proc/cmdline 2>/dev/null; rm -f /etc/fxblk/fxblk.conf; }
trap cleanup EXIT

log "create: every label records this host as its owner; udev publishes the members"
fx_run fxctl create $V --chunk 64K "${M[@]}"
settle
for i in 0 1 2 3; do
	expect_eq "$(label_field "${M[$i]}" '"\(.label.owner) \(.label.format_version) \(.label.generation)"')" \
		"$HOST 2 1" "${M[$i]}: owner, label format, generation"
	expect_eq "$(fs_type "${M[$i]}")" fxblk_member "${M[$i]}: ID_FS_TYPE"
done

log "M6: change events leave a stopped volume stopped; an add event starts it"
stop_v
settle
if [ "$BREAK" = change ]; then events add; else events change; fi
no_volume "change events on the members of a stopped volume"
events add
assembled "add events for its members"
stop_v
settle

log "M2: member 1 reused by mkfs.ext4 (primary label overwritten, backup left)"
R=$(fx_member_dev 1)
[ "$BREAK" = nomkfs ] || reuse "$R"
events add
no_volume "member 1 was reused by mkfs.ext4"
fx_run fxctl examine --export "$R"
expect_match "$FX_OUT" '^FXBLK_LABEL=backup$' "$R after mkfs.ext4: the label comes from the backup"
expect_match "$FX_OUT" '^FXBLK_REUSED=1$' "$R after mkfs.ext4: examine --export"
expect_eq "$(fs_type "$R")" ext4 "$R: ID_FS_TYPE after mkfs.ext4"
expect_eq "$(fs_type "$(fx_member_dev 0)")" fxblk_member "member 0: ID_FS_TYPE"
fx_run fxctl incremental "$R"
expect_match "$FX_OUT" "not assembled automatically: it carries an old label of member 1 .* but was reused: libblkid finds ext4 filesystem signature" "incremental on the reused disk"
fx_expect_fail --rc 1 --msg "${R#/dev/} \(member 1\) was reused: libblkid finds ext4 filesystem signature at byte [0-9]+ on it \(its backup fxblk label is left\).*'fxctl wipe $R'" \
	fxctl assemble $V

log "M2: assemble --force takes it back: ext4 signature erased, labels rewritten (generation 2)"
fx_run fxctl assemble --force $V
expect_match "$FX_OUT" "--force: erased ext4 filesystem signature at byte [0-9]+ on $R" "assemble --force says what it erased"
fx_wait_path /dev/fx/$V 10 || fail "no /dev/fx/$V after assemble --force"
[ -z "$(blkid -p -o value -s TYPE "$R" 2>/dev/null)" ] || fail "ext4 signature still on $R after assemble --force"
for i in 0 1 2 3; do
	expect_eq "$(label_field "$(fx_member_dev $i)" '"\(.label_source) \(.label.generation) \(.label.member_index)"')" \
		"primary 2 $i" "member $i after assemble --force: label source, generation, index"
done
fx_expect_fail --rc 4 --msg "$R is a member of running volume fx[0-9]+" fxctl wipe --yes "$R"
stop_v
settle

log "M2: fxctl wipe removes the old label of a reused disk, not its new file system"
reuse "$R"
fx_expect_fail --rc 1 --msg "$R is not wiped: no terminal to ask for confirmation; run 'fxctl wipe --yes $R'" \
	fxctl wipe "$R" </dev/null
fx_run fxctl wipe --yes "$R"
expect_match "$FX_OUT" "wiped the fxblk label of member 1 of 4 of volume \"$V\"" "wipe says what it wiped"
fx_expect_fail --rc 3 --msg "not an fxblk member" fxctl examine "$R"
expect_eq "$(blkid -p -o value -s TYPE "$R")" ext4 "$R: the ext4 made over it survives fxctl wipe"
fx_expect_fail --rc 3 --msg "member 1 of 4 is missing: .*; its namespace is present as ${R#/dev/} without an fxblk label \(libblkid finds ext4 filesystem signature at byte [0-9]+\)" \
	fxctl assemble $V

log "M1: a volume owned by another host is not auto-assembled; --import takes it"
fx_run fxctl create --force $V --chunk 64K "${M[@]}"
stop_v
settle
if [ "$BREAK" != owner ]; then
	for i in 0 1 2 3; do
		fxblk-labeltool owner "$(fx_member_dev $i)" "$OTHER" || fail "labelling member $i as $OTHER's"
	done
fi
events add
no_volume "its labels say it belongs to $OTHER"
fx_run fxctl incremental "$(fx_member_dev 0)"
expect_match "$FX_OUT" "not auto-assembled on this host: owned by $OTHER \(this host is $HOST\), AUTO -all" "incremental names the owner"
fx_run fxctl assemble --all
expect_match "$FX_OUT" "skipped \"$V\" .*not auto-assembled on this host" "assemble --all skips a foreign volume"
fxdev $V >/dev/null && fail "assemble --all started the foreign volume"
fx_expect_fail --rc 1 --msg "\"$V\" \([0-9a-f-]+\) is owned by host $OTHER .*'fxctl assemble --import $V'" fxctl assemble $V
fx_run fxctl assemble --import $V
fx_wait_path /dev/fx/$V 10 || fail "no /dev/fx/$V after assemble --import"
for i in 0 1 2 3; do
	expect_eq "$(label_field "$(fx_member_dev $i)" '"\(.label.owner) \(.label.generation)"')" "$HOST 2" \
		"member $i after --import: owner, generation"
done
stop_v
settle
events add
assembled "this host owns it after --import"
stop_v
settle

log "M1: fxblk.auto=0 on the kernel command line: no auto-assembly, assemble NAME still works"
printf '%s fxblk.auto=0\n' "$(cat /proc/cmdline)" >/tmp/cmdline
mount --bind /tmp/cmdline /proc/cmdline || fail "bind-mounting a command line over /proc/cmdline"
events add
no_volume "fxblk.auto=0 is on the kernel command line"
fx_run fxctl incremental "$(fx_member_dev 2)"
expect_match "$FX_OUT" "auto-assembly is off \(fxblk.auto=0 on the kernel command line\)" "incremental under fxblk.auto=0"
fx_run fxctl assemble $V
stop_v
settle
umount /proc/cmdline || fail "umount /proc/cmdline"

log "M1: fxblk.conf AUTO -all: nothing by itself; AUTO +all: another host's volume too"
mkdir -p /etc/fxblk
echo "AUTO -all" >/etc/fxblk/fxblk.conf
events add
no_volume "fxblk.conf says AUTO -all"
for i in 0 1 2 3; do
	fxblk-labeltool owner "$(fx_member_dev $i)" "$OTHER" || fail "labelling member $i as $OTHER's"
done
printf '# a volume shared on purpose\nAUTO +%s -all\n' "$V" >/etc/fxblk/fxblk.conf
events add
assembled "fxblk.conf allows it by name (AUTO +$V)"
stop_v
settle
rm /etc/fxblk/fxblk.conf
fx_run fxctl assemble --import $V
settle	# udev's blkid on the new fxN holds it open for a moment
fx_run fxctl remove $V
pass "change events keep a stopped volume stopped; a reused member stops assembly (named), --force takes it back, wipe clears it; another host's volume stays down until --import; fxblk.auto=0 and AUTO obeyed"
