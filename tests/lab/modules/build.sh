#!/bin/bash
# Build the lab's test modules (tests/lab/modules/*.c) for one kernel:
#   tests/lab/modules/build.sh KVER OUT_DIR
# Sources are copied to build/lab-modules/KVER (kbuild writes next to them),
# built there under a lock (concurrent lab runs), and the .ko files copied to
# OUT_DIR. Called by tests/lab/run for every run; make rebuilds only on change.
set -euo pipefail
KVER=${1:?usage: build.sh KVER OUT_DIR}
OUT=${2:?usage: build.sh KVER OUT_DIR}
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
B=${FXBLK_BUILD:-$TOP/build}/lab-modules/$KVER
KDIR=$CACHE/k/$KVER/hdr/usr/src/linux-headers-$KVER
[ -d "$KDIR" ] || { echo "lab modules: no headers for $KVER in $KDIR" >&2; exit 1; }
mkdir -p "$B" "$OUT"
case $KVER in	# fxlab_flushw needs 5.18+ (bio_alloc taking the bdev)
[0-4].* | 5.[0-9][.-]* | 5.1[0-7][.-]*) echo "lab modules: not built for $KVER (< 5.18)" >&2; exit 0 ;;
esac
(
	flock 9
	# tests/peer: the fake vendor modules of the peer-memory test
	for f in "$HERE"/Kbuild "$HERE"/*.c "$TOP"/tests/peer/fake_*.c "$TOP"/tests/peer/*.h; do cmp -s "$f" "$B/${f##*/}" || cp "$f" "$B/"; done
	# 6.16/7.2: kbuild runs in the chroot holding their headers (kmod/Makefile)
	if [ -f "$CACHE/k/$KVER/chroot" ]; then
		KMAKE=("$TOP/scripts/chroot-run.sh" "$(cat "$CACHE/k/$KVER/chroot")" --bind "$B" --
			make -s -C "/usr/src/linux-headers-$KVER")
	else
		KMAKE=(make -s -C "$KDIR" CC=gcc)
	fi
	if ! "${KMAKE[@]}" M="$B" modules >"$B/build.log" 2>&1; then
		echo "lab modules: build for $KVER failed, see $B/build.log" >&2
		exit 1
	fi
	cp "$B"/*.ko "$OUT/"
	# and its user-space driver, against the uapi header of this tree
	gcc -O2 -Wall -Wextra -Werror -I"$TOP/kmod/include/uapi" \
		-o "$OUT/peer-test" "$TOP/tests/peer/peer-test.c"
	gcc -O2 -Wall -Wextra -Werror -pthread -I"$TOP/kmod/include/uapi" \
		-o "$OUT/peer-fuzz" "$TOP/tests/peer/peer-fuzz.c"
) 9>"$B/.lock"
