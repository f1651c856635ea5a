// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: a stand-in for amdkfd's amd_rdma interface as amdgpu-dkms
 * ships it (ROCm/ROCK-Kernel-Driver), over host memory mapped from
 * /dev/fake_amdkfd (fake_vram.h) instead of VRAM. Mirrors, per API:
 *
 * api=1: drivers/gpu/drm/amd/amdkfd/kfd_rdma.c at cd5f0360 with
 *   include/drm/amd_rdma.h at 521a9dac (vendor/amd-v1/drm/amd_rdma.h):
 *   get_pages() without dma_dev, -EINVAL when the process or the BO is not
 *   found; put_pages() looks the process up again by the pid it was given
 *   (-EINVAL, nothing freed, if that task or its mm is gone, as after its
 *   exit_mm). On a free of the memory run_rdma_free_callback() calls the
 *   client's callback and then frees the amd_p2p_info (put_pages_helper()):
 *   at once for a free (kfd_ioctl_free_memory_of_gpu(); the owner's munmap
 *   here), later for a process teardown (kfd_process_free_outstanding_kfd_bos()
 *   from kfd's process release work, after the mm is gone, so possibly after
 *   the process's files were closed; here a work item 200 ms after the
 *   exiting owner's mappings went). Here the freed pin is
 *   poisoned and kept instead of kfree()d, so that a client calling
 *   put_pages after the callback (a double free on the real driver) is
 *   caught: WARN and the double_frees counter.
 * api=2 (default): kfd_peerdirect.c's "AMD RDMA wrapper" (AMD_RDMA_MAJOR
 *   2, vendor/amd-v2/drm/amd_rdma.h): rdma_get_pages() maps for dma_dev,
 *   answers -ESRCH without a process and 0 *without setting amd_p2p_data*
 *   when no BO covers the range (amd_acquire() returning 0); it stores the
 *   free callback and never calls it, keeping the BO referenced and pinned
 *   until put_pages(), whatever the owner frees.
 *
 * kfd finds the process as kfd_lookup_process_by_pid() does: the task of
 * @pid (PIDTYPE_PID), then its mm. Exported with plain EXPORT_SYMBOL, as
 * kfd does (so symbol_get() cannot find it on 6.6+: the glue links to it).
 *
 *   /sys/module/fake_amdkfd/parameters/api           1 or 2 (at load)
 *   echo 1 > /sys/module/fake_amdkfd/parameters/revoke   v1: free every pin
 *                                        through its callback (v2: EINVAL)
 *   cat .../pins  .../callbacks  .../double_frees    pins held now, free
 *                                        callbacks made, puts of freed pins
 *   cat .../virt_maps                    pins mapped for a virtual-DMA
 *                                        device (fake_virt_dma())
 */
#define FAKE_NAME "fake_amdkfd"
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <drm/amd_rdma.h>	/* vendor/amd-v2: the v2 declarations */

#include "fake_vram.h"

#define FAKE_PIN_LIVE	0x4c495645u
#define FAKE_PIN_FREED	0x46524545u

/* API 1.0's table (vendor/amd-v1/drm/amd_rdma.h), beside v2's. */
struct fake_amd_rdma_interface_v1 {
	int (*get_pages)(uint64_t address, uint64_t length, struct pid *pid,
			 struct amd_p2p_info **amd_p2p_data,
			 void (*free_callback)(void *client_priv),
			 void *client_priv);
	int (*put_pages)(struct amd_p2p_info **amd_p2p_data);
	int (*is_gpu_address)(uint64_t address, struct pid *pid);
	int (*get_page_size)(uint64_t address, uint64_t length,
			     struct pid *pid, unsigned long *page_size);
};

struct fake_pin {
	struct list_head node;		/* fake_pins, or fake_freed (v1) */
	u32 magic;
	struct amd_p2p_info info;
	struct fake_region *region;
	struct sg_table sgt;
	struct device *dma_dev;		/* v2 */
	void (*free_callback)(void *client_priv);
	void *client_priv;
};

