#!/bin/bash
# Fetch the lab's kernels as Debian packages into the cache and unpack them
# there. Nothing is installed: no /boot, no /lib/modules, no apt sources changed.
#
#   $FXBLK_CACHE/kernels.env        what was resolved (sourced by everything else)
#   $FXBLK_CACHE/k/<kver>/root      unpacked linux-image-<kver>(-unsigned)
#   $FXBLK_CACHE/k/<kver>/hdr       unpacked headers + kbuild; KDIR is inside
#   $FXBLK_CACHE/k/<kver>/vmlinux   ELF payload of the bzImage, booted via PVH
#   $FXBLK_CACHE/checkpatch/        checkpatch.pl and its data, from linux-source
#
# Versions are resolved with apt at run time (the archive moves on). Override
# with FXBLK_KVER_5_10 / FXBLK_KVER_6_1 / FXBLK_KVER_6_12, e.g.
# FXBLK_KVER_6_1=6.1.0-56-amd64.
set -euo pipefail

CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
DEBS=$CACHE/debs
mkdir -p "$DEBS" "$CACHE/k"

# shellcheck source=scripts/lib-fetch.sh
. "$(dirname "$(readlink -f "$0")")/lib-fetch.sh"
log() { echo "fetch-kernels: $*" >&2; }
die() { echo "fetch-kernels: error: $*" >&2; exit 1; }

# Private apt state for bullseye-security, so the machine's sources stay as
# they are. The archive is the security archive the machine already uses.
BULLSEYE=$CACHE/apt-bullseye
bullseye_apt() {
	local uri
	if [ ! -f "$BULLSEYE/sources.list" ]; then
		uri=$(apt-cache policy | grep -o 'http[^ ]*debian-security' | head -n1)
		[ -n "$uri" ] || die "no debian-security archive in the machine's apt sources"
		mkdir -p "$BULLSEYE/lists/partial" "$BULLSEYE/cache/archives/partial"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri bullseye-security main" \
			> "$BULLSEYE/sources.list"
	fi
	apt-get -q -o Dir::Etc::SourceList="$BULLSEYE/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$BULLSEYE/lists" \
		-o Dir::Cache="$BULLSEYE/cache" "$@"
}
bullseye_cache() {
	apt-cache -o Dir::Etc::SourceList="$BULLSEYE/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$BULLSEYE/lists" \
		-o Dir::Cache="$BULLSEYE/cache" "$@"
}

# dep_of APTCACHE PKG PATTERN: first dependency of PKG matching PATTERN
dep_of() {
	"$1" depends "$2" 2>/dev/null | sed -n 's/^ *|\?Depends: //p' |
		grep -E "$3" | head -n1
}

resolve() {	# resolve SERIES -> kernel release (e.g. 6.1.0-57-amd64)
	local series=$1 ac=apt-cache meta img
	case $series in
	5.10)	ac=bullseye_cache; meta=linux-image-amd64 ;;
	6.1)	meta=linux-image-amd64 ;;
	6.12)	meta=linux-image-6.12-amd64 ;;
	esac
	img=$(dep_of "$ac" "$meta" '^linux-image-[0-9]')
	[ -n "$img" ] || die "cannot resolve $meta for $series (apt-get update?)"
	img=${img#linux-image-}
	case $img in "$series"*) ;; *) die "$meta resolved to $img, not $series" ;; esac
	echo "$img"
}

download() {	# download APT PKG...: into $DEBS unless already there
	local ac=$1 p; shift
	for p in "$@"; do
		if ! ls "$DEBS/${p}_"*.deb >/dev/null 2>&1; then
			log "downloading $p"
			(cd "$DEBS" && fetch_retry "apt-get download $p" "$ac" "${APT_NET[@]}" \
				-o APT::Sandbox::User=root download "$p" >/dev/null) || die "apt download $p failed"
		fi
	done
}

extract_vmlinux() {	# bzImage -> ELF vmlinux (XZ or ZSTD payload)
	python3 "$(dirname "$(readlink -f "$0")")/extract-vmlinux.py" "$1" "$2"
}

kdir_of() {	# kdir_of KVER: the headers dir inside the cache
	echo "$CACHE/k/$1/hdr/usr/src/linux-headers-$1"
}

