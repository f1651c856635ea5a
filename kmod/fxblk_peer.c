// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory: the control node /dev/fxblk-peer (uapi in
 * include/uapi/linux/fxblk_peer.h), its contexts and handles, the registry
 * of providers, RW between a handle's pinned pages and an fxN disk, and
 * revocation.
 *
 * One open file is one context, bound to the mm that opened it; handles
 * live in the context's xarray under ctx->lock. Pinned bytes are charged to
 * the mm's locked_vm (RLIMIT_MEMLOCK unless CAP_IPC_LOCK), as vfio does.
 * A registration is freed by its last kref; its pins are released before,
 * in process context, by whoever marks it dead or the revoke work, after
 * its in-flight I/O drained (see struct fxblk_peer_reg).
 *
 * The node is 0666: every ioctl copies its struct in once, and an "out"
 * field is either not copied in or must be 0 (else EINVAL); none is ever
 * used as an index or a length. RW keeps the disk's page cache coherent
 * and honours a read-only disk as O_DIRECT on the block device does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/dma-mapping.h>
#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "fxblk.h"
#include "fxblk_peer.h"
#include "fxblk_peerq.h"

/* Async I/Os submitted and not reaped yet, per context. */
#define FXBLK_PEER_MAX_ASYNC	4096
/* Handles per context. */
#define FXBLK_PEER_MAX_HANDLES	65536

#ifndef BIO_MAX_VECS
#define BIO_MAX_VECS BIO_MAX_PAGES	/* its name before 5.12 */
#endif

/*
 * The provider registry. host and dmabuf are built in; the rocm and ascend
 * slots are filled by their glue modules (fxblk_peer_register_provider()).
 * A user of a slot takes a reference on the glue module under
 * fxblk_peer_prov_lock (try_module_get() fails once the module is going,
 * i.e. before its exit unregisters), and keeps it for as long as it may
 * call into the ops: the probe, or the registration's whole life.
 */
static const struct fxblk_peer_ops *fxblk_peer_providers[__FXBLK_PEER_PROV_MAX] = {
	[FXBLK_PEER_PROV_HOST] = &fxblk_peer_host_ops,
	[FXBLK_PEER_PROV_DMABUF] = &fxblk_peer_dmabuf_ops,
};
static DEFINE_SPINLOCK(fxblk_peer_prov_lock);

/* What PROVIDERS says of an empty slot: no pin can exist, so 0 pinned. */
static const char *const fxblk_peer_absent[__FXBLK_PEER_PROV_MAX] = {
	[FXBLK_PEER_PROV_ROCM] = "rocm",
	[FXBLK_PEER_PROV_ASCEND] = "ascend",
};

static const char *const fxblk_peer_absent_why[__FXBLK_PEER_PROV_MAX] = {
	[FXBLK_PEER_PROV_ROCM] = "fxblk_rocm not loaded: DKMS builds it where amdgpu-dkms installed amd_rdma.h and its Module.symvers",
	[FXBLK_PEER_PROV_ASCEND] = "fxblk_ascend not loaded: DKMS builds it where the Ascend driver installed ascend_kernel_hal.h and its Module.symvers",
};

static const struct fxblk_peer_ops *fxblk_peer_provider_get(u32 id)
{
	const struct fxblk_peer_ops *ops;

	spin_lock(&fxblk_peer_prov_lock);
	ops = fxblk_peer_providers[id];
	if (ops && !try_module_get(ops->owner))
		ops = NULL;
	spin_unlock(&fxblk_peer_prov_lock);
	return ops;
}

static void fxblk_peer_provider_put(const struct fxblk_peer_ops *ops)
{
	module_put(ops->owner);
}

static bool fxblk_peer_vendor_slot(const struct fxblk_peer_ops *ops)
{
	return ops && ops->owner && ops->pin && ops->unpin &&
	       !ops->map == !ops->unmap &&
	       (ops->id == FXBLK_PEER_PROV_ROCM ||
		ops->id == FXBLK_PEER_PROV_ASCEND);
}

int fxblk_peer_register_provider(const struct fxblk_peer_ops *ops)
{
	int ret = 0;

	if (!fxblk_peer_vendor_slot(ops))
		return -EINVAL;
	spin_lock(&fxblk_peer_prov_lock);
	if (fxblk_peer_providers[ops->id])
		ret = -EBUSY;
	else
		fxblk_peer_providers[ops->id] = ops;
	spin_unlock(&fxblk_peer_prov_lock);
	if (!ret)
		pr_info("peer provider %s registered by %s\n", ops->name,
			module_name(ops->owner));
	return ret;
}
EXPORT_SYMBOL_GPL(fxblk_peer_register_provider);

/* From the glue's exit: no registration holds its module any more. */
void fxblk_peer_unregister_provider(const struct fxblk_peer_ops *ops)
{
	if (!fxblk_peer_vendor_slot(ops))
		return;
	spin_lock(&fxblk_peer_prov_lock);
	if (fxblk_peer_providers[ops->id] == ops)
		fxblk_peer_providers[ops->id] = NULL;
	spin_unlock(&fxblk_peer_prov_lock);
}
EXPORT_SYMBOL_GPL(fxblk_peer_unregister_provider);

/* Per provider, over all contexts. */
static atomic64_t fxblk_peer_pinned[__FXBLK_PEER_PROV_MAX];
static atomic64_t fxblk_peer_nregs[__FXBLK_PEER_PROV_MAX];

/*
 * Waiters for a registration's @inflight to reach 0. Global, so that an
 * I/O completion never touches its registration after the decrement.
 */
static DECLARE_WAIT_QUEUE_HEAD(fxblk_peer_idle);
static struct workqueue_struct *fxblk_peer_wq;
/* Every registration in service, for the test hook below. */
static LIST_HEAD(fxblk_peer_all);
static DEFINE_SPINLOCK(fxblk_peer_all_lock);

struct fxblk_peer_ctx {
	struct mm_struct *mm;		/* mmgrab()bed */
	struct mutex lock;		/* @regs */
	struct xarray regs;
	u32 next_handle;
	spinlock_t cq_lock;		/* @cq */
	struct list_head cq;		/* completed async I/Os, oldest first */
	wait_queue_head_t cq_wait;
	atomic_t nr_async;		/* submitted and not reaped */
};

/* One RW: the bios it was split into, and its result. */
struct fxblk_peer_io {
	struct kref ref;		/* the bios' side, the sync waiter */
	atomic_t pending;		/* bios + the submitter */
	int error;			/* first one */
	bool async;
	struct fxblk_peer_reg *reg;
	struct file *file;		/* the fxN disk */
	struct eventfd_ctx *evfd;
	struct completion done;
	struct list_head node;		/* in ctx->cq */
	u64 user_data;
	u64 len;
	/* Pinned for this RW only (P2PDMA ranges, see fxblk_peer_host.c). */
	struct page **pages;
	unsigned long nr_pages;
	bool dirty;			/* a READ filled them */
	struct work_struct unpin_work;
};

/* The device DMA-address-only memory is mapped for: the control node's. */
static u64 fxblk_peer_dma_mask = DMA_BIT_MASK(64);
static struct miscdevice fxblk_peer_misc;

