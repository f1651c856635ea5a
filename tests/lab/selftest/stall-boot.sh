#!/bin/bash
# Self-test script for the lab's stall retry (run.sh stall): writes an RCU
# stall report into the kernel log (the text the kernel prints, marked as
# the self-test's) and loads fxblk.
#   before: in the first boot the report comes before fxblk is loaded; the lab
#           must boot once more (fxlab.attempt=2 on the command line), where
#           no report is written: the run passes, saying it booted again
#   after:  the report comes after fxblk is loaded: the run must fail
. /lab/lib.sh
ATTEMPT=1
case " $(cat /proc/cmdline) " in *" fxlab.attempt=2 "*) ATTEMPT=2 ;; esac
stall() { echo "rcu: INFO: rcu_sched self-detected stall on CPU (fxlab-selftest: $1)" > /dev/kmsg; }
case ${1:?before|after} in
before)
	[ $ATTEMPT = 2 ] || stall "before fxblk is loaded"
	fx_load ;;
after)
	fx_load
	stall "after fxblk is loaded" ;;
*) fail "unknown mode $1" ;;
esac
fx_unload
echo "stall-boot: $1, attempt $ATTEMPT, done"
