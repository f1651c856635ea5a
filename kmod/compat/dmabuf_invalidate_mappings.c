/* dma_buf_attach_ops: move_notify became invalidate_mappings (7.x) */
#include <linux/dma-buf.h>
void fxblk_probe(struct dma_buf_attach_ops *ops,
		 void (*fn)(struct dma_buf_attachment *attach));
void fxblk_probe(struct dma_buf_attach_ops *ops,
		 void (*fn)(struct dma_buf_attachment *attach))
{
	ops->invalidate_mappings = fn;
}