struct device *fxblk_peer_dma_dev(void)
{
	return fxblk_peer_misc.this_device;
}
EXPORT_SYMBOL_GPL(fxblk_peer_dma_dev);

static void fxblk_peer_reg_free(struct kref *ref)
{
	struct fxblk_peer_reg *reg = container_of(ref, struct fxblk_peer_reg,
						  ref);

	WARN_ON_ONCE(reg->pinned);
	if (reg->ops)
		fxblk_peer_provider_put(reg->ops);
	kvfree(reg->pages);
	kfree(reg);
}

static void fxblk_peer_reg_put(struct fxblk_peer_reg *reg)
{
	kref_put(&reg->ref, fxblk_peer_reg_free);
}

static u64 fxblk_peer_pages_of(u64 len)
{
	return DIV_ROUND_UP(len, PAGE_SIZE);
}

/* Once, in process context, with no I/O on the range left. */
/* One ->map of a registration: for @dev, which it holds. */
struct fxblk_peer_map {
	struct list_head node;		/* in reg->maps */
	struct device *dev;
	struct sg_table *sgt;
	void *cookie;
};

struct sg_table *fxblk_peer_reg_dma(struct fxblk_peer_reg *reg,
				    struct device *dev)
{
	struct fxblk_peer_map *map;
	struct sg_table *sgt;
	int ret;

	if (!reg->ops->map)
		return ERR_PTR(-EOPNOTSUPP);
	mutex_lock(&reg->map_lock);
	list_for_each_entry(map, &reg->maps, node)
		if (map->dev == dev)
			goto found;
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map) {
		ret = -ENOMEM;
		goto out_err;
	}
	ret = reg->ops->map(reg, dev, &map->sgt, &map->cookie);
	if (ret) {
		kfree(map);
		goto out_err;
	}
	/* ->unmap needs the device after a NIC driver let go of it */
	map->dev = get_device(dev);
	list_add(&map->node, &reg->maps);
found:
	sgt = map->sgt;
	mutex_unlock(&reg->map_lock);
	return sgt;

out_err:
	mutex_unlock(&reg->map_lock);
	return ERR_PTR(ret);
}

/*
 * A device without a DMA mask is what fxblk_peerq.c names for a software
 * RDMA device (rxe, siw), and only with its lab-only peer_virt_dma: such a
 * device moves data with the CPU through kernel virtual addresses, which is
 * what ib_dma_map_page() hands it for a page. So memory in the kernel's
 * linear map (the lab's fake device memory) gets its virtual address, and
 * anything else (real device memory: no struct page) cannot be reached.
 */
int fxblk_peer_map_phys(struct device *dev, phys_addr_t pa, size_t len,
			dma_addr_t *out)
{
	unsigned long pfn, last;

	if (!len)
		return -EINVAL;
	if (dev->dma_mask) {
		*out = dma_map_resource(dev, pa, len, DMA_BIDIRECTIONAL, 0);
		return dma_mapping_error(dev, *out) ? -EIO : 0;
	}
	last = PHYS_PFN(pa + len - 1);
	for (pfn = PHYS_PFN(pa); pfn <= last; pfn++)
		if (!pfn_valid(pfn) || PageHighMem(pfn_to_page(pfn)))
			return -EREMOTEIO;
	*out = (dma_addr_t)(uintptr_t)phys_to_virt(pa);
	return 0;
}
EXPORT_SYMBOL_GPL(fxblk_peer_map_phys);

void fxblk_peer_unmap_phys(struct device *dev, dma_addr_t addr, size_t len)
{
	if (dev->dma_mask)
		dma_unmap_resource(dev, addr, len, DMA_BIDIRECTIONAL, 0);
}
EXPORT_SYMBOL_GPL(fxblk_peer_unmap_phys);

/*
 * Walk [@pos, @pos + @bytes) of the DMA segments of @src; fill @d (if not
 * NULL) with its pieces. The number of pieces, 0 if @src is shorter.
 */
unsigned int fxblk_peer_dma_slice(struct sg_table *src, u64 pos, u64 bytes,
				  struct scatterlist *d)
{
	struct scatterlist *sg;
	unsigned int i, n = 0;
	u32 take;

	for_each_sgtable_dma_sg(src, sg, i) {
		if (pos >= sg_dma_len(sg)) {
			pos -= sg_dma_len(sg);
			continue;
		}
		take = min_t(u64, sg_dma_len(sg) - pos, bytes);
		if (d) {
			sg_dma_address(d) = sg_dma_address(sg) + pos;
			sg_dma_len(d) = take;
			d = sg_next(d);
		}
		n++;
		bytes -= take;
		pos = 0;
		if (!bytes)
			return n;
	}
	return 0;
}

/* Before ->unpin: no RW holds @reg in service any more. */
static void fxblk_peer_unmap_all(struct fxblk_peer_reg *reg)
{
	struct fxblk_peer_map *map, *tmp;

	mutex_lock(&reg->map_lock);
	list_for_each_entry_safe(map, tmp, &reg->maps, node) {
		list_del(&map->node);
		reg->ops->unmap(reg, map->cookie);
		put_device(map->dev);
		kfree(map);
	}
	mutex_unlock(&reg->map_lock);
}

static void fxblk_peer_unpin(struct fxblk_peer_reg *reg)
{
	mutex_lock(&reg->pin_lock);
	if (reg->pinned) {
		fxblk_peer_unmap_all(reg);
		reg->ops->unpin(reg);
		account_locked_vm(reg->ctx->mm, fxblk_peer_pages_of(reg->len),
				  false);
		atomic64_sub(reg->len, &fxblk_peer_pinned[reg->ops->id]);
		reg->pinned = false;
	}
	mutex_unlock(&reg->pin_lock);
}

static void fxblk_peer_wait_idle(struct fxblk_peer_reg *reg)
{
	wait_event(fxblk_peer_idle, !atomic_read(&reg->inflight));
}

static void fxblk_peer_revoke_work(struct work_struct *work)
{
	struct fxblk_peer_reg *reg = container_of(work, struct fxblk_peer_reg,
						  revoke_work);

	fxblk_peer_wait_idle(reg);
	fxblk_peer_unpin(reg);
	fxblk_peer_reg_put(reg);	/* the work's */
}

bool fxblk_peer_dma_get(struct fxblk_peer_reg *reg)
{
	unsigned long flags;
	bool ok;

	spin_lock_irqsave(&reg->lock, flags);
	ok = !reg->revoked;
	if (ok)
		atomic_inc(&reg->dma_inflight);
	spin_unlock_irqrestore(&reg->lock, flags);
	return ok;
}

/* From a command's completion (softirq) or abort; @reg outlives its RW. */
void fxblk_peer_dma_put(struct fxblk_peer_reg *reg)
{
	if (atomic_dec_and_test(&reg->dma_inflight))
		wake_up_all(&fxblk_peer_idle);
}

/*
 * How long a free callback waits for the peer-queue commands on the
 * memory to complete before it stops their queue pairs. Commands a live
 * target serves complete in milliseconds; one that holds them (a stalled
 * array, a suspended namespace) would otherwise hold the vendor's free,
 * under its lock, for the 30 s of an RW's timeout.
 */