static int fake_api = 2;
module_param_named(api, fake_api, int, 0444);
MODULE_PARM_DESC(api, "amd_rdma API to serve: 1 (kfd_rdma.c) or 2 (kfd_peerdirect.c), default 2");

static LIST_HEAD(fake_pins);
static LIST_HEAD(fake_freed);
static LIST_HEAD(fake_teardown);	/* v1: pins of exited owners */
static void fake_teardown_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(fake_teardown_work, fake_teardown_fn);
static unsigned int fake_nr_pins, fake_nr_callbacks, fake_nr_double_frees;
static unsigned int fake_nr_virt_maps;

static struct mm_struct *fake_pid_mm(struct pid *pid)
{
	struct task_struct *task = get_pid_task(pid, PIDTYPE_PID);
	struct mm_struct *mm;

	if (!task)
		return NULL;
	mm = get_task_mm(task);
	put_task_struct(task);
	return mm;
}

/*
 * The region of @pid's process covering the range, with a reference, or
 * NULL and -ESRCH (no such process) or -EINVAL (no BO there). The mm is
 * taken outside fake_lock: its last mmput() unmaps, which locks it.
 */
static struct fake_region *fake_lookup(uint64_t addr, uint64_t len,
				       struct pid *pid, int *err)
{
	struct mm_struct *mm = fake_pid_mm(pid);
	struct fake_region *r;

	*err = -ESRCH;
	if (!mm)
		return NULL;
	mutex_lock(&fake_lock);
	r = fake_region_find(mm, addr, len);
	mutex_unlock(&fake_lock);
	mmput(mm);
	*err = r ? 0 : -EINVAL;
	return r;
}

/*
 * The lab's one concession (issue 20): a device without a DMA mask, which
 * the real dma_map_sgtable() refuses (WARN, kernel/dma/mapping.c), is what
 * fxblk passes for a software RDMA device (rxe: ib_uses_virt_dma(), only
 * with fxblk.peer_virt_dma=1). kfd maps VRAM for a NIC's PCI device; rxe
 * takes kernel virtual addresses as DMA addresses (ib_virt_dma_to_page()),
 * so for it the fake hands out those of its host "VRAM" pages, which is
 * what rxe would reach by DMA if it had any.
 */
static bool fake_virt_dma(struct device *dev)
{
	return dev && !dev->dma_mask;
}

