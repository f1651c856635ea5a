#!/bin/bash
# make deps against a Debian mirror that is being synced, without a network:
# a stand-in apt-get (first on PATH) fails `apt-get update` the way
# deb.debian.org did on 2026-12-06 for bookworm-security's i386 list
#
#   E: Failed to fetch .../binary-i386/Packages.xz  File has unexpected size
#      (371952 != 372316). Mirror sync in progress?
#   E: Some index files failed to download. They have been ignored, or old
#      ones used instead.
#
# the first N times (exit 100, or exit 0 with W: lines as other apt versions
# do), or always; `apt-get download` builds a small .deb, a stand-in
# apt-cache answers `policy` and `depends`. The real scripts/deps.sh,
# fetch-foreign-headers.sh and fetch-kernels.sh run against them in a
# scratch cache (FXBLK_CACHE); deps.sh's other fetch steps are stand-ins
# that record that they ran (FXBLK_DEPS_SCRIPTS). Asserts:
#   1. a failed update is retried (with Acquire::Retries given to apt), also
#      when apt-get update exits 0 with "W: Failed to fetch"
#   2. an optional artefact that fails every attempt: make deps records it in
#      $FXBLK_CACHE/missing/<artefact>, runs the steps after it, warns and
#      exits 0
#   4. the next make deps that fetches it removes the record; one more run
#      calls apt-get update no more
#   5. an essential artefact (the lab kernels) that fails every attempt:
#      make deps exits 1 naming the mirror error and "re-run 'make deps'",
#      and runs no step after it
set -uo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
C=$T/cache BIN=$T/bin STEPS=$T/steps
mkdir -p "$C" "$BIN" "$STEPS"
FAILS=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() {	# check DESCRIPTION CMD...
	if "${@:2}"; then ok "$1"; else bad "$1"; fi
}

# ---- stand-ins -------------------------------------------------------------
# apt-get: update fails while $T/fail-updates (a count of remaining failures,
# or "always") says so, in the style $T/fail-mode says (exit100 | warn0)
cat > "$BIN/apt-get" <<'EOF'
#!/bin/bash
T=${STUB_DIR:?}
echo "$*" >> "$T/apt.calls"
sub=
for a in "$@"; do
	case $a in update|download|install) sub=$a; break ;; esac
done
case $sub in
update)
	echo x >> "$T/update.calls"
	f=$(cat "$T/fail-updates" 2>/dev/null || echo 0)
	if [ "$f" = always ] || [ "$f" -gt 0 ]; then
		[ "$f" = always ] || echo $((f - 1)) > "$T/fail-updates"
		echo "Get:1 http://deb.debian.org/debian-security bookworm-security InRelease [34.8 kB]"
		echo "Err:2 http://deb.debian.org/debian-security bookworm-security/main i386 Packages"
		echo "  File has unexpected size (371952 != 372316). Mirror sync in progress? [IP: 203.0.113.80 80]"
		if [ "$(cat "$T/fail-mode" 2>/dev/null)" = warn0 ]; then
			echo "W: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-i386/Packages.xz  File has unexpected size (371952 != 372316). Mirror sync in progress? [IP: 203.0.113.80 80]" >&2
			echo "W: Some index files failed to download. They have been ignored, or old ones used instead." >&2
			exit 0
		fi
		echo "E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/binary-i386/Packages.xz  File has unexpected size (371952 != 372316). Mirror sync in progress? [IP: 203.0.113.80 80]" >&2
		echo "E: Some index files failed to download. They have been ignored, or old ones used instead." >&2
		exit 100
	fi
	echo "Hit:1 http://deb.debian.org/debian bookworm InRelease"
	;;
