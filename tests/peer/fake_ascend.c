// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: a stand-in for the Ascend driver's peer-memory HAL. Exports
 * hal_kernel_p2p_get_pages()/put_pages() with the exact structs of CANN's
 * ascend_kernel_hal.h; "HBM" is host memory mapped from /dev/fake_ascend
 * (see fake_vram.h). It enforces the vendor's documented rules: the range
 * is looked up in the calling process, 4 KiB aligned, and put_pages() from
 * inside the free callback is a bug (WARN).
 *
 *   echo 1 > /sys/module/fake_ascend/parameters/revoke   free callback of
 *                                                         every pin (once)
 *   cat /sys/module/fake_ascend/parameters/pins           pins held now
 */
#define FAKE_NAME "fake_ascend"
#include <linux/io.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>

#include "ascend_kernel_hal.h"
#include "fake_vram.h"

#define FAKE_P2P_VERSION 0x00010000

struct fake_pin {
	struct list_head node;
	struct p2p_page_table table;
	struct fake_region *region;
	void (*free_callback)(void *data);
	void *data;
	bool revoked;
};

static LIST_HEAD(fake_pins);
static unsigned int fake_nr_pins;
/* Set while a free callback runs (under fake_lock). */
static struct task_struct *fake_in_callback;

static int fake_fill(struct fake_pin *p, u64 va, u64 len)
{
	unsigned long first = (va - p->region->start) >> PAGE_SHIFT;
	u64 i, n = len >> PAGE_SHIFT;

	p->table.pages_info = kvcalloc(n, sizeof(*p->table.pages_info),
				       GFP_KERNEL);
	if (!p->table.pages_info)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p->table.pages_info[i].pa =
			page_to_phys(p->region->pages[first + i]);
	p->table.version = FAKE_P2P_VERSION;
	p->table.page_size = PAGE_SIZE;
	p->table.page_num = n;
	return 0;
}

int hal_kernel_p2p_get_pages(u64 va, u64 len,
			     void (*free_callback)(void *data), void *data,
			     struct p2p_page_table **page_table)
{
	struct fake_pin *p;
	int ret = -EINVAL;

	if (!IS_ALIGNED(va | len, SZ_4K) || !len || !page_table)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	mutex_lock(&fake_lock);
	/* The driver looks the VA up in the current process only. */
	p->region = fake_region_find(current->mm, va, len);
	if (!p->region)
		goto out_unlock;
	ret = fake_fill(p, va, len);
	if (ret)
		goto out_put;
	p->free_callback = free_callback;
	p->data = data;
	list_add(&p->node, &fake_pins);
	fake_nr_pins++;
	mutex_unlock(&fake_lock);
	*page_table = &p->table;
	return 0;

out_put:
	fake_region_put(p->region);
out_unlock:
	mutex_unlock(&fake_lock);
	kfree(p);
	return ret;
}
EXPORT_SYMBOL_GPL(hal_kernel_p2p_get_pages);

int hal_kernel_p2p_put_pages(struct p2p_page_table *page_table)
{
	struct fake_pin *p;

	if (!page_table)
		return -EINVAL;
	/* The vendor forbids it; here it would deadlock on fake_lock. */
	if (WARN(READ_ONCE(fake_in_callback) == current,
		 "fake_ascend: put_pages called from the free callback\n"))
		return -EDEADLK;
	p = container_of(page_table, struct fake_pin, table);
	mutex_lock(&fake_lock);
	list_del(&p->node);
	fake_nr_pins--;
	mutex_unlock(&fake_lock);
	kvfree(p->table.pages_info);
	fake_region_put(p->region);
	kfree(p);
	return 0;
}
EXPORT_SYMBOL_GPL(hal_kernel_p2p_put_pages);

static int fake_revoke_set(const char *val, const struct kernel_param *kp)
{
	struct fake_pin *p;

	mutex_lock(&fake_lock);
	WRITE_ONCE(fake_in_callback, current);
	list_for_each_entry(p, &fake_pins, node)
		if (!p->revoked) {
			p->revoked = true;
			p->free_callback(p->data);
		}
	WRITE_ONCE(fake_in_callback, NULL);
	mutex_unlock(&fake_lock);
	return 0;
}

static int fake_pins_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(fake_nr_pins));
}

static const struct kernel_param_ops fake_revoke_ops = {
	.set = fake_revoke_set,
};

static const struct kernel_param_ops fake_pins_ops = {
	.get = fake_pins_get,
};

module_param_cb(revoke, &fake_revoke_ops, NULL, 0200);
MODULE_PARM_DESC(revoke, "Write: call the free callback of every pin");
module_param_cb(pins, &fake_pins_ops, NULL, 0444);
MODULE_PARM_DESC(pins, "Pins held now");

static int __init fake_init(void)
{
	return misc_register(&fake_misc);
}

static void __exit fake_exit(void)
{
	misc_deregister(&fake_misc);
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test only: fake Ascend hal_kernel_p2p_* over host memory");
