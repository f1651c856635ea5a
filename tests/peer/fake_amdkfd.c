// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: a stand-in for amdkfd's RDMA interface. Exports
 * amdkfd_query_rdma_interface() with the exact amd_rdma v2 structs of
 * ROCK-Kernel-Driver include/drm/amd_rdma.h; "VRAM" is host memory mapped
 * from /dev/fake_amdkfd (see fake_vram.h). is_gpu_address() is true inside
 * such a mapping of the process @pid names.
 *
 *   echo 1 > /sys/module/fake_amdkfd/parameters/revoke   free callback of
 *                                                         every pin (once)
 *   cat /sys/module/fake_amdkfd/parameters/pins           pins held now
 *
 * Exported GPL: symbol_get() finds only GPL symbols since 6.6 (kfd exports
 * it with EXPORT_SYMBOL; on such kernels a real consumer must check).
 */
#define FAKE_NAME "fake_amdkfd"
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/scatterlist.h>

#include "amd_rdma.h"
#include "fake_vram.h"

struct fake_pin {
	struct list_head node;
	struct amd_p2p_info info;
	struct fake_region *region;
	struct sg_table sgt;
	struct device *dma_dev;
	void (*free_callback)(void *client_priv);
	void *client_priv;
	bool revoked;
};

static LIST_HEAD(fake_pins);
static unsigned int fake_nr_pins;

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
 * The region of @pid's process covering the range, with a reference. The
 * mm is taken outside fake_lock: its last mmput() unmaps, which locks it.
 */
static struct fake_region *fake_lookup(uint64_t addr, uint64_t len,
				       struct pid *pid)
{
	struct mm_struct *mm = fake_pid_mm(pid);
	struct fake_region *r;

	if (!mm)
		return NULL;
	mutex_lock(&fake_lock);
	r = fake_region_find(mm, addr, len);
	mutex_unlock(&fake_lock);
	mmput(mm);
	return r;
}

static int fake_map(struct fake_pin *p, uint64_t addr, uint64_t len)
{
	unsigned long first = (addr - p->region->start) >> PAGE_SHIFT;
	int ret;

	ret = sg_alloc_table_from_pages(&p->sgt, p->region->pages + first,
					len >> PAGE_SHIFT, 0, len, GFP_KERNEL);
	if (ret || !p->dma_dev)
		return ret;
	ret = dma_map_sgtable(p->dma_dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	if (ret)
		sg_free_table(&p->sgt);
	return ret;
}

static int fake_get_pages(uint64_t address, uint64_t length, struct pid *pid,
			  struct device *dma_dev,
			  struct amd_p2p_info **amd_p2p_data,
			  void (*free_callback)(void *client_priv),
			  void *client_priv)
{
	struct fake_pin *p;
	int ret = -EINVAL;

	if (!PAGE_ALIGNED(address) || !PAGE_ALIGNED(length) || !length)
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->region = fake_lookup(address, length, pid);
	if (!p->region)
		goto out_free;
	p->dma_dev = dma_dev;
	ret = fake_map(p, address, length);
	if (ret)
		goto out_put;
	mutex_lock(&fake_lock);
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
	return ret;
}

static int fake_put_pages(struct amd_p2p_info **amd_p2p_data)
{
	struct fake_pin *p;

	if (!amd_p2p_data || !*amd_p2p_data)
		return -EINVAL;
	p = (*amd_p2p_data)->priv;
	mutex_lock(&fake_lock);
	list_del(&p->node);
	fake_nr_pins--;
	mutex_unlock(&fake_lock);
	if (p->dma_dev)
		dma_unmap_sgtable(p->dma_dev, &p->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&p->sgt);
	fake_region_put(p->region);
	kfree(p);
	*amd_p2p_data = NULL;
	return 0;
}

static int fake_is_gpu_address(uint64_t address, struct pid *pid)
{
	struct fake_region *r;

	r = fake_lookup(address, 1, pid);
	if (r)
		fake_region_put(r);
	return !!r;
}

static int fake_get_page_size(uint64_t address, uint64_t length,
			      struct pid *pid, unsigned long *page_size)
{
	*page_size = PAGE_SIZE;
	return 0;
}

static const struct amd_rdma_interface fake_rdma = {
	.get_pages = fake_get_pages,
	.put_pages = fake_put_pages,
	.is_gpu_address = fake_is_gpu_address,
	.get_page_size = fake_get_page_size,
};

int amdkfd_query_rdma_interface(const struct amd_rdma_interface **rdma)
{
	*rdma = &fake_rdma;
	return 0;
}
EXPORT_SYMBOL_GPL(amdkfd_query_rdma_interface);

/* Like kfd evicting a BO: the client's callback, once per pin. */
static int fake_revoke_set(const char *val, const struct kernel_param *kp)
{
	struct fake_pin *p;

	mutex_lock(&fake_lock);
	list_for_each_entry(p, &fake_pins, node)
		if (!p->revoked) {
			p->revoked = true;
			p->free_callback(p->client_priv);
		}
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
MODULE_DESCRIPTION("Test only: fake amdkfd RDMA interface (amd_rdma v2) over host memory");