#define FXBLK_PEER_FENCE_WAIT	HZ

/*
 * No command may move data to or from @reg's memory after this returns
 * (@reg is revoked: no new command is posted on it). Wait for the ones
 * posted, bounded; then stop the associations that still hold some: after
 * rdma_disconnect() and ib_drain_qp() the queue pair is in the error state
 * and its NIC answers no RDMA READ or WRITE of the target with the
 * registrations' keys, as nvme_rdma_stop_queue() ends a queue. Again until
 * none is left: a command counted before the revoke may be posted on
 * another association after the first stop.
 */
static void fxblk_peer_fence(struct fxblk_peer_reg *reg)
{
	while (!wait_event_timeout(fxblk_peer_idle,
				   !atomic_read(&reg->dma_inflight),
				   FXBLK_PEER_FENCE_WAIT)) {
		pr_warn_ratelimited("%s memory revoked with %d peer-queue commands on it in flight: stopping their queues\n",
				    reg->ops->name,
				    atomic_read(&reg->dma_inflight));
		fxblk_peerq_fence(reg);
	}
}

/*
 * Vendor callback (a free callback, a dma-buf move): refuse new I/O, fence
 * the NIC's DMA to the memory, and leave the unpin to the work item,
 * because vendors forbid putting pages from inside their callback (Ascend
 * says so; nvidia_p2p deadlocks). Returning means the memory is no longer
 * used, which is the vendors' contract:
 * - Ascend, ascend_kernel_hal.h (verylucky01/driver at aff95158),
 *   hal_kernel_p2p_get_pages() note 4: "Once the free_callback call is
 *   completed, must be ensured that the memory corresponding to va is no
 *   longer used", and note 6: the callback must not wait for
 *   hal_kernel_p2p_put_pages() - the fence waits for commands only, the
 *   put is the work's;
 * - amd_rdma v1 (kfd_rdma.c run_rdma_free_callback()): kfd frees the
 *   pages as soon as the callback returns (v1 memory never reaches a NIC
 *   here: nothing to fence; v2 never calls it);
 * - dma-buf (include/linux/dma-buf.h, 6.12, struct dma_buf_attach_ops
 *   @move_notify, called under the buffer's dma_resv lock): the exporter
 *   moves the buffer once the fences in its dma_resv signalled; fxblk adds
 *   none for its commands, so it stops them here, as mlx5's
 *   mlx5_ib_dmabuf_invalidate_cb() zaps its MR synchronously.
 * It sleeps: the vendors call it in process context (aclrtFree or process
 * exit, kfd's free ioctl or release work, the exporter's move).
 */
void fxblk_peer_revoke(void *data)
{
	struct fxblk_peer_reg *reg = data;
	unsigned long flags;
	bool first;

	might_sleep();
	spin_lock_irqsave(&reg->lock, flags);
	first = !reg->revoked;
	if (first) {
		reg->revoked = true;
		strscpy(reg->reason, "revoked by the provider",
			sizeof(reg->reason));
		kref_get(&reg->ref);
	}
	spin_unlock_irqrestore(&reg->lock, flags);
	/* a second callback returns after the fence as well */
	fxblk_peer_fence(reg);
	if (first)
		queue_work(fxblk_peer_wq, &reg->revoke_work);
}
EXPORT_SYMBOL_GPL(fxblk_peer_revoke);

/* A host registration in service not revoked yet, with a reference. */
static struct fxblk_peer_reg *fxblk_peer_next_host(void)
{
	struct fxblk_peer_reg *reg, *found = NULL;

	spin_lock(&fxblk_peer_all_lock);
	list_for_each_entry(reg, &fxblk_peer_all, node)
		if (reg->ops->id == FXBLK_PEER_PROV_HOST &&
		    !READ_ONCE(reg->revoked)) {
			kref_get(&reg->ref);
			found = reg;
			break;
		}
	spin_unlock(&fxblk_peer_all_lock);
	return found;
}

/*
 * Test hook: revoke every host registration as a vendor's free callback
 * would, so that revocation can be tested with I/O in flight (memory that
 * vendors revoke cannot take FXBLK_PEER_IOC_RW). The callback sleeps: one
 * registration at a time, outside the list's lock. Bios of the block path
 * are not fenced (only host memory takes it, pinned until they complete).
 */
static int fxblk_peer_revoke_host_set(const char *val,
				      const struct kernel_param *kp)
{
	struct fxblk_peer_reg *reg;

	while ((reg = fxblk_peer_next_host())) {
		fxblk_peer_revoke(reg);
		fxblk_peer_reg_put(reg);
	}
	return 0;
}

static const struct kernel_param_ops fxblk_peer_revoke_host_ops = {
	.set = fxblk_peer_revoke_host_set,
};

module_param_cb(peer_revoke_host, &fxblk_peer_revoke_host_ops, NULL, 0200);
MODULE_PARM_DESC(peer_revoke_host,
		 "Test hook: writing revokes every host peer registration");

/*
 * Take @reg out of service: no new I/O, wait for the rest, unpin. The
 * caller owns a reference and has removed @reg from its context.
 */
static void fxblk_peer_shutdown(struct fxblk_peer_reg *reg)
{
	unsigned long flags;

	spin_lock_irqsave(&reg->lock, flags);
	reg->dead = true;
	spin_unlock_irqrestore(&reg->lock, flags);
	spin_lock(&fxblk_peer_all_lock);
	list_del(&reg->node);
	spin_unlock(&fxblk_peer_all_lock);
	fxblk_peer_wait_idle(reg);
	fxblk_peer_unpin(reg);
	/* After the unpin no vendor calls back, so no work is queued anew. */
	if (cancel_work_sync(&reg->revoke_work))
		fxblk_peer_reg_put(reg);
	atomic64_dec(&fxblk_peer_nregs[reg->ops->id]);
}

static struct fxblk_peer_reg *fxblk_peer_get(struct fxblk_peer_ctx *ctx,
					     u64 handle)
{
	struct fxblk_peer_reg *reg = NULL;

	if (!handle || handle > U32_MAX)
		return NULL;
	mutex_lock(&ctx->lock);
	reg = xa_load(&ctx->regs, handle);
	if (reg)
		kref_get(&reg->ref);
	mutex_unlock(&ctx->lock);
	return reg;
}

static bool fxblk_peer_zero(const u64 *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i])
			return false;
	return true;
}

static void fxblk_peer_fill_provider(const struct fxblk_peer_ops *ops,
				     struct fxblk_peer_provider *p)
{
	p->id = ops->id;
	strscpy(p->name, ops->name, sizeof(p->name));
	p->pinned_bytes = atomic64_read(&fxblk_peer_pinned[ops->id]);
	p->registrations = atomic64_read(&fxblk_peer_nregs[ops->id]);
	if (ops->probe && ops->probe(p->reason, sizeof(p->reason)))
		return;
	p->flags = FXBLK_PEER_F_PRESENT | ops->caps;
	p->page_size = PAGE_SIZE;
	if (ops->not_direct)
		strscpy(p->reason, ops->not_direct, sizeof(p->reason));
	else
		p->flags |= FXBLK_PEER_F_DIRECT;
	if (ops->map)
		p->flags |= FXBLK_PEER_F_PEERQ;
}

