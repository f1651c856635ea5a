#!/bin/bash
# Runs in the lab VM (--udev --members 1): lib.sh's fx_settle against a udev
# rule whose RUN+= program sleeps. A settle that fails is tried once more
# with twice the time and says so (NOTE:); an event still stuck after both
# fails the script, naming the stuck program.
. /lab/lib.sh
[ "${FX_UDEV:-0}" = 1 ] || fail "udevd is not running (tests/lab/run --udev)"
D=$(fx_member_dev 0) || fail "no member 0"
stall() {	# stall SECONDS: the next add event on member 0 runs sleep SECONDS
	echo "ACTION==\"add\", KERNEL==\"${D#/dev/}\", RUN+=\"/bin/sleep $1\"" >/etc/udev/rules.d/99-stall.rules
	udevadm control --reload || fail "udevadm control --reload"
	udevadm trigger --action=add "/sys/class/block/${D#/dev/}" || fail "udevadm trigger $D"
}
stall 30	# > 3 + 6 s of settles plus fx_udev_busy's walks of /proc (slow under TCG on a loaded host)
if (fx_settle 3) 2>/tmp/err; then
	cat /tmp/err; fail "fx_settle 3 passed with a 30 s RUN+= program queued"
fi
cat /tmp/err
grep -q "udevadm settle failed twice" /tmp/err || fail "the second failure was not reported"
grep -q "wchan=.*/bin/sleep 30" /tmp/err || fail "the stuck program (sleep 30) was not named"
udevadm settle --timeout=60 || fail "the 30 s event did not finish"
echo "settle-retry: a stuck event fails both settles and is named"
stall 6
fx_settle 4 2>/tmp/err || { cat /tmp/err; exit 1; }
cat /tmp/err
grep -q "^NOTE: .*udevadm settle --timeout=4 failed.*once more with 8 s" /tmp/err ||
	fail "fx_settle passed without saying that it settled only on the second try"
rm /etc/udev/rules.d/99-stall.rules
udevadm control --reload
pass "a slow event passes on the second settle, with a NOTE; a stuck one fails both, named"
