#!/bin/bash
# DKMS test: lay out the fxblk source tree with dkms/install.sh in a scratch
# directory and run `dkms add` + `dkms build -k KVER` against the lab's
# unpacked headers, without touching /var/lib/dkms or /usr/src:
#   tests/dkms.sh KVER        (e.g. 6.1.0-57-amd64; default: the lab's 6.1)
# Checks that dkms reports the module built and fxblk.ko has the right vermagic.
# The vendor glue modules, both cases: without vendor files only fxblk.ko is
# built (and dkms.conf lists no glue); with the fake vendors' headers and
# Module.symvers (tests/peer/vendor, the fakes built by
# tests/lab/modules/build.sh) fxblk_rocm.ko and fxblk_ascend.ko are built too,
# linked against them; an amd_rdma.h of an unknown API major builds no glue.
# FXBLK_DKMS_ROOT=DIR: use DIR/usr/src/fxblk-VERSION as it is (e.g. unpacked
# from the fxblk-dkms package; tests/packages.sh) instead of dkms/install.sh.
# FXBLK_DKMS_WARNING=1: warnings are errors only in CI builds. A warning is
# added to the source (an unused static variable, as a newer compiler's new
# warning would be), DKMS must still build it, as on a user's machine (no
# FXBLK_WERROR; KCFLAGS=-Werror as a kernel with CONFIG_WERROR would add), and
# then the same tree built as make check/CI does (FXBLK_WERROR=1) must fail.
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
# shellcheck source=/dev/null
. "$CACHE/kernels.env"
KVER=${1:-$FXBLK_KVER_6_1}
KDIR=$CACHE/k/$KVER/hdr/usr/src/linux-headers-$KVER
[ -d "$KDIR" ] || { echo "dkms test: no headers for $KVER in $KDIR (make deps)"; exit 1; }
S=$(mktemp -d "${TMPDIR:-/tmp}/fxdkms.XXXXXX")
trap 'rm -rf "$S"' EXIT
VER=$("$TOP/dkms/install.sh" --print-version)
if [ -n "${FXBLK_DKMS_ROOT:-}" ]; then
	SRC=$FXBLK_DKMS_ROOT/usr/src/fxblk-$VER
	[ -f "$SRC/dkms.conf" ] || { echo "dkms test: no $SRC/dkms.conf"; exit 1; }
	mkdir -p "$S/root/usr/src"
	cp -a "$SRC" "$S/root/usr/src/"
else
	SRC=$("$TOP/dkms/install.sh" "$S/root")
fi
WARN=${FXBLK_DKMS_WARNING:-0}
if [ "$WARN" = 1 ]; then
	printf '\nstatic int fxblk_dkms_canary;\n' >> "$SRC/fxblk_stats.c"
	echo "+ added to $SRC/fxblk_stats.c: static int fxblk_dkms_canary; (-Wunused-variable)"
fi
mkdir -p "$S/dkms" "$S/install"
# dkms runs `make` itself (also to read CC from the headers' .kernelvariables);
# run it as from a shell, not as a sub-make of `make check`, whose MAKEFLAGS
# and MAKELEVEL would make that make print "Entering directory" into CC.
# and without make check's FXBLK_WERROR=1: DKMS runs in a user's environment
KC=()
[ "$WARN" = 0 ] || KC=(KCFLAGS=-Werror)
# no vendor files from the caller's environment in the first case
NOVENDOR=(-u FXBLK_AMD_RDMA_INC -u FXBLK_AMD_RDMA_SYMVERS -u FXBLK_ASCEND_INC -u FXBLK_ASCEND_SYMVERS -u FXBLK_VENDOR_GLUE)
D=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u FXBLK_WERROR "${NOVENDOR[@]}" "${KC[@]}" dkms --dkmstree "$S/dkms" --sourcetree "$S/root/usr/src" --installtree "$S/install")
echo "+ dkms add fxblk/$VER (source $SRC)"
"${D[@]}" add -m fxblk -v "$VER"
echo "+ dkms build fxblk/$VER -k $KVER"
if ! "${D[@]}" build -m fxblk -v "$VER" -k "$KVER" --kernelsourcedir "$KDIR"; then
	cat "$S/dkms/fxblk/$VER/build/make.log" 2>/dev/null || true
	exit 1
