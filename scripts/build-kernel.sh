#!/bin/bash
# Build the lab's debug kernel (make kernel-debug): Debian's linux-source-6.12
# with x86_64_defconfig + kvm_guest.config + tests/lab/kernel/debug.config
# (the lab's modules, KASAN, lockdep, kmemleak, fail_make_request, udmabuf,
# PCI P2PDMA), and lay it out in the cache like the Debian kernels, so that
# `tests/lab/run --kernel <release>` boots it unchanged (make check-debug runs
# the lab suite on it: tests/check.sh maps the lab kernel "debug" to it):
#
#   $FXBLK_CACHE/src/linux-source-6.12/       the unpacked source (pristine)
#   $FXBLK_CACHE/kbuild/debug/                 the build tree (make O=)
#   $FXBLK_CACHE/k/<release>/vmlinux           ELF vmlinux, booted via PVH
#   $FXBLK_CACHE/k/<release>/root/lib/modules  modules_install, stripped
#   $FXBLK_CACHE/k/<release>/hdr/usr/src/linux-headers-<release>
#                                              -> the build tree (out-of-tree
#                                              module builds: make -C it M=...)
#   $FXBLK_CACHE/k/<release>/.done, .stamp
#   kernels.env: FXBLK_KVER_DEBUG=<release>    (e.g. 6.12.117-fxdebug)
#   $BUILD/lab-debug/kmemleak-test.ko          the kernel's kmemleak sample, for
#                                              tests/lab/debug/90-kmemleak.sh
#
# Takes ~30 min on 2 cores the first time, niced (FXBLK_KERNEL_NICE, default
# 19) with JOBS (default nproc) jobs. Cached: when the source package, the
# fragment, this script and the compiler are unchanged and the kernel is
# installed, it only re-records the release and exits (seconds). A change
# rebuilds incrementally in the same build tree.
#
# Needs: bc bison flex libssl-dev libelf-dev (scripts/deps.sh installs them).
# Env: FXBLK_CACHE, JOBS, FXBLK_KERNEL_NICE, FXBLK_KERNEL_FORCE=1 (ignore stamp)
set -euo pipefail
# The whole script is one block, read by bash before it runs: editing this file
# while a build is running cannot change what that build does next.
{
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
FRAG=$TOP/tests/lab/kernel/debug.config
JOBS=${JOBS:-$(nproc)}
NICE=${FXBLK_KERNEL_NICE:-19}
SERIES=6.12
SRC=$CACHE/src/linux-source-$SERIES
OBJ=$CACHE/kbuild/debug
CFG=$CACHE/kbuild/debug-cfg	# scratch tree where the config is composed
BUILD=${FXBLK_BUILD:-$TOP/build}

log() { echo "build-kernel: $*" >&2; }
die() { echo "build-kernel: error: $*" >&2; exit 1; }

for t in bc bison flex gcc make perl; do
	command -v "$t" >/dev/null || die "$t not installed: run 'make deps' (as root)"
done
for h in /usr/include/openssl/opensslv.h /usr/include/libelf.h; do
	[ -f "$h" ] || die "$h missing (libssl-dev/libelf-dev): run 'make deps' (as root)"
done
[ -f "$FRAG" ] || die "no config fragment $FRAG"
mkdir -p "$CACHE/debs" "$CACHE/src" "$CACHE/kbuild" "$CACHE/k"
# one build at a time (several worktrees share the cache)
exec 9> "$CACHE/kbuild/.lock"
flock -n 9 || { log "another build-kernel.sh holds $CACHE/kbuild/.lock; waiting"; flock 9; }

# 1. Source: the linux-source deb make deps fetched for checkpatch (or fetch it).
deb=$(ls "$CACHE/debs/linux-source-${SERIES}_"*.deb 2>/dev/null | sort -V | tail -n1 || true)
if [ -z "$deb" ]; then
	log "downloading linux-source-$SERIES"
	(cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download "linux-source-$SERIES" >/dev/null) ||
		die "apt-get download linux-source-$SERIES failed"
	deb=$(ls "$CACHE/debs/linux-source-${SERIES}_"*.deb | sort -V | tail -n1)
fi
debname=$(basename "$deb")
if [ "$(cat "$SRC/.fxblk-src" 2>/dev/null)" != "$debname" ]; then
	log "unpacking $debname into $SRC"
	rm -rf "$SRC" "$SRC.tmp" "$OBJ" "$CFG"
	mkdir -p "$SRC.tmp/deb"
	dpkg -x "$deb" "$SRC.tmp/deb"
	tarball=$(ls "$SRC.tmp/deb/usr/src/linux-source-"*.tar.* | head -n1)
	tar -C "$SRC.tmp" -xf "$tarball"
	rm -rf "$SRC.tmp/deb"
	mv "$SRC.tmp/linux-source-$SERIES" "$SRC"
	rmdir "$SRC.tmp"
	echo "$debname" > "$SRC/.fxblk-src"
fi

# 2. Up to date? (source package, fragment, this script, compiler)
# (contents only: the same kernel from another worktree is the same kernel)
stamp=$( { echo "$debname"; cat "$FRAG" "$0" | sha256sum; gcc --version | head -n1; } | sha256sum | cut -c1-16)
record() {	# record RELEASE: FXBLK_KVER_DEBUG in kernels.env
	local env=$CACHE/kernels.env
	[ -f "$env" ] || echo "FXBLK_CACHE=$CACHE" > "$env"
	{ grep -v '^FXBLK_KVER_DEBUG=' "$env" || true; echo "FXBLK_KVER_DEBUG=$1"; } > "$env.tmp"
	mv "$env.tmp" "$env"
	# the kmemleak sample module, where the lab test's header finds it
	mkdir -p "$BUILD/lab-debug"
	cp "$CACHE/k/$1/root/lib/modules/$1/kernel/samples/kmemleak/kmemleak-test.ko" \
		"$BUILD/lab-debug/kmemleak-test.ko"
}
# an installed kernel with this stamp (whatever kernels.env says now)
prev=
for d in "$CACHE"/k/*/; do
	d=${d%/}
	[ "$(cat "$d/.stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$d/.done" ] || continue
	prev=${d##*/}
