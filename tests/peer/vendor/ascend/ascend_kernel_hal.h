/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test only: the peer-memory part of the Ascend driver's
 * src/sdk_driver/inc/ascend_kernel_hal.h (CANN driver, verylucky01/driver
 * at aff95158), declaration for declaration. The lab stages it as the
 * "vendor header" fxblk_ascend.ko builds against, with the Module.symvers
 * of fake_ascend.ko (tests/lab/modules/build.sh).
 */
#ifndef FAKE_ASCEND_KERNEL_HAL_H
#define FAKE_ASCEND_KERNEL_HAL_H

#include <linux/types.h>

struct p2p_page_info {
	u64 pa;			/* physical page */
	u64 reserved[4];
};

#define P2P_GET_PAGE_VERSION 0x1
struct p2p_page_table {
	u32 version;		/* page version */
	u64 page_size;		/* for giant pages, HPAGE_SIZE */
	struct p2p_page_info *pages_info;
	u64 page_num;
	u64 reserved[4];
};

int hal_kernel_p2p_get_pages(u64 va, u64 len,
			     void (*free_callback)(void *data), void *data,
			     struct p2p_page_table **page_table);
int hal_kernel_p2p_put_pages(struct p2p_page_table *page_table);

#endif
