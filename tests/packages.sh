#!/bin/bash
# Packages test (make packages; make check runs it): in build/pkg, from a copy
# of the source tree (nothing is written into the tree itself):
#   1. versions: debian/changelog and packaging/rpm/fxblk.spec say VERSION
#   0. make install DESTDIR=scratch PREFIX=/usr (scripts/install.sh, using the
#      fxctl make check built in build/ctl) writes the expected files, make
#      uninstall removes them all (checked after step 4 defines the lists)
#   2. dpkg-buildpackage -us -uc -b -> fxblk-dkms_V_all.deb, fxctl_V_ARCH.deb
#   3. lintian: no errors (warnings are printed)
#   4. dpkg -x of both into a scratch root; the file list equals the expected
#      one (derived from kmod/, udev/, systemd/ and a fixed list for fxctl)
#   5. dkms add/build of the packaged source against the lab's 6.12 headers
#      (tests/dkms.sh with FXBLK_DKMS_ROOT)
#   6. in a scratch dpkg root (a busybox chroot with a dkms stub that records
#      its calls): install a previous version (fxblk-dkms built from this
#      source as VERSION~prev, fxctl repacked with that version), upgrade to
#      V, purge: the maintainer scripts call dkms add/remove for the right
#      versions and nothing is left behind
#   7. rpmbuild -bs and -bb (--nodeps: the spec names openEuler packages) of
#      packaging/rpm/fxblk.spec; file lists of both rpms checked
#   8. the fxblk-dkms .deb installed with dpkg in the lab's 7.3 and 7.2
#      chroots, whose own dkms (Debian 13 / unstable) builds, signs and installs
#      fxblk.ko for their kernel from the postinst; purge leaves nothing
# FXBLK_PKG_FULL=0 (make check) builds only the noarch fxblk-dkms rpm.
# The .debs and .rpms are left in build/pkg/out/. FXBLK_PKG_OPT=1 builds
# fxctl optimized (default: DEB_BUILD_OPTIONS=noopt and -O0, to keep make
# check short; lintian then notes missing fortify functions).
set -euo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${FXBLK_CACHE:-/var/cache/fxblk}
P=$TOP/build/pkg
VER=$(head -n1 "$TOP/VERSION")
PREV=$VER~prev
JOBS=${FXBLK_CHECK_JOBS:-$(nproc)}
ARCH=$(dpkg --print-architecture)
step() { echo; echo "=== $* ($SECONDS s)"; }
die() { echo "FAIL: $*"; exit 1; }
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
	inst_expect() {
		expect_ctl | grep -v '^/usr/share/doc/' | sed 's|^/lib/|/usr/lib/|; s|fxctl.8.gz$|fxctl.8|'
		expect_dkms | grep -v '^/usr/share/doc/'
		printf '/usr/%s\n' "$FXIO_LIBDIR/libfxio.so" "$FXIO_LIBDIR/libfxio.so.0" \
			"$FXIO_LIBDIR/libfxio.so.0.1.0" "$FXIO_LIBDIR/pkgconfig/fxio.pc" include/fxio.h
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

step "2. dpkg-buildpackage -b"
opts="nocheck parallel=$JOBS"
[ "${FXBLK_PKG_OPT:-0}" = 1 ] || opts+=" noopt"
(cd "$SRC" && DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -us -uc -b) > "$P/deb-build.log" 2>&1 ||
	{ tail -n 40 "$P/deb-build.log"; die "dpkg-buildpackage failed (log: $P/deb-build.log)"; }
DKMS_DEB=$P/src/fxblk-dkms_${VER}_all.deb
CTL_DEB=$P/src/fxctl_${VER}_${ARCH}.deb
CHANGES=$P/src/fxblk_${VER}_${ARCH}.changes
for f in "$DKMS_DEB" "$CTL_DEB" "$CHANGES"; do [ -f "$f" ] || die "no $f"; done
cp "$DKMS_DEB" "$CTL_DEB" "$P/out/"
ls -l "$P/out"

step "3. lintian"
# root runs lintian fine here; its note about that is not a finding
lintian --fail-on error --tag-display-limit 0 "$CHANGES" > "$P/lintian.log" 2>&1 || lrc=$?
grep -v 'running with root privileges' "$P/lintian.log" || true
[ "${lrc:-0}" = 0 ] || die "lintian reports errors"
echo "lintian: $(grep -c '^E:' "$P/lintian.log" || true) errors, $(grep -c '^W:' "$P/lintian.log" || true) warnings"

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
	for f in "$TOP"/kmod/Makefile "$TOP"/kmod/Kbuild "$TOP"/kmod/*.c "$TOP"/kmod/*.h; do
		echo "$d/${f##*/}"
	done
	for f in "$TOP"/kmod/compat/*; do echo "$d/compat/${f##*/}"; done
	printf '%s\n' /usr/share/doc/fxblk-dkms/changelog.gz /usr/share/doc/fxblk-dkms/copyright
}
expect_ctl() {
	local f
	printf '%s\n' /usr/sbin/fxctl /usr/share/man/man8/fxctl.8.gz \
		/usr/share/bash-completion/completions/fxctl \
		/usr/share/doc/fxctl/changelog.gz /usr/share/doc/fxctl/copyright
	for f in "$TOP"/udev/*.rules; do echo "/lib/udev/rules.d/${f##*/}"; done
	for f in "$TOP"/systemd/*.service; do
		[ -e "$f" ] && echo "/lib/systemd/system/${f##*/}"
	done
	return 0
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
grep -qx "PACKAGE_VERSION=\"$VER\"" "$X/dkms/usr/src/fxblk-$VER/dkms.conf" ||
	die "packaged dkms.conf does not say PACKAGE_VERSION=\"$VER\""
