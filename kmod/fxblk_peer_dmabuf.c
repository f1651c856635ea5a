// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "dmabuf": any dma-buf (what ROCm's
 * hsa_amd_portable_export_dmabuf() and CUDA hand out; udmabuf in the lab).
 * The registration holds a reference to the buffer and checks the range
 * against its size; nothing more.
 *
 * It does not attach, pin or map: no device of fxblk does DMA to a dma-buf
 * today (the in-kernel nvme-rdma host takes struct pages only), and an
 * attachment changes the buffer. An exporter places the buffer for its
 * importers: amdgpu pins a VRAM buffer attached by a device it cannot
 * reach peer to peer into GTT (system memory) - attaching with a stand-in
 * device would silently move the user's VRAM (amdgpu_dma_buf.c,
 * amdgpu_dma_buf_pin()/attach). Attach (dynamically, with move_notify as
 * revocation) only once a device that will do the DMA exists, e.g. a
 * member's RDMA NIC (docs/gpu-direct.md). Until then the memory is staged
 * by libfxio (FXBLK_PEER_IOC_RW: EREMOTEIO) and never revoked.
 */
#include <linux/dma-buf.h>
#include <linux/module.h>

#include "fxblk_peer.h"

/* The dma-buf API is in namespace DMA_BUF (5.16+); named as a string 6.13+. */
#ifdef FXBLK_HAVE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif

/* Starts as every provider's "why not direct" does (lab 40 matches it). */
#define FXBLK_PEER_NOT_DIRECT_DMABUF \
	"direct: no - held, not attached: no fxblk device does DMA to a dma-buf (nvme-rdma takes struct pages); libfxio stages it"

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

const struct fxblk_peer_ops fxblk_peer_dmabuf_ops = {
	.name = "dmabuf",
	.id = FXBLK_PEER_PROV_DMABUF,
	.caps = FXBLK_PEER_F_DMA_ONLY,
	.not_direct = FXBLK_PEER_NOT_DIRECT_DMABUF,
	.probe = fxblk_peer_dmabuf_probe,
	.pin = fxblk_peer_dmabuf_pin,
	.unpin = fxblk_peer_dmabuf_unpin,
};
