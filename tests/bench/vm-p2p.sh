#!/bin/bash
# In-VM half of make bench's P2PDMA row (issue 8), kind "peer-p2p" of
# tests/bench/run.sh: needs the lab's debug kernel (CONFIG_PCI_P2PDMA) and
# tests/lab/run --machine q35 --nvme-pci 3 (see tests/lab/debug/30-p2pdma-direct.sh).
#
#   vm-p2p.sh REPS TOTAL_MIB BLOCK_KIB
#
# The CMB of the first emulated NVMe device, mmap'ed from p2pmem/allocate,
# stands in for GPU VRAM exposed as P2PDMA pages. Per repeat, fxblk-p2p-dio
# reads TOTAL_MIB with O_DIRECT in BLOCK_KIB pieces into that memory and into
# host memory, the order alternating, from:
#   fx      fxN striped over the namespaces of devices 2 and 3 (512 KiB chunk)
#   single  the namespace of device 2 alone (the kernel's own P2PDMA path)
# One line per run: `BENCHP2P {json}` with "dev" added. The volume's direct
# counters must account for every byte read into P2PDMA memory (no CPU copy).
. /lab/lib.sh
REPS=${1:-3}; TOTAL=${2:-32}; BLOCK=${3:-1024}
read -r -a PCI <<<"${FX_NVME_PCI:-}"
read -r -a BDF <<<"${FX_NVME_PCI_BDF:-}"
[ "${#PCI[@]}" = 3 ] || fail "needs 3 NVMe PCIe devices in FX_NVME_PCI (got '${FX_NVME_PCI:-}')"
P2P=/sys/bus/pci/devices/${BDF[0]}/p2pmem
[ -d "$P2P" ] || fail "$P2P missing: no p2pmem (a kernel without CONFIG_PCI_P2PDMA?)"
ALLOC=$P2P/allocate
fx_load
fx_run fxblk-nltest --cmd create --name bp2p --chunk 1024 --member "${PCI[1]}" \
	--member "${PCI[2]}" --keep --expect 0
trap 'fxctl remove bp2p >/dev/null 2>&1' EXIT
DEV=$(fxdev bp2p) || fail "no /dev/fxN named bp2p"
expect_eq "$(cat "/sys/block/${DEV#/dev/}/fxblk/pci_p2pdma")" 1 "$DEV advertises PCI P2PDMA"
for d in "$DEV" "${PCI[1]}"; do
	dd if=/dev/urandom of="$d" bs=1M count="$TOTAL" oflag=direct status=none || fail "fill $d"
done
fx_json fxctl -o json stats bp2p
before=$(jqr .volume.direct.read.bytes)
for dev in fx single; do
	d=$DEV
	[ $dev = fx ] || d=${PCI[1]}
	fxblk-p2p-dio "$ALLOC" "$d" 0 $((BLOCK * 1024)) bench="$REPS" total=$((TOTAL << 20)) >/tmp/p2p.out ||
		fail "fxblk-p2p-dio bench on $d: $(cat /tmp/p2p.out)"
	sed -n 's/^BENCHP2P //p' /tmp/p2p.out | jq -c --arg dev $dev '. + {dev: $dev}' | sed 's/^/BENCHP2P /'
done
fx_json fxctl -o json stats bp2p
moved=$(($(jqr .volume.direct.read.bytes) - before))
expect_eq "$moved" $((REPS * TOTAL << 20)) "fxN direct read bytes = bytes read into P2PDMA memory"
echo "BENCHP2PINFO $(jq -nc --arg kver "$(uname -r)" --argjson reps "$REPS" --argjson total_mib "$TOTAL" \
	--argjson block_kib "$BLOCK" --arg members "${PCI[1]} ${PCI[2]}" --argjson direct_read_bytes "$moved" \
	'{kernel: $kver, reps: $reps, total_mib: $total_mib, block_kib: $block_kib, members: $members, chunk_kib: 512, direct_read_bytes: $direct_read_bytes}')"
pass "P2PDMA bench: $REPS repeats, fxN and a single namespace, into P2PDMA and host memory"