/* Slot @id as PROVIDERS reports it: its provider, or why it is empty. */
static void fxblk_peer_list_provider(u32 id, struct fxblk_peer_provider *p)
{
	const struct fxblk_peer_ops *ops = fxblk_peer_provider_get(id);

	if (!ops) {
		p->id = id;
		strscpy(p->name, fxblk_peer_absent[id], sizeof(p->name));
		strscpy(p->reason, fxblk_peer_absent_why[id],
			sizeof(p->reason));
		return;
	}
	fxblk_peer_fill_provider(ops, p);
	fxblk_peer_provider_put(ops);
}

/*
 * @count is an output: it must come in as 0 (as REAP's does), and the
 * entries are filled by a local index bounded by the array, never by it.
 */
static int fxblk_peer_ioc_providers(void __user *argp)
{
	struct fxblk_peer_providers *a;
	unsigned int n = 0;
	int id, ret = 0;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	if (copy_from_user(a, argp, offsetof(typeof(*a), p))) {
		ret = -EFAULT;
		goto out;
	}
	if (a->abi != FXBLK_PEER_ABI) {
		ret = -EPROTO;
		goto out;
	}
	if (a->count || !fxblk_peer_zero(a->reserved, ARRAY_SIZE(a->reserved))) {
		ret = -EINVAL;
		goto out;
	}
	for (id = 1; id < ARRAY_SIZE(fxblk_peer_providers) &&
		     n < ARRAY_SIZE(a->p); id++)
		fxblk_peer_list_provider(id, &a->p[n++]);
	a->count = n;
	if (copy_to_user(argp, a, sizeof(*a)))
		ret = -EFAULT;
out:
	kfree(a);
	return ret;
}

static int fxblk_peer_check_register(const struct fxblk_peer_register *a)
{
	bool dmabuf = a->flags & FXBLK_PEER_REG_DMABUF;
	u64 end;

	if (a->abi != FXBLK_PEER_ABI)
		return -EPROTO;
	if (a->reserved0 || !fxblk_peer_zero(a->reserved,
					     ARRAY_SIZE(a->reserved)) ||
	    a->handle || a->page_size || a->out_flags)
		return -EINVAL;
	if (a->flags & ~FXBLK_PEER_REG_ALL || a->provider > FXBLK_PEER_PROV_MAX)
		return -EINVAL;
	/* A dma-buf comes only from its provider, and only it takes one. */
	if (a->provider == FXBLK_PEER_PROV_DMABUF && !dmabuf)
		return -EINVAL;
	if (dmabuf && a->provider != FXBLK_PEER_PROV_DMABUF &&
	    a->provider != FXBLK_PEER_PROV_AUTO)
		return -EINVAL;
	if (dmabuf ? a->addr || a->dmabuf_fd < 0 : a->offset || a->dmabuf_fd)
		return -EINVAL;
	if (!a->len || !IS_ALIGNED(a->len, FXBLK_PEER_ALIGN) ||
	    !IS_ALIGNED(a->addr | a->offset, FXBLK_PEER_ALIGN))
		return -EINVAL;
	if (check_add_overflow(a->addr | a->offset, a->len, &end))
		return -EINVAL;
	if (!dmabuf && end > TASK_SIZE)
		return -EFAULT;
	return 0;
}

static struct fxblk_peer_reg *fxblk_peer_reg_alloc(struct fxblk_peer_ctx *ctx,
					const struct fxblk_peer_register *a)
{
	struct fxblk_peer_reg *reg = kzalloc(sizeof(*reg), GFP_KERNEL);

	if (!reg)
		return NULL;
	reg->ctx = ctx;
	kref_init(&reg->ref);
	reg->reg_flags = a->flags;
	reg->dmabuf_fd = a->dmabuf_fd;
	reg->addr = a->addr;
	reg->offset = a->offset;
	reg->len = a->len;
	spin_lock_init(&reg->lock);
	atomic_set(&reg->inflight, 0);
	atomic_set(&reg->dma_inflight, 0);
	mutex_init(&reg->pin_lock);
	INIT_WORK(&reg->revoke_work, fxblk_peer_revoke_work);
	mutex_init(&reg->map_lock);
	INIT_LIST_HEAD(&reg->maps);
	return reg;
}

/*
 * Pin @reg with provider @id, charging the pages to RLIMIT_MEMLOCK. A
 * pinned @reg keeps its provider's module reference until it is freed.
 */
static int fxblk_peer_pin(struct fxblk_peer_reg *reg, u32 id)
{
	const struct fxblk_peer_ops *ops = fxblk_peer_provider_get(id);
	int ret;

	if (!ops)
		return -ENODEV;
	ret = account_locked_vm(reg->ctx->mm, fxblk_peer_pages_of(reg->len),
				true);
	if (ret)
		goto out_put;
	reg->ops = ops;
	ret = ops->pin(reg);
	if (ret) {
		account_locked_vm(reg->ctx->mm, fxblk_peer_pages_of(reg->len),
				  false);
		reg->ops = NULL;
		goto out_put;
	}
	reg->caps = FXBLK_PEER_F_PRESENT | ops->caps;
	if (ops->not_direct)
		strscpy(reg->reason, ops->not_direct, sizeof(reg->reason));
	else
		reg->caps |= FXBLK_PEER_F_DIRECT;
	if (ops->map)
		reg->caps |= FXBLK_PEER_F_PEERQ;
	reg->pinned = true;
	atomic64_add(reg->len, &fxblk_peer_pinned[id]);
	return 0;

out_put:
	fxblk_peer_provider_put(ops);
	return ret;
}

/*
 * AUTO: a dma-buf goes to its provider; an address to the first GPU
 * provider that claims it (-ENODEV: absent, -EFAULT: not its memory), else
 * to host.
 */
static int fxblk_peer_pin_auto(struct fxblk_peer_reg *reg)
{
	static const u32 order[] = { FXBLK_PEER_PROV_ROCM,
				     FXBLK_PEER_PROV_ASCEND };
	int i, ret;

	if (reg->reg_flags & FXBLK_PEER_REG_DMABUF)
		return fxblk_peer_pin(reg, FXBLK_PEER_PROV_DMABUF);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		ret = fxblk_peer_pin(reg, order[i]);
		if (ret != -ENODEV && ret != -EFAULT)
			return ret;
	}
	return fxblk_peer_pin(reg, FXBLK_PEER_PROV_HOST);
}

static int fxblk_peer_add(struct fxblk_peer_ctx *ctx,
			  struct fxblk_peer_reg *reg)
{
	u32 id;
	int ret;

	mutex_lock(&ctx->lock);
	ret = xa_alloc_cyclic(&ctx->regs, &id, reg,
			      XA_LIMIT(1, FXBLK_PEER_MAX_HANDLES),
			      &ctx->next_handle, GFP_KERNEL);
	if (ret >= 0) {
		reg->handle = id;
		spin_lock(&fxblk_peer_all_lock);
		list_add_tail(&reg->node, &fxblk_peer_all);
		spin_unlock(&fxblk_peer_all_lock);
		atomic64_inc(&fxblk_peer_nregs[reg->ops->id]);
		ret = 0;
	}
	mutex_unlock(&ctx->lock);
	return ret == -EBUSY ? -ENOSPC : ret;
}

