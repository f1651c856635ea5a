/* blk_cleanup_disk() (5.14..5.19): releases disk and queue together */
#include <linux/blkdev.h>
void fxblk_probe(struct gendisk *disk);
void fxblk_probe(struct gendisk *disk)
{
	blk_cleanup_disk(disk);
}
