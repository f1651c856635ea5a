/* bio_alloc_bioset(bdev, nr_vecs, opf, gfp, bs) (5.18+) */
#include <linux/bio.h>
struct bio *fxblk_probe(struct bio_set *bs);
struct bio *fxblk_probe(struct bio_set *bs)
{
	return bio_alloc_bioset(NULL, 0, REQ_OP_WRITE, GFP_NOIO, bs);
}
