#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.1 members=4 size-mb=128 persist boots=2 udev no-connect file=systemd/fxblk-connect.service timeout=500
# lab-break: break=uuid ~ did not assemble by itself after the reboot
# A volume survives a reboot of the VM and comes back by itself (issue 7):
# the members are files on the lab's persistent disk (--persist), served by
# nvmet; the VM boots twice on them (--boots 2). The host side starts empty
# in both boots (--no-connect: no controller, no nvme_fabrics, no fxblk), and
# systemd-udevd runs with the project's rules (--udev; no systemd in the VM).
#
# Boot 1: /etc/nvme/config.json for the 4 subsystems; the start commands of
#   systemd/fxblk-connect.service (its ExecStartPre=/ExecStart= lines, run as
#   systemd would: the lab has no systemd) connect them; fxctl create,
#   mkfs.xfs, mount by UUID, files + checksums. Shutdown: umount, then the
#   unit's ExecStop= lines (fxctl stop --all, fxctl disconnect --config), then
#   the VM is reset (fx_crash: sysrq b, no sync - whatever the stack did not
#   flush is lost, as the target's cache is in this VM too).
# Boot 2: nothing of the volume is there (no namespace, no fxblk loaded). The
#   unit's start commands run again; the udev rule sees each namespace
#   appear, `fxctl incremental` records it and the last one creates the
#   volume (fxblk.ko autoloaded through its netlink family) - no manual
#   assemble or modprobe: /dev/fx/<name> and /dev/disk/by-uuid/<fs uuid>
#   appear within a bounded wait, the file system mounts by UUID, checksums
#   match, members in the labels' order. Then the coldplug path: the volume
#   stopped, `udevadm trigger --action=add` (what udev does at boot for
#   namespaces that exist before it starts, e.g. connected in an initramfs)
#   assembles it again.
#
# Arguments (both boots): shutdown=orderly (default) | crash: crash resets the
# VM with the file system mounted and the volume running (data synced first:
# `sync -f`), so boot 2 also replays the xfs log. To see the checks bite
# (boot 2 must fail): break=rule removes the assembly rule before
# connecting; break=uuid gives member 2's namespace another UUID (what an
# nvmet target without device_uuid/device_nguid does at every boot; the
# lab's init sets them) -> member 2 is foreign, the volume does not assemble.
. /lab/lib.sh
SHUTDOWN=orderly BREAK=
for a in "$@"; do
	case $a in
	shutdown=orderly|shutdown=crash) SHUTDOWN=${a#*=} ;;
	break=rule|break=uuid) BREAK=${a#*=} ;;
	*) fail "unknown argument '$a' (shutdown=orderly|crash break=rule|uuid)" ;;
	esac
done
P=${FX_PERSIST_DIR:-}
[ -n "$P" ] && [ -d "$P" ] || fail "needs the lab's --persist (FX_PERSIST_DIR unset)"
case ${FX_BOOT:-} in 1|2) ;; *) fail "needs --boots 2 (FX_BOOT='${FX_BOOT:-}')" ;; esac
[ "${FX_UDEV:-0}" = 1 ] || fail "udevd is not running: the header needs 'udev'"
[ -z "${FX_MEMBERS:-}" ] || fail "the lab connected members ($FX_MEMBERS): the header needs 'no-connect'"
UNIT=/lab/files/fxblk-connect.service
[ -f $UNIT ] || fail "no $UNIT: the header needs file=systemd/fxblk-connect.service"
V=rb0
N=4
MNT=/mnt/$V
settle() { fx_settle; }
trap 'umount $MNT 2>/dev/null' EXIT

