/* bdev_nr_sectors() (5.11+) */
#include <linux/blkdev.h>
sector_t fxblk_probe(struct block_device *bdev);
sector_t fxblk_probe(struct block_device *bdev)
{
	return bdev_nr_sectors(bdev);
}
