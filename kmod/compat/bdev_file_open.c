/* bdev_file_open_by_dev() returning a struct file (6.9+) */
#include <linux/blkdev.h>
#include <linux/fs.h>
struct block_device *fxblk_probe(dev_t dev, void *holder);
struct block_device *fxblk_probe(dev_t dev, void *holder)
{
	struct file *f = bdev_file_open_by_dev(dev, BLK_OPEN_READ, holder, NULL);

	return IS_ERR(f) ? NULL : file_bdev(f);
}
