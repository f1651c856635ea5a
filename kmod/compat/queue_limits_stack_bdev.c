/* queue_limits_stack_bdev() (6.9+): limits are built before the disk exists */
#include <linux/blkdev.h>
void fxblk_probe(struct queue_limits *lim, struct block_device *bdev);
void fxblk_probe(struct queue_limits *lim, struct block_device *bdev)
{
	queue_limits_stack_bdev(lim, bdev, 0, "probe");
}
