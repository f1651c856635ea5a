// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "dmabuf": any dma-buf (what ROCm's
 * hsa_amd_portable_export_dmabuf() and CUDA hand out; udmabuf in the lab).
 * The registration holds a reference to the buffer and checks the range
 * against its size.
 *
 * It attaches only for a device that will do the DMA: the RDMA NIC of a
 * member's peer queue (->map, by fxblk_peerq.c), never for a stand-in. An
 * exporter places the buffer for its importers: amdgpu pins a VRAM buffer
 * attached by a device it cannot reach peer to peer into GTT (system
 * memory) - attaching with a stand-in device would silently move the
 * user's VRAM (amdgpu_dma_buf.c, amdgpu_dma_buf_attach()/_pin()). So the
 * attachment allows peer to peer, and one the exporter turned down for it
 * (attach->peer2peer cleared) is given up: staged. The attachment is
 * pinned, as ib_umem_dmabuf_get_pinned() attaches for an RDMA NIC
 * (drivers/infiniband/core/umem_dmabuf.c): an exporter does not move a
 * pinned buffer, so move_notify is not expected; if it comes, the handle
 * is revoked (fxblk_peer_revoke(), under the buffer's reservation lock:
 * the peer queues' commands on it complete or their queue pairs are
 * stopped before it returns, then the mapping goes from the revoke work).
 * Without peer queues the memory is staged by libfxio
 * (FXBLK_PEER_IOC_RW: EREMOTEIO).
 */
#include <linux/dma-buf.h>
#include <linux/dma-direct.h>
#include <linux/dma-resv.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "fxblk_compat.h"
#include "fxblk_peer.h"

/* The dma-buf API is in namespace DMA_BUF (5.16+); named as a string 6.13+. */
#ifdef FXBLK_HAVE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif


static int fxblk_peer_dmabuf_probe(char *why, size_t len)
{
	return 0;
}

static int fxblk_peer_dmabuf_pin(struct fxblk_peer_reg *reg)
{
	struct dma_buf *dmabuf = dma_buf_get(reg->dmabuf_fd);

	if (IS_ERR(dmabuf))
		return -EBADF;
	if (reg->offset > dmabuf->size ||
	    reg->len > dmabuf->size - reg->offset) {
		dma_buf_put(dmabuf);
		return -EINVAL;
	}
	reg->page_size = PAGE_SIZE;
	reg->priv = dmabuf;
	return 0;
}

static void fxblk_peer_dmabuf_unpin(struct fxblk_peer_reg *reg)
{
	dma_buf_put(reg->priv);
	reg->priv = NULL;
}

struct fxblk_peer_dmabuf_map {
	struct dma_buf_attachment *attach;
	struct sg_table *whole;		/* the exporter's mapping */
	struct sg_table range;		/* the registration's part of it */
};

static void fxblk_peer_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	pr_warn_ratelimited("a pinned dma-buf of a peer registration is moving: revoked\n");
	fxblk_peer_revoke(attach->importer_priv);
}

static const struct dma_buf_attach_ops fxblk_peer_dmabuf_importer = {
	.allow_peer2peer = true,
#ifdef FXBLK_HAVE_DMABUF_INVALIDATE_MAPPINGS
	.invalidate_mappings = fxblk_peer_dmabuf_move_notify,
#else
	.move_notify = fxblk_peer_dmabuf_move_notify,
#endif
};

/*
 * For @dev without a DMA mask (the lab's rxe, peer_virt_dma), @sgt's DMA
 * addresses of @adev's mapping become what fxblk_peer_map_phys() gives
 * such a device for the memory: its linear-map address, where it has one.
 */
static int fxblk_peer_dmabuf_virt(struct sg_table *sgt, struct device *dev,
				  struct device *adev)
{
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		ret = fxblk_peer_map_phys(dev,
					  dma_to_phys(adev, sg_dma_address(sg)),
					  sg_dma_len(sg), &sg_dma_address(sg));
		if (ret)
			return ret;
	}
	return 0;
}

/* Attached, pinned and mapped as ib_umem_dmabuf_get_pinned() does. */
static int fxblk_peer_dmabuf_attach(struct fxblk_peer_reg *reg,
				    struct device *adev,
				    struct fxblk_peer_dmabuf_map *m)
{
	struct dma_buf *dmabuf = reg->priv;
	int ret;