static int fake_map(struct fake_pin *p, uint64_t addr, uint64_t len)
{
	unsigned long first = (addr - p->region->start) >> PAGE_SHIFT;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	ret = sg_alloc_table_from_pages(&p->sgt, p->region->pages + first,
					len >> PAGE_SHIFT, 0, len, GFP_KERNEL);
	if (ret || !p->dma_dev)
		return ret;
	if (fake_virt_dma(p->dma_dev)) {
		for_each_sgtable_sg(&p->sgt, sg, i) {
			sg_dma_address(sg) = (dma_addr_t)(uintptr_t)sg_virt(sg);
			sg_dma_len(sg) = sg->length;
		}
		p->sgt.nents = p->sgt.orig_nents;
		fake_nr_virt_maps++;
		return 0;
	}
	ret = dma_map_sgtable(p->dma_dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		sg_free_table(&p->sgt);
	return ret;
}

static void fake_unmap(struct fake_pin *p)
{
	if (p->dma_dev && !fake_virt_dma(p->dma_dev))
		dma_unmap_sgtable(p->dma_dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&p->sgt);
	fake_region_put(p->region);
}

/* Both APIs' get_pages; v2 passes @dma_dev, v1 NULL. */
static int fake_pin_range(uint64_t address, uint64_t length, struct pid *pid,
			  struct device *dma_dev,
			  struct amd_p2p_info **amd_p2p_data,
			  void (*free_callback)(void *client_priv),
			  void *client_priv)
{
	struct fake_pin *p;
	int ret;

	if (!PAGE_ALIGNED(address) || !PAGE_ALIGNED(length) || !length)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->region = fake_lookup(address, length, pid, &ret);
	if (!p->region)
		goto out_free;
	p->dma_dev = dma_dev;
	ret = fake_map(p, address, length);
	if (ret)
		goto out_put;
	mutex_lock(&fake_lock);
	p->magic = FAKE_PIN_LIVE;
	p->info = (struct amd_p2p_info){ .va = address, .size = length,
		.pid = pid, .pages = &p->sgt, .priv = p };
	p->free_callback = free_callback;
	p->client_priv = client_priv;
	list_add(&p->node, &fake_pins);
	fake_nr_pins++;
	mutex_unlock(&fake_lock);
	*amd_p2p_data = &p->info;
	return 0;

out_put:
	fake_region_put(p->region);
out_free:
	kfree(p);
	/* v2: amd_acquire() finding no BO makes rdma_get_pages() return 0 */
	return fake_api == 2 && ret == -EINVAL ? 0 : ret;
}

static int fake_get_pages_v1(uint64_t address, uint64_t length,
			     struct pid *pid,
			     struct amd_p2p_info **amd_p2p_data,
			     void (*free_callback)(void *client_priv),
			     void *client_priv)
{
	return fake_pin_range(address, length, pid, NULL, amd_p2p_data,
			      free_callback, client_priv);
}

static int fake_get_pages_v2(uint64_t address, uint64_t length,
			     struct pid *pid, struct device *dma_dev,
			     struct amd_p2p_info **amd_p2p_data,
			     void (*free_callback)(void *client_priv),
			     void *client_priv)
{
	return fake_pin_range(address, length, pid, dma_dev, amd_p2p_data,
			      free_callback, client_priv);
}

/* v1 put_pages() first finds the process again by its pid. */
static bool fake_v1_process_gone(struct pid *pid)
{
	struct mm_struct *mm = fake_pid_mm(pid);

	if (mm)
		mmput(mm);
	return !mm;
}

static int fake_put_pages(struct amd_p2p_info **amd_p2p_data)
{
	struct fake_pin *p;

	if (!amd_p2p_data || !*amd_p2p_data)
		return -EINVAL;
	p = container_of(*amd_p2p_data, struct fake_pin, info);
	mutex_lock(&fake_lock);
	if (p->magic != FAKE_PIN_LIVE) {
		fake_nr_double_frees++;
		mutex_unlock(&fake_lock);
		WARN(1, "fake_amdkfd: put_pages of an amd_p2p_info kfd freed after the free callback (double free on a real v1 kfd)\n");
		return -EINVAL;
	}
	mutex_unlock(&fake_lock);
	if (fake_api == 1 && fake_v1_process_gone(p->info.pid))
		return -EINVAL;
	mutex_lock(&fake_lock);
	list_del(&p->node);
	fake_nr_pins--;
	p->magic = 0;
	mutex_unlock(&fake_lock);
	fake_unmap(p);
	kfree(p);
	*amd_p2p_data = NULL;
	return 0;
}

/*
 * v1 run_rdma_free_callback(): the client's callback, then kfd frees the
 * pin. Kept poisoned on fake_freed (see the top) rather than kfree()d.
 */
static void fake_v1_free(struct fake_pin *p)
{
	lockdep_assert_held(&fake_lock);
	fake_nr_callbacks++;
	p->free_callback(p->client_priv);
	list_move(&p->node, &fake_freed);
	fake_nr_pins--;
	p->magic = FAKE_PIN_FREED;
	fake_unmap(p);
	memset(&p->info, 0x6b, sizeof(p->info));
}

/*
 * The owner freed its memory: v1 frees the pins on it, at once for a free
 * (munmap), from the teardown work when the owner exits (its mm has no
 * users left); v2 keeps them.
 */
static void fake_region_gone(struct fake_region *r)
{
	bool exiting = !atomic_read(&r->mm->mm_users);
	struct fake_pin *p, *tmp;

	if (fake_api != 1)
		return;
	list_for_each_entry_safe(p, tmp, &fake_pins, node) {
		if (p->region != r)
			continue;
		if (exiting)
			list_move(&p->node, &fake_teardown);
		else
			fake_v1_free(p);
	}
	if (exiting)
		schedule_delayed_work(&fake_teardown_work, HZ / 5);
}

static void fake_teardown_fn(struct work_struct *work)
{
	struct fake_pin *p, *tmp;

	mutex_lock(&fake_lock);
	list_for_each_entry_safe(p, tmp, &fake_teardown, node)
		fake_v1_free(p);
	mutex_unlock(&fake_lock);
}

static int fake_is_gpu_address(uint64_t address, struct pid *pid)
{
	struct fake_region *r;
	int err;

	r = fake_lookup(address, 1, pid, &err);
	if (r)
		fake_region_put(r);
	return !!r;
}

/* Both kfd versions: "the same as system memory", PAGE_SIZE. */
static int fake_get_page_size(uint64_t address, uint64_t length,
			      struct pid *pid, unsigned long *page_size)
{
	*page_size = PAGE_SIZE;
	return 0;
}

static const struct fake_amd_rdma_interface_v1 fake_rdma_v1 = {
	.get_pages = fake_get_pages_v1,
	.put_pages = fake_put_pages,
	.is_gpu_address = fake_is_gpu_address,
	.get_page_size = fake_get_page_size,
};

static const struct amd_rdma_interface fake_rdma_v2 = {
	.get_pages = fake_get_pages_v2,
	.put_pages = fake_put_pages,
	.is_gpu_address = fake_is_gpu_address,
	.get_page_size = fake_get_page_size,
};

int amdkfd_query_rdma_interface(const struct amd_rdma_interface **rdma)
{
	if (fake_api == 1)
		*rdma = (const struct amd_rdma_interface *)&fake_rdma_v1;
	else
		*rdma = &fake_rdma_v2;
	return 0;
}
EXPORT_SYMBOL(amdkfd_query_rdma_interface);

static int fake_revoke_set(const char *val, const struct kernel_param *kp)
{
	struct fake_pin *p, *tmp;

	if (fake_api != 1)
		return -EINVAL;	/* v2 never calls the free callback */
	mutex_lock(&fake_lock);
	list_for_each_entry_safe(p, tmp, &fake_pins, node)
		fake_v1_free(p);
	mutex_unlock(&fake_lock);
	return 0;
}

static int fake_count_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*(unsigned int *)kp->arg));
}

