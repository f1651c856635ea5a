#!/bin/bash
# make deps: install everything fxblk needs to build and test, from Debian
# packages, then fetch and unpack the lab kernels (scripts/fetch-kernels.sh).
# Run as root. Idempotent; a second run with nothing to do takes a second.
#
# Never installs linux-image-* or linux-headers-* packages: the lab's kernels
# and headers are unpacked into $FXBLK_CACHE (default /var/cache/fxblk) and
# never touch /boot or /lib/modules. Recommends are off for that reason
# (dkms recommends linux-headers-amd64).
#
# Every download is retried with back-off (scripts/lib-fetch.sh: apt's
# Acquire::Retries, and apt-get update again while a mirror being synced
# serves indexes of the wrong size). What is fetched is either
#   essential: the host packages, the 5.10/6.1/6.12 lab kernels and
#       checkpatch, the package-build chroot: make check cannot run without
#       them. One that still fails stops make deps (exit 1) with apt's error
#       and what to do.
#   optional: the 7.3 and 7.2 chroot kernels, the i386 and arm64 headers,
#       the arm64 lab: make check skips the tests that need one. One that
#       still fails is recorded in $FXBLK_CACHE/missing/<artefact> (reason,
#       command, date, last output lines), the next steps run, make deps
#       ends with a warning naming it and exits 0; tests/check.sh then shows
#       those tests as SKIP with the recorded reason (without a record, a
#       missing artefact FAILs them). The next make deps that fetches it
#       removes the record.
#
# Env: FXBLK_DEPS_REFRESH=1  re-resolve and fetch the kernels even if unpacked
#      FXBLK_KVER_5_10 / FXBLK_KVER_6_1 / FXBLK_KVER_6_12 / FXBLK_KVER_7_3 /
#      FXBLK_KVER_7_2  pin kernel releases
#      FXBLK_FETCH_TRIES, FXBLK_FETCH_BACKOFF, FXBLK_APT_RETRIES: retries
#          (scripts/lib-fetch.sh)
#      FXBLK_DEPS_SCRIPTS=DIR  where the fetch-*.sh scripts are (default:
#          this directory; tests/deps-fetch.sh points it at stand-ins)
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
export FXBLK_CACHE=$CACHE
S=${FXBLK_DEPS_SCRIPTS:-$TOP/scripts}
# shellcheck source=scripts/lib-fetch.sh
. "$TOP/scripts/lib-fetch.sh"

