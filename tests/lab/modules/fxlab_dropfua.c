// SPDX-License-Identifier: GPL-2.0
/*
 * Lab test module: make one block device a member that acknowledges FUA
 * writes without persisting them. While loaded, every write bio with data
 * and REQ_FUA that is submitted to the device @major:@minor loses REQ_FUA
 * before it is queued: the write lands in the device's volatile write cache
 * and completes as if it were durable; flushes (REQ_PREFLUSH) still pass, so
 * a later flush writes it out. That is what a stacking driver that drops FUA
 * on one member (or a device that lies about FUA) does; the lab's crash test
 * (26, break=drop-fua) must notice. @dropped counts the writes changed.
 * Never loaded outside the lab VM; nothing of it is in fxblk.ko.
 *
 * How: a probe on the block_bio_queue tracepoint, which
 * submit_bio_noacct_nocheck() (block/blk-core.c, 5.19+) fires once per bio
 * before the bio goes to the driver, after submit_bio_noacct() has dealt with
 * the queue's own FUA and flush support. A multipath head re-submits its
 * bio with BIO_TRACE_COMPLETION set, so the probe sees it once, at the head.
 * The tracepoint is not exported: for_each_kernel_tracepoint() finds it.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/atomic.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

static unsigned int major;
module_param(major, uint, 0444);
MODULE_PARM_DESC(major, "major number of the device whose FUA writes are dropped");
static unsigned int minor;
module_param(minor, uint, 0444);
MODULE_PARM_DESC(minor, "minor number of that device");
static atomic_t dropped = ATOMIC_INIT(0);
module_param_named(dropped, dropped.counter, int, 0444);
MODULE_PARM_DESC(dropped, "FUA writes acknowledged without FUA so far");

static struct tracepoint *fxlab_tp;
static dev_t fxlab_dev;

static void fxlab_bio_queue(void *data, struct bio *bio)
{
	if (bio->bi_bdev->bd_dev != fxlab_dev || bio_op(bio) != REQ_OP_WRITE ||
	    !(bio->bi_opf & REQ_FUA) || !bio_sectors(bio))
		return;
	bio->bi_opf &= ~REQ_FUA;
	atomic_inc(&dropped);
}

static void fxlab_find_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "block_bio_queue"))
		fxlab_tp = tp;
}

static int __init fxlab_dropfua_init(void)
{
	if (!major)
		return -EINVAL;
	fxlab_dev = MKDEV(major, minor);
	for_each_kernel_tracepoint(fxlab_find_tp, NULL);
	if (!fxlab_tp)
		return -ENOENT;
	return tracepoint_probe_register(fxlab_tp, fxlab_bio_queue, NULL);
}

static void __exit fxlab_dropfua_exit(void)
{
	tracepoint_probe_unregister(fxlab_tp, fxlab_bio_queue, NULL);
	tracepoint_synchronize_unregister();
}

module_init(fxlab_dropfua_init);
module_exit(fxlab_dropfua_exit);
MODULE_DESCRIPTION("fxblk lab: a member that acknowledges FUA writes without FUA");
MODULE_LICENSE("GPL");
