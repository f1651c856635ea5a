#!/bin/bash
# lab: kernels=debug members=2 size-mb=256 machine=q35 nvme-pci=3 cmb-mb=64 timeout=1800
# The direct path with real PCI P2PDMA pages (issue 8); debug kernel only: it
# has CONFIG_PCI_P2PDMA + ZONE_DEVICE, Debian's kernels do not.
#
# QEMU q35 with three emulated NVMe PCIe devices behind one PCIe switch; the
# first has a 64 MiB controller memory buffer, which the nvme driver
# publishes as p2pmem. Its mmap'ed p2pmem/allocate gives user space P2PDMA
# pages: the stand-in for GPU VRAM exposed as P2PDMA pages (AMD kfd_ais).
#
#  1. control: fxblk-p2p-dio between that memory and the raw namespace of the
#     second device: O_DIRECT write and read, content verified (the kernel's
#     own P2PDMA path, no fxblk).
#  2. fxN striped over the namespaces of devices 2 and 3 (64 KiB chunks):
#     fxblk/pci_p2pdma is 1, fxctl says P2PDMA-capable; O_DIRECT of 1.125
#     MiB at an offset crossing chunks and members, both ways, verified
#     against host-memory copies; fxctl stats' direct counters equal the
#     bytes moved from and to P2PDMA memory; no refusals, no member errors.
#  3. fallback: fxN over device 3 and an NVMe-oF member (nvme-rdma, which
#     does not take P2PDMA pages): fxblk/pci_p2pdma is 0, fxctl names the
#     nvme-rdma member as the reason, and O_DIRECT from/to P2PDMA memory
#     fails with EREMOTEIO both ways (refused before any member).
. /lab/lib.sh
read -r -a PCI <<<"${FX_NVME_PCI:-}"
read -r -a BDF <<<"${FX_NVME_PCI_BDF:-}"
[ "${#PCI[@]}" = 3 ] || fail "needs 3 NVMe PCIe devices in FX_NVME_PCI (got '${FX_NVME_PCI:-}')"
[ "${#FX_MEMBER_LIST[@]}" -ge 1 ] || fail "needs an NVMe-oF member in FX_MEMBERS"
P2P=/sys/bus/pci/devices/${BDF[0]}/p2pmem
[ -d "$P2P" ] || fail "$P2P missing: the CMB of ${BDF[0]} was not registered as p2pmem (CONFIG_PCI_P2PDMA?)"
expect_eq "$(cat $P2P/published)" 1 "p2pmem of ${BDF[0]} published"
log "p2pmem of ${BDF[0]} (${PCI[0]}): size $(cat $P2P/size), available $(cat $P2P/available)"
ALLOC=$P2P/allocate
trap 'fxctl remove t30 >/dev/null 2>&1; fxctl remove t30rdma >/dev/null 2>&1' EXIT

# 1. control: the raw namespace of device 2
fx_run fxblk-p2p-dio "$ALLOC" "${PCI[1]}" 0 1048576
expect_match "$FX_OUT" '^RESULT p2p-dio .*verified=1' "raw namespace ${PCI[1]}"

fx_load
# 2. fxN over devices 2 and 3 (raw CREATE: these are not NVMe-oF members)
CH=65536
fx_run fxblk-nltest --cmd create --name t30 --chunk $((CH / 512)) --member "${PCI[1]}" \
	--member "${PCI[2]}" --keep --expect 0
