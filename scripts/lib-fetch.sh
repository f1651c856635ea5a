# shellcheck shell=bash
# Sourced by scripts/deps.sh and the fetch-*.sh scripts it runs, and by
# tests/check.sh and tests/packages.sh (the missing_* functions only).
#
# 1. Downloads that survive a Debian mirror mid-sync. apt retries a
#    connection failure itself (Acquire::Retries, given to every apt-get
#    here), but not an index whose size or hash does not match its Release
#    file, which is what a mirror that is being synced serves for a while:
#
#      E: Failed to fetch http://.../binary-i386/Packages.xz  File has
#         unexpected size (371952 != 372316). Mirror sync in progress?
#      E: Some index files failed to download. They have been ignored, or
#         old ones used instead.
#
#    and depending on the apt version and on whether an older list is there,
#    apt-get update exits 100 or 0 ("W:") after it. fetch_retry runs a
#    command again, with back-off, until it exits 0 *and* prints none of
#    those lines, at most FXBLK_FETCH_TRIES times.
#
# 2. Artefacts make deps could not fetch. An optional artefact (one whose
#    tests make check can skip) that still fails after the retries is
#    recorded in $FXBLK_CACHE/missing/<artefact> (reason, command, exit,
#    date, last output lines) and make deps goes on; the next successful
#    fetch removes the record. tests/check.sh skips a test whose artefact is
#    absent only when such a record exists (and fails it otherwise).
#
# Env: FXBLK_FETCH_TRIES=4     attempts of each download step
#      FXBLK_FETCH_BACKOFF=15  seconds before the 2nd attempt, doubled each time
#      FXBLK_APT_RETRIES=3     apt's own Acquire::Retries per file

FETCH_TRIES=${FXBLK_FETCH_TRIES:-4}
FETCH_BACKOFF=${FXBLK_FETCH_BACKOFF:-15}
# every apt-get that touches the network gets these options
# shellcheck disable=SC2034 # used by the scripts that source this
APT_NET=(-o "Acquire::Retries=${FXBLK_APT_RETRIES:-3}")
# apt's lines for an index or package it could not fetch (exit status 0 or not)
FETCH_FAILED_RE='^(E|W): (Failed to fetch|Some index files failed to download)'
# a mirror being synced, as apt reports it (used for the advice printed)
FETCH_MIRROR_RE='Mirror sync in progress|unexpected size|Hash Sum mismatch|Release file .* is not valid yet'

# fetch_retry WHAT CMD...: run CMD until it succeeds, at most FETCH_TRIES
# times, sleeping FETCH_BACKOFF, 2x, 4x ... seconds in between. Success is
# exit 0 and no FETCH_FAILED_RE line in the output. CMD's output goes to
# stdout once it succeeded (callers redirect it as they did before); each
# failed attempt's error lines go to stderr, the last one's 20 last lines
# too. Returns CMD's last status (100 if it was 0 with failed indexes).
fetch_retry() {
	local what=$1 i=1 rc delay=$FETCH_BACKOFF out
	shift
	out=$(mktemp) || return 1
	while :; do
		"$@" > "$out" 2>&1
		rc=$?
		if [ $rc = 0 ] && ! grep -Eq "$FETCH_FAILED_RE" "$out"; then
			cat "$out"
			rm -f "$out"
			return 0
		fi
		[ $rc != 0 ] || rc=100
		if [ "$i" -ge "$FETCH_TRIES" ]; then
			tail -n 20 "$out" >&2
			echo "fetch: $what failed (exit $rc), $i attempts: giving up" >&2
			rm -f "$out"
			return $rc
		fi
		grep -E '^(E|W|Err):' "$out" | head -n 4 >&2
		echo "fetch: $what failed (exit $rc), attempt $i of $FETCH_TRIES; again in ${delay}s" >&2
		sleep "$delay"
		delay=$((delay * 2))
		i=$((i + 1))
	done
}

# debootstrap_clean DIR ARGS...: debootstrap ARGS into an empty DIR (an
# attempt that failed half way leaves a tree debootstrap would not redo)
debootstrap_clean() {
	rm -rf "$1"
	shift
	debootstrap "$@"
}

# missing_file ARTEFACT: where make deps records that it could not fetch it
missing_file() { echo "${FXBLK_CACHE:-/var/cache/fxblk}/missing/$1"; }
# missing_reason ARTEFACT: the recorded reason (empty, status 1: no record)
missing_reason() {
	local f
	f=$(missing_file "$1")
	[ -f "$f" ] || return 1
	sed -n 's/^reason: //p' "$f" | head -n1
}
# missing_skip ARTEFACT WHAT: the SKIP: line a test prints for a sub-check
# whose artefact make deps recorded as missing (tests/check.sh allows such
# a note only while the record exists); status 1 when there is no record
missing_skip() {
	local r f
	r=$(missing_reason "$1") || return 1
	f=$(missing_file "$1")
	echo "SKIP: $2: artefact $1 not fetched by make deps on $(sed -n 's/^date: //p' "$f"): $r ($f)"
}
# missing_record ARTEFACT KIND COMMAND EXIT LOG: write the record
missing_record() {
	local f reason mirror
	f=$(missing_file "$1")
	mkdir -p "$(dirname "$f")"
	reason=$(grep -E ': error: |^deps: error: ' "$5" | tail -n1 | sed 's/^[^ ]*: error: //')
	mirror=$(grep -E '^E: ' "$5" | grep -E "$FETCH_MIRROR_RE" | head -n1)
	[ -n "$mirror" ] || mirror=$(grep -E '^E: ' "$5" | head -n1)
	[ -n "$reason" ] || reason="exit $4"
	{
		echo "reason: $reason${mirror:+ ($mirror)}"
		echo "artefact: $1 ($2)"
		echo "command: $3"
		echo "exit: $4"
		echo "date: $(date -u +%FT%TZ)"
		echo "# its last output lines:"
		tail -n 15 "$5"
	} > "$f.tmp" && mv "$f.tmp" "$f"
}
missing_clear() { rm -f "$(missing_file "$1")"; }
