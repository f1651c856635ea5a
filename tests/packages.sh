#!/bin/bash
# Packages test (make packages; make check runs it): in build/pkg, from a copy
# of the source tree (nothing is written into the tree itself):
#   1. versions: debian/changelog and packaging/rpm/fxblk.spec say VERSION
#   0. make install DESTDIR=scratch PREFIX=/usr (scripts/install.sh, using the
#      fxctl make check built in build/ctl) writes the expected files, make
#      uninstall removes them all (checked after step 4 defines the lists)
#   2. dpkg-buildpackage -us -uc -b in a clean Debian 12 chroot (buildd
#      variant, cached by make deps: scripts/fetch-build-chroot.sh) into which
#      only debian/control's Build-Depends are installed, in a throw-away
#      overlay -> fxblk-dkms_V_all.deb, fxctl, libfxio0, libfxio-dev _V_ARCH.deb
#  2b. Ubuntu 22.04's cmake 3.22.1 configures the tree (the CMake minimum)
#   3. lintian: no errors (warnings are printed), no shared-library findings
#      for libfxio
#   4. dpkg -x of all into a scratch root; the file lists equal the expected
#      ones (derived from kmod/, udev/, systemd/ and fixed lists); libfxio's
#      SONAME, symbol versions and symbols file
#  4b. in a fresh overlay of the clean chroot: apt installs libfxio0 and
#      libfxio-dev, a program (tests/pkg/fxio-pkgconfig.c) is built with
#      pkg-config --cflags --libs fxio and run, purge removes the files
#   5. dkms add/build of the packaged source against the lab's 6.12 headers
#      (tests/dkms.sh with FXBLK_DKMS_ROOT)
#   6. in a scratch dpkg root (a busybox chroot with a dkms stub and fake
#      systemctl, deb-systemd-invoke, deb-systemd-helper that record their
#      calls, /run/systemd/system present): install a previous version
#      (fxblk-dkms built from this source as VERSION~prev, fxctl repacked
#      with that version), enable and start fxblk-connect.service, upgrade to
#      V (the unit must not be stopped or restarted: its ExecStop tears down
#      the storage), remove (the unit is stopped), purge: the maintainer
#      scripts call dkms add/remove for the right versions and nothing is
#      left behind
#   7. rpmbuild -bs and -bb (--nodeps: the spec names openEuler packages) of
#      packaging/rpm/fxblk.spec; file lists of the rpms checked
#  7b. fxctl's %post/%preun/%postun (rpmspec -P) run as rpm runs them on
#      install, upgrade and erase, with the fake systemctl: same checks as 6
#   8. the fxblk-dkms .deb installed with dpkg in the lab's 7.3 and 7.2
#      chroots, whose own dkms (Debian 13 / unstable) builds, signs and installs
#      fxblk.ko for their kernel from the postinst; purge leaves nothing
# FXBLK_PKG_FULL=0 (make check) builds only the noarch fxblk-dkms rpm.
# The .debs and .rpms are left in build/pkg/out/. FXBLK_PKG_OPT=1 builds
# fxctl optimized (default: DEB_BUILD_OPTIONS=noopt and -O0, to keep make
# check short; lintian then notes missing fortify functions).
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# shellcheck source=scripts/build-chroot.sh
. "$TOP/scripts/build-chroot.sh"
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
P=$TOP/build/pkg
VER=$(head -n1 "$TOP/VERSION")
PREV=$VER~prev
JOBS=${FXBLK_CHECK_JOBS:-$(nproc)}
ARCH=$(dpkg --print-architecture)
step() { echo; echo "=== $* ($SECONDS s)"; }
die() { echo "FAIL: $*"; exit 1; }
# grep that reads all its input: with pipefail, `cmd | grep -q` fails when
# grep exits at the first match and cmd then dies of SIGPIPE (seen: the
# control tarfile listing of libfxio0 in CI, 2026-12-02)
has() { grep "$@" >/dev/null; }
for tool in dpkg-buildpackage dh_dkms lintian rpmbuild busybox; do
	command -v "$tool" > /dev/null || die "$tool missing: run make deps"
done

step "1. versions"
cl=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)
sv=$(sed -n 's/^Version:[[:space:]]*//p' "$TOP/packaging/rpm/fxblk.spec")
echo "VERSION $VER, debian/changelog $cl, fxblk.spec $sv"
[ "$cl" = "$VER" ] || die "debian/changelog is at $cl, VERSION at $VER"
[ "$sv" = "$VER" ] || die "packaging/rpm/fxblk.spec is at $sv, VERSION at $VER"

rm -rf "$P"
mkdir -p "$P/out"

step "0. make install / make uninstall (DESTDIR, PREFIX=/usr)"
I=$P/destdir
if [ -x "$TOP/build/ctl/fxctl" ]; then
	DESTDIR=$I PREFIX=/usr BUILD=$TOP/build bash "$TOP/scripts/install.sh" install > "$P/install.log"
	# libfxio: make install only (no package yet), in the build's libdir
	FXIO_LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$TOP/build/ctl/CMakeCache.txt")
	FXIO_PYDIR=$(sed -n 's/^FXBLK_PYTHONDIR:[A-Z]*=//p' "$TOP/build/ctl/CMakeCache.txt")
	inst_expect() {
		expect_ctl | grep -v '^/usr/share/doc/' | sed 's|^/lib/|/usr/lib/|; s|^\(/usr/share/man/.*\)\.gz$|\1|'
		expect_dkms | grep -v '^/usr/share/doc/'
		printf '/usr/%s\n' "$FXIO_LIBDIR/libfxio.so" "$FXIO_LIBDIR/libfxio.so.0" \
			"$FXIO_LIBDIR/libfxio.so.0.1.0" "$FXIO_LIBDIR/pkgconfig/fxio.pc" include/fxio.h \
			share/man/man3/libfxio.3
		expect_py "/usr/$FXIO_PYDIR"
	}
	DEFER_INSTALL_CHECK=1