static int fxblk_peer_ioc_register(struct fxblk_peer_ctx *ctx,
				   void __user *argp)
{
	struct fxblk_peer_register a;
	struct fxblk_peer_reg *reg;
	unsigned long flags;
	int ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	ret = fxblk_peer_check_register(&a);
	if (ret)
		return ret;
	reg = fxblk_peer_reg_alloc(ctx, &a);
	if (!reg)
		return -ENOMEM;
	if (a.provider == FXBLK_PEER_PROV_AUTO)
		ret = fxblk_peer_pin_auto(reg);
	else
		ret = fxblk_peer_pin(reg, a.provider);
	if (ret)
		goto out_free;
	/*
	 * Once added, another thread of the process may DEREGISTER the handle
	 * (ids are predictable) and drop the context's reference: hold one
	 * of our own while the reply is filled from @reg.
	 */
	kref_get(&reg->ref);
	ret = fxblk_peer_add(ctx, reg);
	if (ret) {
		fxblk_peer_reg_put(reg);
		goto out_unpin;
	}

	a.provider = reg->ops->id;
	a.handle = reg->handle;
	a.page_size = reg->page_size;
	a.out_flags = reg->caps;
	spin_lock_irqsave(&reg->lock, flags);	/* a revoke rewrites it */
	strscpy_pad(a.reason, reg->reason, sizeof(a.reason));
	spin_unlock_irqrestore(&reg->lock, flags);
	fxblk_peer_reg_put(reg);
	if (copy_to_user(argp, &a, sizeof(a)))
		return -EFAULT;	/* the handle stays; the context owns it */
	return 0;

out_unpin:
	fxblk_peer_unpin(reg);
out_free:
	fxblk_peer_reg_put(reg);
	return ret;
}

static int fxblk_peer_ioc_deregister(struct fxblk_peer_ctx *ctx,
				     void __user *argp)
{
	struct fxblk_peer_deregister a;
	struct fxblk_peer_reg *reg = NULL;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.abi != FXBLK_PEER_ABI)
		return -EPROTO;
	if (a.reserved0 || !fxblk_peer_zero(a.reserved, ARRAY_SIZE(a.reserved)))
		return -EINVAL;
	mutex_lock(&ctx->lock);
	if (a.handle && a.handle <= U32_MAX)
		reg = xa_erase(&ctx->regs, a.handle);
	mutex_unlock(&ctx->lock);
	if (!reg)
		return -ENOENT;
	fxblk_peer_shutdown(reg);
	fxblk_peer_reg_put(reg);	/* the context's */
	return 0;
}

static int fxblk_peer_ioc_query(struct fxblk_peer_ctx *ctx, void __user *argp)
{
	struct fxblk_peer_query in, a = { .abi = FXBLK_PEER_ABI };
	struct fxblk_peer_reg *reg;
	unsigned long flags;

	if (copy_from_user(&in, argp, offsetof(typeof(in), state)))
		return -EFAULT;
	if (in.abi != FXBLK_PEER_ABI)
		return -EPROTO;
	if (in.reserved0)
		return -EINVAL;
	reg = fxblk_peer_get(ctx, in.handle);
	if (!reg)
		return -ENOENT;
	a.handle = in.handle;
	spin_lock_irqsave(&reg->lock, flags);
	a.state = reg->revoked || reg->dead ? FXBLK_PEER_STATE_REVOKED :
					      FXBLK_PEER_STATE_ACTIVE;
	strscpy(a.reason, reg->reason, sizeof(a.reason));
	spin_unlock_irqrestore(&reg->lock, flags);
	a.provider = reg->ops->id;
	a.flags = reg->caps;
	a.inflight = atomic_read(&reg->inflight);
	a.addr = reg->addr;
	a.offset = reg->offset;
	a.len = reg->len;
	a.page_size = reg->page_size;
	a.pinned_bytes = READ_ONCE(reg->pinned) ? reg->len : 0;
	fxblk_peer_reg_put(reg);
	return copy_to_user(argp, &a, sizeof(a)) ? -EFAULT : 0;
}

/* The fxblk disk (or partition of one) open as @file, else NULL. */
static struct block_device *fxblk_peer_bdev(struct file *file)
{
	struct block_device *bdev;

	if (!S_ISBLK(file_inode(file)->i_mode))
		return NULL;
	bdev = I_BDEV(file->f_mapping->host);
	if (!bdev->bd_disk || bdev->bd_disk->major != fxblk_major)
		return NULL;
	return bdev;
}

static int fxblk_peer_check_rw(const struct fxblk_peer_rw *a)
{
	if (a->abi != FXBLK_PEER_ABI)
		return -EPROTO;
	if (a->reserved0 || !fxblk_peer_zero(a->reserved,
					     ARRAY_SIZE(a->reserved)))
		return -EINVAL;
	if (a->flags & ~FXBLK_PEER_RW_ALL || a->op > FXBLK_PEER_OP_WRITE)
		return -EINVAL;
	if (a->flags & FXBLK_PEER_RW_FUA && a->op != FXBLK_PEER_OP_WRITE)
		return -EINVAL;
	if (!(a->flags & FXBLK_PEER_RW_ASYNC) && (a->eventfd != -1 ||
						  a->user_data))
		return -EINVAL;
	if (a->eventfd < -1)
		return -EINVAL;
	if (!a->len || a->len > FXBLK_PEER_MAX_RW)
		return -EINVAL;
	return 0;
}

/* The range of @a against @reg and the disk @bdev. */
static int fxblk_peer_check_range(const struct fxblk_peer_rw *a,
				  const struct fxblk_peer_reg *reg,
				  struct block_device *bdev)
{
	unsigned int lbs = bdev_logical_block_size(bdev);
	u64 end;

	if (!IS_ALIGNED(a->buf_off | a->dev_off | a->len, lbs))
		return -EINVAL;
	if (check_add_overflow(a->buf_off, a->len, &end) || end > reg->len)
		return -EINVAL;
	if (check_add_overflow(a->dev_off, a->len, &end))
		return -EINVAL;
	if (end > (u64)fxblk_bdev_sectors(bdev) << SECTOR_SHIFT)
		return -ENOSPC;
	return 0;
}

/* Count an I/O on @reg unless it is out of service. */
static int fxblk_peer_start(struct fxblk_peer_reg *reg)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&reg->lock, flags);
	if (reg->dead)
		ret = -ENOENT;
	else if (reg->revoked)
		ret = -ENXIO;
	else
		atomic_inc(&reg->inflight);
	spin_unlock_irqrestore(&reg->lock, flags);
	return ret;
}

static void fxblk_peer_io_free(struct kref *ref)
{
	struct fxblk_peer_io *io = container_of(ref, struct fxblk_peer_io, ref);

	kfree(io);
}

/*
 * All bios of @io completed, its own pins released. The registration may
 * be freed as soon as its @inflight drops, so that is the last use of it.
 */
