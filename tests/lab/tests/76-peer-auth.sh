#!/bin/bash
# lab: kernels=6.12 members=2 timeout=300
# A subsystem that wants in-band authentication (DH-HMAC-CHAP) for new
# controllers: fxblk's own association says so at its Connect and takes
# no further step (issue 34, review 2026-12-06-peer M2). The Connect
# response's AUTHREQ bits (ATR, ASCR) ask the host to authenticate
# before any other command, as nvmf_connect_admin_queue() reads them;
# fxblk's queues do not speak DH-HMAC-CHAP, so the association is
# refused with that reason and the RW takes the block path, whose
# controllers authenticated (or, as here, connected before the
# subsystem asked).
#
# fxblk peer_queues=1, a volume over 2 members. Member 0's subsystem
# then admits only this host, with a DH-HMAC-CHAP key (nvmet: a host
# entry with dhchap_key in allowed_hosts, allow_any_host 0); the
# kernel's controllers stay connected. A peer read across both members:
# the bytes the block path wrote; member 0's association failed with
# "requires in-band authentication", member 1's live.
# Seen failing with the check undone: member 0 failed with "enable or
# Identify failed (-5)" (its Property Get refused: AUTH_REQUIRED).
# 6.12 only: Debian's 6.1 builds nvmet without CONFIG_NVME_TARGET_AUTH.
. /lab/lib.sh
fx_peer_members 2
VOL=t76
NVMET=/sys/kernel/config/nvmet
S=$NVMET/subsystems/${FX_NQN_BASE}0
# lab 60's host key (nvme gen-dhchap-key -m 0 -s <hex>)
KEY=DHHC-1:00:ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8qDMNU:
HOSTNQN=
# the fabric's teardown removes only what it made: the host entry goes
cleanup() {
	fxctl remove $VOL >/dev/null 2>&1
	[ -n "$HOSTNQN" ] || return 0
	rm -f "$S/allowed_hosts/$HOSTNQN"
	echo 1 > "$S/attr_allow_any_host"
	rmdir "$NVMET/hosts/$HOSTNQN" 2>/dev/null
}
trap cleanup EXIT
fx_peerq_load
fx_run fxctl create $VOL --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev $VOL) || fail "no /dev/fxN for $VOL"
NAME=${DEV#/dev/}
head -c $((1 << 20)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct conv=fsync status=none || fail "write the reference to $DEV"

HOSTNQN=$(cat /sys/class/nvme/nvme0/hostnqn) || fail "no host NQN of nvme0"
mkdir -p "$NVMET/hosts/$HOSTNQN" || fail "nvmet host entry for $HOSTNQN"
[ -e "$NVMET/hosts/$HOSTNQN/dhchap_key" ] ||
	fail "nvmet has no dhchap_key (CONFIG_NVME_TARGET_AUTH) in $(uname -r)"
echo "$KEY" > "$NVMET/hosts/$HOSTNQN/dhchap_key" || fail "set the host's DH-HMAC-CHAP key"
# (nvmet takes no allowed host while any host is allowed)
echo 0 > "$S/attr_allow_any_host" || fail "member 0's subsystem: allow_any_host 0"
ln -s "$NVMET/hosts/$HOSTNQN" "$S/allowed_hosts/" || fail "allow $HOSTNQN on member 0's subsystem"
log "member 0's subsystem now wants DH-HMAC-CHAP from $HOSTNQN"

# 256 KiB at 0: four chunks, both members
fx_run $PT rwfile read "$DEV" 0 0 $((256 << 10)) /tmp/got host
cmp -s /tmp/got <(head -c $((256 << 10)) /tmp/ref) || fail "the peer read differs from the block path's bytes"
m0=$(grep "^$NAME member=0 " $DBG)
m1=$(grep "^$NAME member=1 " $DBG)
log "member 0: ${m0#* state=}"
expect_match "$m0" " state=failed .*why=the subsystem requires in-band authentication \(DH-HMAC-CHAP\)" \
	"member 0's association refused for the authentication its subsystem asks"
expect_match "$m1" " state=live " "member 1's association"
pass "an association to a subsystem asking for DH-HMAC-CHAP refused at Connect with that reason; the read took the block path"
