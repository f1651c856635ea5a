/* queue_limits.features / BLK_FEAT_* (6.11+) instead of queue flags */
#include <linux/blkdev.h>
void fxblk_probe(struct queue_limits *lim);
void fxblk_probe(struct queue_limits *lim)
{
	lim->features |= BLK_FEAT_NOWAIT | BLK_FEAT_IO_STAT;
}
