// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "rocm": AMD GPU memory through amdkfd's
 * amd_rdma interface v2 (amdkfd_query_rdma_interface), the one RDMA peer
 * clients use. It yields an sg_table of DMA addresses for a device and no
 * struct pages, so the memory is pinned, counted and revocable here but
 * staged by libfxio (FXBLK_PEER_IOC_RW: EREMOTEIO). VRAM that amdgpu
 * exposes as PCI P2PDMA pages (kfd_ais) needs no provider: it is O_DIRECT
 * I/O on /dev/fxN with the buffer's address.
 *
 * The symbol is taken with symbol_get() per registration and held until
 * the unpin, so amdgpu cannot go away under a pinned range. Since 6.6
 * symbol_get() finds EXPORT_SYMBOL_GPL symbols only; the probe says so.
 */
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "fxblk_peer.h"
#include "fxblk_peer_vendor.h"

struct fxblk_peer_rocm {
	const struct amd_rdma_interface *rdma;
	struct amd_p2p_info *info;
	struct pid *pid;
};

/* The interface, with a reference on its module; NULL and @why if none. */
static const struct amd_rdma_interface *fxblk_peer_rocm_get(char *why,
							    size_t len)
{
	int (*query)(const struct amd_rdma_interface **rdma);
	const struct amd_rdma_interface *rdma = NULL;
	int ret;

	query = symbol_get(amdkfd_query_rdma_interface);
	if (!query) {
		strscpy(why, "amdkfd_query_rdma_interface not exported (GPL): amdgpu/ROCm kfd not loaded",
			len);
		return NULL;
	}
	ret = query(&rdma);
	if (ret || !rdma || !rdma->get_pages || !rdma->put_pages ||
	    !rdma->is_gpu_address || !rdma->get_page_size) {
		snprintf(why, len,
			 "amdkfd_query_rdma_interface: error %d or incomplete amd_rdma v2 interface",
			 ret);
		symbol_put(amdkfd_query_rdma_interface);
		return NULL;
	}
	return rdma;
}

static int fxblk_peer_rocm_probe(char *why, size_t len)
{
	if (!fxblk_peer_rocm_get(why, len))
		return -ENODEV;
	symbol_put(amdkfd_query_rdma_interface);
	return 0;
}

/* Fills @p->info; -EFAULT if the range is not GPU memory of ours. */
static int fxblk_peer_rocm_get_pages(struct fxblk_peer_reg *reg,
				     struct fxblk_peer_rocm *p)
{
	unsigned long page_size = 0;
	int ret;

	if (!p->rdma->is_gpu_address(reg->addr, p->pid))
		return -EFAULT;
	ret = p->rdma->get_page_size(reg->addr, reg->len, p->pid, &page_size);
	if (ret)
		return ret;
	/* The memory must be pinnable in whole pages of the GPU. */
	if (!page_size || !IS_ALIGNED(reg->addr | reg->len, page_size))
		return -EINVAL;
	ret = p->rdma->get_pages(reg->addr, reg->len, p->pid,
				 fxblk_peer_dma_dev(), &p->info,
				 fxblk_peer_revoke, reg);
	if (ret)
		return ret == -EINVAL ? -EFAULT : ret;
	if (!p->info || !p->info->pages || p->info->size < reg->len) {
		if (p->info)
			p->rdma->put_pages(&p->info);
		return -EIO;
	}
	reg->page_size = page_size;
	return 0;
}

static int fxblk_peer_rocm_pin(struct fxblk_peer_reg *reg)
{
	char why[FXBLK_PEER_REASON_LEN];
	struct fxblk_peer_rocm *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->rdma = fxblk_peer_rocm_get(why, sizeof(why));
	if (!p->rdma) {
		ret = -ENODEV;
		goto out_free;
	}
	/* kfd finds the process by its pid, as amdp2p passes it. */
	p->pid = get_task_pid(current, PIDTYPE_PID);
	ret = fxblk_peer_rocm_get_pages(reg, p);
	if (ret)
		goto out_put;
	reg->priv = p;
	return 0;

out_put:
	put_pid(p->pid);
	symbol_put(amdkfd_query_rdma_interface);
out_free:
	kfree(p);
	return ret;
}

/* Also after the free callback: kfd then frees what it still holds. */
static void fxblk_peer_rocm_unpin(struct fxblk_peer_reg *reg)
{
	struct fxblk_peer_rocm *p = reg->priv;

	p->rdma->put_pages(&p->info);
	put_pid(p->pid);
	symbol_put(amdkfd_query_rdma_interface);
	kfree(p);
	reg->priv = NULL;
}

const struct fxblk_peer_ops fxblk_peer_rocm_ops = {
	.name = "rocm",
	.id = FXBLK_PEER_PROV_ROCM,
	.caps = FXBLK_PEER_F_DMA_ONLY | FXBLK_PEER_F_REVOCABLE,
	.not_direct = FXBLK_PEER_NOT_DIRECT_DMA,
	.probe = fxblk_peer_rocm_probe,
	.pin = fxblk_peer_rocm_pin,
	.unpin = fxblk_peer_rocm_unpin,
};
