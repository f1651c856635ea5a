// SPDX-License-Identifier: GPL-2.0
/*
 * Lab test module: widen a race window of fxblk's CREATE. While loaded,
 * every call of fxblk_bdev_sectors() (CREATE calls it for each member it
 * has opened, while checking it: holder ops live, no disk yet) sleeps
 * @delay_ms first, then answers as fxblk's own does on 5.17+
 * (bdev_nr_sectors()). @hits counts the calls. Never loaded outside the
 * lab VM; nothing of it is in fxblk.ko.
 *
 * How: an ftrace_ops with FTRACE_OPS_FL_IPMODIFY on the function sends
 * the call to fxlab_slow_sectors() instead, the way livepatch replaces a
 * function (kernel/livepatch/patch.c). It has to sleep: a kprobe handler
 * that busy-waits keeps RCU grace periods (and with them the member's
 * del_gendisk()) from finishing until the wait is over, so the race it
 * should open never happens.
 */
#include <linux/atomic.h>
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/string.h>

static unsigned int delay_ms = 300;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "sleep at each call, milliseconds (at most 5000)");
static atomic_t hits = ATOMIC_INIT(0);
module_param_named(hits, hits.counter, int, 0444);
MODULE_PARM_DESC(hits, "calls delayed so far");

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
#ifdef ftrace_regs_set_instruction_pointer
#define fxlab_set_ip ftrace_regs_set_instruction_pointer	/* 6.2+ */
#else
#define fxlab_set_ip ftrace_instruction_pointer_set
#endif

static sector_t fxlab_slow_sectors(struct block_device *bdev)
{
	atomic_inc(&hits);
	msleep(min(delay_ms, 5000U));
	return bdev_nr_sectors(bdev);
}

static void notrace fxlab_redirect(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *ops,
				   struct ftrace_regs *fregs)
{
	fxlab_set_ip(fregs, (unsigned long)fxlab_slow_sectors);
}

static struct ftrace_ops fxlab_ops = {
	.func = fxlab_redirect,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

static int __init fxlab_delay_init(void)
{
	static unsigned char name[] = "fxblk_bdev_sectors";
	int ret;

	ret = ftrace_set_filter(&fxlab_ops, name, strlen(name), 1);
	if (ret)
		return ret;
	return register_ftrace_function(&fxlab_ops);
}

static void __exit fxlab_delay_exit(void)
{
	unregister_ftrace_function(&fxlab_ops);
	ftrace_free_filter(&fxlab_ops);
}

#else
/*
 * A kernel without dynamic ftrace (the lab's debug kernel before
 * 2026-12-03) cannot redirect the function: the module builds, so that the
 * other test modules of the lab do, and refuses to load.
 */
static int __init fxlab_delay_init(void)
{
	pr_err("fxlab_delay: needs CONFIG_DYNAMIC_FTRACE_WITH_REGS\n");
	return -EOPNOTSUPP;
}

static void __exit fxlab_delay_exit(void)
{
}
#endif

module_init(fxlab_delay_init);
module_exit(fxlab_delay_exit);
MODULE_DESCRIPTION("fxblk lab: make fxblk_bdev_sectors() sleep (race windows)");
MODULE_LICENSE("GPL");
