/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test only: the amd_rdma API v2 (AMD_RDMA_MAJOR 2) as declared by
 * ROCK-Kernel-Driver include/drm/amd_rdma.h, for fake_amdkfd.c. Kept apart
 * from kmod/fxblk_peer_vendor.h on purpose: the fake is a second,
 * independent copy of the vendor's ABI.
 */
#ifndef FAKE_AMD_RDMA_H
#define FAKE_AMD_RDMA_H

#include <linux/types.h>

struct device;
struct pid;
struct sg_table;

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

#endif
