// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "dmabuf": any dma-buf (what ROCm's
 * hsa_amd_portable_export_dmabuf() and CUDA hand out; udmabuf in the lab),
 * imported as a dynamic attachment that allows peer-to-peer, pinned and
 * mapped for fxblk_peer_dma_dev(). An importer gets DMA addresses only, so
 * the memory is staged by libfxio (FXBLK_PEER_IOC_RW: EREMOTEIO).
 *
 * move_notify is revocation: the exporter wants the buffer moved, which a
 * pinned attachment refuses; an exporter that calls it anyway gets the
 * handle revoked, and the unmap waits for the revoke work (never under
 * the reservation lock move_notify is called with).
 *
 * Locking: pin and map (and unmap and unpin) of a dynamic attachment are
 * done with the buffer's reservation lock held on every kernel we build
 * for; detach takes it itself.
 */
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "fxblk_peer.h"

/* The dma-buf API is in namespace DMA_BUF (5.16+); named as a string 6.13+. */
#ifdef FXBLK_HAVE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif

struct fxblk_peer_dmabuf {
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
};

static int fxblk_peer_dmabuf_probe(char *why, size_t len)
{
	return 0;
}

static void fxblk_peer_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	fxblk_peer_revoke(attach->importer_priv);
}

static const struct dma_buf_attach_ops fxblk_peer_dmabuf_attach_ops = {
	.allow_peer2peer = true,
#ifdef FXBLK_HAVE_DMABUF_INVALIDATE_MAPPINGS
	.invalidate_mappings = fxblk_peer_dmabuf_move_notify,
#else
	.move_notify = fxblk_peer_dmabuf_move_notify,
#endif
};

/* Mapped bytes of @sgt, which must cover the registered range. */
static u64 fxblk_peer_dmabuf_mapped(struct sg_table *sgt)
{
	struct scatterlist *sg;
	u64 bytes = 0;
	int i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		bytes += sg_dma_len(sg);
	return bytes;
}

static int fxblk_peer_dmabuf_map(struct fxblk_peer_reg *reg,
				 struct fxblk_peer_dmabuf *p)
{
	struct dma_resv *resv = p->dmabuf->resv;
	int ret;

	dma_resv_lock(resv, NULL);
	ret = dma_buf_pin(p->attach);
	if (ret)
		goto out_unlock;
	p->sgt = dma_buf_map_attachment(p->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(p->sgt)) {
		ret = PTR_ERR(p->sgt);
		goto out_unpin;
	}
	if (fxblk_peer_dmabuf_mapped(p->sgt) < reg->offset + reg->len) {
		ret = -EIO;
		goto out_unmap;
	}
	dma_resv_unlock(resv);
	return 0;

out_unmap:
	dma_buf_unmap_attachment(p->attach, p->sgt, DMA_BIDIRECTIONAL);
out_unpin:
	dma_buf_unpin(p->attach);
out_unlock:
	dma_resv_unlock(resv);
	return ret;
}

static int fxblk_peer_dmabuf_pin(struct fxblk_peer_reg *reg)
{
	struct fxblk_peer_dmabuf *p;
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->dmabuf = dma_buf_get(reg->dmabuf_fd);
	if (IS_ERR(p->dmabuf)) {
		ret = -EBADF;
		goto out_free;
	}
	ret = -EINVAL;
	if (reg->offset > p->dmabuf->size ||
	    reg->len > p->dmabuf->size - reg->offset)
		goto out_put;
	p->attach = dma_buf_dynamic_attach(p->dmabuf, fxblk_peer_dma_dev(),
					   &fxblk_peer_dmabuf_attach_ops, reg);
	if (IS_ERR(p->attach)) {
		ret = PTR_ERR(p->attach);
		goto out_put;
	}
	ret = fxblk_peer_dmabuf_map(reg, p);
	if (ret)
		goto out_detach;
	reg->page_size = PAGE_SIZE;
	reg->priv = p;
	return 0;

out_detach:
	dma_buf_detach(p->dmabuf, p->attach);
out_put:
	dma_buf_put(p->dmabuf);
out_free:
	kfree(p);
	return ret;
}

static void fxblk_peer_dmabuf_unpin(struct fxblk_peer_reg *reg)
{
	struct fxblk_peer_dmabuf *p = reg->priv;

	dma_resv_lock(p->dmabuf->resv, NULL);
	dma_buf_unmap_attachment(p->attach, p->sgt, DMA_BIDIRECTIONAL);
	dma_buf_unpin(p->attach);
	dma_resv_unlock(p->dmabuf->resv);
	dma_buf_detach(p->dmabuf, p->attach);
	dma_buf_put(p->dmabuf);
	kfree(p);
	reg->priv = NULL;
}

const struct fxblk_peer_ops fxblk_peer_dmabuf_ops = {
	.name = "dmabuf",
	.id = FXBLK_PEER_PROV_DMABUF,
	.caps = FXBLK_PEER_F_DMA_ONLY | FXBLK_PEER_F_REVOCABLE,
	.not_direct = FXBLK_PEER_NOT_DIRECT_DMA,
	.probe = fxblk_peer_dmabuf_probe,
	.pin = fxblk_peer_dmabuf_pin,
	.unpin = fxblk_peer_dmabuf_unpin,
};
