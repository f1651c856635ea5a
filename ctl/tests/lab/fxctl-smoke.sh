#!/bin/bash
# fxctl against the real module in the lab VM, for a human to read:
#   tests/lab/run --kernel 6.1 --members 4 -- ctl/tests/lab/fxctl-smoke.sh
# Every command's exit status is checked against what the contract says.
set -u
read -ra M <<< "$FX_MEMBERS"
FAILS=0
expect() {  # expect RC CMD...: run CMD, show its output, check its status
	local want=$1; shift
	echo "+ $*"
	"$@"
	local rc=$?
	if [ "$rc" != "$want" ]; then
		echo "!! exit $rc, expected $want: $*"
		FAILS=$((FAILS + 1))
	fi
}

expect 0 modprobe fxblk
expect 0 fxctl version
expect 0 fxctl -o json version
expect 0 fxctl --version
expect 0 fxctl -vo json list
expect 0 fxctl list -o json
expect 0 fxblk-nltest
expect 0 fxblk-nltest --expect-eperm
expect 0 fxctl list
expect 0 fxctl -v create vol1 "${M[@]}"
expect 0 fxctl list
expect 0 fxctl -o json list
expect 0 fxctl show vol1
expect 0 fxctl -o json show /dev/fx0
expect 0 dd if=/dev/urandom of=/dev/fx0 bs=1M count=32 oflag=direct status=none
expect 0 dd if=/dev/fx0 of=/dev/null bs=1M count=32 iflag=direct status=none
expect 0 fxctl stats vol1
expect 0 fxctl stats fx0 --watch 1 --count 2
expect 0 fxctl -o json stats vol1 --watch 0.5 --count 2
expect 4 fxctl create vol2 "${M[0]}"     # member in use by fx0
expect 4 fxctl create vol1 "${M[0]}"
exec 3</dev/fx0
expect 4 fxctl remove vol1
exec 3<&-
expect 0 fxctl remove vol1
expect 3 fxctl remove vol1
expect 3 fxctl show fx0
echo "+ fxctl -o json show nosuch (JSON error object on stdout)"
J=$(fxctl -o json show nosuch 2>/dev/null)
if [ "$(jq -r '.error.code' <<<"$J")" != 3 ]; then
	echo "!! no JSON error object with code 3: $J"
	FAILS=$((FAILS + 1))
fi
# remove --force of an open volume: with the module's health feature it
# succeeds and I/O on the still-open disk fails; without it fxctl refuses.
expect 0 fxctl create vol1 "${M[@]}"
exec 3</dev/fx0
if fxctl -o json version | jq -e '.module.features | index("health")' >/dev/null; then
	expect 0 fxctl remove --force vol1
	expect 1 dd if=/dev/fx0 of=/dev/null bs=4k count=1 iflag=direct status=none
else
	expect 1 fxctl remove --force vol1
	exec 3<&-
	expect 0 fxctl remove vol1
fi
exec 3<&-
expect 2 fxctl create small --data-offset 1M "${M[0]}" "${M[1]}"   # label area
expect 2 fxctl create small --data-offset 0 "${M[0]}" "${M[1]}"
expect 1 fxctl create small --data-offset 18014398509481980K "${M[0]}" "${M[1]}"
expect 0 fxctl create small --chunk 4K --data-offset 8M "${M[0]}" "${M[1]}"
expect 0 fxctl -o json create big --chunk 16M "${M[2]}" "${M[3]}"
expect 0 fxctl list
expect 0 fxctl remove small
expect 0 fxctl remove /dev/fx/big
expect 2 fxctl create x --chunk 3K "${M[0]}"
expect 1 fxctl create x /dev/null
echo "fxctl-smoke: $FAILS failed"
[ "$FAILS" = 0 ]