fi
"${D[@]}" status -m fxblk -v "$VER" -k "$KVER" | tee "$S/status"
grep -q "fxblk/$VER, $KVER, .*: built" "$S/status" || { echo "dkms status does not say built"; exit 1; }
KO=$(find "$S/dkms/fxblk/$VER/$KVER" -name 'fxblk.ko*' | head -n1)
[ -n "$KO" ] || { echo "no fxblk.ko in the dkms tree"; exit 1; }
VM=$(modinfo -F vermagic "$KO")
echo "built $KO: vermagic $VM"
[[ $VM == "$KVER "* ]] || { echo "vermagic '$VM' is not for $KVER"; exit 1; }
if [ -z "$(ls /usr/src/amdgpu-*/include/drm/amd_rdma.h 2>/dev/null)" ]; then
	G=$(find "$S/dkms/fxblk/$VER/$KVER" -name 'fxblk_*.ko*')
	[ -z "$G" ] || { echo "glue modules built without vendor files: $G"; exit 1; }
	echo "no vendor files: fxblk.ko only, no glue module"
else
	echo "SKIP: the no-vendor case: this host has amdgpu-dkms sources in /usr/src"
fi
# BUILD_EXCLUSIVE_KERNEL: 5.10+ accepted, older refused
R=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$SRC/dkms.conf")
for k in 5.10.0-46-amd64 6.1.0-57-amd64 6.12.117+deb12-amd64 7.0.1; do
	[[ $k =~ $R ]] || { echo "BUILD_EXCLUSIVE_KERNEL refuses $k"; exit 1; }
done
for k in 5.4.0-1-amd64 4.19.0-27-amd64 5.9.16; do
	[[ $k =~ $R ]] && { echo "BUILD_EXCLUSIVE_KERNEL accepts $k"; exit 1; }
done
if [ "$WARN" = 1 ]; then
	L=$(find "$S/dkms/fxblk/$VER/$KVER" -path '*/log/make.log' | head -n1)
	[ -n "$L" ] || { echo "no make.log kept by dkms"; exit 1; }
	grep -E "warning: .fxblk_dkms_canary. defined but not used" "$L" ||
		{ echo "the DKMS build log does not show the canary warning"; cat "$L"; exit 1; }
	echo "DKMS built it with the warning (not an error), KCFLAGS=-Werror notwithstanding"
	echo "+ the same source as make check/CI builds it: FXBLK_WERROR=1 (must fail)"
	# the probe results of make check's module build of KVER, if there, save a minute
	mkdir -p "$S/ci/$KVER"
	P=$TOP/build/kmod/$KVER/fxblk_probes.h
	if [ -f "$P" ]; then cp "$P" "$S/ci/$KVER/" && touch "$S/ci/$KVER/fxblk_probes.h"; fi
	if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$SRC" KVER="$KVER" KDIR="$KDIR" \
		BUILD="$S/ci" FXBLK_WERROR=1 > "$S/ci.log" 2>&1; then
		cat "$S/ci.log"; echo "FXBLK_WERROR=1 built a source with a warning"; exit 1
	fi
	grep -E "error: .fxblk_dkms_canary. defined but not used" "$S/ci.log" ||
		{ cat "$S/ci.log"; echo "FXBLK_WERROR=1 failed, but not on the canary"; exit 1; }
	echo "CI build failed on the warning, as it must"
fi

