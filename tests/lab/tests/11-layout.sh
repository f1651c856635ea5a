#!/bin/bash
# lab: kernels=5.10,6.1,6.12 quick=6.1 members=4 timeout=1200
# On-disk layout = dm-stripe's: volume chunk c lives on member c mod N at
# member byte data_offset + (c div N) * chunk. Writes a random pattern through
# /dev/fxN and reads every chunk back from the members directly, for several
# chunk sizes and data offsets (default and explicit); checks the geometry
# fxctl/sysfs report; then removes the volume and reads the same bytes through
# an equivalent `dmsetup ... striped` table, and the other way round (written
# through dm, read through a re-created fx volume).
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
M=("${M[@]:0:4}"); N=4
fx_load
modprobe dm_mod 2>/dev/null
export DM_DISABLE_UDEV=1
cleanup() {
	fxctl remove t11 >/dev/null 2>&1
	dmsetup remove --noudevsync fxchk >/dev/null 2>&1
}
trap cleanup EXIT
MIB=1048576

# check_geometry NAME CHUNK_BYTES OFFSET_BYTES: fxctl show + sysfs agree with the contract
check_geometry() {
	local name=$1 ch=$2 off=$3 dev disk i per min=-1 sz f=/tmp/show.json
	dev=$(fxdev "$name") || fail "no /dev/fxN with sysfs name $name"
	disk=${dev#/dev/}
	fxctl -o json show "$name" >$f || fail "fxctl -o json show $name"
	[ "$(jv schema_version $f)" = 2 ] || fail "show: schema_version != 2"
	[ "$(jv volume.chunk_bytes $f)" = "$ch" ] || fail "show: chunk_bytes $(jv volume.chunk_bytes $f) != $ch"
	[ "$(jv volume.device $f)" = "$dev" ] || fail "show: device $(jv volume.device $f) != $dev"
	for i in 0 1 2 3; do
		[ "$(jv volume.members.$i.device $f)" = "${M[$i]}" ] ||
			fail "show: member $i is $(jv volume.members.$i.device $f), created with ${M[$i]} (order must be kept)"
		[ "$(jv volume.members.$i.data_offset_bytes $f)" = "$off" ] ||
			fail "show: member $i data_offset_bytes $(jv volume.members.$i.data_offset_bytes $f) != $off"
		sz=$(blockdev --getsize64 "${M[$i]}")
		[ $min -lt 0 ] || [ "$sz" -lt $min ] && min=$sz
		[ -e "/sys/block/$disk/slaves/${M[$i]#/dev/}" ] || fail "/sys/block/$disk/slaves lacks ${M[$i]#/dev/}"
	done
	# usable = member size - offset - 1 MiB end reserve, rounded down to whole chunks
	per=$(( (min - off - MIB) / ch * ch ))
	[ "$(jv volume.capacity_bytes $f)" = $((N * per)) ] ||
		fail "show: capacity_bytes $(jv volume.capacity_bytes $f) != $N x $per (smallest member $min, offset $off)"
	[ "$(blockdev --getsize64 "$dev")" = $((N * per)) ] || fail "$dev size $(blockdev --getsize64 "$dev") != $((N * per))"
	[ "$(cat /sys/block/$disk/fxblk/chunk_sectors)" = $((ch / 512)) ] || fail "sysfs chunk_sectors"
	[ "$(cat /sys/block/$disk/queue/minimum_io_size)" = "$ch" ] || fail "io_min $(cat /sys/block/$disk/queue/minimum_io_size) != chunk $ch"
	[ "$(cat /sys/block/$disk/queue/optimal_io_size)" = $((ch * N)) ] || fail "io_opt $(cat /sys/block/$disk/queue/optimal_io_size) != $((ch * N))"
	CAP=$((N * per)); DEV=$dev
}

# check_members CHUNK OFFSET NCHUNKS PATTERN: every chunk is where the layout says
# (one O_DIRECT read per member, then cmp at the offsets the layout gives)
check_members() {
	local ch=$1 off=$2 nc=$3 pat=$4 c m mc per=$((($3 + N - 1) / N))
	for ((m = 0; m < N; m++)); do
		dd if="${M[$m]}" of=/tmp/mem$m bs="$ch" count=$per skip=$off \
			iflag=skip_bytes,direct 2>/dev/null || fail "read ${M[$m]} at $off"
	done
	for ((c = 0; c < nc; c++)); do
		m=$((c % N)); mc=$((c / N))
		cmp -s -n "$ch" -i "$((c * ch)):$((mc * ch))" "$pat" /tmp/mem$m ||
			fail "chunk $c (chunk $ch, offset $off): not found on ${M[$m]} at byte $((off + mc * ch))"
	done
}

# layout CHUNK_BYTES OFFSET_BYTES [--data-offset ARG]
layout() {
	local ch=$1 off=$2 nc; shift 2
	fxctl create t11 --chunk $((ch / 1024))K "$@" "${M[@]}" || fail "fxctl create t11 --chunk $((ch / 1024))K $*"
	check_geometry t11 "$ch" "$off"
	nc=$((4 * N + 3)) # whole stripes and a partial one
	head -c $((nc * ch)) /dev/urandom >/tmp/pat
	dd if=/tmp/pat of="$DEV" bs="$ch" oflag=direct conv=fsync 2>/dev/null || fail "write pattern to $DEV"
	check_members "$ch" "$off" $nc /tmp/pat
	# an 8 KiB write straddling the boundary between chunk 1 and chunk 2 (members 1 and 2)
	head -c 8192 /dev/urandom >/tmp/x
	dd if=/tmp/x of="$DEV" bs=8192 seek=$((2 * ch - 4096)) oflag=seek_bytes,direct conv=notrunc 2>/dev/null || fail "straddling write"
	dd if=/tmp/x of=/tmp/pat bs=8192 seek=$((2 * ch - 4096)) oflag=seek_bytes conv=notrunc 2>/dev/null
	check_members "$ch" "$off" 3 /tmp/pat
	log "chunk $ch offset $off: $nc chunks found on the right members at the right offsets"
}

layout 65536 $((4 * MIB))
fxctl remove t11 || fail "remove"
layout 1048576 $((8 * MIB)) --data-offset 8M
fxctl remove t11 || fail "remove"
layout 4096 $((4 * MIB))
fxctl remove t11 || fail "remove"

# dm-stripe equivalence, 64 KiB chunk, default offset
layout 65536 $((4 * MIB))
SPAN=$((32 * MIB))
head -c $SPAN /dev/urandom >/tmp/big
dd if=/tmp/big of="$DEV" bs=1M oflag=direct conv=fsync 2>/dev/null || fail "write 32 MiB to $DEV"
dd if="$DEV" of=/tmp/tail.fx bs=1M count=4 skip=$((CAP / MIB - 4)) iflag=direct 2>/dev/null || fail "read tail of $DEV"
SUM_FX=$(dd if="$DEV" bs=1M count=32 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$SUM_FX" = "$(sha256sum </tmp/big | cut -d' ' -f1)" ] || fail "read-back through $DEV differs from what was written"
fxctl remove t11 || fail "fxctl remove t11"
TAB="0 $((CAP / 512)) striped $N $((65536 / 512))"
for m in "${M[@]}"; do TAB="$TAB $m $((4 * MIB / 512))"; done
log "dm table: $TAB"
dmsetup create --noudevsync fxchk --table "$TAB" || fail "dmsetup create with the equivalent striped table"
[ "$(blockdev --getsize64 /dev/mapper/fxchk)" = "$CAP" ] || fail "dm size != fx capacity"
SUM_DM=$(dd if=/dev/mapper/fxchk bs=1M count=32 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$SUM_DM" = "$SUM_FX" ] || fail "dm-stripe over the same members reads different data than fx (sha256 $SUM_DM vs $SUM_FX)"
dd if=/dev/mapper/fxchk of=/tmp/tail.dm bs=1M count=4 skip=$((CAP / MIB - 4)) iflag=direct 2>/dev/null
cmp -s /tmp/tail.fx /tmp/tail.dm || fail "last 4 MiB differ between fx and dm-stripe"
log "dm-stripe reads back the fx volume's data (first 32 MiB and last 4 MiB identical)"
# and the other way: write through dm, read through a re-created fx volume
head -c $((3 * MIB)) /dev/urandom >/tmp/dmw
dd if=/tmp/dmw of=/dev/mapper/fxchk bs=1M seek=5 oflag=direct conv=fsync 2>/dev/null || fail "write through dm"
dmsetup remove --noudevsync fxchk || fail "dmsetup remove"
fxctl create t11 --chunk 64K "${M[@]}" || fail "re-create t11"
DEV=$(fxdev t11) || fail "no fx device after re-create"
dd if="$DEV" of=/tmp/fxr bs=1M skip=5 count=3 iflag=direct 2>/dev/null
cmp -s /tmp/dmw /tmp/fxr || fail "data written through dm-stripe is not read back through $DEV"
fxctl remove t11 || fail "remove"
trap - EXIT
pass "layout"