else
	echo "SKIP: make install: no fxctl built in build/ctl (make check builds it first)"
fi
# the tree as git sees it (tracked and new files), without build/
stage() {	# stage DIR
	mkdir -p "$1"
	(cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - --no-recursion) |
		tar -xf - -C "$1"
}
SRC=$P/src/fxblk-$VER
stage "$SRC"

step "2. dpkg-buildpackage -b in a clean bookworm chroot with only the declared Build-Depends"
# The chroot (scripts/fetch-build-chroot.sh, make deps) is debootstrap's
# buildd variant: build-essential and apt, nothing else. In a throw-away
# overlay over it, apt-get build-dep installs exactly debian/control's
# Build-Depends (and what they depend on), dpkg-checkbuilddeps confirms them,
# and dpkg-buildpackage builds all four packages: a dependency CMake needs
# but debian/control does not declare fails here, as on a buildd.
opts="nocheck parallel=$JOBS"
[ "${FXBLK_PKG_OPT:-0}" = 1 ] || opts+=" noopt"
build_chroot_run "$P/src" -- env DEBIAN_FRONTEND=noninteractive DEB_BUILD_OPTIONS="$opts" \
	sh -exc "apt-get build-dep -q -y /src/fxblk-$VER
		cd /src/fxblk-$VER
		dpkg-checkbuilddeps
		dpkg-buildpackage -us -uc -b" > "$P/deb-build.log" 2>&1 ||
	{ tail -n 40 "$P/deb-build.log"; die "dpkg-buildpackage in the clean chroot failed (log: $P/deb-build.log)"; }
grep -E '^(The following NEW packages|[0-9]+ upgraded, [0-9]+ newly installed)' "$P/deb-build.log" || true
DKMS_DEB=$P/src/fxblk-dkms_${VER}_all.deb
CTL_DEB=$P/src/fxctl_${VER}_${ARCH}.deb
LIB_DEB=$P/src/libfxio0_${VER}_${ARCH}.deb
DEV_DEB=$P/src/libfxio-dev_${VER}_${ARCH}.deb
PY_DEB=$P/src/python3-fxio_${VER}_${ARCH}.deb
CHANGES=$P/src/fxblk_${VER}_${ARCH}.changes
for f in "$DKMS_DEB" "$CTL_DEB" "$LIB_DEB" "$DEV_DEB" "$PY_DEB" "$CHANGES"; do [ -f "$f" ] || die "no $f"; done
cp "$DKMS_DEB" "$CTL_DEB" "$LIB_DEB" "$DEV_DEB" "$PY_DEB" "$P/out/"
ls -l "$P/out"

step "2b. CMake minimum: Ubuntu 22.04's cmake 3.22.1 configures the tree"
# cmake and cmake-data 3.22.1-1ubuntu1 from Ubuntu 22.04 (jammy), unpacked
# by scripts/fetch-build-chroot.sh; configure and generate only (a CMake
# feature newer than 3.22, or a minimum above it, fails here).
C322=$CACHE/cmake-3.22.1/usr/bin/cmake
[ -x "$C322" ] || die "no $C322: run make deps (scripts/fetch-build-chroot.sh)"
"$C322" --version | head -n1
"$C322" -S "$SRC" -B "$P/cmake-3.22" -DFXBLK_TESTS=ON > "$P/cmake-3.22.log" 2>&1 ||
	{ cat "$P/cmake-3.22.log"; die "cmake 3.22.1 cannot configure the tree"; }
! grep -B2 -A6 'CMake Warning\|CMake Deprecation' "$P/cmake-3.22.log" || die "cmake 3.22.1 warns (above)"
echo "cmake 3.22.1: configured and generated"

step "3. lintian"
# root runs lintian fine here; its note about that is not a finding
lintian --fail-on error --tag-display-limit 0 "$CHANGES" > "$P/lintian.log" 2>&1 || lrc=$?
grep -v 'running with root privileges' "$P/lintian.log" || true
[ "${lrc:-0}" = 0 ] || die "lintian reports errors"
echo "lintian: $(grep -c '^E:' "$P/lintian.log" || true) errors, $(grep -c '^W:' "$P/lintian.log" || true) warnings"
# lintian's shared-library checks (SONAME against the package name, the
# symbols and shlibs control files, ldconfig trigger, the -dev link) report
# as warnings or errors; none of them may fire for libfxio.
libtags='package-name-doesnt-match-sonames|no-symbols-control-file|shared-library-lacks-version|'
libtags+='lacks-ldconfig-trigger|missing-dependency-on-libc|symbols-file|shlibs|soname|'
libtags+='dev-pkg-without-shlib-symlink|non-dev-pkg-with-shlib-symlink|link-to-shared-library-in-wrong-package'
! grep -E "^[EW]: libfxio[^:]*: ($libtags)" "$P/lintian.log" || die "lintian: shared-library findings for libfxio (above)"
echo "lintian: no shared-library findings for libfxio0 / libfxio-dev"