cmp -s "$X/ctl/usr/share/bash-completion/completions/fxctl" \
	<("$X/ctl/usr/sbin/fxctl" --completion bash) || die "packaged completion is not fxctl's"
for d in "fxctl libnl-genl" "fxblk-dkms dkms"; do	# package, a dependency it must have
	dep=$(dpkg-deb -f "$P/out/${d% *}_${VER}_"*.deb Depends)
	echo "${d% *} Depends: $dep"
	grep -q "${d#* }" <<< "$dep" || die "${d% *}: no ${d#* } in Depends"
done

step "5. dkms add/build of the packaged source (6.12 headers)"
# shellcheck source=/dev/null
. "$CACHE/kernels.env"
FXBLK_DKMS_ROOT=$X/dkms bash "$TOP/tests/dkms.sh" "$FXBLK_KVER_6_12"

step "6. install $PREV, upgrade to $VER, purge (scratch dpkg root)"
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
	"$R"/var/lib/dpkg/{info,updates,triggers}
: > "$R/var/lib/dpkg/status"
: > "$R/var/log/dkms-calls"
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
echo "+ dpkg -i $VER (upgrade)"
"${D[@]}" -i "$DKMS_DEB" "$CTL_DEB"
cat "$R/var/log/dkms-calls"
grep -q "^dkms remove -m fxblk -v $PREV --all" "$R/var/log/dkms-calls" ||
	die "upgrade did not dkms remove $PREV"
grep -q "^dkms add -m fxblk -v $VER" "$R/var/log/dkms-calls" || die "upgrade did not dkms add $VER"
[ ! -e "$R/usr/src/fxblk-$PREV" ] || die "/usr/src/fxblk-$PREV left after the upgrade"
[ -x "$R/usr/sbin/fxctl" ] || die "no /usr/sbin/fxctl after the upgrade"
[ -d "$R/var/lib/dkms/fxblk/$VER" ] || die "$VER not added to dkms after the upgrade"
"${D[@]}" -s fxblk-dkms fxctl | grep -E '^(Package|Status|Version):'
echo "+ dpkg --purge"
"${D[@]}" --purge fxctl fxblk-dkms
grep -q "^dkms remove -m fxblk -v $VER --all" "$R/var/log/dkms-calls" || die "purge did not dkms remove $VER"
after=$(listing "$R")
# dpkg's own database files come and go; the packages' entries must not stay
left=$(comm -3 <(echo "$before") <(echo "$after") | grep -v '^[[:space:]]*/var/lib/dpkg/' || true)
left+=$(cd "$R/var/lib/dpkg/info" && ls | grep -E '^(fxctl|fxblk-dkms)\.' || true)
left+=$(grep -E '^Package: (fxctl|fxblk-dkms)$' "$R/var/lib/dpkg/status" || true)
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
chroot_listing() {
	(cd "$1" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./tmp -o -path ./var/lib/dpkg \
		-o -path ./var/log -o -path ./var/cache -o -path ./var/lib/dkms/mok.key \
		-o -path ./var/lib/dkms/mok.pub \) -prune -o -print | LC_ALL=C sort)
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
	"${CR[@]}" dkms status -m fxblk | grep -q . && die "dkms still lists fxblk in the $series chroot after purge"
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
	cp "$RCTL" "$P/out/"
	# man page: .gz where brp-compress works (not with Debian's dash)
	compare rpm-fxctl "$(expect_ctl | grep -v '^/usr/share/doc/' | sed 's|^/lib/|/usr/lib/|; s|\.gz$||')" \
		"$(rpmlist "$RCTL" | sed 's|\.gz$||')"
else
	echo "SKIP: rpmbuild -bb of fxctl (FXBLK_PKG_FULL=0, the make check default: a second fxctl build; make packages builds it)"
fi
rpm -qp --scripts "$RDKMS" | grep -q "dkms add -m fxblk -v $VER" || die "fxblk-dkms.rpm: no dkms add in %post"
echo "packages OK: $(cd "$P/out" && ls | tr '\n' ' ')"
