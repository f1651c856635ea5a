/* ->open(struct gendisk *, blk_mode_t) and ->release(struct gendisk *) (6.5+) */
#include <linux/blkdev.h>
static int fxblk_probe_open(struct gendisk *disk, blk_mode_t mode)
{
	return 0;
}

static void fxblk_probe_release(struct gendisk *disk)
{
}

const struct block_device_operations fxblk_probe_fops = {
	.open = fxblk_probe_open,
	.release = fxblk_probe_release,
};
