#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=900
# Hostile netlink input: fxblk-fuzz sends random and mutated messages for
# every command of family "fxblk" (wrong types and lengths, truncated and
# overlong attributes, huge member counts, u64-max offsets, unknown
# attributes, missing NLA_F_NESTED, deep nesting, bad genl versions, bad
# nlmsg lengths, odd dump flags, batches, bit flips, abandoned dumps) and
# checks every ack and reply it gets. Controlled mode: CREATEs may use members
# 2 and 3 (whatever they make is destroyed at once); a volume over members 0
# and 1 exists throughout (GET/STATS/dump replies; the fuzzer never destroys
# a volume that existed before it started). Afterwards: that volume is intact,
# nothing else is left, the log is clean, and the module still works: a new
# volume over all members passes fio verify, is removed, rmmod works.
# The fuzzer's checker must be able to fail: with --break-ack (one ack
# corrupted on purpose) it must exit 1.
# Args: [COUNT (default 100000)] [SEED (default 17)]
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
COUNT=${1:-100000}
SEED=${2:-17}
command -v fxblk-fuzz >/dev/null || fail "fxblk-fuzz not in the lab image (build/ctl/fxblk-fuzz)"
fx_load
trap 'for v in fzkeep t17; do fxctl remove "$v" >/dev/null 2>&1; done' EXIT
fx_mark fuzz

# the checker can fail: one corrupted ack must fail the run
fx_expect_fail --rc 1 --msg 'FAIL: ack seq [0-9]+: error 1 out of range' \
	fxblk-fuzz --seed 1 --count 200 --break-ack

fx_run fxctl create fzkeep --chunk 64K "${M[0]}" "${M[1]}"
KEEP=$(fxdev fzkeep) || fail "no device for fzkeep"
t0=$SECONDS
fx_run fxblk-fuzz --seed "$SEED" --count "$COUNT" --member "${M[2]}" --member "${M[3]}"
log "fuzz: $COUNT messages, seed $SEED, $((SECONDS - t0)) s"
# counted: messages netlink dispatched (valid nlmsg header), not those lost
# behind a broken header in a batch
sent=$(sed -n 's/^fxblk-fuzz: \([0-9]*\) messages had a valid nlmsg header.*/\1/p' <<<"$FX_OUT")
[ -n "$sent" ] && [ "$sent" -ge "$COUNT" ] || fail "fuzzer had '${sent:-?}' messages dispatched, wanted $COUNT"
expect_match "$FX_OUT" '^fxblk-fuzz: all answers well formed$' "fuzzer verdict"
# most messages must get past the envelope into the family's handlers
expect_match "$FX_OUT" 'acks by errno:.* EINVAL [0-9]{4,}' "EINVAL refusals counted"
fx_dmesg_clean_since fuzz

# the volume that was there is still there, with its members; nothing else is
fx_json fxctl -o json list
expect_eq "$(jqr '[.volumes[].name] | join(" ")')" fzkeep "volumes after fuzzing"
expect_eq "$(fxdev fzkeep)" "$KEEP" "fzkeep's device after fuzzing"
for m in "${M[2]}" "${M[3]}"; do
	[ -z "$(ls "/sys/block/${m#/dev/}/holders")" ] || fail "$m still held after fuzzing"
done
fx_run fxctl remove fzkeep

# the module still works
fx_run fxctl create t17 --chunk 64K "${M[@]:0:4}"
DEV=$(fxdev t17) || fail "no device for t17"
fio --name=after-fuzz --filename="$DEV" --direct=1 --rw=randwrite --bsrange=4k-256k \
	--iodepth=16 --ioengine=libaio --size=16M --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --eta=never --output=/tmp/fio17.out ||
	{ cat /tmp/fio17.out; fail "fio verify on $DEV after fuzzing"; }
grep -qiE 'verify: bad|crc32c: verify failed|err= *[1-9]' /tmp/fio17.out &&
	{ cat /tmp/fio17.out; fail "fio verify errors on $DEV after fuzzing"; }
fx_run fxctl remove t17
trap - EXIT
fx_dmesg_clean_since fuzz
fx_unload
pass "$sent fuzzed messages answered well-formed; module works afterwards"
