/* device_add_disk() returns int (5.15+) */
#include <linux/blkdev.h>
int fxblk_probe(struct gendisk *disk);
int fxblk_probe(struct gendisk *disk)
{
	return device_add_disk(NULL, disk, NULL);
}