step "4. file lists"
X=$P/x
mkdir -p "$X/dkms" "$X/ctl"
dpkg -x "$DKMS_DEB" "$X/dkms"
dpkg -x "$CTL_DEB" "$X/ctl"
listing() { (cd "$1" && find . ! -type d | sed 's|^\.||' | LC_ALL=C sort); }
expect_dkms() {
	local d=/usr/src/fxblk-$VER f
	echo "$d/dkms.conf"
	echo "$d/VERSION"
	for f in "$TOP"/kmod/include/uapi/linux/*.h; do echo "$d/include/uapi/linux/${f##*/}"; done
	for f in "$TOP"/kmod/Makefile "$TOP"/kmod/Kbuild "$TOP"/kmod/*.c "$TOP"/kmod/*.h "$TOP"/kmod/*.sh; do
		echo "$d/${f##*/}"
	done
	for f in "$TOP"/kmod/compat/*; do echo "$d/compat/${f##*/}"; done
	printf '%s\n' /usr/share/doc/fxblk-dkms/changelog.gz /usr/share/doc/fxblk-dkms/copyright
}
expect_ctl() {
	local f
	printf '%s\n' /usr/sbin/fxctl /usr/share/bash-completion/completions/fxctl \
		/usr/share/doc/fxctl/changelog.gz /usr/share/doc/fxctl/copyright
	for f in "$TOP"/ctl/man/*.8; do echo "/usr/share/man/man8/${f##*/}.gz"; done
	for f in "$TOP"/udev/*.rules; do echo "/lib/udev/rules.d/${f##*/}"; done
	for f in "$TOP"/systemd/*.service; do
		[ -e "$f" ] && echo "/lib/systemd/system/${f##*/}"
	done
	return 0
}
expect_py() {	# expect_py PYTHONDIR: the fxio package and its metadata (vLLM's entry point)
	local f
	for f in __init__.py _dlpack.py safetensors.py kvcache.py lmcache.py vllm.py; do echo "$1/fxio/$f"; done
	for f in METADATA entry_points.txt top_level.txt; do echo "$1/fxio-$VER.dist-info/$f"; done
	echo "$1/fxio/_fxio.cpython-$(/usr/bin/python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')-$(dpkg-architecture -qDEB_HOST_MULTIARCH).so"
}
compare() {	# compare NAME EXPECTED-LIST ACTUAL-LIST
	if diff -u <(LC_ALL=C sort <<< "$2") <(echo "$3") > "$P/$1.diff"; then
		echo "$1: $(wc -l <<< "$3") files as expected"
	else
		cat "$P/$1.diff"
		die "$1 file list differs from the expected one (- expected, + packaged)"
	fi
}
if [ -n "${DEFER_INSTALL_CHECK:-}" ]; then
	compare "make-install" "$(inst_expect)" "$(listing "$I")"
	DESTDIR=$I PREFIX=/usr BUILD=$TOP/build bash "$TOP/scripts/install.sh" uninstall > "$P/uninstall.log"
	[ -z "$(listing "$I")" ] || { listing "$I"; die "make uninstall left files (above)"; }
	echo "make uninstall: no files left"
fi
compare fxblk-dkms "$(expect_dkms)" "$(listing "$X/dkms")"
compare fxctl "$(expect_ctl)" "$(listing "$X/ctl")"
mkdir -p "$X/lib" "$X/dev"
dpkg -x "$LIB_DEB" "$X/lib"
dpkg -x "$DEV_DEB" "$X/dev"
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
expect_lib() {	# expect_lib LIBDIR
	printf '%s\n' "$1/libfxio.so.0" "$1/libfxio.so.0.1.0" \
		/usr/share/doc/libfxio0/changelog.gz /usr/share/doc/libfxio0/copyright
}
expect_dev() {	# expect_dev LIBDIR
	printf '%s\n' /usr/include/fxio.h "$1/libfxio.so" "$1/pkgconfig/fxio.pc" /usr/share/man/man3/libfxio.3.gz \
		/usr/share/doc/libfxio-dev/changelog.gz /usr/share/doc/libfxio-dev/copyright
}
compare libfxio0 "$(expect_lib "/usr/lib/$MA")" "$(listing "$X/lib")"
compare libfxio-dev "$(expect_dev "/usr/lib/$MA")" "$(listing "$X/dev")"
mkdir -p "$X/py"
dpkg -x "$PY_DEB" "$X/py"
compare python3-fxio "$( { expect_py /usr/lib/python3/dist-packages
	printf '%s\n' /usr/share/doc/python3-fxio/changelog.gz /usr/share/doc/python3-fxio/copyright; } )" "$(listing "$X/py")"