static const struct kernel_param_ops fake_revoke_ops = {
	.set = fake_revoke_set,
};

static const struct kernel_param_ops fake_count_ops = {
	.get = fake_count_get,
};

module_param_cb(revoke, &fake_revoke_ops, NULL, 0200);
MODULE_PARM_DESC(revoke, "Write (api=1): free every pin through its free callback");
module_param_cb(pins, &fake_count_ops, &fake_nr_pins, 0444);
MODULE_PARM_DESC(pins, "Pins held now");
module_param_cb(callbacks, &fake_count_ops, &fake_nr_callbacks, 0444);
MODULE_PARM_DESC(callbacks, "Free callbacks made");
module_param_cb(double_frees, &fake_count_ops, &fake_nr_double_frees, 0444);
MODULE_PARM_DESC(double_frees, "put_pages calls on pins freed after their callback");
module_param_cb(virt_maps, &fake_count_ops, &fake_nr_virt_maps, 0444);
MODULE_PARM_DESC(virt_maps, "v2 pins mapped for a virtual-DMA device (kernel virtual addresses)");

static int __init fake_init(void)
{
	if (fake_api != 1 && fake_api != 2)
		return -EINVAL;
	return misc_register(&fake_misc);
}

/* No pin is left: each holds a reference of its client's module. */
static void __exit fake_exit(void)
{
	struct fake_pin *p, *tmp;

	misc_deregister(&fake_misc);
	cancel_delayed_work_sync(&fake_teardown_work);
	list_for_each_entry_safe(p, tmp, &fake_freed, node)
		kfree(p);
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test only: fake amdkfd amd_rdma interface (API 1 or 2) over host memory");
