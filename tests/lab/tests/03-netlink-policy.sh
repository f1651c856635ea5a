#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.12 members=4
# Netlink hardening, with fxblk-nltest sending hand-made messages:
#  - as root: every malformed message (wrong attribute types, unknown
#    attributes under strict validation, overlong names, out-of-range chunk,
#    missing required attributes, truncated attributes) gets EINVAL with an
#    extack message;
#  - as an unprivileged user (setpriv, no capabilities): status and list
#    still work, CREATE/DESTROY get EPERM (GENL_ADMIN_PERM);
#  - no volume appears, the kernel log stays clean, rmmod works afterwards.
. /lab/lib.sh

fx_load
fx_mark nltest
fx_run fxblk-nltest
expect_match "$FX_OUT" 'fxblk-nltest: [1-9][0-9]* passed, 0 failed' "nltest summary"
grep -q '^FAIL' <<< "$FX_OUT" && fail "fxblk-nltest reported a failing case"

# unprivileged: setpriv drops uid/gid and every capability first
fx_run as_nobody fxblk-nltest --expect-eperm
expect_match "$FX_OUT" 'fxblk-nltest: [1-9][0-9]* passed, 0 failed' "unprivileged nltest summary"
# and fxctl agrees: read-only commands work, state changes are refused
fx_run as_nobody fxctl version
fx_expect_fail --rc 6 --msg '(EPERM|ermission|privilege|root)' \
	as_nobody fxctl create nltest-eperm "${FX_MEMBER_LIST[0]}"

fx_json fxctl -o json list
expect_eq "$(jqr '.volumes | length')" 0 "volumes after malformed creates"
fx_dmesg_clean_since nltest
fx_unload
pass "malformed messages refused with EINVAL + extack, unprivileged admin ops get EPERM"
