#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 timeout=900 file=tests/fuzz/netlink-seeds
# lab-break: 2000 1 break=hold ~ fxblk module reference count after fuzzing \(before: [0-9]+\): got
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
# Seeds: first the seed corpus tests/fuzz/netlink-seeds (SEED COUNT per
# line, replayed every run), then COUNT messages from a fresh random seed,
# printed as "seed S (replay: ... 17-netlink-fuzz.sh COUNT S)"; a seed
# given replays that run. Then COUNT/4 messages from 4 fuzzer threads at
# once (fxblk-fuzz --threads 4, seeds S+1..S+4), so the handlers run
# concurrently on both vCPUs; the same checks, each fuzzer tolerating only
# that another destroyed a volume it made.
# The oracle afterwards, beyond the fuzzer's own checks: the volumes fxctl
# lists are exactly the fx disks in /sys/block (by their fxblk/name), the
# kept volume's data reads back, the module's reference count is what it was
# before fuzzing (no leaked open or module reference), the members are not
# held, and rmmod works.
# Args: [COUNT (default 75000)] [SEED (default: random)] [break=hold]
# break=hold keeps fzkeep open from before to after fuzzing (a leaked
# reference): the reference-count check must fail.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
COUNT=${1:-75000}
SEED=${2:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
CORPUS=/lab/files/netlink-seeds
[ -r $CORPUS ] || fail "no seed corpus at $CORPUS (header file=tests/fuzz/netlink-seeds)"
log "seed $SEED (replay: tests/lab/run --kernel ${FX_KVER%%.*} --members 4 -- tests/lab/tests/17-netlink-fuzz.sh $COUNT $SEED)"
command -v fxblk-fuzz >/dev/null || fail "fxblk-fuzz not in the lab image (build/ctl/fxblk-fuzz)"
fx_load
trap 'fxctl remove fzkeep >/dev/null 2>&1; fxctl remove t17 >/dev/null 2>&1' EXIT
fx_mark fuzz

# the checker can fail: one corrupted ack must fail the run
fx_expect_fail --rc 1 --msg 'FAIL: ack seq [0-9]+: error 1 out of range' \
	fxblk-fuzz --seed 1 --count 200 --break-ack
# and so does one thread's among several (its failure reaches the verdict)
fx_expect_fail --rc 1 --msg 'FAIL: ack seq [0-9]+: error 1 out of range' \
	fxblk-fuzz --seed 1 --count 400 --threads 2 --break-ack

fx_run fxctl create fzkeep --chunk 64K "${M[0]}" "${M[1]}"
KEEP=$(fxdev fzkeep) || fail "no device for fzkeep"
head -c 1048576 /dev/urandom > /tmp/keep.bin
dd if=/tmp/keep.bin of="$KEEP" bs=1M oflag=direct 2>/dev/null || fail "writing fzkeep"
REF0=$(cat /sys/module/fxblk/refcnt) || fail "no /sys/module/fxblk/refcnt"
if [ "${3:-}" = break=hold ]; then
	exec 9<"$KEEP" || fail "break=hold: open $KEEP"
	log "break=hold: $KEEP held open from now on (a leaked reference)"
fi
# fuzz SEED COUNT [THREADS]: one fxblk-fuzz run, its verdict checked
fuzz() {
	local t0=$SECONDS sent
	fx_run fxblk-fuzz --seed "$1" --count "$2" --threads "${3:-1}" --member "${M[2]}" --member "${M[3]}"
	log "fuzz: $2 messages, seed $1, ${3:-1} thread(s), $((SECONDS - t0)) s"
	# counted: messages netlink dispatched (valid nlmsg header), not those lost
	# behind a broken header in a batch
	sent=$(sed -n 's/^fxblk-fuzz: \([0-9]*\) messages had a valid nlmsg header.*/\1/p' <<<"$FX_OUT")
	[ -n "$sent" ] && [ "$sent" -ge "$2" ] || fail "seed $1: fuzzer had '${sent:-?}' messages dispatched, wanted $2"
	expect_match "$FX_OUT" '^fxblk-fuzz: all answers well formed$' "fuzzer verdict (seed $1)"
	# most messages must get past the envelope into the family's handlers
	[ "$2" -lt 10000 ] || expect_match "$FX_OUT" 'acks by errno:.* EINVAL [0-9]{4,}' "EINVAL refusals counted (seed $1)"
	SENT=$((SENT + sent))
}
SENT=0 NCORPUS=0
while read -r s c _; do
	[[ $s =~ ^[0-9]+$ ]] || continue
	[[ $c =~ ^[0-9]+$ ]] || fail "$CORPUS: seed $s without a count"
	fuzz "$s" "$c"
	NCORPUS=$((NCORPUS + 1))
done < $CORPUS
[ $NCORPUS -ge 1 ] || fail "no seed in $CORPUS"
log "seed corpus: $NCORPUS seeds replayed"
fuzz "$SEED" "$COUNT"
# concurrently: 4 fuzzers, each with its own socket, seeds SEED+1..SEED+4
# (each thread's messages replay with the seed, their interleaving not)
fuzz $((SEED + 1)) $((COUNT / 4)) 4
fx_dmesg_clean_since fuzz

# the oracle: the volume that was there is still there, with its data and
# members; nothing else is, neither in fxblk's list nor in /sys/block
fx_json fxctl -o json list
expect_eq "$(jqr '[.volumes[].name] | join(" ")')" fzkeep "volumes after fuzzing"
SYSV=$(for d in /sys/block/fx*; do [ -e "$d" ] && cat "$d/fxblk/name"; done | sort | paste -sd' ')
expect_eq "$SYSV" fzkeep "fx disks in /sys/block after fuzzing"
expect_eq "$(fxdev fzkeep)" "$KEEP" "fzkeep's device after fuzzing"
cmp -s /tmp/keep.bin <(dd if="$KEEP" bs=1M count=1 iflag=direct 2>/dev/null) || fail "fzkeep's data changed by fuzzing"
expect_eq "$(cat /sys/module/fxblk/refcnt)" "$REF0" "fxblk module reference count after fuzzing (before: $REF0)"
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
pass "$SENT fuzzed messages ($NCORPUS corpus seeds, then seed $SEED, then 4 threads at once) answered well-formed; state consistent, module works and unloads"
