#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Which vendor glue modules can be built for a kernel, and their inputs: the
# vendor's header and the Module.symvers that exports its symbols. Used by
# kmod/Makefile (make time) and dkms.conf (BUILT_MODULE_NAME), so both
# agree.
#   vendor-glue.sh list KVER          names that can be built (rocm ascend)
#   vendor-glue.sh stage KVER DIR     copy each one's header(s) and symvers
#                                     to DIR/vendor/<name>/, print the names
# Inputs, each overridable from the environment:
#   rocm   FXBLK_AMD_RDMA_INC     directory holding drm/amd_rdma.h
#                                 (default: the newest /usr/src/amdgpu-*/include)
#          FXBLK_AMD_RDMA_SYMVERS Module.symvers exporting
#                                 amdkfd_query_rdma_interface (default: next to
#                                 that source tree, or amdgpu's DKMS build dir)
#   ascend FXBLK_ASCEND_INC       directory holding ascend_kernel_hal.h
#          FXBLK_ASCEND_SYMVERS   Module.symvers exporting hal_kernel_p2p_*
#                                 (no default: set both where the Ascend
#                                 driver's kernel sources are installed)
#   FXBLK_VENDOR_GLUE=none        build no glue at all
# The default amdgpu-dkms paths are not verified on a real installation
# (docs/gpu-direct-design.md); the environment variables are the documented way.
# A header whose amd_rdma API major is neither 1 (no AMD_RDMA_MAJOR) nor 2
# is refused here, so the rest still builds.
set -eu
CMD=${1:?usage: vendor-glue.sh list|stage KVER [DIR]}
KVER=${2:?usage: vendor-glue.sh list|stage KVER [DIR]}
DIR=${3:-}
[ "${FXBLK_VENDOR_GLUE:-}" != none ] || exit 0

note() { echo "fxblk vendor glue ($KVER): $*" >&2; }

# has SYMVERS SYMBOL: SYMVERS is a file that exports SYMBOL
has() { [ -f "$1" ] && grep -q "[[:space:]]$2[[:space:]]" "$1"; }

amd_inputs() {
	inc=${FXBLK_AMD_RDMA_INC:-}
	if [ -z "$inc" ]; then
		src=$(ls -d /usr/src/amdgpu-* 2>/dev/null | sort -V | tail -n1)
		[ -n "$src" ] || return 1
		inc=$src/include
	fi
	[ -f "$inc/drm/amd_rdma.h" ] || return 1
	sym=${FXBLK_AMD_RDMA_SYMVERS:-}
	if [ -z "$sym" ] && [ -n "${src:-}" ]; then
		v=${src##*/amdgpu-}
		for c in "$src/Module.symvers" "/var/lib/dkms/amdgpu/$v/build/Module.symvers"; do
			[ -f "$c" ] && { sym=$c; break; }
		done
	fi
	if ! has "$sym" amdkfd_query_rdma_interface; then
		note "rocm: $inc/drm/amd_rdma.h but no Module.symvers exporting amdkfd_query_rdma_interface${sym:+ ($sym)}: not built (set FXBLK_AMD_RDMA_SYMVERS)"
		return 1
	fi
	major=$(sed -n 's/^#define[[:space:]]*AMD_RDMA_MAJOR[[:space:]]*\([0-9]*\).*/\1/p' "$inc/drm/amd_rdma.h")
	case ${major:-1} in
	1|2) ;;
	*) note "rocm: amd_rdma API major $major in $inc/drm/amd_rdma.h is not known (1, 2): not built"
	   return 1 ;;
	esac
}

ascend_inputs() {
	inc=${FXBLK_ASCEND_INC:-}
	sym=${FXBLK_ASCEND_SYMVERS:-}
	[ -n "$inc" ] && [ -f "$inc/ascend_kernel_hal.h" ] || return 1
	if ! has "$sym" hal_kernel_p2p_get_pages || ! has "$sym" hal_kernel_p2p_put_pages; then
		note "ascend: $inc/ascend_kernel_hal.h but no Module.symvers exporting hal_kernel_p2p_get/put_pages${sym:+ ($sym)}: not built"
		return 1
	fi
}

stage() {	# stage NAME HEADER-RELATIVE-PATH
	mkdir -p "$DIR/vendor/$1/$(dirname "$2")"
	cp "$inc/$2" "$DIR/vendor/$1/$2"
	cp "$sym" "$DIR/vendor/$1/Module.symvers"
}

[ "$CMD" != stage ] || { [ -n "$DIR" ] || { echo "stage needs DIR" >&2; exit 2; }; rm -rf "$DIR/vendor"; }
names=
if amd_inputs; then
	[ "$CMD" != stage ] || stage rocm drm/amd_rdma.h
	names="$names rocm"
fi
if ascend_inputs; then
	[ "$CMD" != stage ] || stage ascend ascend_kernel_hal.h
	names="$names ascend"
fi
echo $names
