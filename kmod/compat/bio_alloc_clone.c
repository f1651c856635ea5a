/* bio_alloc_clone(bdev, src, gfp, bs) (5.18+) instead of bio_clone_fast() */
#include <linux/bio.h>
struct bio *fxblk_probe(struct bio *src, struct bio_set *bs);
struct bio *fxblk_probe(struct bio *src, struct bio_set *bs)
{
	return bio_alloc_clone(NULL, src, GFP_NOIO, bs);
}
