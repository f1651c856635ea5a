#!/bin/bash
# Runs in the lab VM: the kernel panics in the middle of the script (sysrq c);
# the lab must fail the run although nothing reports a status.
echo "panic.sh: before the panic"
echo 1 > /proc/sys/kernel/sysrq
echo c > /proc/sysrq-trigger
sleep 5
echo "panic.sh: after the panic (must not be reached)"
exit 0
