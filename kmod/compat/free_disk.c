/* block_device_operations->free_disk, called from disk_release() (5.18+) */
#include <linux/blkdev.h>
static void fxblk_probe_free(struct gendisk *disk)
{
}

const struct block_device_operations fxblk_probe_fops = {
	.free_disk = fxblk_probe_free,
};