DEV=$(fxdev t30) || fail "no /dev/fxN named t30"
DISK=${DEV#/dev/}
expect_eq "$(cat /sys/block/$DISK/fxblk/pci_p2pdma)" 1 "$DEV fxblk/pci_p2pdma over two nvme-pci members"
fx_json fxctl -o json show t30
expect_eq "$(jqr .volume.p2pdma.capable)" true "fxctl show: P2PDMA-capable"
expect_eq "$(jqr .volume.p2pdma.reason)" null "fxctl show: no reason when capable"
expect_match "$(jqr '.volume.flags | join(",")')" 'pci-p2pdma' "fxctl show: flags"
fx_run fxctl show t30
expect_match "$FX_OUT" 'PCI P2PDMA: yes' "fxctl show text"
fx_json fxctl -o json peer status
expect_eq "$(jqr '.volumes[] | select(.name == "t30") | .p2pdma')" true "fxctl peer status: t30 PCI P2PDMA"

# 3 chunks + 8 KiB in, 1.125 MiB: 19 chunk pieces over both members
OFF=$((3 * CH + 8192)) LEN=$((1024 * 1024 + 128 * 1024))
fx_run fxblk-p2p-dio "$ALLOC" "$DEV" $OFF $LEN
expect_match "$FX_OUT" '^RESULT p2p-dio .*verified=1' "O_DIRECT between P2PDMA memory and $DEV"
fx_json fxctl -o json stats t30
log "direct counters: $(printf "%s" "$FX_JSON" | jq -c .volume.direct)"
expect_eq "$(jqr .volume.direct.write.bytes)" $LEN "direct write bytes (from P2PDMA memory)"
expect_eq "$(jqr .volume.direct.read.bytes)" $((2 * LEN)) "direct read bytes (into P2PDMA memory)"
# every direct bio is one chunk piece at most
[ "$(jqr .volume.direct.write.ios)" -ge $((LEN / CH)) ] ||
	fail "direct write I/Os $(jqr .volume.direct.write.ios): fewer than the $((LEN / CH)) chunks written"
expect_eq "$(jqr .volume.direct.refused)" 0 "direct refusals"
expect_eq "$(jqr '[.volume.members[].errors] | add')" 0 "member errors"
# both members took direct I/O: the range crosses members
for i in 0 1; do
	[ "$(jqr ".volume.members[$i].write.bytes")" -gt 0 ] || fail "member $i got no writes"
done
fx_run fxctl stats t30
expect_match "$FX_OUT" "direct \\(PCI P2PDMA\\): read [0-9]+ I/Os, $((2 * LEN)) B" "fxctl stats text: direct read"
fx_run fxctl remove t30

# 3. fallback: one member is NVMe-oF (nvme-rdma)
R=${FX_MEMBER_LIST[0]}
fx_run fxblk-nltest --cmd create --name t30rdma --chunk $((CH / 512)) --member "${PCI[2]}" \
	--member "$R" --keep --expect 0
DEV=$(fxdev t30rdma) || fail "no /dev/fxN named t30rdma"
DISK=${DEV#/dev/}
expect_eq "$(cat /sys/block/$DISK/fxblk/pci_p2pdma)" 0 "$DEV fxblk/pci_p2pdma with an nvme-rdma member"
fx_json fxctl -o json show t30rdma
expect_eq "$(jqr .volume.p2pdma.capable)" false "fxctl show: not P2PDMA-capable"
expect_match "$(jqr .volume.p2pdma.reason)" "member ${R#/dev/} \\(nvme-rdma\\) does not support PCI P2PDMA" \
	"fxctl show: reason"
expect_eq "$(jqr '.volume.members[0].pci_p2pdma')" true "fxctl show: nvme-pci member takes P2PDMA"
expect_eq "$(jqr '.volume.members[1].pci_p2pdma')" false "fxctl show: nvme-rdma member does not"
fx_run fxctl show t30rdma
expect_match "$FX_OUT" "PCI P2PDMA: no, member ${R#/dev/} \\(nvme-rdma\\)" "fxctl show text: reason"
fx_json fxctl -o json peer status
expect_eq "$(jqr '.volumes[] | select(.name == "t30rdma") | .p2pdma')" false "fxctl peer status: t30rdma PCI P2PDMA"
expect_match "$(jqr '.volumes[] | select(.name == "t30rdma") | .p2pdma_reason')" \
	"member ${R#/dev/}.* does not support PCI P2PDMA" "fxctl peer status: t30rdma why not"
fx_run fxblk-p2p-dio "$ALLOC" "$DEV" $OFF $LEN expect=EREMOTEIO
fx_json fxctl -o json stats t30rdma
expect_eq "$(jqr '.volume.direct.read.bytes + .volume.direct.write.bytes')" 0 "no direct bytes on the fallback volume"
expect_eq "$(jqr '[.volume.members[].errors] | add')" 0 "member errors on the fallback volume"
fx_run fxctl remove t30rdma
pass "direct: $LEN B written from and $((2 * LEN)) B read into P2PDMA memory through fx over nvme-pci; refused (EREMOTEIO) over nvme-rdma"
