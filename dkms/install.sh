#!/bin/bash
# Lay out the DKMS source tree of fxblk from kmod/:
#   dkms/install.sh [DESTROOT]     -> DESTROOT/usr/src/fxblk-<version>/ (default DESTROOT=/)
#   dkms/install.sh --print-version
# Then: dkms add fxblk/<version>; dkms build|install fxblk/<version> -k <kernel>.
# The version comes from the VERSION file (module, fxctl and packages).
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
VER=$(head -n1 "$TOP/VERSION" 2>/dev/null || true)
[[ $VER =~ ^[0-9A-Za-z.+~-]+$ ]] || { echo "dkms/install.sh: no version in $TOP/VERSION" >&2; exit 1; }
if [ "${1:-}" = --print-version ]; then echo "$VER"; exit 0; fi
DEST=${1:-/}/usr/src/fxblk-$VER
rm -rf "$DEST"
mkdir -p "$DEST/include/uapi/linux" "$DEST/compat"
# exactly what kmod/Makefile builds from: sources, Kbuild, probes, uapi header
cp -p "$TOP"/kmod/Makefile "$TOP"/kmod/Kbuild "$TOP"/kmod/*.c "$TOP"/kmod/*.h "$TOP"/kmod/*.sh "$TOP/VERSION" "$DEST/"
cp -p "$TOP"/kmod/compat/* "$DEST/compat/"
cp -p "$TOP"/kmod/include/uapi/linux/*.h "$DEST/include/uapi/linux/"
sed "s/#MODULE_VERSION#/$VER/" "$TOP/dkms/dkms.conf" > "$DEST/dkms.conf"
echo "$DEST"
