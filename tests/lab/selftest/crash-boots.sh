#!/bin/bash
# Runs in the lab VM under --persist --boots 2 (selftest/run.sh crash*):
#   crash-boots.sh warn     boot 1 loads a module that WARNs, records a line in
#                           FX_PERSIST_DIR and crashes; boot 2 finds the line and
#                           passes - only boot 1's kernel log can fail the run
#   crash-boots.sh nocrash  boot 1 passes without crashing - the run must fail
. /lab/lib.sh
REC=${FX_PERSIST_DIR:?needs --persist}/selftest-record
case ${1:?warn|nocrash}:${FX_BOOT:?needs --boots 2} in
warn:1)
	fx_run insmod /lab/files/fxlab_warn.ko
	echo "written in boot 1" > "$REC" && sync "$REC" || fail "record in $REC"
	fx_crash
	;;
warn:2)
	expect_eq "$(cat "$REC" 2>/dev/null)" "written in boot 1" "record fsync'd in boot 1"
	pass "boot 1's record survived its crash (the lab must still report boot 1's WARNING)"
	;;
nocrash:1) pass "boot 1 ends normally (the lab must fail the run)" ;;
*) fail "unexpected mode/boot '$1:$FX_BOOT'" ;;
esac
