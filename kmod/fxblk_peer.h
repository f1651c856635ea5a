/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fxblk peer memory: the provider interface between the control node
 * (fxblk_peer.c) and the backends, and the registration they share. host
 * and dmabuf are built into fxblk.ko; rocm and ascend are vendor glue
 * modules (fxblk_rocm.ko, fxblk_ascend.ko, built by DKMS only where the
 * vendor's header and Module.symvers are installed) that link against the
 * vendor's symbols and call fxblk_peer_register_provider() at load, as
 * nvidia-peermem does with ib_core.
 *
 * A backend pins a range at REGISTER time, in the owning process (Ascend
 * and amd_rdma look the memory up by the current process), and unpins it
 * from process context later: DEREGISTER, the context's release, or the
 * revoke work. A vendor that takes its memory back calls
 * fxblk_peer_revoke() from its callback, which returns only once no NIC
 * can move data to or from the memory any more; pages are never put from
 * there.
 */
#ifndef FXBLK_PEER_H
#define FXBLK_PEER_H

#include <linux/kref.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/fxblk_peer.h>

#include "fxblk_probes.h"

struct device;
struct sg_table;
struct scatterlist;
struct fxblk_peer_ctx;

/* A registration: one handle of one context. */
struct fxblk_peer_reg {
	struct fxblk_peer_ctx *ctx;
	const struct fxblk_peer_ops *ops;
	struct list_head node;		/* in fxblk_peer_all while in service */
	struct kref ref;
	u32 handle;
	u32 reg_flags;			/* FXBLK_PEER_REG_* */
	u32 caps;			/* FXBLK_PEER_F_* of the memory */
	int dmabuf_fd;
	u64 addr, offset, len;		/* as registered, bytes */
	u64 page_size;			/* set by ->pin */

	/* STRUCT_PAGE backends: the pages of [addr, addr + len). */
	struct page **pages;
	unsigned long nr_pages;
	unsigned int first_off;		/* of addr in pages[0] */
	void *priv;			/* the backend's */

	/*
	 * @lock orders revocation and deregistration against RW: RW raises
	 * @inflight under it only while neither @revoked nor @dead is set,
	 * so whoever sets one and then waits for @inflight == 0 may unpin.
	 * It is taken from vendor callbacks, whose context we don't know.
	 */
	spinlock_t lock;
	bool revoked;			/* the vendor took it back */
	bool dead;			/* deregistered or context closing */
	atomic_t inflight;		/* RW I/Os not completed */
	/*
	 * Peer-queue commands whose data is this memory, from just before
	 * their post to their completion or abort (fxblk_peer_dma_get()).
	 * Raised under @lock only while !@revoked: the fence of
	 * fxblk_peer_revoke() waits for it to reach 0.
	 */
	atomic_t dma_inflight;
	struct mutex pin_lock;		/* serialises the one unpin */
	bool pinned;
	struct work_struct revoke_work;
	char reason[FXBLK_PEER_REASON_LEN];

	/*
	 * DMA-only memory mapped for peer-queue NICs by ->map, one entry
	 * (struct fxblk_peer_map) per DMA device, made by the first RW that
	 * needs it, ->unmap()ed before ->unpin.
	 */
	struct mutex map_lock;
	struct list_head maps;
};

/*
 * A backend. ->probe (optional) says whether the interface is usable (0)
 * or why not (-ENODEV, @why filled). ->pin runs in the owning process and sets
 * reg->page_size (and pages/nr_pages/first_off for STRUCT_PAGE memory);
 * -ENODEV: absent, -EFAULT: not this provider's memory. ->unpin runs in
 * process context once, after all I/O on the range completed.
 */
struct fxblk_peer_ops {
	const char *name;
	/*
	 * A glue module: THIS_MODULE. Every registration of it holds a
	 * reference until it is freed, so the module cannot unload while fxblk
	 * may still call ->unpin or read the ops; NULL for built-in providers.
	 */
	struct module *owner;
	u32 id;				/* FXBLK_PEER_PROV_* */
	u32 caps;			/* FXBLK_PEER_F_* but PRESENT */
	/* Why the memory cannot take FXBLK_PEER_IOC_RW; NULL if it can. */
	const char *not_direct;
	int (*probe)(char *why, size_t len);
	int (*pin)(struct fxblk_peer_reg *reg);
	void (*unpin)(struct fxblk_peer_reg *reg);
	/*
	 * DMA-only memory (optional, both or neither): map the whole pinned
	 * range for @dev, the DMA device of the RDMA NIC that will move it
	 * (fxblk_peerq.c), as the vendor maps for an importer; *@sgt: its DMA
	 * segments in order (for_each_sgtable_dma_sg), *@cookie: given back to
	 * ->unmap. Process context, while the range is pinned; ->unmap runs
	 * once per map, after all I/O on it and before ->unpin.
	 */
	int (*map)(struct fxblk_peer_reg *reg, struct device *dev,
		   struct sg_table **sgt, void **cookie);
	void (*unmap)(struct fxblk_peer_reg *reg, void *cookie);
};

extern const struct fxblk_peer_ops fxblk_peer_host_ops;
extern const struct fxblk_peer_ops fxblk_peer_dmabuf_ops;

/*
 * For the glue modules (EXPORT_SYMBOL_GPL): take the slot of ops->id
 * (FXBLK_PEER_PROV_ROCM or _ASCEND) from module init, give it back from
 * module exit. -EBUSY if the slot is taken, -EINVAL for another id.
 */
int fxblk_peer_register_provider(const struct fxblk_peer_ops *ops);
void fxblk_peer_unregister_provider(const struct fxblk_peer_ops *ops);

/* Why DMA-address-only memory takes the staged path. */
#define FXBLK_PEER_NOT_DIRECT_DMA \
	"direct: no - the in-kernel nvme-rdma host cannot take DMA-address-only memory; libfxio stages it"
/* ... unless a provider with ->map meets a volume with peer queues. */
#define FXBLK_PEER_NOT_DIRECT_PEERQ \
	"direct: only over fxblk's peer queues (peer_queues=1, NVMe-oF/RDMA members); libfxio stages it elsewhere"

/*
 * Vendor callback: the memory of @reg goes away. Process context (it
 * sleeps): returns once no command of fxblk's peer queues can move data
 * to or from the memory (see fxblk_peer.c); the pages go later.
 */
void fxblk_peer_revoke(void *reg);
/*
 * For fxblk_peerq.c, around each command whose data is @reg's memory:
 * false once @reg is revoked (the command must not be posted); else the
 * command is counted until fxblk_peer_dma_put().
 */
bool fxblk_peer_dma_get(struct fxblk_peer_reg *reg);
void fxblk_peer_dma_put(struct fxblk_peer_reg *reg);
/* The device DMA-address-only memory is mapped for (see fxblk_peer.c). */
struct device *fxblk_peer_dma_dev(void);
/*
 * [@pos, @pos + @bytes) of the DMA segments of @src as pieces written to @d
 * (NULL: only counted); the number of pieces, 0 if @src is shorter.
 */
unsigned int fxblk_peer_dma_slice(struct sg_table *src, u64 pos, u64 bytes,
				  struct scatterlist *d);
/*
 * The DMA segments of @reg's memory for @dev (->map, once per device), or
 * an ERR_PTR. For an RW that holds @reg in service (reg->inflight).
 */
struct sg_table *fxblk_peer_reg_dma(struct fxblk_peer_reg *reg,
				    struct device *dev);
/*
 * For a glue's ->map of physical addresses (Ascend): [@pa, @pa + @len)
 * mapped for @dev (dma_map_resource()), 0 or -errno; unmapped with
 * fxblk_peer_unmap_phys(). See fxblk_peer.c for a device without a DMA mask.
 */
int fxblk_peer_map_phys(struct device *dev, phys_addr_t pa, size_t len,
			dma_addr_t *out);
void fxblk_peer_unmap_phys(struct device *dev, dma_addr_t addr, size_t len);

int fxblk_peer_init(void);
void fxblk_peer_exit(void);

/* Kernel differences, decided by the compat/ probes. */
#ifdef FXBLK_HAVE_EVENTFD_SIGNAL_NOCOUNT
#define fxblk_eventfd_signal(ctx)	eventfd_signal(ctx)
#else
#define fxblk_eventfd_signal(ctx)	eventfd_signal(ctx, 1)
#endif

#endif /* FXBLK_PEER_H */
