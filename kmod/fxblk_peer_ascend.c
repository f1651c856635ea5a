// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "ascend": Huawei NPU memory through the
 * CANN driver's hal_kernel_p2p_get_pages()/put_pages(). It yields physical
 * addresses of device memory (MMIO, no struct pages), so the memory is
 * pinned, counted and revocable here but staged by libfxio
 * (FXBLK_PEER_IOC_RW: EREMOTEIO).
 *
 * The vendor's rules, and how they are kept: get_pages looks the range up
 * by the current process, so it is called from REGISTER in the owner; the
 * range is 4 KiB aligned (FXBLK_PEER_ALIGN, checked before); put_pages is
 * never called from the free callback (fxblk_peer_revoke() defers it).
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "fxblk_peer.h"
#include "fxblk_peer_vendor.h"

struct fxblk_peer_ascend {
	int (*put)(struct p2p_page_table *page_table);
	struct p2p_page_table *table;
};

static int fxblk_peer_ascend_probe(char *why, size_t len)
{
	void *get = symbol_get(hal_kernel_p2p_get_pages);
	void *put = symbol_get(hal_kernel_p2p_put_pages);

	if (get)
		symbol_put(hal_kernel_p2p_get_pages);
	if (put)
		symbol_put(hal_kernel_p2p_put_pages);
	if (get && put)
		return 0;
	strscpy(why, "hal_kernel_p2p_get_pages/put_pages not exported: Ascend driver (CANN) not loaded",
		len);
	return -ENODEV;
}

/* The table must cover the range with pages of one power-of-2 size. */
static int fxblk_peer_ascend_check(const struct fxblk_peer_reg *reg,
				   const struct p2p_page_table *t)
{
	if (!t->pages_info || !t->page_size || !is_power_of_2(t->page_size))
		return -EIO;
	if (t->page_num > U64_MAX / t->page_size ||
	    t->page_num * t->page_size < reg->len)
		return -EIO;
	return 0;
}

static int fxblk_peer_ascend_pin(struct fxblk_peer_reg *reg)
{
	int (*get)(u64 va, u64 len, void (*cb)(void *data), void *data,
		   struct p2p_page_table **page_table);
	struct fxblk_peer_ascend *p;
	int ret = -ENODEV;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	get = symbol_get(hal_kernel_p2p_get_pages);
	p->put = symbol_get(hal_kernel_p2p_put_pages);
	if (!get || !p->put)
		goto out_put;
	ret = get(reg->addr, reg->len, fxblk_peer_revoke, reg, &p->table);
	if (ret) {
		/* Not NPU memory of this process: let AUTO try the next. */
		ret = ret == -EINVAL || ret == -ESRCH ? -EFAULT : ret;
		goto out_put;
	}
	ret = fxblk_peer_ascend_check(reg, p->table);
	if (ret) {
		p->put(p->table);
		goto out_put;
	}
	symbol_put(hal_kernel_p2p_get_pages);
	reg->page_size = p->table->page_size;
	reg->priv = p;
	return 0;

out_put:
	if (get)
		symbol_put(hal_kernel_p2p_get_pages);
	if (p->put)
		symbol_put(hal_kernel_p2p_put_pages);
	kfree(p);
	return ret;
}

static void fxblk_peer_ascend_unpin(struct fxblk_peer_reg *reg)
{
	struct fxblk_peer_ascend *p = reg->priv;

	p->put(p->table);
	symbol_put(hal_kernel_p2p_put_pages);
	kfree(p);
	reg->priv = NULL;
}

const struct fxblk_peer_ops fxblk_peer_ascend_ops = {
	.name = "ascend",
	.id = FXBLK_PEER_PROV_ASCEND,
	.caps = FXBLK_PEER_F_DMA_ONLY | FXBLK_PEER_F_REVOCABLE,
	.not_direct = FXBLK_PEER_NOT_DIRECT_DMA,
	.probe = fxblk_peer_ascend_probe,
	.pin = fxblk_peer_ascend_pin,
	.unpin = fxblk_peer_ascend_unpin,
};
