/* enum dma_resv_usage (5.19+; dma_resv_wait_timeout_rcu() before 5.14) */
#include <linux/dma-resv.h>
long fxblk_probe(struct dma_resv *obj);
long fxblk_probe(struct dma_resv *obj)
{
	return dma_resv_wait_timeout(obj, DMA_RESV_USAGE_KERNEL, false, 1);
}
