/* blk_alloc_disk(lim, node) returning ERR_PTR (6.9+) */
#include <linux/blkdev.h>
struct gendisk *fxblk_probe(struct queue_limits *lim);
struct gendisk *fxblk_probe(struct queue_limits *lim)
{
	return blk_alloc_disk(lim, NUMA_NO_NODE);
}
