#!/bin/bash
# Fuzzes the on-disk label decoder (ctl/tests/fuzz_label.cpp) with libFuzzer
# for a bounded time. Usage: tests/fuzz-label.sh [SECONDS] (default 25;
# env FXBLK_FUZZ_SECONDS). Builds build/ctl-fuzz with clang. A crash leaves
# its input in build/ctl-fuzz/crash-*; replay: build/ctl-fuzz/ctl/tests/fuzz_label FILE
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
SECS=${1:-${FXBLK_FUZZ_SECONDS:-25}}
B=$TOP/build/ctl-fuzz
command -v clang++ >/dev/null || { echo "clang++ not installed: run make deps" >&2; exit 1; }
cmake -S "$TOP" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	-DCMAKE_CXX_COMPILER=clang++ -DFXBLK_FUZZ=ON >/dev/null
cmake --build "$B" --target fuzz_label -j"$(nproc)"
# the committed seeds stay read-only: new inputs go to a scratch corpus
rm -rf "$B/corpus" && mkdir -p "$B/corpus"
cd "$B"
"$B/ctl/tests/fuzz_label" -max_total_time="$SECS" -max_len=20000 -print_final_stats=1 \
	"$B/corpus" "$TOP/ctl/tests/fuzz_corpus/label"