# The library's ELF interface: SONAME libfxio.so.0, every exported symbol
# versioned FXIO_0 (ctl/fxio/fxio.map), and exactly the symbols that
# debian/libfxio0.symbols (shipped as the package's symbols file) lists.
SO=$X/lib/usr/lib/$MA/libfxio.so.0.1.0
soname=$(readelf -d "$SO" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libfxio.so.0 ] || die "libfxio.so.0.1.0: SONAME '$soname', not libfxio.so.0"
[ "$(readlink "$X/lib/usr/lib/$MA/libfxio.so.0")" = libfxio.so.0.1.0 ] || die "libfxio.so.0 does not point at libfxio.so.0.1.0"
[ "$(readlink "$X/dev/usr/lib/$MA/libfxio.so")" = libfxio.so.0 ] || die "libfxio.so (dev) does not point at libfxio.so.0"
exported=$(objdump -T "$SO" | awk '/^[0-9a-f]+ / && !/[*]UND[*]/ {print $(NF-1), $NF}' | LC_ALL=C sort)
unversioned=$(grep -Ev '^FXIO_0(\.[23])? ' <<< "$exported" || true)
[ -z "$unversioned" ] || { echo "$unversioned"; die "libfxio exports symbols outside versions FXIO_0, FXIO_0.2 and FXIO_0.3 (above)"; }
grep -Ev '^FXIO_0(\.[23])? (fxio_|FXIO_0(\.[23])?$)' <<< "$exported" && die "libfxio exports symbols that are not fxio_* (above)"
dpkg-deb --ctrl-tarfile "$LIB_DEB" | tar -tf - | has -x './symbols' || die "libfxio0 has no symbols control file"
pkgsyms=$(dpkg-deb --ctrl-tarfile "$LIB_DEB" | tar -xOf - ./symbols | awk '/^ / {print $1}' | LC_ALL=C sort)
compare libfxio0-symbols "$(awk '{print $2 "@" $1}' <<< "$exported")" "$pkgsyms"
dpkg-deb --ctrl-tarfile "$LIB_DEB" | tar -xOf - ./shlibs | has -x "libfxio 0 libfxio0 (>= $VER)" ||
	die "libfxio0's shlibs is not 'libfxio 0 libfxio0 (>= $VER)'"
echo "libfxio.so.0.1.0: SONAME $soname, $(wc -l <<< "$exported") symbols at FXIO_0, FXIO_0.2 and FXIO_0.3, as in the symbols file"
grep -qx "PACKAGE_VERSION=\"$VER\"" "$X/dkms/usr/src/fxblk-$VER/dkms.conf" ||
	die "packaged dkms.conf does not say PACKAGE_VERSION=\"$VER\""
cmp -s "$X/ctl/usr/share/bash-completion/completions/fxctl" \
	<("$X/ctl/usr/sbin/fxctl" --completion bash) || die "packaged completion is not fxctl's"
for d in "fxctl|libnl-genl" "fxblk-dkms|dkms" "libfxio0|libstdc++6" "libfxio0|liburing2" \
	"libfxio-dev|libfxio0 (= $VER)" "python3-fxio|libfxio0 (>= $VER)" "python3-fxio|python3 (>= 3.11~)"; do	# package|a dependency it must have
	dep=$(dpkg-deb -f "$P/out/${d%%|*}_${VER}_"*.deb Depends)
	echo "${d%%|*} Depends: $dep"
	grep -qF "${d#*|}" <<< "$dep" || die "${d%%|*}: no ${d#*|} in Depends"
done

step "4b. a program built against the installed libfxio-dev with pkg-config"
# A fresh overlay over the clean chroot (nothing of the build): apt installs
# libfxio0, libfxio-dev and python3-fxio (and their Depends) and pkg-config;
# python3 reads and writes a file through fxio; the program of
# tests/pkg/fxio-pkgconfig.c is compiled with `pkg-config --cflags --libs
# fxio` and run against a file; then the packages are purged.
cp "$TOP/tests/pkg/fxio-pkgconfig.c" "$P/src/"
build_chroot_run "$P/src" -- env DEBIAN_FRONTEND=noninteractive sh -exc "
	apt-get install -q -y /src/$(basename "$LIB_DEB") /src/$(basename "$DEV_DEB") /src/$(basename "$PY_DEB") pkg-config
	pkg-config --modversion fxio
	cc -Wall -Wextra -Werror -o /tmp/fxio-pkgconfig /src/fxio-pkgconfig.c \$(pkg-config --cflags --libs fxio)
	ldd /tmp/fxio-pkgconfig | grep libfxio.so.0
	truncate -s 1M /src/fxio-test.img
	/tmp/fxio-pkgconfig /src/fxio-test.img
	python3 -c 'import fxio, numpy as np; f = fxio.open(\"/src/fxio-test.img\", \"rw\"); a = np.arange(3000, dtype=np.uint16); f.write_from(a, 5); b = np.zeros_like(a); f.read_into(b, 5); assert (a == b).all(); print(\"python3-fxio: wrote and read back\", a.nbytes, \"bytes,\", f.last_path)'
	apt-get purge -q -y python3-fxio libfxio-dev libfxio0
	! ls /usr/lib/$MA/libfxio* /usr/include/fxio.h" > "$P/fxio-dev.log" 2>&1 ||
	{ cat "$P/fxio-dev.log"; die "building or running a program against the installed libfxio-dev failed"; }
rm -f "$P/src/fxio-test.img"
grep -E '^(libfxio [0-9]|[0-9]+\.[0-9]+\.[0-9]+$|.*libfxio.so.0 =>)' "$P/fxio-dev.log"
# the header's API version (FXIO_VERSION_MAJOR.MINOR), which the program prints
API=$(awk '/^#define FXIO_VERSION_MAJOR/ {a=$3} /^#define FXIO_VERSION_MINOR/ {b=$3} END {print a "." b}' "$TOP/ctl/fxio/include/fxio.h")
grep -qF "libfxio $API: wrote and read back" "$P/fxio-dev.log" || die "the pkg-config program did not report its I/O (libfxio $API)"
grep '^python3-fxio: wrote and read back' "$P/fxio-dev.log" || die "the installed python3-fxio did not report its I/O"

