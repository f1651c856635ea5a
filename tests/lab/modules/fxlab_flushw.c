// SPDX-License-Identifier: GPL-2.0
/*
 * Lab test module: at load, open the block device @dev and submit ONE write
 * bio of @len bytes at @sector with REQ_PREFLUSH (and REQ_FUA if @fua), every
 * byte @fill, and wait for it. User space cannot issue such a bio at a chosen
 * sector (file systems do, at sectors of their own choosing), so the lab's
 * flush-ordering test loads this module. The outcome is in the read-only
 * parameters status (0 or -errno) and usecs; the module stays loaded until
 * rmmod. Never loaded outside the lab VM.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/string.h>

static char *dev;
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "block device to write to, e.g. /dev/fx0");
static unsigned long long sector;
module_param(sector, ullong, 0444);
MODULE_PARM_DESC(sector, "512-byte sector of the write");
static unsigned int len = 4096;
module_param(len, uint, 0444);
MODULE_PARM_DESC(len, "bytes to write (multiple of 512, at most PAGE_SIZE)");
static bool fua;
module_param(fua, bool, 0444);
MODULE_PARM_DESC(fua, "add REQ_FUA to the write");
static int fill = 0x5a;
module_param(fill, int, 0444);
MODULE_PARM_DESC(fill, "byte value written");
static int status = 1;
module_param(status, int, 0444);
MODULE_PARM_DESC(status, "result: 0 or -errno (1: not run)");
static unsigned long long usecs;
module_param(usecs, ullong, 0444);
MODULE_PARM_DESC(usecs, "time from submit to completion, microseconds");

/*
 * Block device open API: lab kernels are 6.1 (blkdev_get_by_path with an
 * fmode_t) and 6.12 (bdev_file_open_by_path; blk_mode_t came in 6.5, the
 * file-based open in 6.9, so 6.5..6.8 would not build). 5.10 is not needed:
 * bio_alloc() took the bdev from 5.18 on.
 */
#ifdef BLK_OPEN_READ
struct fxlab_bdev {
	struct file *f;
	struct block_device *bdev;
};

static int fxlab_open(struct fxlab_bdev *b)
{
	b->f = bdev_file_open_by_path(dev, BLK_OPEN_READ | BLK_OPEN_WRITE,
				      NULL, NULL);
	if (IS_ERR(b->f))
		return PTR_ERR(b->f);
	b->bdev = file_bdev(b->f);
	return 0;
}

static void fxlab_close(struct fxlab_bdev *b)
{
	fput(b->f);
}
#else
struct fxlab_bdev {
	struct block_device *bdev;
};

static int fxlab_open(struct fxlab_bdev *b)
{
	b->bdev = blkdev_get_by_path(dev, FMODE_READ | FMODE_WRITE, NULL);
	return PTR_ERR_OR_ZERO(b->bdev);
}

static void fxlab_close(struct fxlab_bdev *b)
{
	blkdev_put(b->bdev, FMODE_READ | FMODE_WRITE);
}
#endif

static int fxlab_write(struct block_device *bdev, struct page *page)
{
	unsigned int opf = REQ_OP_WRITE | REQ_PREFLUSH | REQ_SYNC;
	struct bio *bio;
	ktime_t t0;
	int ret;

	if (fua)
		opf |= REQ_FUA;
	bio = bio_alloc(bdev, 1, opf, GFP_KERNEL);
	if (!bio)
		return -ENOMEM;
	bio->bi_iter.bi_sector = sector;
	if (bio_add_page(bio, page, len, 0) != len) {
		bio_put(bio);
		return -EIO;
	}
	t0 = ktime_get();
	ret = submit_bio_wait(bio);
	usecs = ktime_us_delta(ktime_get(), t0);
	bio_put(bio);
	return ret;
}

static int __init fxlab_flushw_init(void)
{
	struct fxlab_bdev b;
	struct page *page;
	int ret;

	if (!dev || !len || len > PAGE_SIZE || len % 512) {
		pr_err("fxlab_flushw: need dev=PATH and len=1..%lu in 512-byte units\n",
		       PAGE_SIZE);
		return -EINVAL;
	}
	page = alloc_page(GFP_KERNEL);
	if (!page)
		return -ENOMEM;
	memset(page_address(page), fill, PAGE_SIZE);
	ret = fxlab_open(&b);
	if (ret) {
		pr_err("fxlab_flushw: cannot open %s: %d\n", dev, ret);
		__free_page(page);
		return ret;
	}
	status = fxlab_write(b.bdev, page);
	fxlab_close(&b);
	__free_page(page);
	pr_info("fxlab_flushw: %s sector %llu len %u preflush%s: status %d in %llu us\n",
		dev, sector, len, fua ? "+fua" : "", status, usecs);
	return 0;
}

static void __exit fxlab_flushw_exit(void)
{
}

module_init(fxlab_flushw_init);
module_exit(fxlab_flushw_exit);
MODULE_DESCRIPTION("fxblk lab: one PREFLUSH write bio at a chosen sector");
MODULE_LICENSE("GPL");
