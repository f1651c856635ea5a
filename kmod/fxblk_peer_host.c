// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "host": user memory of the registering
 * process, pinned with FOLL_LONGTERM (the pin lasts until DEREGISTER, as
 * an RDMA MR's does). pin_user_pages_fast() has had the same prototype
 * since 5.6, so no probe is needed here; it pins from current->mm, which
 * the control node has checked is the context's.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "fxblk_peer.h"

/* Pages per pin_user_pages_fast() call: its count is an int. */
#define FXBLK_PEER_HOST_BATCH	65536UL

static int fxblk_peer_host_probe(char *why, size_t len)
{
	return 0;
}

static int fxblk_peer_host_pin(struct fxblk_peer_reg *reg)
{
	unsigned int gup = FOLL_LONGTERM;
	unsigned long start = reg->addr & PAGE_MASK;
	unsigned long nr = DIV_ROUND_UP(reg->addr + reg->len - start,
					PAGE_SIZE);
	unsigned long done = 0;
	struct page **pages;
	long got;

	if (!(reg->reg_flags & FXBLK_PEER_REG_READONLY))
		gup |= FOLL_WRITE;
	pages = kvmalloc_array(nr, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	while (done < nr) {
		got = pin_user_pages_fast(start + done * PAGE_SIZE,
					  min(nr - done, FXBLK_PEER_HOST_BATCH),
					  gup, pages + done);
		if (got <= 0)
			goto out_unpin;
		done += got;
	}
	reg->pages = pages;
	reg->nr_pages = nr;
	reg->first_off = offset_in_page(reg->addr);
	reg->page_size = PAGE_SIZE;
	return 0;

out_unpin:
	unpin_user_pages(pages, done);
	kvfree(pages);
	return got ? got : -EFAULT;
}

/* Pages a READ filled are dirty: tell the VM before letting go of them. */
static void fxblk_peer_host_unpin(struct fxblk_peer_reg *reg)
{
	unpin_user_pages_dirty_lock(reg->pages, reg->nr_pages,
				    !(reg->reg_flags & FXBLK_PEER_REG_READONLY));
	kvfree(reg->pages);
	reg->pages = NULL;
	reg->nr_pages = 0;
}

const struct fxblk_peer_ops fxblk_peer_host_ops = {
	.name = "host",
	.id = FXBLK_PEER_PROV_HOST,
	.caps = FXBLK_PEER_F_STRUCT_PAGE,
	.probe = fxblk_peer_host_probe,
	.pin = fxblk_peer_host_pin,
	.unpin = fxblk_peer_host_unpin,
};