static void fxblk_peer_io_finish(struct fxblk_peer_io *io)
{
	struct fxblk_peer_reg *reg = io->reg;
	struct fxblk_peer_ctx *ctx = reg->ctx;
	struct eventfd_ctx *evfd = io->evfd;
	unsigned long flags;

	fput(io->file);
	if (io->async) {
		/* REAP may free @io as soon as it is queued. */
		spin_lock_irqsave(&ctx->cq_lock, flags);
		list_add_tail(&io->node, &ctx->cq);
		spin_unlock_irqrestore(&ctx->cq_lock, flags);
		wake_up_all(&ctx->cq_wait);
		if (evfd) {
			fxblk_eventfd_signal(evfd);
			eventfd_ctx_put(evfd);
		}
	} else {
		complete(&io->done);
		kref_put(&io->ref, fxblk_peer_io_free);
	}
	if (atomic_dec_and_test(&reg->inflight))
		wake_up_all(&fxblk_peer_idle);
}

/* Marking pages dirty takes the page lock: in process context. */
static void fxblk_peer_io_unpin_work(struct work_struct *work)
{
	struct fxblk_peer_io *io = container_of(work, struct fxblk_peer_io,
						unpin_work);

	unpin_user_pages_dirty_lock(io->pages, io->nr_pages, io->dirty);
	kvfree(io->pages);
	io->pages = NULL;
	fxblk_peer_io_finish(io);
}

/* All bios of @io completed (any context). */
static void fxblk_peer_io_done(struct fxblk_peer_io *io)
{
	if (io->pages) {
		INIT_WORK(&io->unpin_work, fxblk_peer_io_unpin_work);
		queue_work(fxblk_peer_wq, &io->unpin_work);
		return;
	}
	fxblk_peer_io_finish(io);
}

static void fxblk_peer_io_put(struct fxblk_peer_io *io)
{
	if (atomic_dec_and_test(&io->pending))
		fxblk_peer_io_done(io);
}

static void fxblk_peer_end_io(struct bio *bio)
{
	struct fxblk_peer_io *io = bio->bi_private;
	int error = blk_status_to_errno(bio->bi_status);

	if (error)
		cmpxchg(&io->error, 0, error);
	bio_put(bio);
	fxblk_peer_io_put(io);
}

static struct bio *fxblk_peer_bio_alloc(struct block_device *bdev,
					unsigned int nr_vecs, unsigned int op)
{
#ifdef FXBLK_HAVE_BIO_ALLOC_BIOSET_BDEV
	return bio_alloc(bdev, nr_vecs, op, GFP_KERNEL);
#else
	struct bio *bio = bio_alloc(GFP_KERNEL, nr_vecs);

	bio_set_dev(bio, bdev);
	bio->bi_opf = op;
	return bio;
#endif
}

/*
 * Bios over [buf_off, buf_off + len) of the registration's pages, to
 * dev_off of @bdev; the disk splits them at chunk and member boundaries.
 * bio_alloc() with a sleeping gfp does not fail.
 */
static void fxblk_peer_submit(struct fxblk_peer_io *io,
			      struct block_device *bdev,
			      const struct fxblk_peer_rw *a)
{
	struct fxblk_peer_reg *reg = io->reg;
	/* Writes as blkdev's O_DIRECT ones are: wbt does not throttle them. */
	unsigned int op = a->op == FXBLK_PEER_OP_WRITE ?
			  REQ_OP_WRITE | REQ_SYNC | REQ_IDLE : REQ_OP_READ;
	/* the registration's pages, or this RW's own from its first byte */
	struct page **pages = io->pages ? io->pages : reg->pages;
	u64 pos = io->pages ? offset_in_page(reg->addr + a->buf_off) :
			      reg->first_off + a->buf_off;
	u64 end = pos + a->len;
	sector_t sector = a->dev_off >> SECTOR_SHIFT;
	struct blk_plug plug;

	/* as blkdev sends O_DSYNC O_DIRECT writes: dio_bio_write_op() */
	if (a->flags & FXBLK_PEER_RW_FUA)
		op |= REQ_FUA;
	blk_start_plug(&plug);
	while (pos < end) {
		unsigned int nr = min_t(u64, BIO_MAX_VECS,
					fxblk_peer_pages_of(end) -
					(pos >> PAGE_SHIFT));
		struct bio *bio = fxblk_peer_bio_alloc(bdev, nr, op);

		bio->bi_iter.bi_sector = sector;
		bio->bi_private = io;
		bio->bi_end_io = fxblk_peer_end_io;
		while (pos < end) {
			unsigned int off = offset_in_page(pos);
			unsigned int n = min_t(u64, PAGE_SIZE - off, end - pos);

			if (bio_add_page(bio, pages[pos >> PAGE_SHIFT], n,
					 off) != n)
				break;
			pos += n;
		}
		if (WARN_ON_ONCE(!bio->bi_iter.bi_size)) {
			cmpxchg(&io->error, 0, -EIO);
			bio_put(bio);
			break;
		}
		sector += bio_sectors(bio);
		atomic_inc(&io->pending);
		submit_bio(bio);
	}
	blk_finish_plug(&plug);
}

/*
 * A host registration without pages holds PCI P2PDMA memory, which may not
 * be pinned long term (fxblk_peer_host.c): pin this RW's part of it now,
 * in the owning process, with FOLL_PCI_P2PDMA, as O_DIRECT does; unpinned
 * when the I/O completed.
 */
static int fxblk_peer_pin_io(struct fxblk_peer_io *io,
			     const struct fxblk_peer_reg *reg,
			     const struct fxblk_peer_rw *a)
{
#ifdef FXBLK_HAVE_FOLL_PCI_P2PDMA
	unsigned long start = (reg->addr + a->buf_off) & PAGE_MASK;
	unsigned long nr = DIV_ROUND_UP(reg->addr + a->buf_off + a->len -
					start, PAGE_SIZE);
	unsigned int gup = FOLL_PCI_P2PDMA;
	long got;

	if (reg->pages || reg->ops->id != FXBLK_PEER_PROV_HOST)
		return 0;
	io->dirty = a->op == FXBLK_PEER_OP_READ;
	if (io->dirty)
		gup |= FOLL_WRITE;
	/* at most FXBLK_PEER_MAX_RW / PAGE_SIZE + 1 pages */
	io->pages = kvmalloc_array(nr, sizeof(*io->pages), GFP_KERNEL);
	if (!io->pages)
		return -ENOMEM;
	while (io->nr_pages < nr) {
		got = pin_user_pages_fast(start + io->nr_pages * PAGE_SIZE,
					  nr - io->nr_pages, gup,
					  io->pages + io->nr_pages);
		if (got <= 0) {
			unpin_user_pages(io->pages, io->nr_pages);
			kvfree(io->pages);
			io->pages = NULL;
			return got ? got : -EFAULT;
		}
		io->nr_pages += got;
	}
#endif
	return 0;
}

/* Undo fxblk_peer_start() for an I/O that was never submitted. */
static void fxblk_peer_stop(struct fxblk_peer_reg *reg)
{
	if (atomic_dec_and_test(&reg->inflight))
		wake_up_all(&fxblk_peer_idle);
}

