/* bio_reset(bio, bdev, opf) (5.18+) instead of bio_reset(bio) */
#include <linux/bio.h>
void fxblk_probe(struct bio *bio);
void fxblk_probe(struct bio *bio)
{
	bio_reset(bio, NULL, REQ_OP_READ);
}
