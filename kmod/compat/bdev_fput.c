/* bdev_fput() (6.10+): release a bdev file, yielding the claim at once */
#include <linux/blkdev.h>
#include <linux/fs.h>
void fxblk_probe(struct file *f);
void fxblk_probe(struct file *f)
{
	bdev_fput(f);
}