fetch_one() {	# fetch_one SERIES KVER
	local series=$1 kver=$2 ac=apt-get acache=apt-cache dir common kbuild hdir
	dir=$CACHE/k/$kver
	# A kbuild run with a different compiler resyncs the config inside the
	# headers tree and deletes autoconf.h: such a tree is unpacked again.
	if [ -f "$dir/.done" ] && [ -f "$(kdir_of "$kver")/include/generated/autoconf.h" ]; then
		log "$kver already unpacked"
		return
	fi
	[ "$series" = 5.10 ] && { ac=bullseye_apt; acache=bullseye_cache; }
	common=$(dep_of "$acache" "linux-headers-$kver" 'linux-headers-.*-common')
	kbuild=$(dep_of "$acache" "linux-headers-$kver" '^linux-kbuild-')
	[ -n "$common" ] && [ -n "$kbuild" ] || die "cannot resolve header packages of $kver"
	download "$ac" "linux-image-$kver-unsigned" "linux-headers-$kver" "$common" "$kbuild"
	rm -rf "$dir"; mkdir -p "$dir/root" "$dir/hdr"
	dpkg -x "$DEBS/linux-image-$kver-unsigned_"*.deb "$dir/root"
	for p in "linux-headers-$kver" "$common" "$kbuild"; do
		dpkg -x "$DEBS/${p}_"*.deb "$dir/hdr"
	done
	# The arch header tree includes the -common tree by absolute path.
	hdir=$(kdir_of "$kver")
	sed -i "s#^include /usr/src/#include $dir/hdr/usr/src/#" "$hdir/Makefile"
	extract_vmlinux "$dir/root/boot/vmlinuz-$kver" "$dir/vmlinux"
	# Full module tree with depmod output, for resolving module closures.
	depmod -b "$dir/root" "$kver"
	touch "$dir/.done"
	log "$kver unpacked in $dir"
}

fetch_checkpatch() {
	local pkg tarball
	[ -f "$CACHE/checkpatch/checkpatch.pl" ] && return
	pkg=$(apt-cache pkgnames linux-source-6. | sort -V | tail -n1)
	[ -n "$pkg" ] || die "no linux-source package for checkpatch.pl"
	download apt-get "$pkg"
	mkdir -p "$CACHE/checkpatch.tmp"
	dpkg -x "$DEBS/${pkg}_"*.deb "$CACHE/checkpatch.tmp"
	tarball=$(ls "$CACHE/checkpatch.tmp"/usr/src/linux-source-*.tar.* | head -n1)
	tar -C "$CACHE/checkpatch.tmp" -xf "$tarball" --wildcards --strip-components=2 \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	mkdir -p "$CACHE/checkpatch"
	mv "$CACHE/checkpatch.tmp"/{checkpatch.pl,spelling.txt,const_structs.checkpatch} \
		"$CACHE/checkpatch/"
	rm -rf "$CACHE/checkpatch.tmp"
}

main() {
	local k510 k61 k612
	fetch_retry "apt-get update (bullseye-security)" bullseye_apt "${APT_NET[@]}" update >/dev/null ||
		die "apt update of bullseye-security failed"
	k510=${FXBLK_KVER_5_10:-$(resolve 5.10)}
	k61=${FXBLK_KVER_6_1:-$(resolve 6.1)}
	k612=${FXBLK_KVER_6_12:-$(resolve 6.12)}
	fetch_one 5.10 "$k510"
	fetch_one 6.1 "$k61"
	fetch_one 6.12 "$k612"
	fetch_checkpatch
	cat > "$CACHE/kernels.env.tmp" <<EOF
# Generated by scripts/fetch-kernels.sh on $(date -u +%F); do not edit.
FXBLK_CACHE=$CACHE
FXBLK_KVER_5_10=$k510
FXBLK_KVER_6_1=$k61
FXBLK_KVER_6_12=$k612
EOF
	# keep the debug kernel recorded by scripts/build-kernel.sh (make kernel-debug)
	# and the chroot-built kernels of scripts/fetch-chroot-kernels.sh (7.3, 7.2)
	grep -E '^FXBLK_KVER_(DEBUG|7_3|7_2)=' "$CACHE/kernels.env" >> "$CACHE/kernels.env.tmp" 2>/dev/null || true
	mv "$CACHE/kernels.env.tmp" "$CACHE/kernels.env"
	cat "$CACHE/kernels.env"
}

main "$@"
