#!/bin/bash
# lab: kernels=6.1,6.12,7.3 quick=6.12 members=4 timeout=600 file=build/ctl/fxio-cp:/lab/bin/fxio-cp
# Peer queues (kmod/fxblk_peerq.c, issue 20 first milestone): with
# fxblk.peer_queues=1 a synchronous FXBLK_PEER_IOC_RW of registered host
# memory on /dev/fxN over 4 NVMe-oF/RDMA members goes over fxblk's own
# association to each member's subsystem (RDMA CM, Fabrics Connect,
# CC.EN/CSTS.RDY, Identify, one I/O queue, Keep Alive), as NVMe Read/Write
# with an FRWR-registered keyed SGL, not through nvme-rdma's block queue:
# - before the first peer RW no association exists (opened lazily);
# - fxctl peer status (netlink) shows each member's peer queues: none
#   before, live on rxe0 after; its topology says rxe0 is a software
#   device and finds no accelerator in the VM;
# - the association matches the target: the subsystem NQN and address of
#   the member's kernel controller, keyed SGL support, MDTS and SGLS equal
#   to what nvme id-ctrl reads from the kernel's controller of the same
#   subsystem, a cntlid of its own (not the kernel controller's) in the
#   subsystem's configfs cntlid range;
# - a read (buffer offset 3.5 KiB, 195072 bytes into the volume, 331264
#   bytes: not chunk-aligned at either end, 64 KiB chunks over all 4
#   members) and a write (1 MiB + 4608 bytes at 1050112, buffer offset 512)
#   give the same bytes as the block path (O_DIRECT dd), byte for byte; the
#   bytes around the write's range and around the buffer range unchanged;
# - during each, the peer-queue byte counters of the members grow by
#   exactly the length, every member's for the read, and the I/O counters
#   of every nvme block device (heads and paths: /sys/block/nvme*/stat) do
#   not move: the data did not go through the kernel's nvme-rdma queues;
# - after 8 s idle, every association sent Keep Alives and is still live
#   (a read again matches);
# - ROCm memory (tests/peer/fake_amdkfd.c api=2, amd_rdma v2, through the
#   glue fxblk_rocm.ko built against it): DMA addresses only, so the block
#   path refuses it; over the peer queues the NIC moves it. Soft-RoCE is a
#   software device: without fxblk.peer_virt_dma=1 the RW is refused
#   (EREMOTEIO, staged by libfxio) and says why, moving nothing; with it
#   (the lab's one concession: the fake hands rxe kernel virtual addresses)
#   a read and a write of the fake VRAM, not chunk-aligned, across every
#   member, equal the block path byte for byte, the peer queues' DMA-only
#   byte counters grow by exactly the length, the nvme block devices do no
#   I/O, kfd was asked for one mapping for the NIC per registration, and
#   every pin is given back when the handle goes; an async RW is refused;
#   through libfxio (fxio-cp, HIP memory, no HIP runtime in the VM) a read
#   and a write take the direct path (fxio_last_path) and match;
# - Ascend memory (tests/peer/fake_ascend.c through fxblk_ascend.ko):
#   physical addresses, mapped for the NIC (dma_map_resource(), or for
#   rxe the linear-map address), with 4 KiB and with 2 MiB device pages: a
#   read and a write across every member equal the block path, DMA-only
#   byte counters +len, no nvme block I/O, no pin left; through libfxio
#   (fxio-cp ascend, ACL memory, no AscendCL runtime) a read and a write
#   take the direct path with the staged pipeline unused; the driver's free
#   callback while 4 threads' peer RWs of its memory are in flight: those
#   finish or fail ENXIO (the callback fences their commands, 65 shows
#   it), later ones fail ENXIO, then the NIC mappings and the table go
#   (peer-test revoke-peerq, retried until an RW was in flight);
# - a dma-buf (udmabuf; 6.12 and 7.3, Debian's 6.1 has none): attached,
#   pinned and mapped for the NIC (for rxe through the control node's
#   device), a read and a write across every member equal the block path,
#   DMA-only byte counters +len, no nvme block I/O; through libfxio
#   (fxio_buf_register_dmabuf, fxio-cp dmabuf) a read and a write take the
#   direct path and match; no attachment left;
# - fxblk unloads with the volume and its peer queues open, the kernel's
#   controllers still read, and the kernel log stays clean.
# --break off: fxblk loaded without peer_queues=1: the RW takes the block
# path, the peer-queue counters do not move and the nvme devices' do.
# --break novirt: peer_virt_dma left off: the ROCm RWs are refused.
# lab-break: --break off ~ the peer queue counters did not move.*the I/Os completed by the nvme block devices moved
# lab-break: --break novirt ~ RW read of 331264 bytes at 195072 \(buffer \+3584\): Remote I/O error
. /lab/lib.sh
BREAK=
[ "${1:-}" = --break ] && BREAK=$2
read -r -a M <<<"${FX_MEMBERS:-}"
[ "${#M[@]}" -ge 4 ] || fail "needs 4 members in FX_MEMBERS (got '${FX_MEMBERS:-}')"
LM=/lab/modules
PT=$LM/peer-test
for f in $PT $LM/fake_amdkfd.ko $LM/amd-v2/fxblk_rocm.ko $LM/fake_ascend.ko $LM/fxblk_ascend.ko; do
	[ -e "$f" ] || fail "$f missing (tests/lab/modules/build.sh builds it)"
