#!/bin/bash
# lab: kernels=6.1,6.12 quick=6.12 members=4 size-mb=512
# lab-break: --break primary ~ primary destroyed: source, primary/backup valid
# On-disk labels (docs/on-disk-format.md): create labels every member
# (examine shows index/count/uuid on each, text, JSON and --export); the
# kernel keeps the data area out of the 1 MiB end reserve; create refuses a
# member with an xfs signature or another volume's label unless --force;
# a destroyed primary label -> examine uses the backup and says so; both
# destroyed -> not a member (exit 3; --export prints nothing, exit 0);
# fxctl remove wipes the volume's labels, so the members can be reused;
# fxctl rename is refused while the volume runs, renames a stopped one in
# every label at the next generation, and assemble finds it by the new name.
# --break CHECK makes one check fail on purpose (see the case below).
. /lab/lib.sh
BREAK=
[ "${1:-}" = --break ] && BREAK=$2
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
fx_load
cleanup() { fxctl remove lab30 >/dev/null 2>&1; }
# stop NAME: remove the volume but keep its labels (fxctl remove wipes them)
stop() { fx_run fxblk-nltest --label "stop $1" --expect OK --cmd destroy --name "$1"; }
trap cleanup EXIT
LB=16384
SZ=$(blockdev --getsize64 "${M[0]}") || fail "blockdev --getsize64 ${M[0]}"
BACKUP=$(( (SZ - LB) / 4096 * 4096 ))

