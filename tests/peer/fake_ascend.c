// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: a stand-in for the Ascend driver's peer-memory HAL, mirroring
 * hal_kernel_p2p_get_pages()/put_pages() of the CANN driver
 * src/sdk_driver/svm/v2/master/pmaster/svm_master_query.c with the structs
 * of src/sdk_driver/inc/ascend_kernel_hal.h (verylucky01/driver at
 * aff95158; vendor/ascend/ascend_kernel_hal.h), over host memory mapped
 * from /dev/fake_ascend (fake_vram.h) instead of HBM:
 * - the range is looked up in the calling process only (current->tgid
 *   there, current->mm here): -EINVAL if it is not device memory of it;
 * - a VA not aligned to the heap's page size is refused with -EOPNOTSUPP
 *   (devmm_is_support_p2p_get_pages());
 * - the table: version P2P_GET_PAGE_VERSION (0x1), page_size the heap's
 *   (4 KiB, or 2 MiB for a huge-page heap: page_size=2097152 here), the
 *   range rounded out to it, one physical address per page;
 * - on a free (the owner's unmap here; aclrtFree or process exit there,
 *   devmm_mem_free_preprocess_inner()) the free callback runs under the
 *   driver's lock and is then cleared; the table stays until put_pages,
 *   which must not be called from the callback (a deadlock there: WARN
 *   here);
 * - once the free callback returned, the driver may hand the HBM to
 *   another context (hal_kernel_p2p_get_pages() note 4: "Once the
 *   free_callback call is completed, must be ensured that the memory
 *   corresponding to va is no longer used"): here its pages are filled
 *   with a poison pattern at that moment and kept, and late_dma counts the
 *   pages whose poison was overwritten since - a DMA after the callback
 *   (65-peer-revoke.sh).
 * The physical addresses are those of the host pages backing each device
 * page, which are physically contiguous per device page (fake_vram.h
 * allocates them so), as an HBM page is: fxblk's peer queues map them for
 * the NIC and the (soft) NIC moves the data there (44-peer-queue.sh).
 *
 *   /sys/module/fake_ascend/parameters/page_size   4096 or 2097152 (at load)
 *   echo 1 > /sys/module/fake_ascend/parameters/revoke   free callback of
 *                                                         every pin (once)
 *   cat /sys/module/fake_ascend/parameters/pins           pins held now
 *   cat /sys/module/fake_ascend/parameters/poisoned       pages poisoned
 *                                                         after callbacks
 *   cat /sys/module/fake_ascend/parameters/late_dma       of those, pages
 *                                                         written since
 */
#define FAKE_NAME "fake_ascend"
#include <linux/highmem.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>

#include <ascend_kernel_hal.h>	/* vendor/ascend */
#include "fake_vram.h"

struct fake_pin {
	struct list_head node;
	struct p2p_page_table table;
	struct fake_region *region;
	unsigned long first, nr;	/* host pages of the table in region */
	void (*free_callback)(void *data);	/* NULL after the callback */
	void *data;
};

static ulong fake_page_size = PAGE_SIZE;
module_param_named(page_size, fake_page_size, ulong, 0444);
MODULE_PARM_DESC(page_size, "Device page size: 4096 (default) or 2097152 (huge-page heap)");

static LIST_HEAD(fake_pins);
static unsigned int fake_nr_pins;

/* Pages freed by a free callback: poisoned then, kept to be checked. */
struct fake_freed {
	struct list_head node;
	struct fake_region *region;	/* a reference */
	unsigned long first, nr;
};

static LIST_HEAD(fake_freed_list);
static unsigned long fake_nr_poisoned;
/* "HBM FREE", 8 bytes repeated: what no data of the lab tests holds */
static const u64 fake_poison = 0x45455246204d4248ULL;
/* Set while a free callback runs (under fake_lock). */
static struct task_struct *fake_in_callback;

static int fake_fill(struct fake_pin *p, u64 va, u64 len)
{
	u64 first = (va - p->region->start) >> PAGE_SHIFT;
	u64 i, n = round_up(len, fake_page_size) / fake_page_size;
	u64 step = fake_page_size >> PAGE_SHIFT;

	/* the region is a whole number of device pages (fake_mmap_align) */
	if ((first + n * step) > p->region->nr)
		return -EINVAL;
	p->table.pages_info = kvcalloc(n, sizeof(*p->table.pages_info),
				       GFP_KERNEL);
	if (!p->table.pages_info)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p->table.pages_info[i].pa =
			page_to_phys(p->region->pages[first + i * step]);
	p->first = first;
	p->nr = n * step;
	p->table.version = P2P_GET_PAGE_VERSION;
	p->table.page_size = fake_page_size;
	p->table.page_num = n;
	return 0;
}

int hal_kernel_p2p_get_pages(u64 va, u64 len,
			     void (*free_callback)(void *data), void *data,
			     struct p2p_page_table **page_table)
{
	struct fake_pin *p;
	int ret = -EINVAL;

	if (!len || va + len < va || !free_callback || !page_table)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	mutex_lock(&fake_lock);
	/* The driver looks the VA up in the current process only. */
	p->region = fake_region_find(current->mm, va, len);
	if (!p->region)
		goto out_unlock;
	ret = -EOPNOTSUPP;
	if (!IS_ALIGNED(va, fake_page_size))
		goto out_put;
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

static void fake_page_poison(struct page *page)
{
	u64 *v = kmap_local_page(page);
	unsigned int i;

	for (i = 0; i < PAGE_SIZE / sizeof(*v); i++)
		WRITE_ONCE(v[i], fake_poison);
	kunmap_local(v);
}

static bool fake_page_poisoned(struct page *page)
{
	u64 *v = kmap_local_page(page);
	unsigned int i;
	bool ok = true;

	for (i = 0; i < PAGE_SIZE / sizeof(*v) && ok; i++)
		ok = READ_ONCE(v[i]) == fake_poison;
	kunmap_local(v);
	return ok;
}

/*
 * The driver reuses the HBM of @p the moment the callback returned: poison
 * its pages now, and keep them (a region reference) for late_dma. Without
 * memory for the record the pages are not poisoned, and the test sees
 * fewer poisoned pages than it freed.
 */
static void fake_poison_pin(struct fake_pin *p)
{
	struct fake_freed *f = kzalloc(sizeof(*f), GFP_KERNEL);
	unsigned long i;

	if (!f)
		return;
	for (i = 0; i < p->nr; i++)
		fake_page_poison(p->region->pages[p->first + i]);
	kref_get(&p->region->ref);
	f->region = p->region;
	f->first = p->first;
	f->nr = p->nr;
	list_add_tail(&f->node, &fake_freed_list);
	fake_nr_poisoned += p->nr;
}

/* One pin's free callback, once; the table stays until put_pages. */
static void fake_free_callback(struct fake_pin *p)
{
	lockdep_assert_held(&fake_lock);
	if (!p->free_callback)
		return;
	WRITE_ONCE(fake_in_callback, current);
	p->free_callback(p->data);
	WRITE_ONCE(fake_in_callback, NULL);
	fake_poison_pin(p);
	p->free_callback = NULL;
	p->data = NULL;
}

/* The owner freed its device memory: the callbacks of its pins. */
static void fake_region_gone(struct fake_region *r)
{
	struct fake_pin *p;

	list_for_each_entry(p, &fake_pins, node)
		if (p->region == r)
			fake_free_callback(p);
}

static int fake_revoke_set(const char *val, const struct kernel_param *kp)
{
	struct fake_pin *p;

	mutex_lock(&fake_lock);
	list_for_each_entry(p, &fake_pins, node)
		fake_free_callback(p);
	mutex_unlock(&fake_lock);
	return 0;
}

static int fake_pins_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(fake_nr_pins));
}

