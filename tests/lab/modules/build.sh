#!/bin/bash
# Build the lab's test modules (tests/lab/modules/*.c) for one kernel:
#   tests/lab/modules/build.sh KVER OUT_DIR
# Sources are copied to build/lab-modules/KVER (kbuild writes next to them),
# built there under a lock (concurrent lab runs), and the .ko files copied to
# OUT_DIR. Called by tests/lab/run for every run, so it is cached: the
# outputs are kept in build/lab-modules/KVER/out with a stamp, the hash of
# every input (these sources, kmod/, the fakes and vendor headers, fxblk's
# Module.symvers, the kernel's cache stamp, gcc, this script). An unchanged
# stamp copies out/ and builds nothing: kbuild's own no-op check costs ~8 s
# of CPU per call, and under the lock concurrent runs of one kernel queued
# behind each other's (make check: 30-80 s per run on a loaded host).
# Then the vendor glue modules (kmod: fxblk_rocm.ko, fxblk_ascend.ko) are
# built against the fakes as a real host builds them against the vendor's:
# the vendor header (tests/peer/vendor) and the fakes' Module.symvers, and
# fxblk.ko of the lab build (build/kmod/KVER): OUT_DIR/amd-v1/fxblk_rocm.ko
# (amd_rdma API 1, for fake_amdkfd api=1), OUT_DIR/amd-v2/fxblk_rocm.ko and
# OUT_DIR/fxblk_ascend.ko.
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
# Before 5.18 (bio_alloc without the bdev, which fxlab_flushw and the fakes
# use) only the modules of Kbuild's FXLAB_OLD list are built, and no glue.
OLD=0
case $KVER in
[0-4].* | 5.[0-9][.-]* | 5.1[0-7][.-]*) OLD=1 ;;
esac
MAIN=${FXBLK_BUILD:-$TOP/build}/kmod/$KVER
stamp() {
	{
		echo "$KVER $OLD"
		gcc --version | head -n1
		cat "$CACHE/k/$KVER/.stamp" 2>/dev/null
		[ ! -f "$MAIN/Module.symvers" ] || sha1sum "$MAIN/Module.symvers"
		(cd "$TOP" && find tests/lab/modules tests/peer kmod -type f -print0 | LC_ALL=C sort -z |
			xargs -0 sha1sum)
	} | sha1sum | cut -d' ' -f1
}
S=$(stamp)
(
	flock 9
	if [ -f "$B/out.stamp" ] && [ "$(cat "$B/out.stamp")" = "$S" ] && [ -d "$B/out" ]; then
		cp -a "$B/out/." "$OUT/"
		exit 0
	fi
	rm -rf "$B/out" "$B/out.stamp"
	FINAL_OUT=$OUT
	OUT=$B/out
	mkdir -p "$OUT"
	# tests/peer: the fake vendor modules of the peer-memory test
	for f in "$HERE"/Kbuild "$HERE"/*.c "$TOP"/tests/peer/fake_*.c "$TOP"/tests/peer/*.h; do cmp -s "$f" "$B/${f##*/}" || cp "$f" "$B/"; done
	mkdir -p "$B/vendor" && cp -a "$TOP"/tests/peer/vendor/. "$B/vendor/"
	# 6.16/7.2: kbuild runs in the chroot holding their headers (kmod/Makefile)
	if [ -f "$CACHE/k/$KVER/chroot" ]; then
		KMAKE=("$TOP/scripts/chroot-run.sh" "$(cat "$CACHE/k/$KVER/chroot")" --bind "$B" --
			make -s -C "/usr/src/linux-headers-$KVER")
	else
		KMAKE=(make -s -C "$KDIR" CC="${FXBLK_CCACHE:+$FXBLK_CCACHE }gcc")
	fi
	rm -f "$B"/*.ko
	if ! "${KMAKE[@]}" M="$B" FXLAB_OLD=$OLD modules >"$B/build.log" 2>&1; then
		echo "lab modules: build for $KVER failed, see $B/build.log" >&2
		exit 1
	fi
	cp "$B"/*.ko "$OUT/"
	if [ $OLD = 1 ]; then
		echo "lab modules: $KVER < 5.18: only $(cd "$B" && echo *.ko)" >&2
	elif [ -f "$MAIN/Module.symvers" ]; then
		# each vendor's own Module.symvers, as each real driver has one
		grep -w fake_amdkfd "$B/Module.symvers" > "$B/vendor/amd.symvers"
		grep -w fake_ascend "$B/Module.symvers" > "$B/vendor/ascend.symvers"
		for v in 1 2; do
			a=(FXBLK_AMD_RDMA_INC="$B/vendor/amd-v$v" FXBLK_AMD_RDMA_SYMVERS="$B/vendor/amd.symvers")
			[ $v = 1 ] || a+=(FXBLK_ASCEND_INC="$B/vendor/ascend" FXBLK_ASCEND_SYMVERS="$B/vendor/ascend.symvers")
			if ! env -u FXBLK_VENDOR_GLUE "${a[@]}" make -s -C "$TOP/kmod" glue KVER="$KVER" FXBLK_WERROR=1 \
				BUILD="$B/glue-amd-v$v" FXBLK_MAIN="$MAIN" >"$B/glue-amd-v$v.log" 2>&1; then
				echo "lab modules: vendor glue (amd_rdma v$v) for $KVER failed, see $B/glue-amd-v$v.log" >&2
				exit 1
			fi
			mkdir -p "$OUT/amd-v$v"
			cp "$B/glue-amd-v$v/$KVER/fxblk_rocm.ko" "$OUT/amd-v$v/"
		done
		cp "$B/glue-amd-v2/$KVER/fxblk_ascend.ko" "$OUT/"
	else
		echo "lab modules: no fxblk build in $MAIN: vendor glue modules not built" >&2
	fi
	if [ $OLD = 0 ]; then
		# the peer test's user-space drivers, against the uapi header of this tree
		gcc -O2 -Wall -Wextra -Werror -I"$TOP/kmod/include/uapi" \
			-o "$OUT/peer-test" "$TOP/tests/peer/peer-test.c"
		gcc -O2 -Wall -Wextra -Werror -pthread -I"$TOP/kmod/include/uapi" \
			-o "$OUT/peer-fuzz" "$TOP/tests/peer/peer-fuzz.c"
	fi
	echo "$S" > "$B/out.stamp"
	cp -a "$OUT/." "$FINAL_OUT/"
) 9>"$B/.lock"