# --- create labels every member ---------------------------------------------
fx_run fxctl -v create lab30 "${M[@]}"
expect_match "$FX_OUT" 'wrote labels of volume "lab30" \(uuid [0-9a-f-]{36}, generation 1\) on 4' "create -v"
expect_match "$FX_OUT" 'no udev daemon runs' "create -v without udevd"
fx_json fxctl -o json show lab30
UUID=
for i in 0 1 2 3; do
	m=${M[$i]}
	[ "$BREAK" = index ] && [ $i = 2 ] && m=${M[3]}
	fx_json fxctl -o json examine "$m"
	# one jq per member (each costs about a second under TCG)
	read -r idx cnt name src u nqn nsid < <(jqr '[.label.member_index, .label.member_count,
		.label.volume_name, .label_source, .label.volume_uuid,
		.label.members['$i'].subsys_nqn, .label.members['$i'].nsid] | map(tostring) | join(" ")')
	expect_eq "$idx/$cnt/$name/$src" "$i/4/lab30/primary" "$m: index/count/name/label source"
	expect_match "$u" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$m: uuid"
	[ -z "$UUID" ] || expect_eq "$u" "$UUID" "$m: same volume uuid as member 0"
	UUID=$u
	# the label names this very namespace at its own index
	expect_eq "$nqn" "$(cat "/sys/block/${m#/dev/}/device/subsysnqn")" "$m: own NQN at index $i"
	expect_eq "$nsid" "$(cat "/sys/block/${m#/dev/}/nsid")" "$m: own nsid at index $i"
done
fx_run fxctl examine "${M[1]}"
expect_match "$FX_OUT" "member 1 of 4 of volume \"lab30\" \(label: primary\)" "examine text"
expect_match "$FX_OUT" "volume uuid  $UUID" "examine text uuid"
fx_run fxctl examine --export "${M[3]}"
expect_eq "$FX_OUT" "FXBLK_MEMBER=1
FXBLK_UUID=$UUID
FXBLK_NAME=lab30
FXBLK_INDEX=3
FXBLK_COUNT=4
FXBLK_GENERATION=1
FXBLK_LABEL=primary" "examine --export"

# --- data area: off the end reserve, and the kernel refuses reaching into it
read -r DO DB < <(jqr '.volume.members[0] | "\(.data_offset_bytes) \(.data_bytes)"')
[ $((DO + DB)) -le $((SZ - 1048576)) ] || fail "data area $DO+$DB reaches the last 1 MiB of $SZ bytes"
stop lab30
S=$((SZ / 512)); ROOM=$((S - 8192 - 2048))
[ "$BREAK" = tail ] && ROOM=$((ROOM - 1))
fx_run fxblk-nltest --label "data into the end reserve" --expect EINVAL \
	--extack 'data range exceeds member size' --cmd create --name t30 --member "${M[0]},off=8192,sectors=$((ROOM + 1))"
fx_run fxblk-nltest --label "data up to the end reserve" --expect OK \
	--cmd create --name t30 --member "${M[0]},off=8192,sectors=$ROOM"
fx_run fxblk-nltest --label "default size stops before the end reserve" --expect OK --keep \
	--cmd create --name t30 --member "${M[0]},off=8192"
fx_json fxctl -o json show t30
expect_eq "$(jqr .volume.members[0].data_bytes)" $((ROOM * 512)) "kernel default DATA_SECTORS"
fx_run fxctl remove t30

# --- refusals: another volume's label, an xfs signature -----------------------
fx_expect_fail --rc 1 --msg "${M[0]} is not empty: it carries fxblk label of volume \"lab30\" \($UUID, member 0 of 4\).*--force" \
	fxctl create lab30b "${M[0]}" "${M[1]}"
fxctl examine "${M[0]}" >/dev/null || fail "a refused create changed ${M[0]}'s label"
mkfs.xfs -q -f "${M[2]}" || fail "mkfs.xfs ${M[2]}"
[ "$BREAK" = xfs ] && wipefs -q -a "${M[2]}"
fx_expect_fail --rc 1 --msg "${M[2]} is not empty: it carries xfs filesystem signature at byte 0.*use --force to overwrite" \
	fxctl create lab30 "${M[2]}" "${M[3]}"
fxdev lab30 >/dev/null && fail "refused create left a volume"
[ "$(blkid -o value -s TYPE "${M[2]}")" = xfs ] || fail "refused create touched the xfs signature"
fx_run fxctl create --force lab30 "${M[@]}"
expect_match "$FX_OUT" "--force: overwriting xfs filesystem signature at byte 0.* on ${M[2]}" "--force says what it overwrites"
[ -z "$(blkid -p -o value -s TYPE "${M[2]}" 2>/dev/null)" ] || fail "xfs signature still on ${M[2]} after create --force"
fx_json fxctl -o json examine "${M[2]}"
read -r idx NEWUUID < <(jqr '"\(.label.member_index) \(.label.volume_uuid)"')
expect_eq "$idx" 2 "relabelled member index"
[ "$NEWUUID" != "$UUID" ] || fail "create --force kept the old volume uuid"
stop lab30

# --- primary destroyed -> backup; both destroyed -> not a member -------------
m=${M[1]}
[ "$BREAK" = primary ] || dd if=/dev/zero of="$m" bs=4096 seek=1 count=4 conv=notrunc,fsync 2>/dev/null ||
	fail "zeroing the primary label of $m"
fx_json fxctl -o json examine "$m"
expect_eq "$(jqr '"\(.label_source) \(.primary.valid) \(.backup.valid) \(.label.member_index) \(.label.volume_uuid)"')" \
	"backup false true 1 $NEWUUID" "primary destroyed: source, primary/backup valid, index, uuid"
fx_run fxctl examine "$m"
expect_match "$FX_OUT" 'member 1 of 4 of volume "lab30" \(label: backup\)' "examine text names the backup"
expect_match "$FX_OUT" 'warning: primary label: no fxblk label \(magic not found\); the backup label serves' "examine text says why"
fx_run fxctl examine --export "$m"
expect_match "$FX_OUT" '^FXBLK_LABEL=backup$' "--export names the backup"
# a corrupted (not zeroed) primary: refused for its crc, backup serves
fxctl create --force lab30 "${M[@]}" >/dev/null 2>&1 || fail "re-create"
stop lab30
printf 'X' | dd of="$m" bs=1 seek=$((4096 + 40)) conv=notrunc,fsync 2>/dev/null
fx_run fxctl examine "$m"
expect_match "$FX_OUT" 'primary label: bad crc32c: stored [0-9a-f]{8}, computed [0-9a-f]{8}' "corrupted primary: reason"
expect_match "$FX_OUT" '\(label: backup\)' "corrupted primary: backup used"

[ "$BREAK" = both ] || dd if=/dev/zero of="$m" bs=4096 seek=$((BACKUP / 4096)) count=4 conv=notrunc,fsync 2>/dev/null ||
	fail "zeroing the backup label of $m"
dd if=/dev/zero of="$m" bs=4096 seek=1 count=4 conv=notrunc,fsync 2>/dev/null
fx_expect_fail --rc 3 --msg "^$m: not an fxblk member \(primary label: no fxblk label \(magic not found\); backup label: no fxblk label \(magic not found\)\)$" \
	fxctl examine "$m"
fx_run fxctl examine --export "$m"
expect_eq "$FX_OUT" "" "--export on a non-member prints nothing (exit 0)"
J=$(fxctl -o json examine "$m" 2>/dev/null); rc=$?
expect_eq "$rc" 3 "examine -o json on a non-member: exit status"
expect_eq "$(jq -r '.member, .label, .primary.blank, .backup.blank' <<<"$J" | paste -sd,)" "false,null,true,true" "examine -o json on a non-member"
# --- fxctl remove wipes the volume's labels: the members are free again -------
fx_run fxctl create --force lab30 "${M[@]}"
# --- rename (review M4): refused while running; a stopped volume gets the new
# name in every member's label at the next generation, and assembles by it
fx_expect_fail --rc 4 --msg "is running as /dev/fx[0-9]+.*'fxctl stop lab30' first" \
	fxctl rename lab30 lab30r
stop lab30
fx_run fxctl rename lab30 lab30r
for m in "${M[@]}"; do
	fx_run fxctl examine --export "$m"
	expect_match "$FX_OUT" '^FXBLK_NAME=lab30r$' "$m: rename wrote the new name"
	expect_match "$FX_OUT" '^FXBLK_GENERATION=2$' "$m: rename bumped the generation"
done
fx_expect_fail --rc 3 --msg 'no member of a volume named "lab30" found' fxctl assemble lab30
fx_run fxctl rename lab30r lab30
fx_run fxctl assemble lab30
expect_match "$FX_OUT" "^assembled \"lab30\" \([0-9a-f-]{36}\) as /dev/fx[0-9]+ from " "assemble after rename"
[ "$BREAK" = remove ] && stop lab30 || fx_run fxctl -v remove lab30
for m in "${M[@]}"; do
	fx_expect_fail --rc 3 --msg 'not an fxblk member' fxctl examine "$m"
done
fx_run fxctl create lab30 "${M[@]}"
fx_run fxctl remove lab30
pass "labels written on every member, refusals name xfs/fxblk labels, backup serves, both lost = not a member"
