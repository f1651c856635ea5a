#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=2 timeout=400
# Hostile use of every ioctl of /dev/fxblk-peer (driver tests/peer/peer-fuzz.c,
# read its header): a root and an unprivileged process (uid 65534, no
# capabilities) with 3 threads each on shared contexts, structured, mutated
# and random arguments, live, revoked (the host revoke hook fires at random)
# and foreign handles, children SIGKILLed with registrations and I/O in
# flight, forked children on their parent's context. First the structured
# cases with one right answer (PROVIDERS/REAP/REGISTER out fields read from
# the caller, a 1 TiB registration). Oracle: documented errnos only, invalid
# input never accepted, sane replies, each thread's own range of the disk
# reads back its last RW write (RW and O_DIRECT); afterwards 0 pinned bytes
# and 0 registrations in every provider, the disk's untouched first 4 MiB
# intact, a last RW write coherent with O_DIRECT and the page cache, a clean
# kernel log and fxblk unloads. The debug kernel runs this too (make
# check-debug), and tests/lab/debug/45-peer-fuzz-long.sh for longer.
# Args: [SECONDS (default 25, 100 on the debug kernel)] [SEED (default: a new one each run; printed,
# pass it here to replay)] [THREADS (default 3)]
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
# 25 s; on the debug kernel (KASAN, lockdep, ftrace: a few calls a second
# under load) 100 s, or the oracle's coverage checks (an RW that met a
# revoked handle) can go unmet: seen with 104 calls in 25 s there
case $(uname -r) in *fxdebug*) SECS=${1:-100} ;; *) SECS=${1:-25} ;; esac
SEED=${2:-}
THREADS=${3:-3}
PF=/lab/modules/peer-fuzz
[ -x $PF ] || fail "$PF missing (tests/lab/modules/build.sh builds it)"
fx_load
trap 'fxctl remove t45 >/dev/null 2>&1' EXIT
fx_mark fuzz
fx_run fxctl create t45 --chunk 64K "${M[0]}" "${M[1]}"
DEV=$(fxdev t45) || fail "no /dev/fxN for t45"
# the dma-buf registrations need udmabuf (not in Debian's 6.1: the fuzzer
# prints SKIP then)
[ -e /dev/udmabuf ] || modprobe udmabuf 2>/dev/null || true
args=(--seconds "$SECS" --threads "$THREADS")
[ -z "$SEED" ] || args+=(--seed "$SEED")
t0=$SECONDS
fx_run $PF "$DEV" "${args[@]}"
log "fuzz: $((SECONDS - t0)) s"
expect_match "$FX_OUT" '^peer-fuzz: all checks held' "fuzzer verdict"
seed=$(sed -n 's/^peer-fuzz: seed \([0-9]*\).*/\1/p' <<<"$FX_OUT")
# every part ran: say how much, and fail what did not happen at all
num() { sed -n "$1" <<<"$FX_OUT" | head -1; }
n=$(num 's/^root: revoke hook fired \([0-9]*\) times$/\1/p')
[ "${n:-0}" -gt 0 ] || fail "the revoke hook never fired"
n=$(num 's/^main: [0-9]* children killed, \([0-9]*\) of them with I\/O in flight$/\1/p')
[ "${n:-0}" -gt 0 ] || fail "no child was killed with I/O in flight"
for who in root nobody; do
	line=$(grep "^$who: [0-9]* calls" <<<"$FX_OUT") || fail "no summary of the $who process"
	[[ $line =~ ([0-9]+)\ own-slot\ data\ checks ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
		fail "$who: no own-slot data check ran ($line)"
	[[ $line =~ ([0-9]+)\ RWs\ on\ revoked ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
		fail "$who: no RW met a revoked handle ($line)"
done
fx_run fxctl remove t45
trap - EXIT
fx_unload
fx_dmesg_clean_since fuzz
pass "peer ioctl fuzz ($SECS s, seed $seed): oracle held, no leak, data intact"