download)
	p=${!#} arch=amd64
	case $p in *:*) arch=${p#*:} p=${p%%:*} ;; esac
	r=$(mktemp -d)
	mkdir -p "$r/DEBIAN"
	printf 'Package: %s\nVersion: 1\nArchitecture: %s\nMaintainer: t <t@t>\nDescription: stand-in\n' \
		"$p" "$arch" > "$r/DEBIAN/control"
	case $p in
	linux-headers-*-686-pae|linux-headers-*-arm64)
		k=${p#linux-headers-}
		mkdir -p "$r/usr/src/linux-headers-$k/include/config"
		echo "include /usr/src/linux-headers-common/Makefile" > "$r/usr/src/linux-headers-$k/Makefile"
		case $arch in i386) c=CONFIG_X86_32 ;; *) c=CONFIG_ARM64 ;; esac
		echo "$c=y" > "$r/usr/src/linux-headers-$k/include/config/auto.conf" ;;
	*)	mkdir -p "$r/usr/share/doc/$p" && : > "$r/usr/share/doc/$p/stand-in" ;;
	esac
	dpkg-deb --root-owner-group -Zgzip -b "$r" "${p}_1_$arch.deb" > /dev/null || exit 100
	rm -rf "$r"
	;;
*)	echo "stand-in apt-get: unexpected: $*" >&2; exit 100 ;;
esac
EOF
cat > "$BIN/apt-cache" <<'EOF'
#!/bin/bash
case $1 in
policy)
	echo " 500 http://deb.debian.org/debian bookworm/main amd64 Packages"
	echo " 500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages" ;;
depends)
	echo "$2"
	echo "  Depends: linux-headers-6.1.0-99-common"
	echo "  Depends: linux-kbuild-6.1" ;;
