#!/bin/bash
# The bash completion that 'fxctl --completion bash' generates offers every
# command of fxctl's table (as 'fxctl --help' lists them, the same table) and
# every option each command's help lists:
#   ctl/tests/completion.sh PATH/TO/fxctl
set -euo pipefail
FXCTL=$1
eval "$("$FXCTL" --completion bash)"
# offers WORD... : what completing the last WORD offers, one per line
offers() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_fxctl
	[ ${#COMPREPLY[@]} = 0 ] || printf '%s\n' "${COMPREPLY[@]}"
}
bad=0
expect() {	# expect WANT WORD...
	local want=$1 got
	shift
	# not "offers | grep -q": grep -q stops at the first match, printf then
	# dies of SIGPIPE, and pipefail turns a match into a failure (it did
	# for the first of five options under ASan)
	got=$(offers "$@")
	if grep -qxF -- "$want" <<< "$got"; then
		echo "ok: '${*}<TAB>' offers $want"
	else
		echo "FAIL: '${*}<TAB>' does not offer $want (offers: $(tr '\n' ' ' <<< "$got"))"
		bad=1
	fi
}
mapfile -t cmds < <("$FXCTL" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[ ${#cmds[@]} -ge 7 ] || { echo "FAIL: only ${#cmds[@]} commands in 'fxctl --help'"; exit 1; }
for c in "${cmds[@]}"; do
	expect "$c" fxctl ""
	expect "$c" fxctl "${c:0:2}"
	expect "$c" fxctl -o json "${c:0:1}"
	expect "$c" fxctl help "${c:0:2}"
	# the option column only ("  -f [ --force ]", "  --no-owner"), not a
	# description that names another tool's option (create's "as mdadm
	# --homehost=<none>", wrapped onto a line of its own)
	mapfile -t opts < <("$FXCTL" help "$c" | sed -n '/^Options for/,/^$/p' |
		grep -oE -- '^  (-[a-zA-Z0-9] \[ )?--[a-z][a-z0-9-]*' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
	for o in "${opts[@]}" --output --help; do
		expect "$o" fxctl "$c" "${o:0:3}"
	done
done
expect json fxctl -o ""
expect normal fxctl --output n
[ -z "$(offers fxctl zzz)" ] || { echo "FAIL: 'fxctl zzz<TAB>' offers something"; bad=1; }
[ "$(offers fxctl create --chunk "")" = "" ] || { echo "FAIL: a value after --chunk is completed"; bad=1; }
echo "${#cmds[@]} commands checked"
exit $bad
