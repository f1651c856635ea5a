#!/bin/bash
# Runs in the lab VM: a null_blk disk with bad blocks answers a read with an
# I/O error, so the kernel logs "I/O error, dev nullb0, sector 0 ...". The
# script itself passes: only the lab's kernel log check can fail the run
# (io-error-allowed.sh runs this with a "# lab-allow:" line: then it passes).
set -o pipefail
modprobe null_blk nr_devices=0 || exit 1
d=/sys/kernel/config/nullb/nullb0
mkdir "$d" || exit 1
echo 16 > "$d/size"
echo 1 > "$d/memory_backed"
echo 1 > "$d/power" || exit 1
echo "+0-7" > "$d/badblocks" || { echo "null_blk has no badblocks here"; exit 1; }
if dd if=/dev/nullb0 of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
	echo "io-error.sh: reading a bad block succeeded"
	exit 1
fi
dmesg | grep -q 'I/O error' || { echo "io-error.sh: no I/O error in the kernel log"; exit 1; }
echo "io-error.sh: read of a bad block failed with an I/O error, as intended"
echo 0 > "$d/power"
rmdir "$d"
modprobe -r null_blk
exit 0
