/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test only: the peer-memory part of CANN's ascend_kernel_hal.h
 * (src/sdk_driver/inc), for fake_ascend.c; an independent copy of the
 * vendor's ABI, apart from kmod/fxblk_peer_vendor.h on purpose.
 */
#ifndef FAKE_ASCEND_KERNEL_HAL_H
#define FAKE_ASCEND_KERNEL_HAL_H

#include <linux/types.h>

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

#endif