step "5. dkms add/build of the packaged source (6.12 headers)"
# shellcheck source=/dev/null
. "$CACHE/kernels.env"
FXBLK_DKMS_ROOT=$X/dkms bash "$TOP/tests/dkms.sh" "$FXBLK_KVER_6_12"

step "6. install $PREV, upgrade to $VER, remove, purge (scratch dpkg root, recording systemctl)"
# previous version: fxblk-dkms built from this source with VERSION=$PREV
# (arch all, dpkg-buildpackage -A compiles nothing); fxctl repacked.
PSRC=$P/prev/fxblk-$PREV
stage "$PSRC"
echo "$PREV" > "$PSRC/VERSION"
(cd "$PSRC" && dch -b -v "$PREV" -D unstable "previous version for the upgrade test" 2> /dev/null ||
	{ printf 'fxblk (%s) unstable; urgency=medium\n\n  * previous version for the upgrade test\n\n -- t <t@t.invalid>  %s\n\n' \
		"$PREV" "$(date -R)" | cat - debian/changelog > cl && mv cl debian/changelog; })
(cd "$PSRC" && dpkg-buildpackage -us -uc -A) > "$P/prev-build.log" 2>&1 ||
	{ tail -n 30 "$P/prev-build.log"; die "previous fxblk-dkms build failed"; }
PREV_DKMS=$P/prev/fxblk-dkms_${PREV}_all.deb
rm -rf "$P/repack" && dpkg-deb -R "$CTL_DEB" "$P/repack"
sed -i "s/^Version: .*/Version: $PREV/" "$P/repack/DEBIAN/control"
PREV_CTL=$P/prev/fxctl_${PREV}_${ARCH}.deb
dpkg-deb --root-owner-group -b "$P/repack" "$PREV_CTL" > /dev/null

R=$P/root
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,usr/lib/dkms,etc,tmp,var/log,var/lib/dkms} \
	"$R"/var/lib/dpkg/{info,updates,triggers} "$R/var/lib/fake-systemd"
: > "$R/var/lib/dpkg/status"
: > "$R/var/log/dkms-calls"
# A running systemd as the maintainer scripts see it: /run/systemd/system
# exists (the debhelper snippets act only then), and systemctl,
# deb-systemd-invoke and deb-systemd-helper are fakes that record every call
# and keep the unit's enabled/active state (tests/pkg/, each mirrors its
# real counterpart). fxblk-connect.service's ExecStop stops idle volumes and
# disconnects controllers, so any stop of it is a storage teardown.
mkdir -p "$R/run/systemd/system"
cp "$TOP"/tests/pkg/{systemctl,deb-systemd-invoke,deb-systemd-helper} "$R/usr/bin/"
: > "$R/var/lib/fake-systemd/calls"
UNIT=fxblk-connect.service
SD=$R/var/lib/fake-systemd
calls_since() { tail -n +"$(($1 + 1))" "$SD/calls"; }
ncalls() { wc -l < "$SD/calls"; }
mkdir -p "$R/dev" && mknod -m 666 "$R/dev/null" c 1 3
cp "$(command -v busybox)" "$R/bin/busybox"
chroot "$R" /bin/busybox --install -s
cp /usr/lib/dkms/common.postinst "$R/usr/lib/dkms/"
# dkms stub: records each call, keeps the added/removed state under /var/lib/dkms
cat > "$R/usr/sbin/dkms" <<'EOF'
#!/bin/sh
echo "dkms $*" >> /var/log/dkms-calls
cmd=$1; shift
m= v=
while [ $# -gt 0 ]; do
	case $1 in -m) m=$2; shift ;; -v) v=$2; shift ;; */*) m=${1%/*}; v=${1#*/} ;; esac
	shift
done
case $cmd in
add) mkdir -p "/var/lib/dkms/$m/$v" && ln -s "/usr/src/$m-$v" "/var/lib/dkms/$m/$v/source" ;;
remove) rm -rf "/var/lib/dkms/$m/$v"; rmdir "/var/lib/dkms/$m" 2> /dev/null || true ;;
status) [ ! -d "/var/lib/dkms/$m/$v" ] || echo "$m/$v: added" ;;
esac
exit 0
EOF
chmod +x "$R/usr/sbin/dkms"
before=$(listing "$R")
# --force-depends: the scratch root has none of the libraries or dkms
D=(dpkg --root="$R" --force-not-root --force-bad-path --force-depends --log="$P/dpkg.log")
echo "+ dpkg -i $PREV"
"${D[@]}" -i "$PREV_DKMS" "$PREV_CTL"
[ -d "$R/usr/src/fxblk-$PREV" ] || die "no /usr/src/fxblk-$PREV after installing $PREV"
grep -q "^dkms add -m fxblk -v $PREV" "$R/var/log/dkms-calls" || die "postinst did not dkms add $PREV"
# a fresh install neither enables nor starts the unit (it needs the site's
# /etc/nvme/config.json first)
[ ! -e "$SD/$UNIT.enabled" ] && [ ! -e "$SD/$UNIT.active" ] ||
	{ cat "$SD/calls"; die "installing fxctl enabled or started $UNIT"; }
