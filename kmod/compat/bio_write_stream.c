/* bio->bi_write_stream (6.16+), which __bio_clone() copies */
#include <linux/bio.h>
void fxblk_probe(struct bio *bio, struct bio *src);
void fxblk_probe(struct bio *bio, struct bio *src)
{
	bio->bi_write_stream = src->bi_write_stream;
}