static int fxblk_peer_io_setup(struct fxblk_peer_ctx *ctx,
			       struct fxblk_peer_io *io,
			       const struct fxblk_peer_rw *a)
{
	kref_init(&io->ref);
	atomic_set(&io->pending, 1);
	init_completion(&io->done);
	io->async = a->flags & FXBLK_PEER_RW_ASYNC;
	io->user_data = a->user_data;
	io->len = a->len;
	if (!io->async)
		return 0;
	if (a->eventfd >= 0) {
		io->evfd = eventfd_ctx_fdget(a->eventfd);
		if (IS_ERR(io->evfd))
			return PTR_ERR(io->evfd);
	}
	if (atomic_inc_return(&ctx->nr_async) > FXBLK_PEER_MAX_ASYNC) {
		atomic_dec(&ctx->nr_async);
		if (io->evfd)
			eventfd_ctx_put(io->evfd);
		return -EAGAIN;
	}
	return 0;
}

/* Checks of the registration for this RW, before any I/O is counted. */
static int fxblk_peer_check_reg(const struct fxblk_peer_reg *reg,
				const struct fxblk_peer_rw *a)
{
	/* Racy, so fxblk_peer_start() checks again; first for its errno. */
	if (READ_ONCE(reg->revoked))
		return -ENXIO;
	/* DMA-only memory moves only over peer queues, synchronously */
	if (!(reg->caps & FXBLK_PEER_F_DIRECT) &&
	    (!(reg->caps & FXBLK_PEER_F_PEERQ) ||
	     a->flags & FXBLK_PEER_RW_ASYNC))
		return -EREMOTEIO;
	if (a->op == FXBLK_PEER_OP_READ &&
	    reg->reg_flags & FXBLK_PEER_REG_READONLY)
		return -EROFS;
	return 0;
}

/* The fxN disk of @a->fd, opened for the direction of the op. */
static struct file *fxblk_peer_disk_file(const struct fxblk_peer_rw *a,
					 struct block_device **bdevp)
{
	fmode_t need = a->op == FXBLK_PEER_OP_WRITE ? FMODE_WRITE : FMODE_READ;
	struct file *file = fget(a->fd);

	if (!file)
		return ERR_PTR(-EBADF);
	*bdevp = fxblk_peer_bdev(file);
	if (!*bdevp) {
		fput(file);
		return ERR_PTR(-ENOTBLK);
	}
	if (!(file->f_mode & need)) {
		fput(file);
		return ERR_PTR(-EBADF);
	}
	return file;
}

/*
 * As blkdev_write_iter() (5.10 to 7.3): a read-only disk (BLKROSET, or
 * the disk's own read-only flag) refuses writes with EPERM, an active
 * swap device with ETXTBSY.
 */
static int fxblk_peer_may_write(struct file *file, struct block_device *bdev)
{
	if (bdev_read_only(bdev))
		return -EPERM;
	if (IS_SWAPFILE(file->f_mapping->host))
		return -ETXTBSY;
	return 0;
}

/*
 * The disk's page cache around an RW, as O_DIRECT on a block device keeps
 * it: blkdev_read_iter() (filemap_write_and_wait_range(); on 6.12
 * kiocb_write_and_wait()) and generic_file_direct_write() on 5.10/6.1,
 * blkdev_direct_write() with kiocb_invalidate_pages() on 6.12:
 * dirty cached blocks of the range are written out first, so that a READ
 * sees them and they cannot overwrite a WRITE later; for a WRITE the
 * cached pages are dropped, so buffered readers see the new data. -EBUSY:
 * a page could not be dropped (mapped and dirtied again meanwhile).
 */
static int fxblk_peer_cache_before(struct file *file,
				   const struct fxblk_peer_rw *a)
{
	struct address_space *mapping = file->f_mapping;
	loff_t end = a->dev_off + a->len - 1;
	int ret;

	ret = filemap_write_and_wait_range(mapping, a->dev_off, end);
	if (ret || a->op != FXBLK_PEER_OP_WRITE)
		return ret;
	return invalidate_inode_pages2_range(mapping, a->dev_off >> PAGE_SHIFT,
					     end >> PAGE_SHIFT);
}

/*
 * After a synchronous WRITE, again: clean pages a buffered reader brought
 * in while it ran (kiocb_invalidate_post_direct_write() 6.12, the same in
 * generic_file_direct_write() before). Like blkdev, not after async ones.
 */
static void fxblk_peer_cache_after(struct file *file,
				   const struct fxblk_peer_rw *a)
{
	struct address_space *mapping = file->f_mapping;

	if (mapping->nrpages &&
	    invalidate_inode_pages2_range(mapping, a->dev_off >> PAGE_SHIFT,
					  (a->dev_off + a->len - 1) >>
					  PAGE_SHIFT))
		pr_warn_ratelimited("page cache of %pg not invalidated after a peer write: buffered readers may see stale data\n",
				    I_BDEV(mapping->host));
}

static int fxblk_peer_ioc_rw(struct fxblk_peer_ctx *ctx, void __user *argp)
{
	struct fxblk_peer_rw a;
	struct fxblk_peer_reg *reg;
	struct fxblk_peer_io *io;
	struct block_device *bdev;
	struct file *file;
	int ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	ret = fxblk_peer_check_rw(&a);
	if (ret)
		return ret;
	reg = fxblk_peer_get(ctx, a.handle);
	if (!reg)
		return -ENOENT;
	ret = fxblk_peer_check_reg(reg, &a);
	if (ret)
		goto out_reg;
	file = fxblk_peer_disk_file(&a, &bdev);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_reg;
	}
	ret = fxblk_peer_check_range(&a, reg, bdev);
	if (!ret && a.op == FXBLK_PEER_OP_WRITE)
		ret = fxblk_peer_may_write(file, bdev);
	if (!ret)
		ret = fxblk_peer_cache_before(file, &a);
	if (ret)
		goto out_file;
	io = kzalloc(sizeof(*io), GFP_KERNEL);
	if (!io) {
		ret = -ENOMEM;
		goto out_file;
	}
	ret = fxblk_peer_io_setup(ctx, io, &a);
	if (ret)
		goto out_io;
	ret = fxblk_peer_start(reg);
	if (ret)
		goto out_async;
	ret = fxblk_peer_pin_io(io, reg, &a);
	if (ret) {
		fxblk_peer_stop(reg);
		goto out_async;
	}
	/*
	 * A synchronous RW of pinned pages or of DMA-only memory a provider
	 * maps for NICs goes over fxblk's own NVMe-oF queues to the members
	 * when the volume has them (fxblk_peerq.c); -EOPNOTSUPP: it does
	 * not, the bios below carry the pages, and DMA-only memory is
	 * refused as without peer queues.
	 */
	if (!io->async && (reg->pages || reg->caps & FXBLK_PEER_F_PEERQ)) {
		ret = fxblk_peerq_rw(bdev, reg, reg->pages ?
				     reg->first_off + a.buf_off : a.buf_off,
				     a.dev_off, a.len,
				     a.op == FXBLK_PEER_OP_WRITE,
				     a.flags & FXBLK_PEER_RW_FUA);
		if (ret == -EOPNOTSUPP && !reg->pages)
			ret = -EREMOTEIO;
		if (ret != -EOPNOTSUPP) {
			fxblk_peer_stop(reg);
			kfree(io);
			if (!ret && a.op == FXBLK_PEER_OP_WRITE)
				fxblk_peer_cache_after(file, &a);
			goto out_file;
		}
	}

	/* From here the I/O owns the file and, by @inflight, the pages. */
	io->reg = reg;
	io->file = file;
	if (!io->async) {
		kref_get(&io->ref);	/* the waiter's */
		get_file(file);		/* for fxblk_peer_cache_after() */
	}
	fxblk_peer_submit(io, bdev, &a);
	fxblk_peer_io_put(io);
	if (!io->async) {
		/* Killed: the I/O finishes on its own; @inflight holds the pages. */
		if (wait_for_completion_killable(&io->done))
			ret = -EINTR;
		else
			ret = io->error;
		kref_put(&io->ref, fxblk_peer_io_free);
		if (!ret && a.op == FXBLK_PEER_OP_WRITE)
			fxblk_peer_cache_after(file, &a);
		fput(file);
	}
	fxblk_peer_reg_put(reg);
	return ret;

