/*
 * Polled bios through a bio-based driver (5.18+): ->poll_bio, bio_poll() on
 * a lower bio, bio->bi_cookie, REQ_POLLED and bio_clear_polled()
 */
#include <linux/blkdev.h>
static int fxblk_probe_poll(struct bio *bio, struct io_comp_batch *iob,
			    unsigned int flags)
{
	bio->bi_cookie = ~BLK_QC_T_NONE;
	if (bio->bi_opf & REQ_POLLED)
		bio_clear_polled(bio);
	return bio_poll(bio, iob, flags);
}

const struct block_device_operations fxblk_probe_fops = {
	.poll_bio = fxblk_probe_poll,
};
