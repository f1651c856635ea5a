#!/bin/bash
# lab: kernels=5.10,6.12 quick=5.10 members=2 size-mb=64 timeout=300 append=slub_debug=FZPU
# CREATE fails after fxN was added, while someone holds fxN open (review
# 2026-12-02 F9).
#
# CREATE adds fxN and then links each member as its holder. When a link
# fails (bd_link_disk_holder(): no memory; 6.x also -ENODEV for a member
# that died), CREATE tears the new disk down again. udev (blkid) may have
# opened fxN in between. On 5.10, which has no ->free_disk, the volume must
# outlive that opener: the abort refuses new opens and waits for the last
# close before it frees anything. The 5.10 code before the fix destroyed
# the volume at once, and the opener's close then ran fxblk_release() on
# freed memory. On 6.x the disk's ->free_disk frees the volume at the last
# close: CREATE fails at once and the opener's I/O fails.
#
# The lab module fxlab_nolink makes bd_link_disk_holder() sleep 3 s and
# fail with ENOMEM (a kprobe that resumes in its own function, as
# bpf_override_return does). The test opens fxN during the sleep, checks
# CREATE's error and (5.10) that CREATE is still waiting while fxN is open,
# closes it, and then checks that fxN is gone and every slab cache is
# intact: the kernel boots with slub_debug=FZPU (red zones, poisoning of
# freed objects), and after the close the test asks SLUB to validate every
# cache, which reports a write to freed memory as "Poison overwritten".
# Seen failing on 5.10 with the abort path of before the fix (destroy at
# once, 2026-12-02): the close of fxN after CREATE's failure spun on the
# freed volume's open_lock (0x6b6b6b6b, SLUB's poison): "watchdog: BUG:
# soft lockup" in native_queued_spin_lock_slowpath, the run killed at its
# timeout.
. /lab/lib.sh
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 2 ] || fail "needs 2 members (got '${FX_MEMBERS:-}')"
fx_load
KO=/lab/modules/fxlab_nolink.ko
[ -f $KO ] || fail "no $KO (tests/lab/modules not built for $(uname -r)?)"
grep -q 'slub_debug=FZPU' /proc/cmdline || fail "booted without slub_debug=FZPU (the header's append=)"
cleanup() {
	exec 3<&- 2>/dev/null
	rmmod fxlab_nolink 2>/dev/null
	fxblk-nltest --cmd destroy --name t49 --force --expect 0 >/dev/null 2>&1
}
trap cleanup EXIT
majmin() { cat "/sys/block/$(basename "$1")/dev"; }
M0=$(majmin "${M[0]}")
M1=$(majmin "${M[1]}")
insmod $KO delay_ms=3000 || fail "insmod fxlab_nolink"
hits() { cat /sys/module/fxlab_nolink/parameters/hits; }

has_free_disk=0	# 5.10 lacks ->free_disk; the abort must wait for the close
case $(uname -r) in 5.10.*) ;; *) has_free_disk=1 ;; esac

fx_mark t49
fxblk-nltest --cmd create --name t49 --member "$M0" --member "$M1" \
	--expect ENOMEM --extack 'holder' > /tmp/t49.create 2>&1 &
C=$!
# fxN appears when CREATE reaches add_disk(), before the links
dev=
for _ in $(seq 60); do
	for d in /sys/block/fx*; do
		if [ -e "$d" ] && grep -qx t49 "$d/fxblk/name" 2>/dev/null; then dev=/dev/$(basename "$d"); fi
	done
	[ -n "$dev" ] && break
	sleep 0.05
done
[ -n "$dev" ] || fail "fxN of t49 never appeared while CREATE ran ($(cat /tmp/t49.create))"
exec 3< "$dev" || fail "open $dev during CREATE"
log "opened $dev while CREATE links its members"
# CREATE's link sleeps 3 s, then fails; give it 2 s more
sleep 5
[ "$(hits)" -ge 1 ] || fail "bd_link_disk_holder() was never called (fxlab_nolink hits 0)"
if [ $has_free_disk = 0 ]; then
	kill -0 $C 2>/dev/null ||
		fail "CREATE returned while $dev was still open (5.10: the abort must wait for the last close)"
	log "5.10: CREATE waits for $dev's last close before it frees the volume"
else
	for _ in $(seq 50); do kill -0 $C 2>/dev/null || break; sleep 0.1; done
	kill -0 $C 2>/dev/null && fail "CREATE still waiting with $dev open (->free_disk frees at the last close)"
	log "CREATE failed at once; the open $dev keeps the disk"
	dd if=/proc/self/fd/3 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null &&
		fail "read through the open $dev succeeded after CREATE failed"
	log "I/O through the open $dev fails"
fi
exec 3<&-
wait $C
rc=$?
cat /tmp/t49.create
[ $rc = 0 ] || fail "CREATE's answer: expected ENOMEM naming the holder link (rc $rc)"
log "CREATE refused with ENOMEM and a message naming the holder link"
for _ in $(seq 50); do [ -e "/sys/block/${dev#/dev/}" ] || break; sleep 0.1; done
[ -e "/sys/block/${dev#/dev/}" ] && fail "$dev still exists after its last close"
log "$dev is gone after its last close"
# every slab cache checked for writes to freed objects (slub_debug=P)
for v in /sys/kernel/slab/*/validate; do echo 1 > "$v" 2>/dev/null; done
log "SLUB validated every cache (a write to the freed volume is reported as Poison overwritten)"
rmmod fxlab_nolink || fail "rmmod fxlab_nolink"
# the members are free again: a volume over them works
# (fxblk-nltest destroys a volume its CREATE made unless --keep)
fxblk-nltest --cmd create --name t49 --member "$M0" --member "$M1" --expect 0 >/dev/null ||
	fail "CREATE and DESTROY over the same members after the abort"
log "the members are reusable after the aborted CREATE"
pass
