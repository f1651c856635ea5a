/* dma_buf_attach_ops.invalidate_mappings (7.2+; move_notify before) */
#include <linux/dma-buf.h>
void fxblk_probe(struct dma_buf_attach_ops *ops,
		 void (*cb)(struct dma_buf_attachment *attach));
void fxblk_probe(struct dma_buf_attach_ops *ops,
		 void (*cb)(struct dma_buf_attachment *attach))
{
	ops->invalidate_mappings = cb;
}