echo "install: $UNIT neither enabled nor started"
# the admin configures it: enabled and running (volumes assembled, controllers connected)
chroot "$R" /usr/bin/systemctl enable --now "$UNIT"
mark=$(ncalls)
echo "+ dpkg -i $VER (upgrade, $UNIT enabled and active)"
"${D[@]}" -i "$DKMS_DEB" "$CTL_DEB" "$LIB_DEB" "$DEV_DEB"
cat "$R/var/log/dkms-calls"
echo "systemd calls during the upgrade:"
calls_since "$mark" | sed 's/^/  /'
# C2: the upgrade must not stop or restart the unit (its ExecStop tears the
# storage down), and it stays active
! calls_since "$mark" | grep -E "^EXECSTOP $UNIT|(stop|restart|try-restart|disable --now) .*$UNIT" ||
	die "the upgrade stopped or restarted $UNIT (above): its ExecStop tears down volumes and controllers"
[ -e "$SD/$UNIT.active" ] || die "$UNIT is not active after the upgrade"
[ -e "$SD/$UNIT.enabled" ] || die "$UNIT is not enabled after the upgrade"
calls_since "$mark" | has '^systemctl --system daemon-reload' || die "the upgrade did not daemon-reload the new unit file"
echo "upgrade: $UNIT neither stopped nor restarted, still enabled and active, unit files reloaded"
grep -q "^dkms remove -m fxblk -v $PREV --all" "$R/var/log/dkms-calls" ||
	die "upgrade did not dkms remove $PREV"
grep -q "^dkms add -m fxblk -v $VER" "$R/var/log/dkms-calls" || die "upgrade did not dkms add $VER"
[ ! -e "$R/usr/src/fxblk-$PREV" ] || die "/usr/src/fxblk-$PREV left after the upgrade"
[ -x "$R/usr/sbin/fxctl" ] || die "no /usr/sbin/fxctl after the upgrade"
[ -d "$R/var/lib/dkms/fxblk/$VER" ] || die "$VER not added to dkms after the upgrade"
"${D[@]}" -s fxblk-dkms fxctl | grep -E '^(Package|Status|Version):'
dpkg_all() {	# dpkg_all ACTION: dpkg ACTION of the four packages, showing its systemd calls
	mark=$(ncalls)
	echo "+ dpkg $1"
	"${D[@]}" "$1" libfxio-dev libfxio0 fxctl fxblk-dkms
	calls_since "$mark" | sed 's/^/  /'
}
dpkg_all --remove
# removal stops the unit while its fxctl is still there (prerm): a clean stop
calls_since "$mark" | has "^EXECSTOP $UNIT" || die "removing fxctl did not stop $UNIT"
[ ! -e "$SD/$UNIT.active" ] || die "$UNIT still active after fxctl was removed"
grep -q "^dkms remove -m fxblk -v $VER --all" "$R/var/log/dkms-calls" || die "remove did not dkms remove $VER"
echo "remove: $UNIT stopped in prerm, fxblk/$VER removed from dkms"
dpkg_all --purge
calls_since "$mark" | has "^deb-systemd-helper purge .*$UNIT" || die "purge did not deb-systemd-helper purge $UNIT"
[ ! -e "$SD/$UNIT.enabled" ] || die "$UNIT still enabled after purge"
after=$(listing "$R")
# dpkg's own database files come and go; the packages' entries must not stay
left=$(comm -3 <(echo "$before") <(echo "$after") | grep -v '^[[:space:]]*/var/lib/dpkg/' || true)
left=$(grep -v "^[[:space:]]*/var/lib/fake-systemd/calls$" <<< "$left" || true)
left+=$(cd "$R/var/lib/dpkg/info" && printf '%s\n' * | grep -E '^(fxctl|fxblk-dkms|libfxio0|libfxio-dev)[.:]' || true)
left+=$(grep -E '^Package: (fxctl|fxblk-dkms|libfxio0|libfxio-dev)$' "$R/var/lib/dpkg/status" || true)
[ -z "$left" ] || { echo "$left"; die "files left behind after purge (above)"; }
[ ! -e "$R/var/lib/dkms/fxblk" ] || die "dkms still has fxblk after purge"
echo "purge: nothing left behind ($(wc -l <<< "$after") files in the scratch root, as before install)"

