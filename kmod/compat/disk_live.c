/* disk_live(): false once del_gendisk() started (5.15+) */
#include <linux/blkdev.h>
bool fxblk_probe(struct gendisk *disk);
bool fxblk_probe(struct gendisk *disk)
{
	return disk_live(disk);
}
