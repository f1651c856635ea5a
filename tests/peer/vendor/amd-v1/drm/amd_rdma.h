/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Test only: amdkfd's amd_rdma interface, API 1.0, declaration for
 * declaration as ROCm <= 4.1 installed it (ROCm/ROCK-Kernel-Driver
 * include/drm/amd_rdma.h at 521a9dac, the API of kfd_rdma.c at cd5f0360):
 * no AMD_RDMA_MAJOR, get_pages() without dma_dev. The lab stages it as the
 * "vendor header" of the v1 build of fxblk_rocm.ko, with the Module.symvers
 * of fake_amdkfd.ko, which serves this API when loaded with api=1.
 */
#ifndef AMD_RDMA_H_
#define AMD_RDMA_H_

struct amd_p2p_info {
	uint64_t va;
	uint64_t size;
	struct pid *pid;
	struct sg_table *pages;
	void *priv;
};

struct amd_rdma_interface {
	int (*get_pages)(uint64_t address, uint64_t length, struct pid *pid,
			 struct amd_p2p_info **amd_p2p_data,
			 void (*free_callback)(void *client_priv),
			 void *client_priv);
	int (*put_pages)(struct amd_p2p_info **amd_p2p_data);
	int (*is_gpu_address)(uint64_t address, struct pid *pid);
	int (*get_page_size)(uint64_t address, uint64_t length,
			     struct pid *pid, unsigned long *page_size);
};

int amdkfd_query_rdma_interface(const struct amd_rdma_interface **rdma);

#endif /* AMD_RDMA_H_ */
