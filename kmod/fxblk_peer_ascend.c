// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk_ascend.ko: peer-memory provider "ascend", Huawei NPU memory through
 * the Ascend driver's hal_kernel_p2p_get_pages()/put_pages(). It yields
 * physical addresses of device memory (MMIO, no struct pages), so the
 * memory cannot go into a bio: the block path refuses it (FXBLK_PEER_IOC_RW:
 * EREMOTEIO) and libfxio stages it. fxblk's peer queues (fxblk_peerq.c)
 * move it: ->map maps the pages for each member's RDMA NIC with
 * dma_map_resource(), as for any PCI peer's MMIO, and the NIC reads and
 * writes the HBM itself.
 *
 * The driver's behaviour, from CANN driver src/sdk_driver/svm/v2/master/
 * pmaster/svm_master_query.c and src/sdk_driver/inc/ascend_kernel_hal.h
 * (verylucky01/driver at aff95158):
 * - get_pages looks the process up by current->tgid: it is called from
 *   REGISTER, in the owner (-ESRCH: no NPU process; -EINVAL: not an SVM
 *   address; -EOPNOTSUPP: NPU memory it will not hand out: a VA not
 *   aligned to the heap's page size, 2 MiB on a huge-page heap, IPC or
 *   imported or read-only memory; -EPERM: the driver is unloading);
 * - the table has version P2P_GET_PAGE_VERSION (0x1) and covers the range
 *   rounded out to page_size (4 KiB, or the huge page size);
 * - on free (aclrtFree, process exit) the free callback runs under the
 *   driver's p2p lock, then the callback is cleared but the table is kept
 *   until put_pages, which must therefore still be called after a
 *   callback, and never from inside it (fxblk_peer_revoke() defers it);
 * - once the callback returned the memory must no longer be used (the
 *   header's note 4): fxblk_peer_revoke() returns only after the peer
 *   queues' commands on it completed or their queue pairs were stopped.
 */
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/types.h>
#include <ascend_kernel_hal.h>

#include "fxblk_peer_vendor.h"

#ifndef P2P_GET_PAGE_VERSION
#error "fxblk_ascend: ascend_kernel_hal.h defines no P2P_GET_PAGE_VERSION"
#endif

/* The driver's v1 table; another version is refused at REGISTER. */
#define FXBLK_ASCEND_TABLE_VERSION	0x1

/* The table must cover the range with pages of one power-of-2 size. */
static int fxblk_ascend_check(const struct fxblk_peer_reg *reg,
			      const struct p2p_page_table *t)
{
	u64 need;

	if (t->version != FXBLK_ASCEND_TABLE_VERSION) {
		pr_warn_ratelimited("fxblk_ascend: page table version %#x, not %#x\n",
				    t->version, FXBLK_ASCEND_TABLE_VERSION);
		return -EPROTO;
	}
	if (!t->pages_info || t->page_size < SZ_4K ||
	    !is_power_of_2(t->page_size))
		return -EIO;
	/* rounded out as the driver does: from the page holding addr */
	need = reg->len + (reg->addr & (t->page_size - 1));
	if (t->page_num > U64_MAX / t->page_size ||
	    t->page_num * t->page_size < need)
		return -EIO;
	return 0;
}

/* -EFAULT: not NPU memory of this process, so AUTO tries the next. */
static int fxblk_ascend_errno(int ret)
{
	if (ret == -EINVAL || ret == -ESRCH)
		return -EFAULT;
	if (ret == -EPERM)
		return -ENODEV;
	return ret;
}

static int fxblk_ascend_pin(struct fxblk_peer_reg *reg)
{
	struct p2p_page_table *table = NULL;
	int ret;

	ret = hal_kernel_p2p_get_pages(reg->addr, reg->len, fxblk_peer_revoke,
				       reg, &table);
	if (ret)
		return fxblk_ascend_errno(ret);
	if (!table)
		return -EIO;
	ret = fxblk_ascend_check(reg, table);
	if (ret) {
		hal_kernel_p2p_put_pages(table);
		return ret;
	}
	reg->page_size = table->page_size;
	reg->priv = table;
	return 0;
}

/* Also after the free callback: the driver keeps the table until now. */
static void fxblk_ascend_unpin(struct fxblk_peer_reg *reg)
{
	int ret = hal_kernel_p2p_put_pages(reg->priv);

	if (ret)
		pr_warn_ratelimited("fxblk_ascend: hal_kernel_p2p_put_pages: %d\n",
				    ret);
	reg->priv = NULL;
}

/* The pinned range mapped for one NIC's DMA device. */
struct fxblk_ascend_map {
	struct sg_table sgt;
	struct device *dev;
};

static void fxblk_ascend_unmap_sgt(struct fxblk_ascend_map *m)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(&m->sgt, sg, i)
		fxblk_peer_unmap_phys(m->dev, sg_dma_address(sg),
				      sg_dma_len(sg));
	sg_free_table(&m->sgt);
	kfree(m);
}

