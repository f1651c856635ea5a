/* bio->bi_write_hint, which __bio_clone() copies (6.1 has none) */
#include <linux/bio.h>
void fxblk_probe(struct bio *bio, struct bio *src);
void fxblk_probe(struct bio *bio, struct bio *src)
{
	bio->bi_write_hint = src->bi_write_hint;
}
