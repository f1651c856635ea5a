#!/bin/bash
# Run a command inside one of the lab's debootstrap chroots
# ($FXBLK_CACHE/chroot/<suite>, made by scripts/fetch-chroot-kernels.sh), in
# a private mount namespace: /proc, /dev and every --bind DIR are mounted at
# the same paths inside the chroot and vanish with the command. Root only.
#
#   scripts/chroot-run.sh CHROOT [--bind DIR]... [--cwd DIR] -- CMD [ARGS...]
#
# The kernels whose kbuild host tools need a newer C library than the build
# host's (Debian 13's and unstable's) are built with this: kmod/Makefile binds
# its build directory and runs the headers' kbuild inside the chroot.
set -euo pipefail
die() { echo "chroot-run: error: $*" >&2; exit 125; }
C=${1:?usage: chroot-run.sh CHROOT [--bind DIR]... [--cwd DIR] -- CMD [ARGS...]}
shift
BINDS=() CWD=/
while [ $# -gt 0 ]; do
	case $1 in
	--bind) BINDS+=("$(readlink -f "${2:?}")"); shift ;;
	--cwd) CWD=${2:?}; shift ;;
	--) shift; break ;;
	*) die "unknown option '$1'" ;;
	esac
	shift
done
[ $# -ge 1 ] || die "no command"
[ "$(id -u)" = 0 ] || die "must run as root (chroot, mount)"
[ -x "$C/bin/sh" ] || die "no chroot at $C: run 'make deps' (as root)"
# inside the new namespace: mount, then exec chroot; arguments stay quoted
exec unshare -m --propagation private -- bash -euc '
	c=$1 n=$2 cwd=$3; shift 3
	mount -t proc proc "$c/proc"
	mount --rbind /dev "$c/dev"
	for ((i = 0; i < n; i++)); do
		# the mount point stays after the command: record the top
		# directory this creates (in /.fxblk-mountpoints), so that a
		# test comparing the chroot before and after (tests/packages.sh)
		# can tell it from what a package left
		top=$1
		while [ "$(dirname "$top")" != / ] && [ ! -e "$c$(dirname "$top")" ]; do
			top=$(dirname "$top")
		done
		[ -e "$c$top" ] || echo "$top" >> "$c/.fxblk-mountpoints"
		mkdir -p "$c$1"
		mount --bind "$1" "$c$1"
		shift
	done
	exec chroot "$c" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
' chroot-run "$C" "${#BINDS[@]}" "$CWD" "${BINDS[@]}" "$@"
