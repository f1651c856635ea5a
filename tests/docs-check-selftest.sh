#!/bin/bash
# docs-check's README rules (tests/docs_check.py) can fail: each case plants
# one defect in a copy of README.md and docs/ and must fail for that reason;
# the copy as it is, and with a figure its doc has, must pass.
#
#   tests/docs-check-selftest.sh
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
W=$(mktemp -d) || exit 2
trap 'rm -rf "$W"' EXIT
# tests/check.sh's plan once, for every case; not narrowed by the variables
# of the make check that runs this (FXBLK_CHECK_FILTER='^docs' would leave
# every lab test out of it)
CLEAN=(env -u FXBLK_CHECK_FILTER -u FXBLK_LAB_KERNELS -u FXBLK_LAB_EXTRA_DIR
	-u FXBLK_CHECK_FULL FXBLK_CHECK_LIST=1)
"${CLEAN[@]}" bash "$TOP/tests/check.sh" > "$W/plan" 2>/dev/null
"${CLEAN[@]}" FXBLK_CHECK_FULL=1 bash "$TOP/tests/check.sh" > "$W/plan-full" 2>/dev/null
export FXBLK_DOCS_PLAN=$W/plan FXBLK_DOCS_PLAN_FULL=$W/plan-full FXBLK_DOCS_ROOT=$W/t

fails=0
# check NAME WANT ERE EDIT...: in a fresh copy, run EDIT (a command in the
# copy's directory); docs_check.py must exit WANT (0 pass, 1 fail) and,
# when it fails, print ERE
check() {
	local name=$1 want=$2 ere=$3 out rc
	shift 3
	rm -rf "$W/t" && mkdir -p "$W/t" && cp -a "$TOP/README.md" "$TOP/docs" "$W/t/" || exit 2
	# the rest of the tree, which the links name, as it is
	for e in "$TOP"/*; do
		[ -e "$W/t/${e##*/}" ] || ln -s "$e" "$W/t/${e##*/}"
	done
	(cd "$W/t" && "$@") || { echo "FAIL: $name: the edit did not apply"; fails=1; return; }
	out=$(python3 "$TOP/tests/docs_check.py" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL: $name: exit $rc, expected $want"; printf '%s\n' "$out" | sed 's/^/  | /'
		fails=1
	elif [ "$want" = 1 ] && ! grep -Eq -- "$ere" <<< "$out"; then
		echo "FAIL: $name: failed, but without /$ere/"; printf '%s\n' "$out" | sed 's/^/  | /'
		fails=1
	else
		echo "ok: $name$([ "$want" = 1 ] && echo ": $(grep -E -- "$ere" <<< "$out" | head -n1)")"
	fi
}
# edit FROM TO: replace the first line matching FROM (a fixed string) by TO
# in README.md (TO may hold \n)
edit() {
	python3 - "$1" "$2" <<'EOF' || return 1
import sys
frm, to = sys.argv[1], sys.argv[2].replace("\\n", "\n")
s = open("README.md").read()
if frm not in s:
    sys.exit(1)
open("README.md", "w").write(s.replace(frm, to, 1))
EOF
}
ROW46='| PCI P2PDMA memory to local nvme-pci members (emulated CMB) | lab-only, check-full |'

check "as it is" 0 '' true
check "a figure its doc has" 0 '' \
	edit '## Install' 'A clean `make check` took 31 min 28 s: 152 passed ([support matrix](docs/support-matrix.md)).\n\n## Install'
check "over 40 lines" 1 'lines before .## Set up., more than 40' \
	edit '## Set up' 'One more line.\nAnd another.\n\n## Set up'
check "a sentence over 40 words" 1 'a sentence of [0-9]+ words' \
	edit 'Ascend interfaces over host memory.' "Ascend interfaces over host memory$(printf ' and more%.0s' {1..20})."
check "a row in no state" 1 "state 'maybe'" \
	edit '| works | [26]' '| maybe | [26]'
check "a claim without a test" 1 'names no test' \
	edit '| works | [26](tests/lab/tests/26-crash-consistency.sh) |' '| works | [reliability](docs/reliability.md) |'
check "a test that does not exist" 1 'tests/lab/tests/26-crash-gone.sh does not exist' \
	edit '(tests/lab/tests/26-crash-consistency.sh)' '(tests/lab/tests/26-crash-gone.sh)'
check "a check-full test said to run in make check" 1 '46-peer-p2pdma.sh is not run by make check' \
	edit "$ROW46" "${ROW46/, check-full/}"
check "a test run by neither" 1 'check-arm64.sh is not run by make check-full' \
	edit '[46](tests/lab/tests/46-peer-p2pdma.sh)' '[arm64](tests/check-arm64.sh)'
check "a host test make check does not run" 1 'check-arm64.sh is not run by make check' \
	edit '[dkms](tests/dkms.sh)' '[arm64](tests/check-arm64.sh)'
check "a unit test that does not exist" 1 'test_nothing.cpp does not exist' \
	edit '(ctl/tests/test_doctor.cpp)' '(ctl/tests/test_nothing.cpp)'
check "a figure that differs from its doc" 1 "figure '153 passed' is not in docs/support-matrix.md" \
	edit '## Install' 'A clean `make check` took 31 min 28 s: 153 passed ([support matrix](docs/support-matrix.md)).\n\n## Install'
check "a figure with no owning doc" 1 "figure '4 s' with no link" \
	edit '## Install' 'Boot takes 4 s.\n\n## Install'
check "a link to no file" 1 "docs/nothing.md does not exist" \
	edit '## Install' 'See [nothing](docs/nothing.md).\n\n## Install'
check "a link to no heading" 1 "no heading #no-such-part in docs/install.md" \
	edit '## Install' 'See [install](docs/install.md#no-such-part).\n\n## Install'
check "a doc's link to no heading" 1 "docs/README.md:[0-9]+: link 'install.md#gone'" \
	sed -i 's|(install.md)|(install.md#gone)|' docs/README.md
check "an old doc path gone" 1 "docs/benchmarks.md: an old doc path no longer resolves" \
	rm docs/benchmarks.md
check "a module parameter the reference lacks" 1 "module parameter 'peer_lab_open_ms' is not in docs/module-parameters.md" \
	sed -i '/^| `peer_lab_open_ms`/d' docs/module-parameters.md
check "a reference row of no parameter" 1 "'peer_gone' is no parameter of the module" \
	sed -i 's/^| `peer_lab_nsid`/| `peer_gone`/' docs/module-parameters.md
[ "$fails" = 0 ] && echo "docs-check self-test: every planted defect caught, the clean copy passes"
exit $fails
