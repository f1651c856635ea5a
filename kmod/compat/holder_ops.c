/* struct blk_holder_ops with ->mark_dead(bdev) (6.5..6.7) */
#include <linux/blkdev.h>
static void fxblk_probe_dead(struct block_device *bdev)
{
}

const struct blk_holder_ops fxblk_probe_hops = {
	.mark_dead = fxblk_probe_dead,
};
