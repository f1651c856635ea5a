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
 * is revoked (fxblk_peer_revoke(): the RWs in flight finish, then the
 * mapping goes). Without peer queues the memory is staged by libfxio
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
 * One DMA address of @adev's mapping as @dev takes it: as is, or for a
 * device without a DMA mask (the lab's rxe, peer_virt_dma: it moves data
 * with the CPU) the linear-map address of the memory, as
 * ib_dma_map_page() gives such a device, where there is one.
 */
static int fxblk_peer_dmabuf_addr(struct device *dev, struct device *adev,
				  dma_addr_t addr, u32 len, dma_addr_t *out)
{
	phys_addr_t pa;
	unsigned long pfn;

	if (dev->dma_mask) {
		*out = addr;
		return 0;
	}
	pa = dma_to_phys(adev, addr);
	for (pfn = PHYS_PFN(pa); pfn <= PHYS_PFN(pa + len - 1); pfn++)
		if (!pfn_valid(pfn) || PageHighMem(pfn_to_page(pfn)))
			return -EREMOTEIO;
	*out = (dma_addr_t)(uintptr_t)phys_to_virt(pa);
	return 0;
}

/*
 * The DMA segments of [@off, @off + @len) of @src into @dst (NULL: only
 * count them). The count, or -errno.
 */
static int fxblk_peer_dmabuf_slice(struct sg_table *src, u64 off, u64 len,
				   struct device *dev, struct device *adev,
				   struct scatterlist *dst)
{
	struct scatterlist *sg;
	unsigned int i;
	int n = 0, ret;
	u32 take;

	for_each_sgtable_dma_sg(src, sg, i) {
		if (off >= sg_dma_len(sg)) {
			off -= sg_dma_len(sg);
			continue;
		}
		take = min_t(u64, sg_dma_len(sg) - off, len);
		if (dst) {
			ret = fxblk_peer_dmabuf_addr(dev, adev,
						     sg_dma_address(sg) + off,
						     take, &sg_dma_address(dst));
			if (ret)
				return ret;
			sg_dma_len(dst) = take;
			dst = sg_next(dst);
		}
		n++;
		len -= take;
		off = 0;
		if (!len)
			return n;
	}
	return -EINVAL;		/* the buffer is shorter than its size says */
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
 * fxblk_peer_dmabuf_addr() gives @dev the linear-map addresses.
 */
static int fxblk_peer_dmabuf_map(struct fxblk_peer_reg *reg,
				 struct device *dev, struct sg_table **sgt,
				 void **cookie)
{
	struct device *adev = dev->dma_mask ? dev : fxblk_peer_dma_dev();
	struct fxblk_peer_dmabuf_map *m;
	int n, ret;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	ret = fxblk_peer_dmabuf_attach(reg, adev, m);
	if (ret)
		goto out_free;
	n = fxblk_peer_dmabuf_slice(m->whole, reg->offset, reg->len, dev,
				    adev, NULL);
	if (n < 0) {
		ret = n;
		goto out_detach;
	}
	ret = sg_alloc_table(&m->range, n, GFP_KERNEL);
	if (ret)
		goto out_detach;
	n = fxblk_peer_dmabuf_slice(m->whole, reg->offset, reg->len, dev,
				    adev, m->range.sgl);
	if (n < 0) {
		ret = n;
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
