/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Test only: amdkfd's amd_rdma interface, API 2.0, declaration for
 * declaration as amdgpu-dkms installs it (ROCm/ROCK-Kernel-Driver
 * include/drm/amd_rdma.h with "#define AMD_RDMA_MAJOR 2", ROCm >= 4.2).
 * The lab stages it as the "vendor header" fxblk_rocm.ko builds against,
 * with the Module.symvers of fake_amdkfd.ko (tests/lab/modules/build.sh).
 * Like the original it includes nothing: the includer provides the types.
 */
#ifndef AMD_RDMA_H_
#define AMD_RDMA_H_

/* 1.0 until ROCm 4.1 (undefined); 2.0 added dma_dev (IOMMU support) */
#define AMD_RDMA_MAJOR 2
#define AMD_RDMA_MINOR 0

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

#endif /* AMD_RDMA_H_ */