# unit KEY: run the unit's KEY= command lines in order, as systemd does ("-"
# prefix: failure ignored; SuccessExitStatus=); fail on another failure.
unit() {
	local line cmd ign n=0 rc ok
	# SuccessExitStatus= codes count as success for the main process
	# (ExecStart=), as systemd counts them
	ok=" 0 "
	[ "$1" != ExecStart ] || ok+="$(sed -n 's/^SuccessExitStatus=//p' $UNIT | tr '\n' ' ')"
	while IFS= read -r line; do
		cmd=${line#"$1="} ign=
		[ "${cmd#-}" = "$cmd" ] || { ign=1; cmd=${cmd#-}; }
		n=$((n + 1))
		log "$1: $cmd"
		rc=0
		# shellcheck disable=SC2086 # the unit's word splitting
		$cmd || rc=$?
		[[ "$ok" == *" $rc "* ]] || [ -n "$ign" ] || fail "$1=$cmd failed (exit $rc)"
	done < <(grep "^$1=" $UNIT)
	[ $n -gt 0 ] || [ "$1" = ExecStartPre ] || fail "no $1= line in $UNIT"
}
members_present() { local i n=0; for i in $(seq 0 $((N - 1))); do fx_member_dev "$i" >/dev/null && n=$((n + 1)); done; echo $n; }
wait_members() {	# the unit's connect-all returns once connected; the namespaces may lag
	local w
	for ((w = 0; w < 300; w++)); do
		[ "$(members_present)" = $N ] && return 0
		sleep 0.1
	done
	fail "only $(members_present) of $N namespaces present 30 s after connect-all"
}
sums() { (cd $MNT && sha256sum data small/*); }

fresh() {	# the host side as a boot leaves it: the unit has to do everything
	[ "$(members_present)" = 0 ] || fail "namespaces present before the unit ran"
	[ ! -d /sys/module/nvme_fabrics ] || fail "nvme_fabrics loaded before the unit ran"
	[ ! -d /sys/module/fxblk ] || fail "fxblk loaded before the unit ran"
}

boot1() {
	log "boot 1: connect through the unit's commands, create, mkfs, data"
	fresh
	{
		printf '[{"hostnqn": "%s", "hostid": "%s", "subsystems": [' "$(cat /etc/nvme/hostnqn)" "$(cat /etc/nvme/hostid)"
		for i in $(seq 0 $((N - 1))); do
			[ "$i" = 0 ] || printf ','
			printf '{"nqn": "%s%s", "ports": [{"transport": "rdma", "traddr": "%s", "trsvcid": "4420"}]}' \
				"$FX_NQN_BASE" "$i" "$FX_TARGET_IP"
		done
		printf ']}]\n'
	} | jq . >/etc/nvme/config.json || fail "writing /etc/nvme/config.json"
	# the lab's root is an initramfs: keep /etc/nvme/config.json on the
	# persistent disk, as a host's /etc keeps it
	cp /etc/nvme/config.json "$P/config.json" && sync -f "$P" || fail "saving config.json"
	unit ExecStartPre
	unit ExecStart
	wait_members
	local m=()
	for i in $(seq 0 $((N - 1))); do m+=("$(fx_member_dev "$i")"); done
	fx_load
	fx_run fxctl create $V --chunk 64K "${m[@]}"
	settle
	fx_wait_path /dev/fx/$V 10 || fail "no /dev/fx/$V after create"
	mkfs.xfs -q -f -K /dev/fx/$V || fail "mkfs.xfs /dev/fx/$V"
	settle
	FSUUID=$(blkid -s UUID -o value /dev/fx/$V)
	[ -n "$FSUUID" ] || fail "no file system UUID on /dev/fx/$V"
	fx_wait_path /dev/disk/by-uuid/"$FSUUID" 10 || fail "no /dev/disk/by-uuid/$FSUUID"
	mkdir -p $MNT
	mount -t xfs /dev/disk/by-uuid/"$FSUUID" $MNT || fail "mount by UUID"
	dd if=/dev/urandom of=$MNT/data bs=1M count=24 status=none || fail "writing data"
	mkdir $MNT/small
	for i in $(seq 1 20); do head -c $((i * 3000)) /dev/urandom >$MNT/small/f$i; done
	sync -f $MNT || fail "sync -f $MNT"
	sums >"$P/sums" || fail "checksums"
	echo "$FSUUID" >"$P/fsuuid"
	sync -f "$P" || fail "sync -f $P"
	log "$(wc -l <"$P/sums") files, fs uuid $FSUUID; shutdown: $SHUTDOWN"
	if [ "$SHUTDOWN" = orderly ]; then
		umount $MNT || fail "umount"
		settle
		unit ExecStop
		[ ! -e /dev/fx/$V ] || fail "/dev/fx/$V still there after the unit's ExecStop"
		[ "$(members_present)" = 0 ] || fail "$(members_present) namespaces left after the unit's ExecStop"
	fi
	settle
	fx_crash
}

boot2() {
	log "boot 2: nothing connected, nothing loaded; the unit's start commands only"
	[ -s "$P/sums" ] && [ -s "$P/fsuuid" ] || fail "boot 1 left no checksums in $P"
	FSUUID=$(cat "$P/fsuuid")
	fresh
	[ ! -e /dev/fx/$V ] || fail "/dev/fx/$V exists before connecting"
	cp "$P/config.json" /etc/nvme/config.json || fail "restoring /etc/nvme/config.json"
	case $BREAK in
	rule)
		rm /etc/udev/rules.d/61-fxblk-assembly.rules
		udevadm control --reload ;;
	uuid)	# member 2's namespace gets another identity, as an nvmet
		# target without device_uuid/device_nguid does at each boot
		ns=/sys/kernel/config/nvmet/subsystems/${FX_NQN_BASE}2/namespaces/1
		echo 0 >$ns/enable && echo f0b1ab00-0000-4000-8000-0000000000ff >$ns/device_uuid &&
			echo 1 >$ns/enable || fail "changing member 2's namespace UUID" ;;
	esac
	t0=$(cut -d' ' -f1 /proc/uptime)
	unit ExecStartPre
	unit ExecStart
	wait_members
	# bounded: 60 s from the end of connect-all (all 4 members' events)
	fx_wait_path /dev/fx/$V 60 || {
		ls -R /run/fxblk; fxctl assemble $V
		fail "$V did not assemble by itself after the reboot"
	}
	t1=$(cut -d' ' -f1 /proc/uptime)
	log "/dev/fx/$V $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s after the unit's start commands began"
	[ -d /sys/module/fxblk ] || fail "fxblk not loaded, yet /dev/fx/$V exists"
	settle
	fx_json fxctl -o json show $V
	for i in $(seq 0 $((N - 1))); do
		expect_eq "/dev/$(jqr ".volume.members[$i].disk")" "$(fx_member_dev $i)" "member $i of the assembled volume"
	done
	VUUID=$(fxctl examine --export "$(fx_member_dev 0)" | sed -n 's/^FXBLK_UUID=//p')
	expect_eq "$(ls /run/fxblk/"$VUUID" | wc -l)" $N "members recorded by udev's incremental under /run/fxblk/$VUUID"
	fx_wait_path /dev/disk/by-uuid/"$FSUUID" 20 || fail "no /dev/disk/by-uuid/$FSUUID after the reboot"
	expect_eq "$(readlink -f /dev/disk/by-uuid/"$FSUUID")" "$(readlink -f /dev/fx/$V)" "by-uuid link target"
	mkdir -p $MNT
	mount -t xfs /dev/disk/by-uuid/"$FSUUID" $MNT || fail "mount by UUID after the reboot"
	expect_eq "$(sums)" "$(cat "$P/sums")" "checksums after the reboot"
	umount $MNT || fail "umount"
	xfs_repair -n /dev/fx/$V >/tmp/repair.log 2>&1 || { cat /tmp/repair.log; fail "xfs_repair -n /dev/fx/$V after the reboot"; }

	log "coldplug: namespaces present before udev looks (udevadm trigger, as at boot)"
	fx_run fxctl stop $V
	settle
	[ ! -e /dev/fx/$V ] || fail "/dev/fx/$V still there after stop"
	udevadm trigger --type=devices --action=add --subsystem-match=block
	settle
	fx_wait_path /dev/fx/$V 30 || { ls -R /run/fxblk; fail "$V did not assemble from the coldplug events"; }
	fx_wait_path /dev/disk/by-uuid/"$FSUUID" 20 || fail "no /dev/disk/by-uuid/$FSUUID after the coldplug"
	settle
	unit ExecStop
	[ ! -e /dev/fx/$V ] || fail "/dev/fx/$V still there after the unit's ExecStop"
	pass "rebooted ($SHUTDOWN): the unit's connect-all + udev assembled $V, by-uuid mount, $(wc -l <"$P/sums") checksums match; coldplug assembles it too"
}

if [ "$FX_BOOT" = 1 ]; then boot1; else boot2; fi
