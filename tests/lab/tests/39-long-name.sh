#!/bin/bash
# lab: kernels=5.10,6.12 quick=6.12 members=2 size-mb=64 timeout=300
# A volume name of the longest length allowed (31 characters, FXBLK_NAME_MAX
# 32 with its NUL) (review 2026-12-02 F11).
#
# The volume's workqueues were named "fxblk/<name>": WQ_NAME_LEN is 32, so a
# name over 25 characters was cut, and 6.9+ says so once in the kernel log
# ("workqueue: name exceeds WQ_NAME_LEN. Truncating to: ..."). They are now
# named after the disk (fxblk/fxN, fxblk-again/fxN), as dm names kdmflush/dm-N.
#   - CREATE with a 31-character name succeeds; fxctl show finds the volume
#     by that name and sysfs fxblk/name holds it whole
#   - I/O through it works (a 1 MiB write + read back)
#   - the kernel log has no workqueue truncation message and is clean
#   - a 32-character name is refused (ERANGE or EINVAL), the module unchanged
# Seen failing with the module before this change: on 6.12 the log said
# "workqueue: name exceeds WQ_NAME_LEN. Truncating to: fxblk/v2345678901234567890123".
# 5.10 truncates without a message: there the test shows only that such a
# volume works with a clean log (it cannot fail on the old module).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
N=v234567890123456789012345678901
[ ${#N} = 31 ] || fail "name length ${#N}, not 31"
cleanup() { fxblk-nltest --cmd destroy --name "$N" --expect 0 >/dev/null 2>&1; }
trap cleanup EXIT
args=()
for m in "${M[@]}"; do args+=(--member "$(cat "/sys/block/$(basename "$m")/dev")"); done

fx_mark t39
fx_run fxblk-nltest --cmd create --name "$N" --chunk 128 "${args[@]}" --keep --expect 0
D=$(fxdev "$N") || fail "no device whose sysfs fxblk/name is $N"
fx_json fxctl -o json show "$N"
expect_eq "$(jqr .volume.name)" "$N" "fxctl show $N: name"
fx_run dd if=/dev/urandom of=/tmp/t39.in bs=1M count=1 status=none
fx_run dd if=/tmp/t39.in of="$D" bs=1M count=1 oflag=direct status=none
fx_run dd if="$D" of=/tmp/t39.out bs=1M count=1 iflag=direct status=none
cmp -s /tmp/t39.in /tmp/t39.out || fail "1 MiB written to $D does not read back"
fx_run fxblk-nltest --cmd destroy --name "$N" --expect 0
fxblk-nltest --cmd create --name "${N}x" "${args[@]}" --expect ERANGE > /tmp/t39.long 2>&1 ||
	fxblk-nltest --cmd create --name "${N}x" "${args[@]}" --expect EINVAL > /tmp/t39.long 2>&1 ||
	{ cat /tmp/t39.long; fail "a 32-character name was not refused with ERANGE or EINVAL"; }
log "32 characters: $(cat /tmp/t39.long)"
wq=$(fx_dmesg_since t39 | grep 'workqueue: name exceeds' || true)
[ -z "$wq" ] || fail "the kernel log says the workqueue name was cut: $wq"
fx_dmesg_clean_since t39 || fail "kernel log not clean"
pass "a volume named with 31 characters works, no workqueue name truncated, clean log"
