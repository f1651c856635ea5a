/* struct blk_holder_ops with ->mark_dead(bdev, bool surprise) (6.8+) */
#include <linux/blkdev.h>
static void fxblk_probe_dead(struct block_device *bdev, bool surprise)
{
}

const struct blk_holder_ops fxblk_probe_hops = {
	.mark_dead = fxblk_probe_dead,
};