out_async:
	if (io->async) {
		atomic_dec(&ctx->nr_async);
		if (io->evfd)
			eventfd_ctx_put(io->evfd);
	}
out_io:
	kfree(io);
out_file:
	fput(file);
out_reg:
	fxblk_peer_reg_put(reg);
	return ret;
}

static int fxblk_peer_reap_wait(struct fxblk_peer_ctx *ctx)
{
	return wait_event_killable(ctx->cq_wait,
				   !list_empty_careful(&ctx->cq) ||
				   !atomic_read(&ctx->nr_async));
}

static int fxblk_peer_ioc_reap(struct fxblk_peer_ctx *ctx, void __user *argp)
{
	struct fxblk_peer_reap *a;
	struct fxblk_peer_io *io, *tmp;
	LIST_HEAD(done);
	int ret = 0;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	if (copy_from_user(a, argp, offsetof(typeof(*a), c))) {
		ret = -EFAULT;
		goto out;
	}
	if (a->abi != FXBLK_PEER_ABI) {
		ret = -EPROTO;
		goto out;
	}
	if (a->count || a->flags & ~FXBLK_PEER_REAP_ALL || !a->max ||
	    a->max > FXBLK_PEER_REAP_MAX ||
	    !fxblk_peer_zero(a->reserved, ARRAY_SIZE(a->reserved))) {
		ret = -EINVAL;
		goto out;
	}
	if (a->flags & FXBLK_PEER_REAP_WAIT) {
		ret = fxblk_peer_reap_wait(ctx);
		if (ret)
			goto out;
	}
	spin_lock_irq(&ctx->cq_lock);
	list_for_each_entry_safe(io, tmp, &ctx->cq, node) {
		if (a->count == a->max)
			break;
		list_move_tail(&io->node, &done);
		a->c[a->count].user_data = io->user_data;
		a->c[a->count].result = io->error ? io->error : io->len;
		a->count++;
	}
	spin_unlock_irq(&ctx->cq_lock);
	list_for_each_entry_safe(io, tmp, &done, node) {
		atomic_dec(&ctx->nr_async);
		kref_put(&io->ref, fxblk_peer_io_free);
	}
	if (copy_to_user(argp, a, sizeof(*a)))
		ret = -EFAULT;	/* the completions are lost */
out:
	kfree(a);
	return ret;
}

static int fxblk_peer_open(struct inode *inode, struct file *file)
{
	struct fxblk_peer_ctx *ctx;

	if (!current->mm)
		return -EPERM;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->mm = current->mm;
	mmgrab(ctx->mm);
	mutex_init(&ctx->lock);
	xa_init_flags(&ctx->regs, XA_FLAGS_ALLOC1);
	spin_lock_init(&ctx->cq_lock);
	INIT_LIST_HEAD(&ctx->cq);
	init_waitqueue_head(&ctx->cq_wait);
	file->private_data = ctx;
	return 0;
}

/*
 * The last close, also at process exit: every handle is taken out of
 * service (waiting for its I/O) and unpinned; unreaped completions go.
 */
static int fxblk_peer_release(struct inode *inode, struct file *file)
{
	struct fxblk_peer_ctx *ctx = file->private_data;
	struct fxblk_peer_reg *reg;
	struct fxblk_peer_io *io, *tmp;
	unsigned long index;

	xa_for_each(&ctx->regs, index, reg) {
		xa_erase(&ctx->regs, index);
		fxblk_peer_shutdown(reg);
		fxblk_peer_reg_put(reg);
	}
	xa_destroy(&ctx->regs);
	list_for_each_entry_safe(io, tmp, &ctx->cq, node)
		kref_put(&io->ref, fxblk_peer_io_free);
	mmdrop(ctx->mm);
	kfree(ctx);
	return 0;
}

static long fxblk_peer_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct fxblk_peer_ctx *ctx = file->private_data;
	void __user *argp = (void __user *)arg;

	/* Handles name pinned memory of one mm; they mean nothing elsewhere. */
	if (current->mm != ctx->mm)
		return -EPERM;
	switch (cmd) {
	case FXBLK_PEER_IOC_PROVIDERS:
		return fxblk_peer_ioc_providers(argp);
	case FXBLK_PEER_IOC_REGISTER:
		return fxblk_peer_ioc_register(ctx, argp);
	case FXBLK_PEER_IOC_DEREGISTER:
		return fxblk_peer_ioc_deregister(ctx, argp);
	case FXBLK_PEER_IOC_RW:
		return fxblk_peer_ioc_rw(ctx, argp);
	case FXBLK_PEER_IOC_REAP:
		return fxblk_peer_ioc_reap(ctx, argp);
	case FXBLK_PEER_IOC_QUERY:
		return fxblk_peer_ioc_query(ctx, argp);
	}
	return -ENOTTY;
}

static const struct file_operations fxblk_peer_fops = {
	.owner = THIS_MODULE,
	.open = fxblk_peer_open,
	.release = fxblk_peer_release,
	.unlocked_ioctl = fxblk_peer_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice fxblk_peer_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "fxblk-peer",
	.fops = &fxblk_peer_fops,
	.mode = 0666,
};

int fxblk_peer_init(void)
{
	int ret;

	fxblk_peer_wq = alloc_workqueue("fxblk_peer", WQ_UNBOUND, 0);
	if (!fxblk_peer_wq)
		return -ENOMEM;
	ret = misc_register(&fxblk_peer_misc);
	if (ret) {
		destroy_workqueue(fxblk_peer_wq);
		return ret;
	}
	/*
	 * DMA-address-only memory is mapped for this device while no member
	 * NIC can take it (research §5b): a 64-bit mask, so dma-direct
	 * mapping works and gives bus addresses.
	 */
	fxblk_peer_misc.this_device->dma_mask = &fxblk_peer_dma_mask;
	fxblk_peer_misc.this_device->coherent_dma_mask = DMA_BIT_MASK(64);
	return 0;
}

/* No context is open here: each holds a module reference (fops.owner). */
void fxblk_peer_exit(void)
{
	misc_deregister(&fxblk_peer_misc);
	destroy_workqueue(fxblk_peer_wq);
}
