/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The vendors' kernel interfaces the rocm and ascend providers call,
 * copied from their headers (ABI, so field for field), and only looked up
 * at run time with symbol_get(): fxblk builds and loads without them.
 * Sources: ROCK-Kernel-Driver include/drm/amd_rdma.h (API v2, with
 * dma_dev; v1 lacks it and must not be called with this prototype) and
 * CANN driver src/sdk_driver/inc/ascend_kernel_hal.h.
 */
#ifndef FXBLK_PEER_VENDOR_H
#define FXBLK_PEER_VENDOR_H

#include <linux/types.h>

struct device;
struct pid;
struct sg_table;

/* amd_rdma.h, AMD_RDMA_MAJOR 2 */
struct amd_p2p_info {
	uint64_t va;
	uint64_t size;
	struct pid *pid;
	struct sg_table *pages;
	void *priv;
};

struct amd_rdma_interface {
	int (*get_pages)(uint64_t address, uint64_t length, struct pid *pid,
			 struct device *dma_dev,
			 struct amd_p2p_info **amd_p2p_data,
			 void (*free_callback)(void *client_priv),
			 void *client_priv);
	int (*put_pages)(struct amd_p2p_info **amd_p2p_data);
	int (*is_gpu_address)(uint64_t address, struct pid *pid);
	int (*get_page_size)(uint64_t address, uint64_t length,
			     struct pid *pid, unsigned long *page_size);
};

int amdkfd_query_rdma_interface(const struct amd_rdma_interface **rdma);

/* ascend_kernel_hal.h */
struct p2p_page_info {
	u64 pa;
	u64 reserved[4];
};

struct p2p_page_table {
	u32 version;
	u64 page_size;
	struct p2p_page_info *pages_info;
	u64 page_num;
	u64 reserved[4];
};

int hal_kernel_p2p_get_pages(u64 va, u64 len,
			     void (*free_callback)(void *data), void *data,
			     struct p2p_page_table **page_table);
int hal_kernel_p2p_put_pages(struct p2p_page_table *page_table);

#endif /* FXBLK_PEER_VENDOR_H */