static int fake_poisoned_get(char *buf, const struct kernel_param *kp)
{
	unsigned long n;

	mutex_lock(&fake_lock);
	n = fake_nr_poisoned;
	mutex_unlock(&fake_lock);
	return sysfs_emit(buf, "%lu\n", n);
}

/* Poisoned pages written since their callback returned. */
static int fake_late_dma_get(char *buf, const struct kernel_param *kp)
{
	struct fake_freed *f;
	unsigned long i, n = 0;

	mutex_lock(&fake_lock);
	list_for_each_entry(f, &fake_freed_list, node)
		for (i = 0; i < f->nr; i++)
			n += !fake_page_poisoned(f->region->pages[f->first + i]);
	mutex_unlock(&fake_lock);
	return sysfs_emit(buf, "%lu\n", n);
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

static const struct kernel_param_ops fake_poisoned_ops = {
	.get = fake_poisoned_get,
};

static const struct kernel_param_ops fake_late_dma_ops = {
	.get = fake_late_dma_get,
};

module_param_cb(poisoned, &fake_poisoned_ops, NULL, 0444);
MODULE_PARM_DESC(poisoned, "Pages poisoned when their free callback returned");
module_param_cb(late_dma, &fake_late_dma_ops, NULL, 0444);
MODULE_PARM_DESC(late_dma, "Poisoned pages written since their free callback returned (a DMA after it)");

static int __init fake_init(void)
{
	if (fake_page_size != PAGE_SIZE && fake_page_size != SZ_2M)
		return -EINVAL;
	fake_mmap_align = fake_page_size;
	return misc_register(&fake_misc);
}

static void __exit fake_exit(void)
{
	struct fake_freed *f, *tmp;

	misc_deregister(&fake_misc);
	list_for_each_entry_safe(f, tmp, &fake_freed_list, node) {
		fake_region_put(f->region);
		kfree(f);
	}
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test only: fake Ascend hal_kernel_p2p_* over host memory");
