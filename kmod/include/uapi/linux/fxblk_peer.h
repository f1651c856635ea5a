/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fxblk peer memory: the ioctls of the control node /dev/fxblk-peer.
 * Shared, unchanged, by fxblk.ko and libfxio: definitions only.
 *
 * One open file of /dev/fxblk-peer is one context. It belongs to the
 * process (mm) that opened it: an ioctl from another process fails with
 * EPERM. Registrations (handles) belong to the context and are released
 * when it is closed (and so when the process exits).
 *
 * Every struct starts with @abi, which must be FXBLK_PEER_ABI (else
 * EPROTO). Every field named reserved* must be zero (else EINVAL); the
 * kernel clears reserved output fields. Strings are NUL-terminated within
 * their arrays. Sizes and offsets are in bytes.
 *
 * Providers (where the memory comes from):
 *   host    pinned user memory (pin_user_pages, FOLL_LONGTERM, and
 *           FOLL_PCI_P2PDMA where the kernel has it, so PCI P2PDMA pages
 *           too); has struct pages, so FXBLK_PEER_IOC_RW moves it directly
 *           (P2PDMA pages only to a disk whose members take them, else
 *           EREMOTEIO).
 *   rocm    AMD GPU memory through amdkfd's amd_rdma interface (API 1 or
 *           2, fixed when the glue module fxblk_rocm.ko is built against
 *           the installed amd_rdma.h); present only while that module is
 *           loaded; DMA addresses only.
 *   ascend  Huawei NPU memory through hal_kernel_p2p_get_pages() (glue
 *           module fxblk_ascend.ko); physical addresses only.
 *   dmabuf  any dma-buf: the registration holds the buffer (a reference)
 *           and checks the range against its size. It does not attach,
 *           pin or map it (no fxblk device does DMA to it; an attachment
 *           can make the exporter move it, e.g. amdgpu VRAM to GTT).
 * Memory with DMA addresses only cannot go into bios of the in-kernel
 * nvme-rdma host: FXBLK_PEER_IOC_RW on it fails with EREMOTEIO and user
 * space stages it through host memory (libfxio does). With the module
 * parameter peer_queues=1, synchronous FXBLK_PEER_IOC_RW of host memory
 * on a volume whose members are all nvme-rdma namespaces goes over
 * fxblk's own NVMe-oF/RDMA queues to the members instead of the block
 * layer (see docs/gpu-direct-design.md, "Peer queues"). DMA-address-only memory
 * whose provider can map it for an RDMA NIC (FXBLK_PEER_F_PEERQ: rocm with
 * amd_rdma API 2, ascend) is moved the same way by a synchronous RW, the NIC
 * reading or writing the device memory itself; where that volume has no
 * peer queues, the RW fails with EREMOTEIO as before.
 *
 * Revocation: a vendor may take memory back (its free callback). The
 * handle then turns FXBLK_PEER_STATE_REVOKED: new I/O on
 * it fails with ENXIO, in-flight I/O completes, then the memory is released
 * (pinned bytes drop) and the handle stays until DEREGISTER.
 *
 * Errors common to all ioctls: EPROTO (abi), EINVAL (reserved field not
 * zero, unknown flag or op, misaligned or overflowing range), EPERM (not
 * the context's process), ENOENT (no such handle), EFAULT.
 */
#ifndef _UAPI_LINUX_FXBLK_PEER_H
#define _UAPI_LINUX_FXBLK_PEER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define FXBLK_PEER_ABI		1
#define FXBLK_PEER_DEVICE	"/dev/fxblk-peer"

#define FXBLK_PEER_NAME_LEN	16
#define FXBLK_PEER_REASON_LEN	128
#define FXBLK_PEER_MAX_PROVIDERS 8
#define FXBLK_PEER_REAP_MAX	32
/* Most bytes one FXBLK_PEER_IOC_RW moves. */
#define FXBLK_PEER_MAX_RW	(64ULL << 20)
/*
 * Registrations: addr (or dma-buf offset) and len must be multiples of
 * FXBLK_PEER_ALIGN (Ascend pins 4 KiB pages; host pages are at least that).
 */
#define FXBLK_PEER_ALIGN	4096ULL

/* Provider ids. AUTO picks: dmabuf for a dma-buf fd; else rocm if its
 * is_gpu_address() claims the address; else ascend if it pins the range;
 * else host.
 */
enum fxblk_peer_provider_id {
	FXBLK_PEER_PROV_AUTO = 0,
	FXBLK_PEER_PROV_HOST = 1,
	FXBLK_PEER_PROV_ROCM = 2,
	FXBLK_PEER_PROV_ASCEND = 3,
	FXBLK_PEER_PROV_DMABUF = 4,
	__FXBLK_PEER_PROV_MAX,
};
#define FXBLK_PEER_PROV_MAX (__FXBLK_PEER_PROV_MAX - 1)

/* Capability flags: of a provider (PROVIDERS) and of a handle (REGISTER,
 * QUERY; there PRESENT is always set).
 */
#define FXBLK_PEER_F_PRESENT	(1U << 0)  /* vendor interface found */
#define FXBLK_PEER_F_STRUCT_PAGE (1U << 1) /* memory has struct pages */
#define FXBLK_PEER_F_DMA_ONLY	(1U << 2)  /* DMA/physical addresses only */
#define FXBLK_PEER_F_REVOCABLE	(1U << 3)  /* the vendor may revoke it */
#define FXBLK_PEER_F_DIRECT	(1U << 4)  /* FXBLK_PEER_IOC_RW moves it */
#define FXBLK_PEER_F_PEERQ	(1U << 5)  /* DMA-only: RW over peer queues */

struct fxblk_peer_provider {
	__u32 id;			/* enum fxblk_peer_provider_id */
	__u32 flags;			/* FXBLK_PEER_F_* */
	__u64 pinned_bytes;		/* pinned through it now */
	__u64 registrations;		/* handles alive now, all contexts */
	__u64 page_size;		/* pin granularity; 0 if absent */
	__u64 reserved[2];
	char name[FXBLK_PEER_NAME_LEN];	/* "host", "rocm", "ascend", "dmabuf" */
	/* Why not present, or why not direct; "" when present and direct. */
	char reason[FXBLK_PEER_REASON_LEN];
};

/* FXBLK_PEER_IOC_PROVIDERS: every provider, in id order. */
struct fxblk_peer_providers {
	__u32 abi;			/* in */
	__u32 count;			/* in: 0 (else EINVAL); out: entries filled */
	__u64 reserved[2];
	struct fxblk_peer_provider p[FXBLK_PEER_MAX_PROVIDERS];	/* out */
};

/* REGISTER flags (in) */
#define FXBLK_PEER_REG_DMABUF	(1U << 0)  /* dmabuf_fd + offset, not addr */
#define FXBLK_PEER_REG_READONLY	(1U << 1)  /* pin read-only: only WRITE ops */
#define FXBLK_PEER_REG_ALL	(FXBLK_PEER_REG_DMABUF | FXBLK_PEER_REG_READONLY)

/*
 * FXBLK_PEER_IOC_REGISTER: pin [addr, addr+len) of the calling process, or
 * [offset, offset+len) of a dma-buf. Errors besides the common ones:
 * ENODEV (provider absent; reason says why), EFAULT (not mapped, or not the
 * provider's memory), ENOMEM (RLIMIT_MEMLOCK without CAP_IPC_LOCK),
 * EBADF (dmabuf_fd is not a dma-buf).
 */
struct fxblk_peer_register {
	__u32 abi;			/* in */
	__u32 provider;			/* in: id or AUTO; out: chosen id */
	__u32 flags;			/* in: FXBLK_PEER_REG_* */
	__s32 dmabuf_fd;		/* in: with REG_DMABUF, else 0 */
	__u64 addr;			/* in: user address, else 0 */
	__u64 offset;			/* in: dma-buf offset, else 0 */
	__u64 len;			/* in: bytes, > 0 */
	__u64 handle;			/* out: never 0 */
	__u64 page_size;		/* out: provider's pin granularity */
	__u32 out_flags;		/* out: FXBLK_PEER_F_* of the handle */
	__u32 reserved0;
	__u64 reserved[4];
	char reason[FXBLK_PEER_REASON_LEN];	/* out: why not direct */
};

/* FXBLK_PEER_IOC_DEREGISTER: waits for the handle's in-flight I/O, then
 * releases it. ENOENT for an unknown (or already released) handle.
 */
struct fxblk_peer_deregister {
	__u32 abi;			/* in */
	__u32 reserved0;
	__u64 handle;			/* in */
	__u64 reserved[2];
};

enum fxblk_peer_op {
	FXBLK_PEER_OP_READ = 0,		/* device -> registered memory */
	FXBLK_PEER_OP_WRITE = 1,	/* registered memory -> device */
};

/* RW flags (in) */
#define FXBLK_PEER_RW_ASYNC	(1U << 0)
#define FXBLK_PEER_RW_FUA	(1U << 1)  /* OP_WRITE: durable on completion */
#define FXBLK_PEER_RW_ALL	(FXBLK_PEER_RW_ASYNC | FXBLK_PEER_RW_FUA)

/*
 * FXBLK_PEER_IOC_RW: move @len bytes between [buf_off, buf_off+len) of the
 * handle's memory and [dev_off, dev_off+len) of the fxblk disk open as @fd
 * (/dev/fxN; opened for writing for OP_WRITE). buf_off, dev_off and len are
 * multiples of the disk's logical block size; 0 < len <= FXBLK_PEER_MAX_RW.
 * Synchronous: returns 0 once all of it is done, or the error (EINTR if
 * killed; the I/O then finishes in the background). With RW_ASYNC: returns
 * 0 once submitted; the completion {user_data, result} is queued for
 * FXBLK_PEER_IOC_REAP and @eventfd (if >= 0) is signalled. eventfd must be
 * -1 without RW_ASYNC.
 * Durability: with RW_FUA (OP_WRITE only) the data is on stable media of
 * every member it went to when the RW completes (FUA on each command, on
 * the block path and on the peer queues); without it, an fsync/fdatasync
 * of the disk (any fd of /dev/fxN) makes every write completed before it
 * durable, also those the peer queues moved: the volume's flush sends an
 * NVMe Flush on each association that completed writes since its last one,
 * then flushes every member through its kernel controller, which covers
 * the writes of an association that went down before its Flush (as nvme
 * multipath counts on); with module parameter peer_strict_flush=1 such a
 * flush fails (EIO) instead, once.
 * The disk's page cache is kept coherent as O_DIRECT keeps it: dirty
 * cached blocks of the range are written back before the I/O, and for a
 * write the cached pages of the range are dropped (before, and after a
 * synchronous one), so buffered readers see the new data.
 * Errors besides the common ones: EREMOTEIO (memory has no struct pages
 * and, for FXBLK_PEER_F_PEERQ memory, the RW is asynchronous or the disk
 * has no peer queues that can map it: stage it), ENXIO (handle revoked), ENOTBLK (fd is not an fxblk disk),
 * EBADF (fd not open for that direction), ENOSPC (beyond the disk's end),
 * EROFS (read-only registration for OP_READ), EPERM (OP_WRITE to a
 * read-only disk, BLKROSET), ETXTBSY (OP_WRITE to an active swap device),
 * EBUSY (a cached page of the range could not be dropped), EREMOTEIO
 * (also: P2PDMA pages to a disk that cannot take them), EIO (the I/O
 * failed).
 */
struct fxblk_peer_rw {
	__u32 abi;			/* in */
	__u32 op;			/* in: enum fxblk_peer_op */
	__u32 flags;			/* in: FXBLK_PEER_RW_* */
	__s32 fd;			/* in: fd of /dev/fxN */
	__u64 handle;			/* in */
	__u64 buf_off;			/* in: offset in the registration */
	__u64 dev_off;			/* in: offset on the disk */
	__u64 len;			/* in */
	__s32 eventfd;			/* in: with RW_ASYNC, or -1 */
	__u32 reserved0;
	__u64 user_data;		/* in: returned by REAP */
	__u64 reserved[2];
};

struct fxblk_peer_completion {
	__u64 user_data;
	__s64 result;			/* bytes moved, or -errno */
};

/* REAP flags (in) */
#define FXBLK_PEER_REAP_WAIT	(1U << 0)  /* wait (killable) for >= 1 */
#define FXBLK_PEER_REAP_ALL	FXBLK_PEER_REAP_WAIT

/* FXBLK_PEER_IOC_REAP: take up to @max queued async completions, oldest
 * first. Without REAP_WAIT, count 0 if none are queued.
 */
struct fxblk_peer_reap {
	__u32 abi;			/* in */
	__u32 max;			/* in: 1..FXBLK_PEER_REAP_MAX */
	__u32 flags;			/* in: FXBLK_PEER_REAP_* */
	__u32 count;			/* out */
	__u64 reserved[2];
	struct fxblk_peer_completion c[FXBLK_PEER_REAP_MAX];	/* out */
};

enum fxblk_peer_state {
	FXBLK_PEER_STATE_ACTIVE = 0,
	FXBLK_PEER_STATE_REVOKED = 1,	/* released or being released */
};

/* FXBLK_PEER_IOC_QUERY: one handle of this context. */
struct fxblk_peer_query {
	__u32 abi;			/* in */
	__u32 reserved0;
	__u64 handle;			/* in */
	__u32 state;			/* out: enum fxblk_peer_state */
	__u32 provider;			/* out: provider id */
	__u32 flags;			/* out: FXBLK_PEER_F_* */
	__u32 inflight;			/* out: I/Os not completed yet */
	__u64 addr;			/* out: as registered */
	__u64 offset;			/* out: as registered */
	__u64 len;			/* out */
	__u64 page_size;		/* out */
	__u64 pinned_bytes;		/* out: 0 once released */
	__u64 reserved[3];
	char reason[FXBLK_PEER_REASON_LEN];	/* out: why not direct/revoked */
};

#define FXBLK_PEER_IOC_MAGIC	0xFB
#define FXBLK_PEER_IOC_PROVIDERS \
	_IOWR(FXBLK_PEER_IOC_MAGIC, 0x00, struct fxblk_peer_providers)
#define FXBLK_PEER_IOC_REGISTER \
	_IOWR(FXBLK_PEER_IOC_MAGIC, 0x01, struct fxblk_peer_register)
#define FXBLK_PEER_IOC_DEREGISTER \
	_IOW(FXBLK_PEER_IOC_MAGIC, 0x02, struct fxblk_peer_deregister)
#define FXBLK_PEER_IOC_RW \
	_IOW(FXBLK_PEER_IOC_MAGIC, 0x03, struct fxblk_peer_rw)
#define FXBLK_PEER_IOC_REAP \
	_IOWR(FXBLK_PEER_IOC_MAGIC, 0x04, struct fxblk_peer_reap)
#define FXBLK_PEER_IOC_QUERY \
	_IOWR(FXBLK_PEER_IOC_MAGIC, 0x05, struct fxblk_peer_query)

#endif /* _UAPI_LINUX_FXBLK_PEER_H */
