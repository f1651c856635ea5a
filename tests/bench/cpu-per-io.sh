#!/bin/bash
# CPU time per I/O (from /proc/stat around each fio run) and IOPS of 4 KiB
# random reads, fxN vs dm-stripe over the same members, interrupt-driven and
# polled (io_uring --hipri). A lab VM script, not a test:
#   tests/lab/run --kernel 6.12 --members 2 --poll-queues 1 --timeout 900 \
#       -- tests/bench/cpu-per-io.sh [REPEATS] [SECONDS]
# Devices alternate within each repeat (fxN, then dm-stripe: both claim the
# members exclusively, so one exists at a time); one line per run, then
# medians. CPU per I/O = busy jiffies of all CPUs (user+nice+system+irq+
# softirq+steal) x 10 ms / I/Os: it includes fio itself and, when polling,
# the poller's spinning.
# The lab VM has no udev: dmsetup needs DM_DISABLE_UDEV=1 (and
# --noudevsync) to create the /dev/mapper node; without one fio quietly
# creates and reads a regular file of that name in RAM (as this script did
# until the -b checks: its "dm-stripe" figures were not dm-stripe's).
. /lab/lib.sh
export DM_DISABLE_UDEV=1
REP=${1:-3} SECS=${2:-5}
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members"
fx_load
CHUNK_KB=512 OFF=8192	# sectors: fxctl's default data offset area (4 MiB)
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
run() {	# run LABEL DEV [FIO-ARGS]: one fio run, prints "LABEL iops us/io"
	local label=$1 dev=$2 b0 b1 ios; shift 2
	b0=$(busy)
	fio --name=cpu --filename="$dev" --direct=1 --ioengine=io_uring --rw=randread \
		--bs=4k --iodepth=8 --size=512M --time_based --runtime="$SECS" \
		--randrepeat=0 --output-format=json --output=/tmp/cpu.json "$@" ||
		{ echo "$label: fio failed ($(grep -m1 -o 'error=[^"]*' /tmp/cpu.json))"; return 0; }
	b1=$(busy)
	ios=$(jq '.jobs[0].read.total_ios' /tmp/cpu.json)
	awk -v l="$label" -v i="$ios" -v b=$((b1 - b0)) -v s="$SECS" \
		'BEGIN {printf "%-10s %8.0f IOPS %8.1f us CPU/IO\n", l, i / s, b * 10000 / i}'
}
: > /tmp/cpu.res
for ((r = 1; r <= REP; r++)); do
	fxctl create tb "${M[0]}" "${M[1]}" --chunk ${CHUNK_KB}K >/dev/null || fail "fxctl create"
	D=$(fxdev tb) || fail "no fxN"
	[ -b "$D" ] || fail "$D is not a block device"
	run fx "$D" | tee -a /tmp/cpu.res
	run fx-poll "$D" --hipri | tee -a /tmp/cpu.res
	fxctl remove tb >/dev/null || fail "fxctl remove"
	S0=$(($(blockdev --getsz "${M[0]}") - OFF)) S1=$(($(blockdev --getsz "${M[1]}") - OFF))
	MIN=$(((S0 < S1 ? S0 : S1) / (CHUNK_KB * 2) * (CHUNK_KB * 2)))
	echo "0 $((MIN * 2)) striped 2 $((CHUNK_KB * 2)) ${M[0]} $OFF ${M[1]} $OFF" |
		dmsetup create --noudevsync tbdm || fail "dmsetup create"
	[ -b /dev/mapper/tbdm ] || fail "/dev/mapper/tbdm is not a block device"
	run dm /dev/mapper/tbdm | tee -a /tmp/cpu.res
	run dm-poll /dev/mapper/tbdm --hipri | tee -a /tmp/cpu.res
	dmsetup remove --noudevsync tbdm || fail "dmsetup remove"
done
echo "median over $REP repeats ($SECS s each, 4 KiB randread QD8 io_uring, chunk ${CHUNK_KB} KiB, $(uname -r)):"
# med COLUMN LABEL: "median (min-max)" of a column over the label's runs
med() {
	local v
	mapfile -t v < <(awk -v l="$2" -v c="$1" '$1 == l {print $c}' /tmp/cpu.res | sort -g)
	echo "${v[$(((${#v[@]} - 1) / 2))]} (${v[0]}-${v[-1]})"
}
for l in fx fx-poll dm dm-poll; do
	grep -q "^$l " /tmp/cpu.res || { echo "  $l: no successful run"; continue; }
	printf '  %-8s %s IOPS, %s us CPU/IO\n' "$l" "$(med 2 $l)" "$(med 4 $l)"
done
pass "cpu per io"
