/* blk_queue_disable_discard/_write_zeroes() (6.10+): turn an op off from a completion */
#include <linux/blkdev.h>
void fxblk_probe(struct request_queue *q);
void fxblk_probe(struct request_queue *q)
{
	blk_queue_disable_discard(q);
	blk_queue_disable_write_zeroes(q);
}
