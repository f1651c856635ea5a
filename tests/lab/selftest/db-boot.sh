#!/bin/bash
# Self-test script for the lab's spurious-#DB retry (run.sh db): in the
# first boot it writes the kernel lines of db-spurious.console (CI's lab 61
# failure on 6.12: exc_debug_kernel's WARNING, then a user GPF) into the
# kernel log, marked as the self-test's, after fxblk is loaded, and fails as
# that test did. The lab must boot once more (fxlab.attempt=2), where the
# script passes: the run passes and says NOTE. With "other": the first boot
# also logs an I/O error, and the lab must not boot again.
. /lab/lib.sh
ATTEMPT=1
case " $(cat /proc/cmdline) " in *" fxlab.attempt=2 "*) ATTEMPT=2 ;; esac
fx_load
if [ $ATTEMPT = 1 ]; then
	sed -n 's/^\[ *[0-9.]*\] //p' /lab/files/db-spurious.console | grep -v 'new ctrl' |
		while IFS= read -r l; do echo "$l (fxlab-selftest)" > /dev/kmsg; done
	[ "${1:-}" != other ] ||
		echo "I/O error, dev fx0, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0 (fxlab-selftest)" > /dev/kmsg
	fx_unload
	fail "db-boot: attempt 1 reads an empty value, as lab 61 did"
fi
fx_unload
echo "db-boot: attempt $ATTEMPT, done"
