/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test only. "Device memory" for the fake vendor modules: host pages a
 * process maps from the fake's char device (/dev/<FAKE_NAME>), standing in
 * for VRAM/HBM. A region is found by (owner mm, address range) while the
 * owner has it mapped, and lives on while a pin holds it (kref). The
 * owner's unmap (or exit) is the application freeing its device memory:
 * the fake's fake_region_gone() is called then, under fake_lock, to do
 * what its vendor's driver does on a free. fake_mmap_align: the
 * granularity the vendor's allocator hands out (mmap refuses others).
 * Include once, after defining FAKE_NAME.
 */
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>

struct fake_region {
	struct list_head node;		/* in fake_regions while mapped */
	struct kref ref;		/* mappings + pins */
	struct mm_struct *mm;		/* owner; compared, not held */
	unsigned long start, len;
	unsigned long nr;
	struct page **pages;
	bool listed;
};

static LIST_HEAD(fake_regions);
static DEFINE_MUTEX(fake_lock);		/* regions and pins */
static unsigned long fake_mmap_align = PAGE_SIZE;

static void fake_region_gone(struct fake_region *r);

static void fake_region_free(struct kref *ref)
{
	struct fake_region *r = container_of(ref, struct fake_region, ref);
	unsigned long i;

	for (i = 0; i < r->nr; i++)
		if (r->pages[i])
			__free_page(r->pages[i]);
	kvfree(r->pages);
	kfree(r);
}

static void fake_region_put(struct fake_region *r)
{
	kref_put(&r->ref, fake_region_free);
}

/* The region of @mm covering [addr, addr + len), with a reference. */
static struct fake_region *fake_region_find(struct mm_struct *mm,
					    unsigned long addr,
					    unsigned long len)
{
	struct fake_region *r;

	lockdep_assert_held(&fake_lock);
	if (!mm || !len || addr + len < addr)
		return NULL;
	list_for_each_entry(r, &fake_regions, node)
		if (r->mm == mm && addr >= r->start &&
		    addr + len <= r->start + r->len) {
			kref_get(&r->ref);
			return r;
		}
	return NULL;
}

static void fake_vm_open(struct vm_area_struct *vma)
{
	struct fake_region *r = vma->vm_private_data;

	kref_get(&r->ref);
}

/* The owner unmapping (or exiting) ends the region's "device" life. */
static void fake_vm_close(struct vm_area_struct *vma)
{
	struct fake_region *r = vma->vm_private_data;

	mutex_lock(&fake_lock);
	if (r->listed && vma->vm_mm == r->mm) {
		list_del(&r->node);
		r->listed = false;
		fake_region_gone(r);
	}
	mutex_unlock(&fake_lock);
	fake_region_put(r);
}

static const struct vm_operations_struct fake_vm_ops = {
	.open = fake_vm_open,
	.close = fake_vm_close,
};

/*
 * Page @i of @r, allocated with the rest of its fake_mmap_align chunk when
 * it starts one: device pages of that size are physically contiguous (an
 * Ascend huge-page heap's 2 MiB pages; their physical addresses are used
 * for DMA on the peer queues), split so each is freed on its own.
 */
static bool fake_alloc_chunk(struct fake_region *r, unsigned long i)
{
	unsigned int order = get_order(fake_mmap_align), j;
	struct page *page;

	if (r->pages[i])
		return true;
	page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN, order);
	if (!page)
		return false;
	split_page(page, order);
	for (j = 0; j < (1U << order) && i + j < r->nr; j++)
		r->pages[i + j] = page + j;
	for (; j < (1U << order); j++)	/* past a short last chunk */
		__free_page(page + j);
	return true;
}

static int fake_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fake_region *r;
	unsigned long i;
	int ret = -ENOMEM;

	if (!IS_ALIGNED(vma->vm_start | vma->vm_end, fake_mmap_align))
		return -EINVAL;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	kref_init(&r->ref);
	r->mm = vma->vm_mm;
	r->start = vma->vm_start;
	r->len = vma->vm_end - vma->vm_start;
	r->nr = r->len >> PAGE_SHIFT;
	r->pages = kvcalloc(r->nr, sizeof(*r->pages), GFP_KERNEL);
	if (!r->pages)
		goto out;
	for (i = 0; i < r->nr; i++) {
		if (!fake_alloc_chunk(r, i))
			goto out;
		ret = vm_insert_page(vma, r->start + i * PAGE_SIZE,
				     r->pages[i]);
		if (ret)
			goto out;
	}
	vma->vm_private_data = r;
	vma->vm_ops = &fake_vm_ops;
	mutex_lock(&fake_lock);
	list_add(&r->node, &fake_regions);
	r->listed = true;
	mutex_unlock(&fake_lock);
	return 0;
out:
	fake_region_put(r);
	return ret ? ret : -ENOMEM;
}

static const struct file_operations fake_fops = {
	.owner = THIS_MODULE,
	.mmap = fake_mmap,
};

static struct miscdevice fake_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = FAKE_NAME,
	.fops = &fake_fops,
	.mode = 0666,
};
