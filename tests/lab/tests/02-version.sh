#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.12 members=4
# `fxctl version` over generic netlink: text and `-o json` report the tool
# version, the module version (equal to /sys/module/fxblk/version), API
# version 1 and the feature list; JSON carries schema_version 2. Also the
# exit-code contract: unknown command and bad option value exit 2.
. /lab/lib.sh

fx_load
MODVER=$(cat /sys/module/fxblk/version) || fail "module has no version in sysfs"

fx_run fxctl version
TEXT=$FX_OUT
expect_match "$TEXT" "$MODVER" "fxctl version text names the module version"
# "(API 1)", not "API 12": the number must end there
expect_match "$TEXT" '[Aa][Pp][Ii][^0-9]*1([^0-9]|$)' "fxctl version text names API version 1"

fx_json fxctl -o json version
expect_eq "$(jqr .schema_version)" 2 "json schema_version"
expect_eq "$(jqr .module.version)" "$MODVER" "json module.version vs /sys/module/fxblk/version"
expect_eq "$(jqr .module.api_version)" 1 "json module.api_version"
expect_eq "$(jqr '.module.api_version | type')" number "json api_version type"
expect_match "$(jqr .fxctl.version)" '^[0-9]+\.[0-9]+\.[0-9]+' "json fxctl.version"
expect_eq "$(jqr '.module.features | type')" array "json module.features type"
expect_eq "$(jqr '.module.features | index("stripe") != null')" true "features include stripe"
# the option may come after the command too
fx_json fxctl version -o json
expect_eq "$(jqr .module.version)" "$MODVER" "json with -o after the command"

# combined global options (-vo json) before the command
fx_json fxctl -vo json version
expect_eq "$(jqr .module.version)" "$MODVER" "json with -vo json"

# exit codes: 2 for usage errors
fx_expect_fail --rc 2 fxctl no-such-command
fx_expect_fail --rc 2 fxctl -o yaml version
fx_expect_fail --rc 2 fxctl version --no-such-option

fx_unload
pass "fxctl version: module $MODVER, API 1"