/*
 * One DMA segment per device page, [reg->addr, + reg->len) exactly: the
 * table starts at the page holding addr. Runs while the table is held
 * (before ->unpin), whatever the free callback did meanwhile: the driver
 * keeps the table until put_pages.
 */
static int fxblk_ascend_map(struct fxblk_peer_reg *reg, struct device *dev,
			    struct sg_table **sgt, void **cookie)
{
	const struct p2p_page_table *t = reg->priv;
	u64 off = reg->addr & (t->page_size - 1), left = reg->len, len;
	struct fxblk_ascend_map *m;
	struct scatterlist *sg;
	dma_addr_t addr;
	unsigned int i;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	ret = sg_alloc_table(&m->sgt, DIV_ROUND_UP(off + left, t->page_size),
			     GFP_KERNEL);
	if (ret) {
		kfree(m);
		return ret;
	}
	m->sgt.nents = 0;
	for_each_sgtable_sg(&m->sgt, sg, i) {
		len = min(t->page_size - off, left);
		ret = fxblk_peer_map_phys(dev, t->pages_info[i].pa + off, len,
					  &addr);
		if (ret) {
			fxblk_ascend_unmap_sgt(m);
			return ret;
		}
		sg_dma_address(sg) = addr;
		sg_dma_len(sg) = len;
		m->sgt.nents++;
		left -= len;
		off = 0;
	}
	*sgt = &m->sgt;
	*cookie = m;
	return 0;
}

static void fxblk_ascend_unmap(struct fxblk_peer_reg *reg, void *cookie)
{
	fxblk_ascend_unmap_sgt(cookie);
}

static const struct fxblk_peer_ops fxblk_ascend_ops = {
	.name = "ascend",
	.owner = THIS_MODULE,
	.id = FXBLK_PEER_PROV_ASCEND,
	.caps = FXBLK_PEER_F_DMA_ONLY | FXBLK_PEER_F_REVOCABLE,
	.not_direct = FXBLK_PEER_NOT_DIRECT_PEERQ,
	.pin = fxblk_ascend_pin,
	.unpin = fxblk_ascend_unpin,
	.map = fxblk_ascend_map,
	.unmap = fxblk_ascend_unmap,
};

static int __init fxblk_ascend_init(void)
{
	BUILD_BUG_ON(P2P_GET_PAGE_VERSION != FXBLK_ASCEND_TABLE_VERSION);
	return fxblk_peer_register_provider(&fxblk_ascend_ops);
}

static void __exit fxblk_ascend_exit(void)
{
	fxblk_peer_unregister_provider(&fxblk_ascend_ops);
}

module_init(fxblk_ascend_init);
module_exit(fxblk_ascend_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("fxblk peer memory: Ascend NPU memory through hal_kernel_p2p_*");
