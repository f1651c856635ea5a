// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk_rocm.ko: peer-memory provider "rocm", AMD GPU memory through
 * amdkfd's amd_rdma interface (amdkfd_query_rdma_interface()), which only
 * amdgpu-dkms (ROCK-Kernel-Driver) has; upstream amdgpu has none. It yields
 * an sg_table of DMA addresses and no struct pages, so the memory cannot
 * go into a bio: the block path refuses it (FXBLK_PEER_IOC_RW: EREMOTEIO)
 * and libfxio stages it. With v2, whose get_pages() maps for a device we
 * name, fxblk's peer queues (fxblk_peerq.c) move it: ->map asks kfd for a
 * mapping for each member's RDMA NIC, as an RDMA driver's peer-memory
 * client does, and the NIC reads and writes the VRAM itself.
 *
 * The interface has no run-time version: the API major comes from the
 * vendor's drm/amd_rdma.h this module is built against, and v1 and v2
 * differ in get_pages()' prototype (v2 added dma_dev) and in lifetime:
 *
 * - v1 (AMD_RDMA_MAJOR undefined, ROCm <= 4.1; ROCm/ROCK-Kernel-Driver
 *   drivers/gpu/drm/amd/amdkfd/kfd_rdma.c at cd5f0360):
 *   run_rdma_free_callback() calls our free callback and then
 *   put_pages_helper(), which kfree()s the amd_p2p_info: after the
 *   callback we must never call put_pages (AMD's own PeerDirect client,
 *   kfd_peerdirect.c of that tree, sets free_callback_called and skips it).
 *   put_pages() looks the process up again by the pid it was given.
 * - v2 (AMD_RDMA_MAJOR 2, ROCm >= 4.2; kfd_peerdirect.c, "AMD RDMA
 *   wrapper" rdma_get_pages()/rdma_put_pages()): stores the callback and
 *   never calls it; the BO stays referenced (amdgpu_amdkfd_gpuvm_get_bo_ref)
 *   and pinned until put_pages, whatever the application frees meanwhile.
 *
 * kfd finds the process with get_pid_task(pid, PIDTYPE_PID) and its mm
 * (kfd_process.c kfd_lookup_process_by_pid()), so it is given the
 * thread-group id's pid: a registering thread may exit before the unpin.
 */
#include <linux/device.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <drm/amd_rdma.h>

#include "fxblk_peer_vendor.h"

#if !defined(AMD_RDMA_MAJOR)
#define FXBLK_AMD_RDMA_API	1	/* "1.0 ... AMD_RDMA_MAJOR/MINOR undefined" */
#elif AMD_RDMA_MAJOR == 2
#define FXBLK_AMD_RDMA_API	2
#else
#error "fxblk_rocm: unknown amd_rdma API major in drm/amd_rdma.h (known: 1, 2)"
#endif

struct fxblk_rocm_pin {
	spinlock_t lock;	/* @reg, @freed against kfd's callback */
	struct fxblk_peer_reg *reg;	/* NULL: orphan, kfd's to call back */
	struct amd_p2p_info *info;
	struct pid *pid;
	bool freed;		/* kfd freed @info after our callback */
};

static const struct amd_rdma_interface *fxblk_rocm_rdma;

static void fxblk_rocm_free(struct fxblk_rocm_pin *p)
{
	put_pid(p->pid);
	kfree(p);
}

/*
 * kfd's free callback: v1 frees @info as soon as we return; v2 never calls
 * it. Were a later kfd to call it, not putting leaks one mapping where
 * putting could free twice. An orphan (see fxblk_rocm_unpin()) is freed
 * here, with the module reference it held for this call.
 */
static void fxblk_rocm_free_callback(void *priv)
{
	struct fxblk_rocm_pin *p = priv;
	struct fxblk_peer_reg *reg;
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->freed = true;
	reg = p->reg;
	spin_unlock_irqrestore(&p->lock, flags);
	if (reg) {
		fxblk_peer_revoke(reg);
		return;
	}
	fxblk_rocm_free(p);
	module_put(THIS_MODULE);
}

static int fxblk_rocm_get_pages(struct fxblk_peer_reg *reg,
				struct fxblk_rocm_pin *p)
{
	const struct amd_rdma_interface *rdma = fxblk_rocm_rdma;

#if FXBLK_AMD_RDMA_API == 1
	return rdma->get_pages(reg->addr, reg->len, p->pid, &p->info,
			       fxblk_rocm_free_callback, p);
#else
	return rdma->get_pages(reg->addr, reg->len, p->pid,
			       fxblk_peer_dma_dev(), &p->info,
			       fxblk_rocm_free_callback, p);
#endif
}

/* Fills @p->info; -EFAULT if the range is not GPU memory of ours. */
static int fxblk_rocm_pin_range(struct fxblk_peer_reg *reg,
				struct fxblk_rocm_pin *p)
{
	const struct amd_rdma_interface *rdma = fxblk_rocm_rdma;
	unsigned long page_size = 0;
	int ret;

	if (rdma->is_gpu_address(reg->addr, p->pid) != 1)
		return -EFAULT;
	ret = rdma->get_page_size(reg->addr, reg->len, p->pid, &page_size);
	if (ret)
		return ret;
	/* The memory must be pinnable in whole pages of the GPU. */
	if (!page_size || !IS_ALIGNED(reg->addr | reg->len, page_size))
		return -EINVAL;
	ret = fxblk_rocm_get_pages(reg, p);
	/* v1: -EINVAL for no BO; v2: -ESRCH, or 0 and no info (no BO). */
	if (ret == -EINVAL || ret == -ESRCH || (!ret && !p->info))
		return -EFAULT;
	if (ret)
		return ret;
	if (!p->info->pages || p->info->size < reg->len) {
		rdma->put_pages(&p->info);
		return -EIO;
	}
	reg->page_size = page_size;
	return 0;
}

static int fxblk_rocm_pin(struct fxblk_peer_reg *reg)
{
	struct fxblk_rocm_pin *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	spin_lock_init(&p->lock);
	p->reg = reg;
	p->pid = get_task_pid(current, PIDTYPE_TGID);
	ret = fxblk_rocm_pin_range(reg, p);
	if (ret) {
		fxblk_rocm_free(p);
		return ret;
	}
	reg->priv = p;
	return 0;
}

/*
 * v1's put_pages() finds the process again by its pid, and fails once the
 * process has gone through exit_mm (kfd forgot it), which is before its
 * files, and so this unpin, are released; kfd then frees the memory and
 * calls our callback later, from its own process teardown. The pin becomes
 * an orphan: detached from @reg (freed after we return) and freed by that
 * callback, holding a reference to this module until then.
 */
static void fxblk_rocm_orphan(struct fxblk_rocm_pin *p, int err)
{
	unsigned long flags;
	bool freed;

	__module_get(THIS_MODULE);
	spin_lock_irqsave(&p->lock, flags);
	freed = p->freed;
	p->reg = NULL;
	spin_unlock_irqrestore(&p->lock, flags);
	if (freed) {		/* the callback came in between */
		fxblk_rocm_free(p);
		module_put(THIS_MODULE);
		return;
	}
	pr_info_ratelimited("fxblk_rocm: amd_rdma put_pages: %d; kfd frees the range at its process teardown\n",
			    err);
}

/*
 * After all I/O, once. Nothing is put after v1's callback. That callback
 * and this put can still race inside kfd (put_pages_helper() takes no
 * lock); AMD's own client has the same window, the interface offers
 * nothing to close it.
 */
static void fxblk_rocm_unpin(struct fxblk_peer_reg *reg)
{
	struct fxblk_rocm_pin *p = reg->priv;
	int ret = 0;

	reg->priv = NULL;
	if (!READ_ONCE(p->freed))
		ret = fxblk_rocm_rdma->put_pages(&p->info);
	if (ret && FXBLK_AMD_RDMA_API == 1) {
		fxblk_rocm_orphan(p, ret);
		return;
	}
	if (ret)
		pr_warn_ratelimited("fxblk_rocm: amd_rdma put_pages: %d\n", ret);
	fxblk_rocm_free(p);
}

#if FXBLK_AMD_RDMA_API == 2
/* One more get_pages() of a pinned range, mapped for a NIC's device. */
struct fxblk_rocm_map {
	struct amd_p2p_info *info;
	struct fxblk_peer_reg *reg;
};

/* v2 never calls it (see the top); were a later kfd to, revoke. */
static void fxblk_rocm_map_callback(void *priv)
{
	struct fxblk_rocm_map *m = priv;

	fxblk_peer_revoke(m->reg);
}

/*
 * kfd_peerdirect.c rdma_get_pages() pins the BO and maps it for @dev
 * (amdgpu_amdkfd_gpuvm_pin_bo(), amdgpu_amdkfd_gpuvm_get_sg_table(...,
 * dma_dev)), which is what a NIC needs to reach the VRAM: P2P through the
 * PCIe switch or root complex, the IOMMU in between if there is one.
 */
static int fxblk_rocm_map(struct fxblk_peer_reg *reg, struct device *dev,
			  struct sg_table **sgt, void **cookie)
{
	struct fxblk_rocm_pin *p = reg->priv;
	struct fxblk_rocm_map *m;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->reg = reg;
	ret = fxblk_rocm_rdma->get_pages(reg->addr, reg->len, p->pid, dev,
					 &m->info, fxblk_rocm_map_callback, m);
	/* 0 without an info: the BO went (v2's amd_acquire() found none) */
	if (!ret && !m->info)
		ret = -EFAULT;
	if (!ret && (!m->info->pages || m->info->size < reg->len)) {
		fxblk_rocm_rdma->put_pages(&m->info);
		ret = -EIO;
	}
	if (ret) {
		kfree(m);
		return ret;
	}
	*sgt = m->info->pages;
	*cookie = m;
	return 0;
}

static void fxblk_rocm_unmap(struct fxblk_peer_reg *reg, void *cookie)
{
	struct fxblk_rocm_map *m = cookie;
	int ret = fxblk_rocm_rdma->put_pages(&m->info);

	if (ret)
		pr_warn_ratelimited("fxblk_rocm: amd_rdma put_pages of a NIC mapping: %d\n",
				    ret);
	kfree(m);
}
#endif

static const struct fxblk_peer_ops fxblk_rocm_ops = {
	.name = "rocm",
	.owner = THIS_MODULE,
	.id = FXBLK_PEER_PROV_ROCM,
	.caps = FXBLK_PEER_F_DMA_ONLY |
		(FXBLK_AMD_RDMA_API == 1 ? FXBLK_PEER_F_REVOCABLE : 0),
	.not_direct = FXBLK_AMD_RDMA_API == 2 ? FXBLK_PEER_NOT_DIRECT_PEERQ :
						FXBLK_PEER_NOT_DIRECT_DMA,
	.pin = fxblk_rocm_pin,
	.unpin = fxblk_rocm_unpin,
#if FXBLK_AMD_RDMA_API == 2
	.map = fxblk_rocm_map,
	.unmap = fxblk_rocm_unmap,
#endif
};

static int __init fxblk_rocm_check(void)
{
	const struct amd_rdma_interface *rdma = NULL;
	int ret = amdkfd_query_rdma_interface(&rdma);

	if (ret || !rdma || !rdma->get_pages || !rdma->put_pages ||
	    !rdma->is_gpu_address || !rdma->get_page_size) {
		pr_err("fxblk_rocm: amdkfd_query_rdma_interface: error %d or an incomplete interface\n",
		       ret);
		return ret ? ret : -ENODEV;
	}
	fxblk_rocm_rdma = rdma;
	pr_info("fxblk_rocm: amd_rdma API v%d\n", FXBLK_AMD_RDMA_API);
	return 0;
}

static int __init fxblk_rocm_init(void)
{
	int ret = fxblk_rocm_check();

	return ret ? ret : fxblk_peer_register_provider(&fxblk_rocm_ops);
}

static void __exit fxblk_rocm_exit(void)
{
	fxblk_peer_unregister_provider(&fxblk_rocm_ops);
}

module_init(fxblk_rocm_init);
module_exit(fxblk_rocm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fxblk peer memory: AMD GPU memory through amdkfd amd_rdma");
MODULE_INFO(amd_rdma_api, __stringify(FXBLK_AMD_RDMA_API));