PKGS=(
	# build: module, fxctl, tests
	build-essential make gcc g++ cmake pkg-config perl python3 git
	libnl-3-dev libnl-genl-3-dev libboost-program-options-dev doctest-dev
	nlohmann-json3-dev libfmt-dev libblkid-dev libudev-dev libnvme-dev
	libibverbs-dev librdmacm-dev libelf1 dkms kmod
	# 6.12+ headers generate BTF for modules (CONFIG_DEBUG_INFO_BTF_MODULES):
	# pahole (dwarves in older releases)
	pahole
	# make check's compiler cache (tests/check.sh: CCACHE_DIR in the cache
	# directory), so a clean clone does not compile what the last run did
	ccache
	# make check runs shellcheck over every shell file (tests/shellcheck.sh)
	shellcheck
	# make check fuzzes the label decoder with libFuzzer (tests/fuzz-label.sh)
	clang libclang-rt-14-dev
	# make kernel-debug builds the lab's debug kernel from linux-source
	# (scripts/build-kernel.sh; not run by make deps)
	bc bison flex libssl-dev libelf-dev
	# kernel packages are fetched and unpacked, not installed
	apt dpkg xz-utils zstd debian-archive-keyring
	# lab VM: QEMU and everything copied into the initramfs
	qemu-system-x86 busybox-static cpio bash util-linux coreutils
	iproute2 rdma-core ibverbs-utils nvme-cli fio dmsetup mdadm jq
	xfsprogs e2fsprogs
	# bench report
	gnuplot-nox
	# 7.3 and 7.2 are built in debootstrap chroots (scripts/fetch-chroot-kernels.sh)
	debootstrap
	# arm64 cross build of the module against Debian's arm64 headers
	gcc-aarch64-linux-gnu
	# arm64: fxctl cross-built against an extracted arm64 Debian tree (its
	# sysroot, made with mmdebstrap --variant=extract, no emulation needed),
	# which is also the arm64 lab VM's userspace; qemu-system-aarch64 boots it
	# (scripts/fetch-arm64-lab.sh, tests/lab/run --arch arm64)
	g++-aarch64-linux-gnu mmdebstrap qemu-system-arm
	# packages (make packages / tests/packages.sh): .deb with dh-dkms, lintian, .rpm
	debhelper dh-dkms lintian rpm fakeroot curl
	# man pages: ctl/tests/manpages.py renders each with groff and man --warnings
	groff-base man-db
	# dh-sequence-python3 (python3-fxio): tests/packages.sh builds the
	# previous fxblk-dkms on the host, which checks every Build-Depends
	dh-python
	# perf, copied into the lab VM for profiling (tests/lab/mkbase.sh)
	linux-perf
	# libfxio: io_uring for the staged path's disk I/O; the fxio Python
	# package (pybind11) and its pytest tests with numpy and torch CPU
	# tensors (python3-torch: ~150 MB of archives, ~630 MB installed,
	# host only: not a Build-Depends, the packages build no tests)
	liburing-dev pybind11-dev python3-dev python3-numpy python3-pytest python3-torch
	# pip install of fxio into a venv without network (tests/pip-venv.sh):
	# venv, and pyproject.toml's build requirements from Debian
	python3-venv python3-setuptools python3-pybind11
)

log() { echo "deps: $*"; }
[ "$(id -u)" = 0 ] || { echo "deps: must run as root (apt-get install)" >&2; exit 1; }

# step essential|optional ARTEFACT CMD...: run one fetch step (its output
# shown and kept); see the header for what a failure does
step() {
	local kind=$1 art=$2 out rc
	shift 2
	out=$(mktemp)
	set +e
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" = 0 ]; then
		if [ -f "$(missing_file "$art")" ]; then
			missing_clear "$art"
			log "$art fetched: its record $(missing_file "$art") removed"
		fi
	elif [ "$kind" = optional ]; then
		missing_record "$art" optional "$*" "$rc" "$out"
		log "warning: optional $art not fetched (exit $rc): recorded in $(missing_file "$art"); going on"
	else
		essential_failed "$art" "$*" "$rc" "$out"
	fi
	rm -f "$out"
}
essential_failed() {	# ARTEFACT COMMAND EXIT LOG: say why and what to do, exit 1
	local e
	{
		echo "deps: error: $1 could not be fetched (exit $3 after $FETCH_TRIES attempts): $2"
		grep -E '^E: |: error: ' "$4" | tail -n 4 | sed 's/^/deps:   /'
		if e=$(grep -E "$FETCH_MIRROR_RE" "$4" | head -n1); then
			echo "deps: the Debian mirror is being synced (apt: ${e#E: }); it serves consistent"
			echo "deps: files again once the sync is over (minutes to an hour): then re-run 'make deps'"
		else
			echo "deps: re-run 'make deps' once the network or mirror is back"
		fi
		echo "deps: ('make deps' is idempotent: what was fetched stays; $1 is needed by make check)"
	} >&2
	exit 1
}

