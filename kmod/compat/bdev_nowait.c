/* bdev_nowait(), bdev_write_cache(), bdev_fua() (6.0+) */
#include <linux/blkdev.h>
bool fxblk_probe(struct block_device *bdev);
bool fxblk_probe(struct block_device *bdev)
{
	return bdev_nowait(bdev) && bdev_write_cache(bdev) && bdev_fua(bdev);
}
