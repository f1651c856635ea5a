/* bio->bi_bdev (5.12+) instead of bio->bi_disk */
#include <linux/bio.h>
struct block_device *fxblk_probe(struct bio *bio);
struct block_device *fxblk_probe(struct bio *bio)
{
	return bio->bi_bdev;
}