done
DBG=/sys/kernel/debug/fxblk/peerq
cleanup() {
	fxctl remove t44 >/dev/null 2>&1
	rmmod fxblk_rocm fxblk_ascend 2>/dev/null
	rmmod fake_amdkfd fake_ascend 2>/dev/null
}
trap cleanup EXIT

fx_mark start
fx_peerq_load "$BREAK"
[ -r $DBG ] || fail "no $DBG"
fx_run fxctl create t44 --chunk 64K "${M[0]}" "${M[1]}" "${M[2]}" "${M[3]}"
DEV=$(fxdev t44) || fail "no /dev/fxN with sysfs name t44"
NAME=${DEV#/dev/}
expect_eq "$(grep -c "^$NAME member=[0-3] .* state=none$" $DBG)" 4 \
	"no association before the first peer RW"
# peerq_count STATE NIC: members of t44 in that state on that NIC, as
# fxctl peer status reported them (netlink; fx_json it first)
peerq_count() {
	jqr "[.volumes[] | select(.name == \"t44\") | .peer_queues[] |
		select(.state == \"$1\" and .nic == \"$2\")] | length"
}
fx_json fxctl -o json peer status
expect_eq "$(peerq_count none "")" 4 "fxctl peer status: no peer queues before the first peer RW"

# sum of FIELD=N over the volume's members (or member $2 only)
peer_sum() { fx_peerq_sum "$NAME" "$@"; }
# reads and writes completed by every nvme block device, heads and paths
block_ios() {
	cat /sys/block/nvme*/stat | awk '{ s += $1 + $5 } END { print s + 0 }'
}
# one member's FIELD
peer_field() { fx_peerq_field "$NAME" "$@"; }

# Reference data through the block path.
head -c $((4 << 20)) /dev/urandom > /tmp/ref
dd if=/tmp/ref of="$DEV" bs=1M oflag=direct status=none || fail "dd the reference"
# dd_range OFF LEN FILE: LEN bytes at OFF of the volume, O_DIRECT
dd_range() {
	dd if="$DEV" of="$3" bs=512 skip=$(($1 / 512)) count=$(($2 / 512)) \
		iflag=direct status=none || fail "dd read of $2 bytes at $1"
}
ref_range() {
	dd if=/tmp/ref of="$3" bs=512 skip=$(($1 / 512)) count=$(($2 / 512)) status=none
}

# rw_peer OP BUF_OFF DEV_OFF LEN FILE [MEM]: the RW, with the counters
# checked (MEM rocm: the DMA-only byte counters too)
rw_peer() {
	local op=$1 len=$4 mem=${6:-host} field b0 b1 p0 p1 d0 d1
	field=$([ "$op" = read ] && echo read_bytes || echo write_bytes)
	b0=$(block_ios)
	p0=$(peer_sum $field)
	d0=$(peer_sum dma_bytes)
	fx_run $PT rwfile "$op" "$DEV" "$2" "$3" "$len" "$5" "$mem"
	p1=$(peer_sum $field)
	d1=$(peer_sum dma_bytes)
	b1=$(block_ios)
	# both checks, so that the control run shows each one failing
	local bad=
	[ $((p1 - p0)) -eq "$len" ] ||
		bad="the peer queue counters did not move as expected ($field $p0 -> $p1)"
	[ "$b1" = "$b0" ] ||
		bad="${bad:+$bad; }the I/Os completed by the nvme block devices moved ($b0 -> $b1)"
	[ $((d1 - d0)) -eq "$([ "$mem" = host ] && echo 0 || echo "$len")" ] ||
		bad="${bad:+$bad; }DMA-only bytes of the peer queues $d0 -> $d1 for $mem memory"
	[ -z "$bad" ] || fail "peer $op of $len bytes of $mem memory: $bad"
	log "ok: peer $op of $mem memory: $field of the peer queues +$len, no I/O on the nvme block devices"
}

# 1. read, not chunk-aligned, crossing chunks and all members
R_OFF=195072 R_LEN=331264
declare -a before
for i in 0 1 2 3; do before[i]=$(peer_field $i reads); done
rw_peer read 3584 $R_OFF $R_LEN /tmp/r1
for i in 0 1 2 3; do
	[ "$(peer_field $i state)" = live ] || fail "member $i: association not live: $(grep "member=$i " $DBG)"
	[ "$(peer_field $i reads)" -gt "${before[i]:-0}" ] ||
		fail "member $i: no peer-queue read (the range crosses every member)"
done
log "ok: every member's association is live and read a piece"
ref_range $R_OFF $R_LEN /tmp/r1.ref
dd_range $R_OFF $R_LEN /tmp/r1.blk
cmp /tmp/r1 /tmp/r1.ref || fail "peer read differs from the reference data"
cmp /tmp/r1 /tmp/r1.blk || fail "peer read differs from the block path's read"
log "ok: peer read = block path read = reference ($R_LEN bytes)"

# 2. the association, against the target
for i in 0 1 2 3; do
	line=$(grep "^$NAME member=$i " $DBG)
	kctrl=$(peer_field $i kctrl)
	[ -d "/sys/class/nvme/$kctrl" ] || fail "member $i: kernel controller '$kctrl' unknown: $line"
	nqn=$(cat "/sys/class/nvme/$kctrl/subsysnqn")
	expect_eq "$(peer_field $i subsysnqn)" "$nqn" "member $i: subsystem NQN"
	expect_match "$(cat "/sys/class/nvme/$kctrl/address")" \
		"traddr=$(peer_field $i traddr),trsvcid=$(peer_field $i trsvcid)" "member $i: address"
	expect_eq "$(peer_field $i keyed_sgl)" 1 "member $i: keyed SGL"
	expect_eq "$(peer_field $i nic)" rxe0 "member $i: the RDMA device of its queues"
	fx_json nvme id-ctrl "/dev/$kctrl" -o json
	expect_eq "$(peer_field $i mdts)" "$(jqr .mdts)" "member $i: MDTS as nvme id-ctrl reads it"
	expect_eq "$(($(peer_field $i sgls)))" "$(jqr .sgls)" "member $i: SGLS as nvme id-ctrl reads it"
	cid=$(peer_field $i cntlid)
	kcid=$(cat "/sys/class/nvme/$kctrl/cntlid")
	[ "$cid" != "$kcid" ] || fail "member $i: cntlid $cid is the kernel controller's"
	cfs=/sys/kernel/config/nvmet/subsystems/$nqn
	[ "$cid" -ge "$(cat $cfs/attr_cntlid_min)" ] && [ "$cid" -le "$(cat $cfs/attr_cntlid_max)" ] ||
		fail "member $i: cntlid $cid outside the target's range"
	log "ok: member $i: $kctrl's subsystem, cntlid $cid (kernel's $kcid), mdts $(peer_field $i mdts)"
done
fx_json fxctl -o json peer status
expect_eq "$(peerq_count live rxe0)" 4 "fxctl peer status: every member's peer queues live on rxe0"
fx_run fxctl peer status
expect_match "$FX_OUT" "peer queues: nvme0n1 live on rxe0, nvme1n1 live on rxe0" "fxctl peer status, text"
# its topology check: the lab's only RDMA device is software, the VM has no
# accelerator (the verdicts themselves: unit test peer, over a fake /sys)
expect_match "$FX_OUT" "RDMA rxe0: software device \(no PCI function\): cannot reach device memory" \
	"fxctl peer status, topology text"
expect_match "$FX_OUT" "no AMD or Huawei accelerator on the PCI bus" "fxctl peer status, topology text"
fx_json fxctl -o json peer status
expect_eq "$(jqr '[.topology.nics[] | select(.name == "rxe0" and .pci == null)] | length')" 1 \
	"fxctl peer status: rxe0 a software RDMA device in topology.nics"
expect_eq "$(jqr '.topology.accelerators | length')" 0 "fxctl peer status: accelerators in the lab VM"

# 3. write, not chunk-aligned, crossing chunks and members
W_OFF=1050112 W_LEN=1053184
head -c $W_LEN /dev/urandom > /tmp/w2
rw_peer write 512 $W_OFF $W_LEN /tmp/w2
dd_range $W_OFF $W_LEN /tmp/w2.blk
cmp /tmp/w2 /tmp/w2.blk || fail "block path read after the peer write differs from the data written"
dd_range $((W_OFF - 512)) 512 /tmp/w2.pre
ref_range $((W_OFF - 512)) 512 /tmp/w2.pre.ref
dd_range $((W_OFF + W_LEN)) 512 /tmp/w2.post
ref_range $((W_OFF + W_LEN)) 512 /tmp/w2.post.ref
cmp /tmp/w2.pre /tmp/w2.pre.ref && cmp /tmp/w2.post /tmp/w2.post.ref ||
	fail "the peer write changed a sector next to its range"
log "ok: peer write read back through the block path ($W_LEN bytes), neighbours intact"

# 4. Keep Alive, idle
sleep 8
for i in 0 1 2 3; do
	[ "$(peer_field $i state)" = live ] || fail "member $i: association down after 8 s idle: $(grep "member=$i " $DBG)"
	[ "$(peer_field $i keep_alives)" -ge 2 ] || fail "member $i: $(peer_field $i keep_alives) keep alives in 8 s"
done
log "ok: associations live after 8 s idle, keep alives sent"
rw_peer read 0 $W_OFF $W_LEN /tmp/r3
cmp /tmp/r3 /tmp/w2 || fail "peer read after idle differs from the data written"
expect_eq "$(peer_sum errors)" 0 "peer queue errors"
grep "^$NAME " $DBG

# 5. ROCm memory: the NIC reads and writes the (fake) VRAM itself
KFD=/sys/module/fake_amdkfd/parameters
insmod $LM/fake_amdkfd.ko api=2 || fail "insmod fake_amdkfd api=2"
insmod $LM/amd-v2/fxblk_rocm.ko || fail "insmod fxblk_rocm (amd_rdma v2)"
expect_eq "$(cat /sys/module/fxblk/parameters/peer_virt_dma)" N "peer_virt_dma off by default"
b0=$(block_ios)
fx_run $PT rwfile read "$DEV" 3584 $R_OFF $R_LEN /tmp/g0 rocm-refused
expect_eq "$(block_ios)" "$b0" "I/Os of the nvme block devices for a refused RW"
expect_match "$(fx_dmesg_since start)" "member 0: rxe[^ ]* is a software RDMA device: it cannot move rocm memory \(staged\)" \
	"the kernel says why a software RDMA device is refused"
expect_eq "$(cat $KFD/virt_maps)" 0 "kfd mappings for a virtual-DMA device without peer_virt_dma"
[ "$BREAK" = novirt ] || echo 1 > /sys/module/fxblk/parameters/peer_virt_dma
rw_peer read 3584 $R_OFF $R_LEN /tmp/g1 rocm
cmp /tmp/g1 /tmp/r1.blk || fail "peer read into ROCm memory differs from the block path's read"
log "ok: peer read into ROCm memory = block path read ($R_LEN bytes)"
expect_eq "$(cat $KFD/virt_maps)" 1 "kfd mappings for the NIC (one registration, one rxe device)"
expect_eq "$(cat $KFD/pins)" 0 "kfd pins after the handle went (the pin and the NIC's mapping)"
# write_dev BUF_OFF OFF LEN MEM WHAT: a peer write of fresh random data
# from MEM memory, read back through the block path; the sector before the
# range (reference data) intact
write_dev() {
	head -c "$3" /dev/urandom > /tmp/wd
	rw_peer write "$1" "$2" "$3" /tmp/wd "$4"
	dd_range "$2" "$3" /tmp/wd.blk
	cmp /tmp/wd /tmp/wd.blk || fail "block path read after the peer write from $5 differs"
	dd_range $(($2 - 512)) 512 /tmp/wd.pre
	ref_range $(($2 - 512)) 512 /tmp/wd.pre.ref
	cmp /tmp/wd.pre /tmp/wd.pre.ref || fail "the peer write from $5 changed the sector before its range"
}
G_OFF=2107392 G_LEN=790016
write_dev 1536 $G_OFF $G_LEN rocm "ROCm memory"
log "ok: peer write from ROCm memory read back through the block path ($G_LEN bytes)"
# libfxio_both_ways MODE WHAT OFF LEN: through libfxio (fxio-cp MODE), a read
# of [R_OFF, +R_LEN) equal to the block path's, and a write of LEN fresh
# bytes at OFF that the block path reads back, both on the direct path with
# the staged pipeline unused; the peer queues' DMA-only bytes grow by both
command -v fxio-cp >/dev/null || fail "fxio-cp not in the VM (build/ctl/fxio-cp)"
libfxio_both_ways() {
	local d0
	d0=$(peer_sum dma_bytes)
	fx_run fxio-cp read "$1" "$DEV" $R_OFF $R_LEN /tmp/lf.r 3584
	expect_match "$FX_OUT" '^path=direct reason="" overlapped=0 chunks=0$' "libfxio's path for a read into $2"
	cmp /tmp/lf.r /tmp/r1.blk || fail "libfxio read into $2 differs from the block path's read"
	head -c "$4" /dev/urandom > /tmp/lf.w
	fx_run fxio-cp write "$1" "$DEV" "$3" "$4" /tmp/lf.w 512
	expect_match "$FX_OUT" '^path=direct reason="" overlapped=0 chunks=0$' "libfxio's path for a write from $2"
	dd_range "$3" "$4" /tmp/lf.w.blk
	cmp /tmp/lf.w /tmp/lf.w.blk || fail "block path read after libfxio's write from $2 differs"
	expect_eq "$(($(peer_sum dma_bytes) - d0))" "$((R_LEN + $4))" "DMA-only bytes of the peer queues for libfxio's I/O of $2"
}
# HIP memory with no HIP runtime, registered because the kernel moves it
F_OFF=3145728 F_LEN=266240
libfxio_both_ways rocm "ROCm memory" $F_OFF $F_LEN
log "ok: libfxio moved ROCm memory direct both ways, with no HIP runtime"
expect_eq "$(cat $KFD/pins)" 0 "kfd pins at the end"
expect_eq "$(peer_sum errors)" 0 "peer queue errors"
rmmod fxblk_rocm || fail "rmmod fxblk_rocm"
rmmod fake_amdkfd || fail "rmmod fake_amdkfd"

# 6. Ascend memory: physical addresses, 4 KiB and 2 MiB device pages
A_OFF=3416064 A_LEN=528896
for ps in 4096 2097152; do
	insmod $LM/fake_ascend.ko page_size=$ps || fail "insmod fake_ascend page_size=$ps"
	insmod $LM/fxblk_ascend.ko || fail "insmod fxblk_ascend"
	rw_peer read 3584 $R_OFF $R_LEN /tmp/a1 ascend
	cmp /tmp/a1 /tmp/r1.blk || fail "peer read into Ascend memory ($ps B pages) differs from the block path's read"
	write_dev 1024 $A_OFF $A_LEN ascend "Ascend memory ($ps B pages)"
	# libfxio: ACL memory with no AscendCL runtime
	libfxio_both_ways ascend "Ascend memory ($ps B pages)" $F_OFF $F_LEN
	# the driver takes its memory back while peer RWs move it
	[ "$ps" != 4096 ] || fx_run $PT revoke-peerq "$DEV"
	expect_eq "$(cat /sys/module/fake_ascend/parameters/pins)" 0 "Ascend pins at the end ($ps B pages)"
	rmmod fxblk_ascend || fail "rmmod fxblk_ascend"
	rmmod fake_ascend || fail "rmmod fake_ascend"
	log "ok: Ascend memory with $ps B device pages moved both ways by the NIC"
done
expect_eq "$(peer_sum errors)" 0 "peer queue errors"

# 6b. a dma-buf (udmabuf over a memfd): attached, pinned and mapped for the
# NIC (rxe has no DMA mask: the control node's device is attached and rxe
# gets the linear-map addresses, as for Ascend), both ways
if [ -e /dev/udmabuf ] || { modprobe udmabuf 2>/dev/null && [ -e /dev/udmabuf ]; }; then
	rw_peer read 3584 $R_OFF $R_LEN /tmp/u1 dmabuf
	cmp /tmp/u1 /tmp/r1.blk || fail "peer read into a dma-buf differs from the block path's read"
	U_OFF=3948544 U_LEN=245760
	write_dev 2560 $U_OFF $U_LEN dmabuf "a dma-buf"
	# libfxio: fxio_buf_register_dmabuf
	libfxio_both_ways dmabuf "a dma-buf" $U_OFF 131072
	! grep -q fxblk-peer /sys/kernel/debug/dma_buf/bufinfo ||
		fail "a dma-buf still attached by fxblk-peer after its handle went: $(cat /sys/kernel/debug/dma_buf/bufinfo)"
	log "ok: a dma-buf moved both ways by the NIC (peer-test and libfxio); no attachment left"
else
	skip "dma-buf over the peer queues not exercised: no udmabuf in $(uname -r) (CONFIG_UDMABUF is off in Debian's 6.1)"
fi
expect_eq "$(peer_sum errors)" 0 "peer queue errors"
grep "^$NAME " $DBG

# 7. unload with the peer queues open; the kernel's controllers unaffected
fx_unload
for m in "${M[@]:0:4}"; do
	dd if="$m" of=/dev/null bs=4k count=1 iflag=direct status=none || fail "read $m after the unload"
done
log "ok: fxblk unloaded with the peer queues open; the members still read"
fx_dmesg_clean_since start
pass
