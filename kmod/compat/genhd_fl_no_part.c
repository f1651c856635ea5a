/* GENHD_FL_NO_PART (5.17+; an enum constant from 6.0) replaced GENHD_FL_NO_PART_SCAN */
#include <linux/blkdev.h>
void fxblk_probe(struct gendisk *disk);
void fxblk_probe(struct gendisk *disk)
{
	disk->flags |= GENHD_FL_NO_PART;
}
