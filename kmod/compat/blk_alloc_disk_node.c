/* blk_alloc_disk(node) returning NULL on failure (5.14..6.8) */
#include <linux/blkdev.h>
struct gendisk *fxblk_probe(void);
struct gendisk *fxblk_probe(void)
{
	return blk_alloc_disk(NUMA_NO_NODE);
}