# ---- with vendor files: the fakes' headers and Module.symvers -----------
echo "+ the fake vendors for $KVER (tests/lab/modules/build.sh)"
LMB=${FXBLK_BUILD:-$TOP/build}/lab-modules/$KVER
"$TOP/tests/lab/modules/build.sh" "$KVER" "$S/labmods" >/dev/null
[ -f "$LMB/Module.symvers" ] || { echo "no Module.symvers of the fakes in $LMB"; exit 1; }
mkdir -p "$S/vendor"
grep -w fake_amdkfd "$LMB/Module.symvers" > "$S/vendor/amd.symvers"
grep -w fake_ascend "$LMB/Module.symvers" > "$S/vendor/ascend.symvers"
VENV=(FXBLK_AMD_RDMA_INC="$TOP/tests/peer/vendor/amd-v2" FXBLK_AMD_RDMA_SYMVERS="$S/vendor/amd.symvers"
      FXBLK_ASCEND_INC="$TOP/tests/peer/vendor/ascend" FXBLK_ASCEND_SYMVERS="$S/vendor/ascend.symvers")
# an unknown amd_rdma API major: no rocm glue (the rest still builds)
mkdir -p "$S/vendor/amd-v3/drm"
sed 's/^#define AMD_RDMA_MAJOR 2$/#define AMD_RDMA_MAJOR 3/' "$TOP/tests/peer/vendor/amd-v2/drm/amd_rdma.h" \
	> "$S/vendor/amd-v3/drm/amd_rdma.h"
L=$(env "${VENV[@]}" FXBLK_AMD_RDMA_INC="$S/vendor/amd-v3" sh "$SRC/vendor-glue.sh" list "$KVER" 2>"$S/v3.err")
cat "$S/v3.err"
[ "$L" = ascend ] || { echo "vendor-glue.sh with amd_rdma major 3 lists '$L', not 'ascend'"; exit 1; }
grep -q "API major 3 .* is not known" "$S/v3.err" || { echo "no reason given for refusing major 3"; exit 1; }
echo "amd_rdma API major 3: fxblk_rocm refused, with the reason"

rm -rf "$S/dkms" "$S/install"
mkdir -p "$S/dkms" "$S/install"
DV=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u FXBLK_WERROR "${VENV[@]}" dkms --dkmstree "$S/dkms" --sourcetree "$S/root/usr/src" --installtree "$S/install")
echo "+ dkms add + build fxblk/$VER -k $KVER with the fake vendors' files"
"${DV[@]}" add -m fxblk -v "$VER" >/dev/null
if ! "${DV[@]}" build -m fxblk -v "$VER" -k "$KVER" --kernelsourcedir "$KDIR"; then
	cat "$S/dkms/fxblk/$VER/build/make.log" 2>/dev/null || true
	exit 1
fi
"${DV[@]}" status -m fxblk -v "$VER" -k "$KVER"
for m in fxblk fxblk_rocm fxblk_ascend; do
	KO=$(find "$S/dkms/fxblk/$VER/$KVER" -name "$m.ko*" | head -n1)
	[ -n "$KO" ] || { echo "no $m.ko in the dkms tree with vendor files"; exit 1; }
	[[ $(modinfo -F vermagic "$KO") == "$KVER "* ]] || { echo "$m: vermagic not for $KVER"; exit 1; }
	echo "built $m: depends $(modinfo -F depends "$KO")"
done
KO=$(find "$S/dkms/fxblk/$VER/$KVER" -name 'fxblk_rocm.ko*' | head -n1)
[ "$(modinfo -F depends "$KO")" = fxblk,fake_amdkfd ] || { echo "fxblk_rocm does not link to fxblk and the vendor"; exit 1; }
[ "$(modinfo -F amd_rdma_api "$KO")" = 2 ] || { echo "fxblk_rocm not built for amd_rdma API 2"; exit 1; }
KO=$(find "$S/dkms/fxblk/$VER/$KVER" -name 'fxblk_ascend.ko*' | head -n1)
[ "$(modinfo -F depends "$KO")" = fxblk,fake_ascend ] || { echo "fxblk_ascend does not link to fxblk and the vendor"; exit 1; }
echo "dkms add/build OK for $KVER"
