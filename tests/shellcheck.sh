#!/bin/bash
# Runs shellcheck over every shell file in the repository: the *.sh files and
# every tracked file whose first line is a bash or sh shebang (tests/lab/run,
# tests/lab/init, the units' helpers). Severity warning and up: what the
# tool calls a warning is a bug or a trap (unused variables, word
# splitting, loops that run once); the style notes are not checked.
# A deliberate case carries `# shellcheck disable=SCnnnn # why` on its line.
#
#   tests/shellcheck.sh [FILE...]     default: every shell file git knows
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP" || exit 2
command -v shellcheck >/dev/null ||
	{ echo "shellcheck: not installed: run 'make deps' (as root)" >&2; exit 1; }

if [ $# -gt 0 ]; then
	FILES=("$@")
else
	mapfile -t FILES < <({
		git ls-files '*.sh'
		git grep -lI -e '^#!/bin/bash' -e '^#!/bin/sh' -e '^#!/usr/bin/env bash' -- .
	} | sort -u)
fi
[ ${#FILES[@]} -gt 0 ] || { echo "shellcheck: no shell files found" >&2; exit 1; }

# -x: follow `source`d files; -P: look for them next to the file that
# sources them (tests/lab/lib.sh, faults.sh)
if shellcheck -S warning -x -P SCRIPTDIR -f gcc "${FILES[@]}"; then
	echo "shellcheck: ${#FILES[@]} files clean ($(shellcheck --version | sed -n 's/^version: //p'))"
else
	echo "shellcheck: warnings above, in ${#FILES[@]} files checked" >&2
	exit 1
fi
