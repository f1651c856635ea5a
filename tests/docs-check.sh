#!/bin/bash
# docs-check: the user-facing docs (README.md, docs/**/*.md, the man pages)
# cite only what their reader has: the repository's own files and public
# sources. Fails, naming file:line, on any reference to a path outside the
# repository:
#   - the build machine's workspace or a home directory (/work/..., /home/...,
#     /root/..., ~/...) in a file path;
#   - a relative path with "../" (in a Markdown link or a `code` span) that,
#     read from the file's directory, leaves the repository or names
#     nothing in it (e.g. `../shared/lab-notes.md`).
# System paths a user has (/etc/..., /dev/..., /usr/..., /var/cache/fxblk
# made by `make deps`) are fine.
# Without FILE arguments it then runs tests/docs_check.py, the rules about
# what the README claims: one screen up to "Set up", sentences of at most 40
# words, a feature table whose tests exist and run in make check (read from
# tests/check.sh's plan, FXBLK_CHECK_LIST=1), figures only where the doc
# that owns them has them, every relative link and anchor of README.md and
# docs/ resolving, and the old doc paths still there.
#
#   tests/docs-check.sh [FILE...]     default: README.md docs/ and *.[1-8]
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP" || exit 2

if [ $# -gt 0 ]; then
	FILES=("$@")
else
	mapfile -t FILES < <({
		echo README.md
		find docs -name '*.md'
		find . -path ./build -prune -o -path ./.git -prune -o -type f \
			-name '*.[1-8]' -print
	} | sed 's|^\./||' | sort -u)
fi

bad=0
report() {	# report FILE:LINE WHY
	echo "docs-check: $1: $2"
	bad=1
}

for f in "${FILES[@]}"; do
	[ -f "$f" ] || { report "$f" "no such file"; continue; }
	# 1. absolute paths of this machine's workspace or a home directory
	while IFS=: read -r line text; do
		report "$f:$line" "path outside the repository: $(grep -oE '(^|[^A-Za-z0-9_.-])(/work/|/home/|/root/|~/)[^ `)"]*' <<< "$text" | head -n1 | sed 's/^[^/~]*//')"
	done < <(grep -nE '(^|[^A-Za-z0-9_.-])(/work/|/home/|/root/|~/)[A-Za-z0-9_.-]' "$f")
	# 2. relative paths with ../: Markdown link targets and `code` spans
	dir=$(dirname "$f")
	while IFS=: read -r line ref; do
		ref=${ref#(}
		ref=${ref#\`}
		ref=${ref%)}
		ref=${ref%\`}
		ref=${ref%%#*}
		target=$(realpath -m "$dir/$ref")
		case $target in
		"$TOP"/*) [ -e "$target" ] || report "$f:$line" "'$ref' names nothing in the repository ($target)" ;;
		*) report "$f:$line" "'$ref' leaves the repository ($target)" ;;
		esac
	done < <(grep -noE '\]\((\.\./[^) ]*)\)|`(\.\./[^` ]*)`' "$f" | sed 's/^\([0-9]*\):\](/\1:(/')
done

if [ "$bad" = 0 ]; then
	echo "docs-check: ${#FILES[@]} files, no reference to a path outside the repository"
fi
if [ $# = 0 ]; then
	python3 "$TOP/tests/docs_check.py" || bad=1
fi
exit $bad
