/* bdev_write_cache() (6.0+; QUEUE_FLAG_WC before) */
#include <linux/blkdev.h>
bool fxblk_probe(struct block_device *bdev);
bool fxblk_probe(struct block_device *bdev)
{
	return bdev_write_cache(bdev);
}