done
if [ "${FXBLK_KERNEL_FORCE:-0}" != 1 ] && [ -n "$prev" ] && [ -f "$CACHE/k/$prev/vmlinux" ] &&
   [ -f "$CACHE/k/$prev/hdr/usr/src/linux-headers-$prev/Module.symvers" ]; then
	log "$prev up to date in $CACHE/k/$prev (FXBLK_KERNEL_FORCE=1 rebuilds)"
	record "$prev"
	exit 0
fi

# 3. Config, composed in a scratch tree; copied to the build tree only when it
#    differs, so an unchanged config does not make kbuild re-check everything.
kmake() { nice -n "$NICE" make -C "$SRC" -s "$@"; }
log "composing the config (x86_64_defconfig + kvm_guest.config + $(basename "$FRAG"))"
mkdir -p "$CFG" "$OBJ"
kmake O="$CFG" x86_64_defconfig >/dev/null
(cd "$SRC" && KCONFIG_CONFIG="$CFG/.config" scripts/kconfig/merge_config.sh -m -O "$CFG" \
	"$CFG/.config" kernel/configs/kvm_guest.config "$FRAG" >"$CFG/merge.log") ||
	die "merge_config.sh failed (see $CFG/merge.log)"
kmake O="$CFG" olddefconfig >/dev/null

# Every symbol the fragment sets or unsets must come out exactly so.
bad=()
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)	sym=${line%%=*}
			got=$(grep -E "^($sym=|# $sym is not set)" "$CFG/.config" || true)
			[ "$got" = "$line" ] || bad+=("$line (got: ${got:-absent})") ;;
	"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" "$CFG/.config" || bad+=("$line (got: $(grep "^$sym=" "$CFG/.config"))") ;;
	esac
done < "$FRAG"
if [ ${#bad[@]} -gt 0 ]; then
	log "these options of $FRAG did not survive olddefconfig (a dependency is missing):"
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
log "all $(grep -cE '^(CONFIG_|# CONFIG_.* is not set)' "$FRAG") options of the fragment verified"
cmp -s "$CFG/.config" "$OBJ/.config" || cp "$CFG/.config" "$OBJ/.config"

# 4. Build (vmlinux, bzImage, modules). No debug info, so no pahole needed.
log "building in $OBJ: nice -n $NICE make -j$JOBS bzImage modules (~30 min on 2 cores)"
t0=$(date +%s)
kmake O="$OBJ" -j"$JOBS" bzImage modules || die "kernel build failed"
release=$(kmake O="$OBJ" kernelrelease)
[ -n "$release" ] || die "no kernel release"
log "built $release in $(( $(date +%s) - t0 )) s"

# 5. Install into the cache layout the lab expects.
K=$CACHE/k/$release
rm -rf "$K.tmp"
mkdir -p "$K.tmp/root" "$K.tmp/hdr/usr/src"
kmake O="$OBJ" INSTALL_MOD_PATH="$K.tmp/root" INSTALL_MOD_STRIP=1 DEPMOD=/bin/true modules_install
rm -f "$K.tmp/root/lib/modules/$release/build" "$K.tmp/root/lib/modules/$release/source"
depmod -b "$K.tmp/root" "$release"
cp "$OBJ/vmlinux" "$K.tmp/vmlinux"
cp "$OBJ/.config" "$K.tmp/config"
ln -s "$OBJ" "$K.tmp/hdr/usr/src/linux-headers-$release"
echo "$stamp" > "$K.tmp/.stamp"
touch "$K.tmp/.done"
rm -rf "$K"
mv "$K.tmp" "$K"
record "$release"
log "$release installed in $K; recorded as FXBLK_KVER_DEBUG in $CACHE/kernels.env"
exit 0
}