step "8. fxblk-dkms with the real dkms, in the 7.3 and 7.2 chroots"
# The lab's newer kernels have their headers installed in debootstrap chroots
# of their suites (scripts/fetch-chroot-kernels.sh), with that suite's dkms.
# dpkg -i of the .deb there runs its postinst as on a user's machine: the real
# dkms adds, builds (and signs, generating a MOK key if there is none) and
# installs fxblk.ko for the chroot's kernel; purge must remove all of it.
# Only the suite's MOK key pair in /var/lib/dkms stays (dkms's, not ours).
# Mount points: scripts/chroot-run.sh creates those of its --bind
# directories (module builds of this and other checkouts, wherever they are:
# /work here, anywhere on CI) in the same chroots at any time, and records
# each top directory it creates in /.fxblk-mountpoints; ./work is older
# than that record.
chroot_listing() {
	local prune=(-path ./proc -o -path ./dev -o -path ./tmp -o -path ./work -o -path ./var/lib/dpkg
		-o -path ./var/log -o -path ./var/cache -o -path ./var/lib/dkms/mok.key
		-o -path ./var/lib/dkms/mok.pub -o -path ./.fxblk-mountpoints) m
	if [ -f "$1/.fxblk-mountpoints" ]; then
		while read -r m; do
			[ -n "$m" ] && prune+=(-o -path ".$m")
		done < <(sort -u "$1/.fxblk-mountpoints")
	fi
	(cd "$1" && find . -xdev \( "${prune[@]}" \) -prune -o -print | LC_ALL=C sort)
}
for series in 7.3 7.2; do
	var=FXBLK_KVER_${series//./_}
	kver=${!var:-}
	[ -n "$kver" ] || die "no $var in $CACHE/kernels.env: run make deps"
	c=$(cat "$CACHE/k/$kver/chroot" 2>/dev/null) || die "no chroot recorded for $kver: run make deps"
	[ -x "$c/usr/sbin/dkms" ] || die "no dkms in $c: run make deps (scripts/fetch-chroot-kernels.sh installs it)"
	CR=("$TOP/scripts/chroot-run.sh" "$c" --)
	exec 9> "$c/.fxblk-pkg.lock"
	flock 9
	# a run that died half way leaves the package installed: remove it first
	"${CR[@]}" dpkg --purge fxblk-dkms > /dev/null 2>&1 || true
	before=$(chroot_listing "$c")
	rm -rf "$c/tmp/fxpkg" && mkdir -p "$c/tmp/fxpkg"
	cp "$DKMS_DEB" "$c/tmp/fxpkg/"
	echo "+ $series ($kver): dpkg -i fxblk-dkms_${VER}_all.deb"
	"${CR[@]}" env DEBIAN_FRONTEND=noninteractive dpkg -i "/tmp/fxpkg/$(basename "$DKMS_DEB")" \
		> "$P/dkms-$series.log" 2>&1 || { cat "$P/dkms-$series.log"; die "dpkg -i fxblk-dkms in the $series chroot failed"; }
	grep -E '^(Building|Signing|Installing)' "$P/dkms-$series.log" || true
	st=$("${CR[@]}" dkms status -m fxblk -v "$VER" -k "$kver")
	echo "dkms status: $st"
	grep -q "fxblk/$VER, $kver, x86_64: installed" <<< "$st" || die "dkms does not say fxblk/$VER installed for $kver"
	ko=$(find "$c/lib/modules/$kver/updates/dkms" -name 'fxblk.ko*' | head -n1)
	[ -n "$ko" ] || die "no fxblk.ko under /lib/modules/$kver/updates/dkms in the $series chroot"
	vm=$(modinfo -F vermagic "$ko")
	[[ $vm == "$kver "* ]] || die "$ko: vermagic '$vm' is not for $kver"
	echo "installed $(basename "$ko"): vermagic $vm, signer '$(modinfo -F signer "$ko")'"
	echo "+ $series: dpkg --purge fxblk-dkms"
	"${CR[@]}" dpkg --purge fxblk-dkms >> "$P/dkms-$series.log" 2>&1 ||
		{ cat "$P/dkms-$series.log"; die "dpkg --purge fxblk-dkms in the $series chroot failed"; }
	rm -rf "$c/tmp/fxpkg"
	diff=$(comm -3 <(echo "$before") <(chroot_listing "$c"))
	[ -z "$diff" ] || { echo "$diff (left: gone, indented: new)"; die "the $series chroot differs after install + purge"; }
	"${CR[@]}" dkms status -m fxblk | has . && die "dkms still lists fxblk in the $series chroot after purge"
	echo "$series: purge left the chroot as it was ($(wc -l <<< "$before") paths compared)"
	exec 9>&-
done

step "7. rpmbuild -bs / -bb"
T=$P/rpm
mkdir -p "$T/SOURCES"
stage "$T/fxblk-$VER"
tar -czf "$T/SOURCES/fxblk-$VER.tar.gz" -C "$T" "fxblk-$VER"
RB=(rpmbuild --define "_topdir $T" --define "debug_package %{nil}" --nodeps)
[ "${FXBLK_PKG_OPT:-0}" = 1 ] || RB+=(--define "optflags -O0")
"${RB[@]}" -bs "$TOP/packaging/rpm/fxblk.spec" > "$P/rpm-bs.log" 2>&1 ||
	{ cat "$P/rpm-bs.log"; die "rpmbuild -bs failed"; }
ls "$T"/SRPMS/fxblk-"$VER"-1*.src.rpm
FULL=${FXBLK_PKG_FULL:-1}
[ "$FULL" = 1 ] || RB+=(--without fxctl)
"${RB[@]}" --define "_smp_mflags -j$JOBS" -bb "$TOP/packaging/rpm/fxblk.spec" > "$P/rpm-bb.log" 2>&1 ||
	{ tail -n 40 "$P/rpm-bb.log"; die "rpmbuild -bb failed (log: $P/rpm-bb.log)"; }
RDKMS=$(ls "$T"/RPMS/noarch/fxblk-dkms-"$VER"-1*.noarch.rpm)
cp "$RDKMS" "$T"/SRPMS/*.src.rpm "$P/out/"
# files only (rpm -qpl also lists the directories a package owns)
rpmlist() {
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" 2> /dev/null |
		sed -n 's|^[^d][^ ]* ||p' | grep -v '^/usr/share/licenses/\|^/usr/lib/.build-id/' | LC_ALL=C sort
}
# the same files as the .debs, with the RPM distributions' /usr/lib paths
compare rpm-fxblk-dkms "$(expect_dkms | grep -v '^/usr/share/doc/')" "$(rpmlist "$RDKMS")"
if [ "$FULL" = 1 ]; then
	RCTL=$(ls "$T"/RPMS/*/fxctl-"$VER"-1*.rpm)
	RLIB=$(ls "$T"/RPMS/*/libfxio-"$VER"-1*.rpm)
	RDEV=$(ls "$T"/RPMS/*/libfxio-devel-"$VER"-1*.rpm)
	cp "$RCTL" "$RLIB" "$RDEV" "$P/out/"
	# man page: .gz where brp-compress works (not with Debian's dash)
	compare rpm-fxctl "$(expect_ctl | grep -v '^/usr/share/doc/' | sed 's|^/lib/|/usr/lib/|; s|\.gz$||')" \
		"$(rpmlist "$RCTL" | sed 's|\.gz$||')"
	RLIBDIR=$(rpm --eval '%{_libdir}')
	compare rpm-libfxio "$(expect_lib "$RLIBDIR" | grep -v '^/usr/share/doc/')" "$(rpmlist "$RLIB")"
	compare rpm-libfxio-devel "$(expect_dev "$RLIBDIR" | grep -v '^/usr/share/doc/' | sed 's|\.gz$||')" \
		"$(rpmlist "$RDEV" | sed 's|\.gz$||')"
	rpm -qp --provides "$RLIB" | has '^libfxio.so.0(FXIO_0)' || die "libfxio.rpm does not provide libfxio.so.0(FXIO_0)"
	rpm -qp --requires "$RDEV" | has "^libfxio(x86-64) = $VER" || die "libfxio-devel.rpm does not require libfxio = $VER"
	rpm -qp --scripts "$RCTL" | has 'systemctl --no-reload disable --now fxblk-connect.service' ||
		die "fxctl.rpm: no %systemd_preun for fxblk-connect.service"
	echo "rpm: libfxio provides libfxio.so.0(FXIO_0); fxctl has the systemd scriptlets"
