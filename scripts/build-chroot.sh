# shellcheck shell=bash
# Sourced by scripts/fetch-build-chroot.sh and tests/packages.sh:
#
#   build_chroot_run SRCDIR -- CMD [ARGS...]
#
# runs CMD (as root, cwd /) in a throw-away overlay over the cached clean
# build chroot ($FXBLK_CACHE/chroot/bookworm-build, scripts/fetch-build-chroot.sh),
# with SRCDIR at /src and the persistent apt archive cache at
# /var/cache/apt/archives. Everything CMD changes outside /src and the archive
# cache is gone when it returns, so every run starts from the same base.
build_chroot_run() {
	local src=$1 cache=${FXBLK_CACHE:-/var/cache/fxblk} top
	shift
	[ "${1:-}" = -- ] && shift
	local base=$cache/chroot/bookworm-build
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	[ -f "$base/.done" ] || { echo "no build chroot $base: run make deps" >&2; return 125; }
	local ovl rc=0
	ovl=$(mktemp -d "$cache/chroot/bookworm-build.ovl.XXXXXX")
	mkdir -p "$ovl/upper" "$ovl/work" "$ovl/root" "$base.archives/partial"
	unshare -m --propagation private -- bash -euc '
		base=$1 ovl=$2 src=$3 arch=$4 run=$5; shift 5
		mount -t overlay overlay \
			-o "lowerdir=$base,upperdir=$ovl/upper,workdir=$ovl/work" "$ovl/root"
		mount --bind "$arch" "$ovl/root/var/cache/apt/archives"
		mkdir -p "$ovl/root/src"
		mount --bind "$src" "$ovl/root/src"
		exec "$run" "$ovl/root" -- "$@"
	' build-chroot "$base" "$ovl" "$(readlink -f "$src")" "$base.archives" \
		"$top/scripts/chroot-run.sh" "$@" || rc=$?
	rm -rf "$ovl"
	return $rc
}
