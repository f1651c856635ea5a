#!/bin/bash
# Runs in the lab VM: load the WARNing module; the script itself passes, so
# only the lab's kernel log check can turn this run into a failure.
. /lab/lib.sh
fx_run insmod /lab/files/fxlab_warn.ko
fx_run rmmod fxlab_warn
pass "module loaded and removed (the lab must still report the WARNING)"
