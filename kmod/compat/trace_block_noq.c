/* block_bio_remap / block_split tracepoints without a request_queue (5.11+) */
#include <linux/blkdev.h>
#include <trace/events/block.h>
void fxblk_probe(struct bio *bio);
void fxblk_probe(struct bio *bio)
{
	trace_block_bio_remap(bio, 0, 0);
	trace_block_split(bio, 0);
}
