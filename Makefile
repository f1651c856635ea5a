# fxblk top-level build. Targets: all (module + fxctl), deps, check, demo, bench,
# kernel-debug, check-debug.
# Kernel versions come from the file `make deps` generates; override with
# KVER=<release> or KDIR=<headers dir>.
FXBLK_CACHE ?= /var/cache/fxblk
export FXBLK_CACHE
-include $(FXBLK_CACHE)/kernels.env

BUILD   ?= $(CURDIR)/build
KVER    ?= $(FXBLK_KVER_6_1)
JOBS    ?= $(shell nproc)
PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all module modules fxctl fxctl-arm64 check-arm64 install uninstall packages deps check check-full demo bench clean help kernel-debug check-debug

all: module fxctl

module:
	@test -n "$(KVER)" || { echo "no lab kernel recorded: run 'make deps' first (as root)" >&2; exit 1; }
	$(MAKE) -C kmod KVER=$(KVER) $(if $(KDIR),KDIR=$(KDIR)) BUILD=$(BUILD)/kmod

# The module for every lab kernel, with -Werror (the module always builds so).
modules:
	$(MAKE) module KVER=$(FXBLK_KVER_5_10)
	$(MAKE) module KVER=$(FXBLK_KVER_6_1)
	$(MAKE) module KVER=$(FXBLK_KVER_6_12)
	$(if $(FXBLK_KVER_7_3),$(MAKE) module KVER=$(FXBLK_KVER_7_3),@echo "SKIP: 7.3 not prepared (make deps)")
	$(if $(FXBLK_KVER_7_2),$(MAKE) module KVER=$(FXBLK_KVER_7_2),@echo "SKIP: 7.2 not prepared (make deps)")

fxctl:
	cmake -S . -B $(BUILD)/ctl -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD)/ctl -j$(JOBS)

# fxctl and the lab tools for arm64, cross-built against the arm64 Debian tree
# that make deps keeps (scripts/fetch-arm64-lab.sh); no unit tests, no bash
# completion (fxctl cannot run here). Output: build/arm64/ctl/fxctl.
fxctl-arm64:
	cmake -S . -B $(BUILD)/arm64/ctl -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFXBLK_TESTS=OFF \
		-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake >/dev/null
	cmake --build $(BUILD)/arm64/ctl -j$(JOBS)

# fxctl, man page, completion, udev rules, systemd units under PREFIX (GNUInstallDirs);
# module sources for DKMS in DESTDIR/usr/src/fxblk-VERSION.
install: fxctl
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" BUILD="$(BUILD)" bash scripts/install.sh install

uninstall:
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" BUILD="$(BUILD)" bash scripts/install.sh uninstall

# .deb (fxblk-dkms, fxctl) and .rpm packages, built and checked in build/pkg
packages:
	bash tests/packages.sh

deps:
	bash scripts/deps.sh

check:
	bash tests/check.sh

# arm64: fxctl and fxblk.ko cross-built, lab smoke (01) and stripe verify (10)
# booted under qemu-system-aarch64 (not part of make check: ~10 min)
check-arm64:
	bash tests/check-arm64.sh

# Every lab test on every kernel its header names (longer than make check).
check-full:
	FXBLK_CHECK_FULL=1 bash tests/check.sh

# The lab's debug kernel (KASAN, lockdep, kmemleak, fail_make_request, P2PDMA):
# ~30 min the first time, seconds when cached. Not part of deps or check.
kernel-debug:
	JOBS=$(JOBS) bash scripts/build-kernel.sh

# The lab suite (the 6.12 entries of tests/lab/tests) plus tests/lab/debug on
# the debug kernel; same output as make check ("N passed, N failed").
# Two debug VMs at a time by default (KASAN and lockdep make each 2-4x
# slower than the stock kernel; the fault tests' waits must still hold).
check-debug: kernel-debug
	FXBLK_LAB_JOBS=$(or $(FXBLK_LAB_JOBS),2) \
	FXBLK_LAB_KERNELS=debug FXBLK_LAB_EXTRA_DIR=tests/lab/debug \
		FXBLK_CHECK_FILTER='$(or $(FXBLK_CHECK_FILTER),^lab)' bash tests/check.sh

demo: all
	bash tests/lab/run --kernel 6.12 --members 4 --size-mb 512 --udev --hostfs \
		--file build/ctl/fxio-cp:/lab/bin/fxio-cp -- tests/demo.sh

bench: all
	bash tests/bench/run.sh

clean:
	rm -rf $(BUILD)

help:
	@echo "make deps   install build/test dependencies and fetch lab kernels (root)"
	@echo "make        build fxblk.ko (KVER=$(KVER)) and fxctl"
	@echo "make check  unit tests, module builds, lab tests; ends 'N passed, N failed'"
	@echo "make check-full  the same with every lab test on every kernel it names"
	@echo "make fxctl-arm64  cross-build fxctl for arm64 (build/arm64/ctl)"
	@echo "make check-arm64  arm64 cross builds + lab 01 and 10 under qemu-system-aarch64"
	@echo "make kernel-debug  build the lab's debug kernel (6.12, KASAN/lockdep/kmemleak; ~30 min once)"
	@echo "make check-debug   lab suite + fault injection + kmemleak on the debug kernel"
	@echo "make install [DESTDIR=..] [PREFIX=/usr/local]  fxctl, man page, completion, udev, systemd, DKMS sources"
	@echo "make uninstall  remove what make install wrote"
	@echo "make packages  build and check the .debs and the .rpm (build/pkg)"
	@echo "make demo   a volume over NVMe-oF/RoCE namespaces in the lab VM"
	@echo "make bench  fio: fxblk vs dm-stripe vs md raid0 vs JBOD -> build/bench/"
