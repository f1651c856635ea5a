#!/bin/bash
# lab: kernels=7.3 members=2 size-mb=256 machine=q35 nvme-pci=3 cmb-mb=64 timeout=900
# PCI P2PDMA memory registered with /dev/fxblk-peer (driver tests/peer/
# peer-test.c, p2pmem): the host provider pins with FOLL_PCI_P2PDMA where the
# kernel has it (6.2+, compile probe), so such memory is registered as host
# memory with struct pages and DIRECT, and FXBLK_PEER_IOC_RW moves it. Needs
# CONFIG_PCI_P2PDMA: Debian's 7.3 has it (6.1/6.12 do not; the debug kernel
# does). Setup as tests/lab/debug/30-p2pdma-direct.sh: q35, three emulated
# NVMe PCIe devices behind one switch, the first with a 64 MiB CMB published
# as p2pmem (the stand-in for VRAM exposed as P2PDMA pages).
#  1. fxN over the namespaces of devices 2 and 3 (64 KiB chunks): REGISTER of
#     1 MiB of p2pmem (AUTO) -> host, struct page, direct; RW write from it
#     and RW read into it across chunks and members, verified through host
#     memory and O_DIRECT;
#  2. fxN over an nvme-rdma member: RW from/to that memory -> EREMOTEIO
#     (refused before any member), both ways; pinned bytes back to 0.
. /lab/lib.sh
read -r -a PCI <<<"${FX_NVME_PCI:-}"
read -r -a BDF <<<"${FX_NVME_PCI_BDF:-}"
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#PCI[@]}" = 3 ] || fail "needs 3 NVMe PCIe devices in FX_NVME_PCI (got '${FX_NVME_PCI:-}')"
[ "${#M[@]}" -ge 1 ] || fail "needs an NVMe-oF member in FX_MEMBERS"
PT=/lab/modules/peer-test
[ -x $PT ] || fail "$PT missing (tests/lab/modules/build.sh builds it)"
P2P=/sys/bus/pci/devices/${BDF[0]}/p2pmem
[ -d "$P2P" ] || fail "$P2P missing: the CMB of ${BDF[0]} was not registered as p2pmem (CONFIG_PCI_P2PDMA?)"
expect_eq "$(cat $P2P/published)" 1 "p2pmem of ${BDF[0]} published"
trap 'fxctl remove t46 >/dev/null 2>&1; fxctl remove t46rdma >/dev/null 2>&1' EXIT
fx_load
fx_mark p2p
CH=65536
fx_run fxblk-nltest --cmd create --name t46 --chunk $((CH / 512)) --member "${PCI[1]}" \
	--member "${PCI[2]}" --keep --expect 0
DEV=$(fxdev t46) || fail "no /dev/fxN named t46"
expect_eq "$(cat "/sys/block/${DEV#/dev/}/fxblk/pci_p2pdma")" 1 "$DEV takes P2PDMA pages"
fx_run fxblk-nltest --cmd create --name t46rdma --chunk $((CH / 512)) --member "${PCI[0]}" \
	--member "${M[0]}" --keep --expect 0
RDEV=$(fxdev t46rdma) || fail "no /dev/fxN named t46rdma"
expect_eq "$(cat "/sys/block/${RDEV#/dev/}/fxblk/pci_p2pdma")" 0 "$RDEV (nvme-rdma member) does not"
fx_run $PT p2pmem "$P2P/allocate" "$DEV" "$RDEV"
fx_run fxctl remove t46
fx_run fxctl remove t46rdma
trap - EXIT
fx_unload
fx_dmesg_clean_since p2p
pass "P2PDMA memory registered as host memory, RW direct both ways, EREMOTEIO over nvme-rdma"
