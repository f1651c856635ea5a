#!/bin/bash
# Runs in the lab VM: the kernel panics in the middle of the script (sysrq c);
# the lab must fail the run although nothing reports a status.
echo "panic.sh: before the panic"
# the console is a serial tty that drains asynchronously: give the line time
# to leave the VM before the panic stops the kernel (CI 2026-12-02 lost it
# under load and the self-test said "the script did not start")
sleep 2
echo 1 > /proc/sys/kernel/sysrq
echo c > /proc/sysrq-trigger
sleep 5
echo "panic.sh: after the panic (must not be reached)"
exit 0
