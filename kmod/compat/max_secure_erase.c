/* queue_limits.max_secure_erase_sectors (5.19+) instead of QUEUE_FLAG_SECERASE */
#include <linux/blkdev.h>
void fxblk_probe(struct queue_limits *lim);
void fxblk_probe(struct queue_limits *lim)
{
	lim->max_secure_erase_sectors = 0;
}
