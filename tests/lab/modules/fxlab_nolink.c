// SPDX-License-Identifier: GPL-2.0
/*
 * Lab test module: make bd_link_disk_holder() fail, slowly. While loaded,
 * every call sleeps @delay_ms and then returns -ENOMEM without linking
 * anything, as the real one does when its kzalloc() fails (block/holder.c,
 * fs/block_dev.c on 5.10). fxblk's CREATE links its members as holders
 * of fxN after add_disk(), so the sleep is a window in which user space
 * can open the new fxN before CREATE fails and tears it down: the 5.10
 * abort path of kernel review F9. @hits counts the calls. Never loaded
 * outside the lab VM; nothing of it is in fxblk.ko.
 *
 * How: a kprobe at the function's entry whose pre-handler points the
 * saved instruction pointer at fxlab_link_fail() and returns 1 (the
 * kprobe core then resumes there instead of single-stepping, as
 * bpf_override_return() does through the same mechanism). The arguments
 * are still in their registers and the return address on the stack, so
 * fxlab_link_fail() runs as if called in place, in process context, and
 * may sleep. A kprobe rather than an ftrace_ops: the callback signature
 * of ftrace_ops changed in 5.11 (struct ftrace_regs), pt_regs did not.
 */
#include <linux/atomic.h>
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/ptrace.h>

static unsigned int delay_ms = 3000;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "sleep at each call, milliseconds (at most 10000)");
static atomic_t hits = ATOMIC_INIT(0);
module_param_named(hits, hits.counter, int, 0444);
MODULE_PARM_DESC(hits, "calls failed so far");

static noinline int fxlab_link_fail(struct block_device *bdev,
				    struct gendisk *disk)
{
	atomic_inc(&hits);
	msleep(min(delay_ms, 10000U));
	return -ENOMEM;
}

static int fxlab_pre(struct kprobe *p, struct pt_regs *regs)
{
	instruction_pointer_set(regs, (unsigned long)fxlab_link_fail);
	return 1;
}

static struct kprobe fxlab_kp = {
	.symbol_name = "bd_link_disk_holder",
	.pre_handler = fxlab_pre,
};

static int __init fxlab_nolink_init(void)
{
	return register_kprobe(&fxlab_kp);
}

static void __exit fxlab_nolink_exit(void)
{
	unregister_kprobe(&fxlab_kp);
}

module_init(fxlab_nolink_init);
module_exit(fxlab_nolink_exit);
MODULE_DESCRIPTION("fxblk lab: make bd_link_disk_holder() fail after a sleep");
MODULE_LICENSE("GPL");
