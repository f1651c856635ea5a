#!/bin/bash
# make install / make uninstall:
#   scripts/install.sh install|uninstall   (env: DESTDIR, PREFIX, BUILD)
# install: fxctl, its man page, bash completion, udev rules and systemd units
# through CMake's install() (GNUInstallDirs under PREFIX, default /usr/local),
# libfxio (components libfxio: the shared library; libfxio-dev: fxio.h,
# fxio.pc, the .so link; python3-fxio: the fxio Python package — not part
# of the fxctl package's default install),
# and the module sources for DKMS in $DESTDIR/usr/src/fxblk-VERSION (DKMS
# looks only there, whatever PREFIX is).
# uninstall: removes exactly the files an install would write (found by
# installing into a scratch directory), and the DKMS source tree. It does not
# `dkms remove`: do that first if the module was added to DKMS.
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
VER=$(head -n1 "$TOP/VERSION")
[ -f "$BUILD/ctl/CMakeCache.txt" ] || { echo "install: no fxctl build in $BUILD/ctl (run make fxctl)" >&2; exit 1; }

case ${1:-} in
install)
	DESTDIR=$DESTDIR cmake --install "$BUILD/ctl" --prefix "$PREFIX"
	for c in libfxio libfxio-dev python3-fxio; do
		DESTDIR=$DESTDIR cmake --install "$BUILD/ctl" --prefix "$PREFIX" --component $c
	done
	"$TOP/dkms/install.sh" "${DESTDIR:-/}" > /dev/null
	echo "-- Installing: ${DESTDIR}/usr/src/fxblk-$VER (DKMS: dkms add fxblk/$VER)"
	;;
uninstall)
	stage=$(mktemp -d "${TMPDIR:-/tmp}/fxblk-uninstall.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	DESTDIR=$stage cmake --install "$BUILD/ctl" --prefix "$PREFIX" > /dev/null
	for c in libfxio libfxio-dev python3-fxio; do
		DESTDIR=$stage cmake --install "$BUILD/ctl" --prefix "$PREFIX" --component $c > /dev/null
	done
	(cd "$stage" && find . ! -type d) | while read -r f; do
		f=${f#.}
		if [ -e "$DESTDIR$f" ] || [ -L "$DESTDIR$f" ]; then
			echo "-- Removing: $DESTDIR$f"
			rm -f "$DESTDIR$f"
		fi
	done
	if [ -d "$DESTDIR/usr/src/fxblk-$VER" ]; then
		echo "-- Removing: $DESTDIR/usr/src/fxblk-$VER"
		rm -rf "$DESTDIR/usr/src/fxblk-$VER"
	fi
	;;
*)
	echo "usage: scripts/install.sh install|uninstall" >&2
	exit 2
	;;
esac