*)	echo "stand-in apt-cache: unexpected: $*" >&2; exit 100 ;;
esac
EOF
# every package of deps.sh installed; root (the scratch cache needs no root)
cat > "$BIN/dpkg-query" <<'EOF'
#!/bin/bash
for a in "$@"; do case $a in -*|'${'*) ;; *) echo "$a install ok installed" ;; esac; done
EOF
printf '#!/bin/sh\necho 0\n' > "$BIN/id"
chmod +x "$BIN"/*
export PATH=$BIN:$PATH STUB_DIR=$T FXBLK_CACHE=$C FXBLK_DEPS_SCRIPTS=$STEPS
export FXBLK_FETCH_TRIES=4 FXBLK_FETCH_BACKOFF=0
unset FXBLK_DEPS_REFRESH FXBLK_KVER_5_10 FXBLK_KVER_6_1 FXBLK_KVER_6_12

# the real fetch scripts, stand-ins for the rest
for s in fetch-kernels.sh fetch-foreign-headers.sh; do
	ln -s "$TOP/scripts/$s" "$STEPS/$s"
done
for s in fetch-chroot-kernels.sh fetch-arm64-lab.sh fetch-build-chroot.sh; do
	printf '#!/bin/bash\necho "%s $*" >> "%s/ran"\n' "$s" "$T" > "$STEPS/$s"
done
# the lab kernels as make deps leaves them (deps.sh's kernels_ready)
cat > "$C/kernels.env" <<EOF
FXBLK_KVER_5_10=5.10.0-99-amd64
FXBLK_KVER_6_1=6.1.0-99-amd64
FXBLK_KVER_6_12=6.12.99+deb12-amd64
EOF
for k in 5.10.0-99-amd64 6.1.0-99-amd64 6.12.99+deb12-amd64; do
	mkdir -p "$C/k/$k/hdr/usr/src/linux-headers-$k/include/generated"
	touch "$C/k/$k/.done" "$C/k/$k/vmlinux" "$C/k/$k/hdr/usr/src/linux-headers-$k/include/generated/autoconf.h"
done
mkdir -p "$C/checkpatch" && touch "$C/checkpatch/checkpatch.pl"
I386=6.1.0-99-686-pae
updates() { cat "$T/update.calls" 2>/dev/null | wc -l; }
reset() { rm -f "$T/update.calls" "$T/apt.calls" "$T/ran"; echo "$1" > "$T/fail-updates"; echo "${2:-exit100}" > "$T/fail-mode"; }

# ---- 1. retries --------------------------------------------------------------
echo "== 1a. apt-get update fails twice (exit 100), then the mirror is in sync"
reset 2
out=$(bash "$TOP/scripts/fetch-foreign-headers.sh" i386 2>&1); rc=$?
echo "$out" | sed 's/^/   | /'
check "fetch-foreign-headers.sh i386 succeeds (exit $rc)" [ $rc = 0 ]
check "apt-get update ran 3 times ($(updates))" [ "$(updates)" = 3 ]
check "every apt-get update/download had -o Acquire::Retries" \
	bash -c "! grep -E 'update|download' '$T/apt.calls' | grep -qv 'Acquire::Retries='"
check "the i386 headers are unpacked" [ -f "$C/k/$I386/.done" ]
echo "== 1b. apt-get update exits 0 with 'W: Failed to fetch' once"
reset 1 warn0
out=$(bash "$TOP/scripts/fetch-foreign-headers.sh" arm64 2>&1); rc=$?
echo "$out" | sed 's/^/   | /'
check "fetch-foreign-headers.sh arm64 succeeds (exit $rc)" [ $rc = 0 ]
check "the W: update was retried: apt-get update ran 2 times ($(updates))" [ "$(updates)" = 2 ]
rm -rf "$C/k/$I386" "$C/k/6.12.99+deb12-arm64" "$C"/debs/linux-headers-*
sed -i '/^FXBLK_KVER_\(I386\|ARM64\)=/d' "$C/kernels.env"

# ---- 2. optional artefact: recorded, deps goes on ---------------------------
echo "== 2. the mirror fails every attempt: make deps"
reset always
out=$(bash "$TOP/scripts/deps.sh" 2>&1); rc=$?
echo "$out" | sed 's/^/   | /'
rec=$C/missing/i386-headers
check "make deps exits 0 (exit $rc)" [ $rc = 0 ]
check "apt-get update tried 4 times per architecture: 8 ($(updates))" [ "$(updates)" = 8 ]
check "record $rec written" [ -f "$rec" ]
check "the record's reason names the step and apt's mirror error" \
	grep -q '^reason: apt update (i386) failed (E: Failed to fetch .*Mirror sync in progress?' "$rec"
check "the record has command, date and the last output lines" \
	bash -c "grep -q '^command: bash .*fetch-foreign-headers.sh i386$' '$rec' &&
		grep -q '^date: 20[0-9-]*T' '$rec' && grep -q '^E: Some index files failed' '$rec'"
check "arm64 headers recorded too" [ -f "$C/missing/arm64-headers" ]
check "the steps after them ran (arm64 lab, build chroot)" \
	bash -c "grep -q fetch-arm64-lab.sh '$T/ran' && grep -q fetch-build-chroot.sh '$T/ran'"
check "make deps ends with a warning naming i386-headers" \
	grep -q 'deps:   i386-headers: apt update (i386) failed' <<< "$out"

# ---- 4. the mirror is back ---------------------------------------------------
echo "== 4. the mirror is back: make deps, twice"
reset 0
out=$(bash "$TOP/scripts/deps.sh" 2>&1); rc=$?
echo "$out" | sed 's/^/   | /'
check "make deps exits 0 (exit $rc)" [ $rc = 0 ]
check "the records are gone" bash -c "[ ! -e '$rec' ] && [ ! -e '$C/missing/arm64-headers' ]"
check "the i386 headers are unpacked" [ -f "$C/k/$I386/.done" ]
check "no warning at the end" bash -c "! grep -q WARNING <<< '$out'"
reset 0
out=$(bash "$TOP/scripts/deps.sh" 2>&1); rc=$?
check "a second run: exit 0, no apt-get update ($(updates))" bash -c "[ $rc = 0 ] && [ $(updates) = 0 ]"

# ---- 5. essential artefact ---------------------------------------------------
echo "== 5. the lab kernels are missing and the mirror fails every attempt"
rm "$C/k/6.1.0-99-amd64/.done"
reset always
out=$(bash "$TOP/scripts/deps.sh" 2>&1); rc=$?
echo "$out" | sed 's/^/   | /'
check "make deps fails: exit 1 ($rc)" [ $rc = 1 ]
check "after 4 attempts ($(updates))" [ "$(updates)" = 4 ]
check "the message names the mirror error" grep -q 'deps: the Debian mirror is being synced (apt: Failed to fetch .*Mirror sync in progress?' <<< "$out"
check "and says to re-run make deps" grep -q "re-run 'make deps'" <<< "$out"
check "no step after it ran" [ ! -e "$T/ran" ]
check "no record for an essential artefact" [ ! -e "$C/missing/lab-kernels" ]

echo "deps-fetch: $FAILS failed"
[ $FAILS = 0 ]
