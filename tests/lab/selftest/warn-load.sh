#!/bin/bash
# Runs in the lab VM: load the WARNing module; the script itself passes, so
# only the lab's kernel log check can turn this run into a failure. The
# allow-everything line below must not change that: "# lab-allow:" exempts
# I/O-error lines only, never a WARNING.
# lab-allow: .*
. /lab/lib.sh
fx_run insmod /lab/files/fxlab_warn.ko
fx_run rmmod fxlab_warn
pass "module loaded and removed (the lab must still report the WARNING)"
