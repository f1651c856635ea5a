/* bdev_open_by_dev() returning struct bdev_handle (6.7, 6.8, OLK-6.6) */
#include <linux/blkdev.h>
void fxblk_probe(dev_t dev, void *holder);
void fxblk_probe(dev_t dev, void *holder)
{
	struct bdev_handle *h = bdev_open_by_dev(dev, BLK_OPEN_READ, holder, NULL);

	if (!IS_ERR(h))
		bdev_release(h);
}