else
	echo "SKIP: rpmbuild -bb of fxctl (FXBLK_PKG_FULL=0, the make check default: a second fxctl build; make packages builds it)"
fi
rpm -qp --scripts "$RDKMS" | has "dkms add -m fxblk -v $VER" || die "fxblk-dkms.rpm: no dkms add in %post"
# dkms add/remove may fail harmlessly (already added; a failing %preun would
# block the erase), a failed build or install must show
rpm -qp --scripts "$RDKMS" | grep -E 'dkms (build|install).*\|\| *:' &&
	die "fxblk-dkms.rpm: %post swallows a dkms build/install failure (above)"
rpm -qp --scripts "$RDKMS" | has 'exit 1' || die "fxblk-dkms.rpm: %post never fails on a dkms build failure"

step "7b. fxctl's rpm scriptlets on install, upgrade and erase (recording systemctl)"
# The %post/%preun/%postun of fxctl as rpmbuild expands them (rpmspec -P:
# the same text goes into the rpm), run with rpm's arguments: install
# %post 1; upgrade: the new %post 2, then the old %preun 1 and %postun 1;
# erase: %preun 0, %postun 0 (rpm's scriptlet ordering, "Scriptlet
# arguments" in rpm's docs). systemctl is the fake of step 6.
rpmspec -P "$TOP/packaging/rpm/fxblk.spec" > "$P/spec.parsed" 2> /dev/null
scriptlet() {	# scriptlet post|preun|postun: its body for fxctl
	awk -v h="%$1 -n fxctl" '$0 == h {on = 1; next} on && /^%[a-z]/ {exit} on' "$P/spec.parsed"
}
for s in post preun postun; do
	grep -qx "%$s -n fxctl" "$P/spec.parsed" || die "fxblk.spec: no %$s -n fxctl"
done
RS=$P/rpm-systemd
rm -rf "$RS" && mkdir -p "$RS" && : > "$RS/calls"
runlet() { FAKE_SYSTEMD_DIR=$RS PATH=$TOP/tests/pkg:$PATH sh -ec "$(scriptlet "$1")" "$1" "$2"; }
runlet post 1
[ ! -e "$RS/$UNIT.active" ] || die "rpm install started $UNIT"
FAKE_SYSTEMD_DIR=$RS "$TOP/tests/pkg/systemctl" enable --now "$UNIT"
mark=$(wc -l < "$RS/calls")
runlet post 2; runlet preun 1; runlet postun 1
tail -n +"$((mark + 1))" "$RS/calls" | sed 's/^/  upgrade: /'
! tail -n +"$((mark + 1))" "$RS/calls" | grep -E "^EXECSTOP $UNIT|(stop|restart|disable) .*$UNIT" ||
	die "the rpm upgrade scriptlets stop, restart or disable $UNIT (above)"
[ -e "$RS/$UNIT.active" ] || die "$UNIT not active after the rpm upgrade scriptlets"
runlet preun 0; runlet postun 0
grep -q "^EXECSTOP $UNIT" "$RS/calls" || die "rpm erase did not stop $UNIT"
[ ! -e "$RS/$UNIT.enabled" ] || die "rpm erase left $UNIT enabled"
echo "rpm scriptlets: install presets, upgrade leaves $UNIT running, erase stops and disables it"
echo "packages OK: $(cd "$P/out" && ls | tr '\n' ' ')"