host_packages() {
	# one dpkg-query for all (packages unknown to dpkg are simply not listed)
	local installed missing=() p
	installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null |
		awk '$NF == "installed" {print $1}' | sed 's/:.*//' || true)
	for p in "${PKGS[@]}"; do
		grep -qx -- "$p" <<< "$installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		fetch_retry "apt-get update" apt-get "${APT_NET[@]}" update -q || {
			echo "deps: error: apt-get update failed"; return 1; }
		fetch_retry "apt-get install" apt-get "${APT_NET[@]}" install -y -q \
			--no-install-recommends "${missing[@]}" || {
			echo "deps: error: apt-get install failed"; return 1; }
	else
		log "all ${#PKGS[@]} packages installed"
	fi
}
step essential host-packages host_packages
# Lab kernels: skip when everything recorded in kernels.env is unpacked and
# no pin asks for something else.
kernels_ready() {
	local k v
	[ -f "$CACHE/kernels.env" ] || return 1
	[ -f "$CACHE/checkpatch/checkpatch.pl" ] || return 1
	# shellcheck source=/dev/null
	( . "$CACHE/kernels.env"
	  for v in 5_10 6_1 6_12; do
		k=FXBLK_KVER_$v
		[ -n "${!k:-}" ] && [ -f "$CACHE/k/${!k}/.done" ] && [ -f "$CACHE/k/${!k}/vmlinux" ] &&
			[ -f "$CACHE/k/${!k}/hdr/usr/src/linux-headers-${!k}/include/generated/autoconf.h" ] || exit 1
	  done ) || return 1
	for v in 5_10 6_1 6_12; do
		k=FXBLK_KVER_$v
		[ -z "${!k:-}" ] || grep -qx "$k=${!k}" "$CACHE/kernels.env" || return 1
	done
}
if [ "${FXBLK_DEPS_REFRESH:-0}" != 1 ] && kernels_ready; then
	log "lab kernels ready: $(grep '^FXBLK_KVER' "$CACHE/kernels.env" | cut -d= -f2 | tr '\n' ' ')"
	log "(FXBLK_DEPS_REFRESH=1 re-resolves them with apt)"
else
	log "fetching lab kernels into $CACHE"
	step essential lab-kernels bash "$S/fetch-kernels.sh"
fi
# 7.2 (unstable) and 7.3 (Debian 13 backports): their kbuild needs a newer
# glibc and gcc, so their headers live in cached debootstrap chroots
# ($CACHE/chroot/<suite>); a second run only checks them (about a second).
# One step each: unstable's mirror being synced must not cost 7.3.
log "newer lab kernels (7.2 unstable, 7.3 trixie-backports) with their chroots"
step optional chroot-7.3 bash "$S/fetch-chroot-kernels.sh" 7.3
step optional chroot-7.2 bash "$S/fetch-chroot-kernels.sh" 7.2
# i386 6.1 headers (make check: 32-bit builds are refused) and arm64 6.12
# headers (make check: the module cross-builds)
step optional i386-headers bash "$S/fetch-foreign-headers.sh" i386
step optional arm64-headers bash "$S/fetch-foreign-headers.sh" arm64
# arm64 lab kernel (same release as the arm64 headers) and the arm64 tree:
# sysroot of the fxctl cross build, userspace of the arm64 lab VM
# (make check-arm64 only)
step optional arm64-lab bash "$S/fetch-arm64-lab.sh"
# tests/packages.sh: the clean bookworm chroot the .debs are built in (only
# the declared Build-Depends installed, per run, in an overlay) and Ubuntu
# 22.04's cmake 3.22.1 (the CMake minimum)
step essential build-chroot bash "$S/fetch-build-chroot.sh"
# what is missing now (this run's failures and older records alike)
recs=()
for f in "$CACHE"/missing/*; do
	[ -f "$f" ] && recs+=("$f")
done
if [ ${#recs[@]} -gt 0 ]; then
	log "WARNING: ${#recs[@]} optional artefact(s) could not be fetched; make check skips the tests"
	log "that need them, naming the reason. Re-run 'make deps' later to fetch them:"
	for f in "${recs[@]}"; do
		log "  $(basename "$f"): $(sed -n 's/^reason: //p' "$f" | head -n1) [$(sed -n 's/^date: //p' "$f")]"
	done
	log "done, without the artefacts above"
else
	log "done"
fi