	m->attach = dma_buf_dynamic_attach(dmabuf, adev,
					   &fxblk_peer_dmabuf_importer, reg);
	if (IS_ERR(m->attach))
		return PTR_ERR(m->attach);
	/* the exporter cannot reach @adev peer to peer: it would move it */
	if (!m->attach->peer2peer) {
		ret = -EREMOTEIO;
		goto out_detach;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	ret = dma_buf_pin(m->attach);
	if (ret)
		goto out_unlock;
	m->whole = dma_buf_map_attachment(m->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(m->whole)) {
		ret = PTR_ERR(m->whole);
		goto out_unpin;
	}
	/* a move the pin caused must be done before the NIC touches it */
	ret = fxblk_dma_resv_wait_kernel(dmabuf->resv);
	if (ret)
		goto out_unmap;
	dma_resv_unlock(dmabuf->resv);
	return 0;

out_unmap:
	dma_buf_unmap_attachment(m->attach, m->whole, DMA_BIDIRECTIONAL);
out_unpin:
	dma_buf_unpin(m->attach);
out_unlock:
	dma_resv_unlock(dmabuf->resv);
out_detach:
	dma_buf_detach(dmabuf, m->attach);
	return ret;
}

static void fxblk_peer_dmabuf_detach(struct fxblk_peer_reg *reg,
				     struct fxblk_peer_dmabuf_map *m)
{
	struct dma_buf *dmabuf = reg->priv;

	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_unmap_attachment(m->attach, m->whole, DMA_BIDIRECTIONAL);
	dma_buf_unpin(m->attach);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, m->attach);
}

/*
 * For @dev, the DMA device of a member's RDMA NIC; a device without a DMA
 * mask (lab only) cannot be attached (an exporter maps for it with the
 * DMA API): the control node's device stands in for the attachment, and
 * fxblk_peer_dmabuf_virt() gives @dev the linear-map addresses.
 */
static int fxblk_peer_dmabuf_map(struct fxblk_peer_reg *reg,
				 struct device *dev, struct sg_table **sgt,
				 void **cookie)
{
	struct device *adev = dev->dma_mask ? dev : fxblk_peer_dma_dev();
	struct fxblk_peer_dmabuf_map *m;
	unsigned int n;
	int ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	ret = fxblk_peer_dmabuf_attach(reg, adev, m);
	if (ret)
		goto out_free;
	/* the registration's part; the buffer is shorter than it says: -EINVAL */
	n = fxblk_peer_dma_slice(m->whole, reg->offset, reg->len, NULL);
	if (!n) {
		ret = -EINVAL;
		goto out_detach;
	}
	ret = sg_alloc_table(&m->range, n, GFP_KERNEL);
	if (ret)
		goto out_detach;
	fxblk_peer_dma_slice(m->whole, reg->offset, reg->len, m->range.sgl);
	if (!dev->dma_mask) {
		ret = fxblk_peer_dmabuf_virt(&m->range, dev, adev);
		if (ret)
			goto out_table;
	}
	*sgt = &m->range;
	*cookie = m;
	return 0;

out_table:
	sg_free_table(&m->range);
out_detach:
	fxblk_peer_dmabuf_detach(reg, m);
out_free:
	kfree(m);
	return ret;
}

static void fxblk_peer_dmabuf_unmap(struct fxblk_peer_reg *reg, void *cookie)
{
	struct fxblk_peer_dmabuf_map *m = cookie;

	sg_free_table(&m->range);
	fxblk_peer_dmabuf_detach(reg, m);
	kfree(m);
}

const struct fxblk_peer_ops fxblk_peer_dmabuf_ops = {
	.name = "dmabuf",
	.id = FXBLK_PEER_PROV_DMABUF,
	.caps = FXBLK_PEER_F_DMA_ONLY,
	.not_direct = FXBLK_PEER_NOT_DIRECT_PEERQ,
	.probe = fxblk_peer_dmabuf_probe,
	.pin = fxblk_peer_dmabuf_pin,
	.unpin = fxblk_peer_dmabuf_unpin,
	.map = fxblk_peer_dmabuf_map,
	.unmap = fxblk_peer_dmabuf_unmap,
};
