/* blkdev_get_by_dev(dev, blk_mode_t, holder, hops) and blkdev_put(bdev, holder) (6.5..6.7) */
#include <linux/blkdev.h>
void fxblk_probe(dev_t dev, void *holder);
void fxblk_probe(dev_t dev, void *holder)
{
	struct block_device *b = blkdev_get_by_dev(dev, BLK_OPEN_READ, holder, NULL);

	if (!IS_ERR(b))
		blkdev_put(b, holder);
}
