#!/bin/bash
# Runs in the lab VM: taints the kernel with U (64, "taint requested by
# userspace"), which logs nothing; the script passes, so only the lab's taint
# check can fail the run.
echo 64 > /proc/sys/kernel/tainted || exit 1
echo "taint.sh: tainted is now $(cat /proc/sys/kernel/tainted)"
exit 0
