// SPDX-License-Identifier: GPL-2.0
/*
 * Lab self-test module: deliberately WARNs when loaded, so that the lab's
 * kernel log check can be shown to fail a run whose script itself passes.
 * Never loaded outside the lab VM.
 */
#include <linux/module.h>
#include <linux/bug.h>

static int __init fxlab_warn_init(void)
{
	WARN(1, "fxlab_warn: deliberate warning for the lab self-test\n");
	return 0;
}

static void __exit fxlab_warn_exit(void)
{
}

module_init(fxlab_warn_init);
module_exit(fxlab_warn_exit);
MODULE_DESCRIPTION("fxblk lab self-test: WARN at load");
MODULE_LICENSE("GPL");
