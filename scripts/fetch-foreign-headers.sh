#!/bin/bash
# Fetch Debian 12's 32-bit (i386, 686-pae flavour) headers of the lab's 6.1
# kernel, only so that make check can prove that the module build refuses a
# 32-bit kernel with a message (kmod/Kbuild, kmod/Makefile arch-check).
# Nothing is installed and the machine's apt architectures stay as they are:
# a private apt state for i386 downloads the one package.
#
#   $FXBLK_CACHE/k/<6.1 release>-686-pae/hdr   headers; the -common tree and
#       linux-kbuild are the amd64 6.1 ones (the same source version; the
#       host tools of the i386 kbuild package would need an i386 libc)
#   $FXBLK_CACHE/kernels.env                   FXBLK_KVER_I386=...
#
# Debian 13 ships no i386 kernel at all (its i386 archive has only the
# arch-independent linux-headers-*-common), so 6.1 is the newest there is.
set -euo pipefail
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
DEBS=$CACHE/debs
A=$CACHE/apt-i386
log() { echo "fetch-i386-headers: $*" >&2; }
die() { echo "fetch-i386-headers: error: $*" >&2; exit 1; }

# shellcheck source=/dev/null
. "$CACHE/kernels.env" 2>/dev/null || die "no $CACHE/kernels.env: run scripts/fetch-kernels.sh first"
K64=${FXBLK_KVER_6_1:?no FXBLK_KVER_6_1 in kernels.env}
KVER=${K64%-amd64}-686-pae
D=$CACHE/k/$KVER
KDIR=$D/hdr/usr/src/linux-headers-$KVER

record() {
	grep -v '^FXBLK_KVER_I386=' "$CACHE/kernels.env" > "$CACHE/kernels.env.tmp" || true
	echo "FXBLK_KVER_I386=$KVER" >> "$CACHE/kernels.env.tmp"
	mv "$CACHE/kernels.env.tmp" "$CACHE/kernels.env"
}
if [ -f "$D/.done" ] && [ -f "$KDIR/include/config/auto.conf" ]; then
	log "$KVER ready"
	grep -qx "FXBLK_KVER_I386=$KVER" "$CACHE/kernels.env" || record
	exit 0
fi

i386_apt() {
	apt-get -q -o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" \
		-o APT::Architecture=i386 -o APT::Architectures::=i386 "$@"
}
deb_uri() {	# the machine's URI for an archive: debian or debian-security
	apt-cache policy | awk -v a="$1" '{ u = $2; sub(/\/$/, "", u); n = split(u, p, "/") }
		u ~ /^https?:/ && p[n] == a { print u; exit }'
}
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$DEBS"
deb=$(deb_uri debian) sec=$(deb_uri debian-security)
[ -n "$deb" ] && [ -n "$sec" ] || die "no debian and debian-security archives in the machine's apt sources"
kr=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] %s bookworm main\ndeb [signed-by=%s] %s bookworm-security main\n' \
	"$kr" "$deb" "$kr" "$sec" > "$A/sources.list"
i386_apt update >/dev/null || die "apt update (i386) failed"

# the amd64 packages of the same 6.1 kernel: -common (arch all) and kbuild
dep() { apt-cache depends "linux-headers-$K64" | sed -n 's/^ *|\?Depends: //p' | grep -E "$1" | head -n1; }
common=$(dep 'linux-headers-.*-common$') kbuild=$(dep '^linux-kbuild-')
[ -n "$common" ] && [ -n "$kbuild" ] || die "cannot resolve the header packages of $K64"
for p in "$common" "$kbuild"; do
	ls "$DEBS/${p}_"*.deb >/dev/null 2>&1 ||
		(cd "$DEBS" && apt-get -q -o APT::Sandbox::User=root download "$p" >/dev/null) ||
		die "apt download $p failed"
done
if ! ls "$DEBS/linux-headers-${KVER}_"*_i386.deb >/dev/null 2>&1; then
	log "downloading linux-headers-$KVER (i386)"
	(cd "$DEBS" && i386_apt -o APT::Sandbox::User=root download "linux-headers-$KVER:i386" >/dev/null) ||
		die "apt download linux-headers-$KVER:i386 failed (not in bookworm(-security) any more? FXBLK_KVER_6_1 pins 6.1)"
fi
rm -rf "$D"
mkdir -p "$D/hdr"
for f in "$DEBS/linux-headers-${KVER}_"*_i386.deb "$DEBS/${common}_"*.deb "$DEBS/${kbuild}_"*.deb; do
	dpkg -x "$f" "$D/hdr"
done
sed -i "s#^include /usr/src/#include $D/hdr/usr/src/#" "$KDIR/Makefile"
grep -q '^CONFIG_X86_32=y' "$KDIR/include/config/auto.conf" || die "$KVER headers are not 32-bit?"
touch "$D/.done"
record
log "$KVER unpacked in $D"
