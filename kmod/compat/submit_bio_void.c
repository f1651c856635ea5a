/* ->submit_bio returns void (5.16+) rather than blk_qc_t */
#include <linux/blkdev.h>
static void fxblk_probe_submit(struct bio *bio)
{
}

const struct block_device_operations fxblk_probe_fops = {
	.submit_bio = fxblk_probe_submit,
};
