#!/bin/bash
# Runs in the lab VM, in a --batch (selftest batch): "leave" leaves a file
# in /tmp and a module loaded (nbd), as a careless test would; "check", the
# next test, exits 3 when either is still there: init's cleanup between
# the tests of a boot must have removed both.
case $1 in
leave)
	echo left > /tmp/fxlab-left && modprobe nbd && grep -q '^nbd ' /proc/modules || exit 98
	echo "left /tmp/fxlab-left and nbd"
	;;
check)
	[ ! -e /tmp/fxlab-left ] || { echo "/tmp/fxlab-left is still there"; exit 3; }
	! grep -q '^nbd ' /proc/modules || { echo "nbd is still loaded"; exit 3; }
	echo clean
	;;
*) exit 99 ;;
esac
