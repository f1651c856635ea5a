// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer memory, provider "host": user memory of the registering
 * process, pinned with FOLL_LONGTERM (the pin lasts until DEREGISTER, as
 * an RDMA MR's does). pin_user_pages_fast() has had the same prototype
 * since 5.6; it pins from current->mm, which the control node has checked
 * is the context's.
 *
 * PCI P2PDMA pages (a device BAR published as p2pmem, GPU memory exposed
 * that way) cannot be pinned long term: a long-term pin of one fails with
 * EREMOTEIO, and the kernel refuses FOLL_LONGTERM together with
 * FOLL_PCI_P2PDMA (mm/gup.c is_valid_gup_args(), 6.2 to 7.3: "We want to
 * allow the pgmap to be hot-unplugged at all times"). Where the kernel has
 * FOLL_PCI_P2PDMA (6.2+, compat probe), such a range is registered without
 * pins: REGISTER checks that all of it can be pinned with FOLL_PCI_P2PDMA
 * and lets go, and each FXBLK_PEER_IOC_RW pins its part for the I/O only
 * (fxblk_peer.c), as O_DIRECT does (iov_iter_extract_pages() with
 * FOLL_PCI_P2PDMA for a queue that takes them). An fxN whose members
 * cannot map P2PDMA pages fails such bios (fxblk_dev.c: EREMOTEIO), as
 * O_DIRECT on it does.
 */
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "fxblk_peer.h"

/* Pages per pin when checking a P2PDMA range (pinned and let go). */
#define FXBLK_PEER_HOST_CHECK	512UL

/* Pages per pin_user_pages_fast() call: its count is an int. */
#define FXBLK_PEER_HOST_BATCH	65536UL

static int fxblk_peer_host_probe(char *why, size_t len)
{
	return 0;
}

#ifdef FXBLK_HAVE_FOLL_PCI_P2PDMA
static bool fxblk_peer_host_any_p2pdma(struct page **pages, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (is_pci_p2pdma_page(pages[i]))
			return true;
	return false;
}

/*
 * The long-term pin of [start, start + nr pages) failed with @err. If the
 * range holds PCI P2PDMA pages (a P2PDMA page refuses a long-term pin:
 * EREMOTEIO; a writable long-term pin of p2pmem's file mapping fails
 * first, EFAULT, 6.5+), check that all of it can be pinned for I/O
 * (FOLL_PCI_P2PDMA), then hold no pin: RW pins it. Else @err stands.
 */
static int fxblk_peer_host_per_io(struct fxblk_peer_reg *reg,
				  unsigned long start, unsigned long nr,
				  unsigned int gup, int err)
{
	unsigned long done = 0;
	struct page **pages;
	bool p2p = false;
	long got;

	pages = kmalloc_array(FXBLK_PEER_HOST_CHECK, sizeof(*pages),
			      GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	while (done < nr) {
		got = pin_user_pages_fast(start + done * PAGE_SIZE,
					  min(nr - done, FXBLK_PEER_HOST_CHECK),
					  (gup & ~FOLL_LONGTERM) |
					  FOLL_PCI_P2PDMA, pages);
		if (got <= 0)
			break;
		p2p |= fxblk_peer_host_any_p2pdma(pages, got);
		unpin_user_pages(pages, got);
		done += got;
	}
	kfree(pages);
	if (done < nr || !p2p)
		return err;
	reg->pages = NULL;	/* fxblk_peer.c: pinned per RW */
	reg->nr_pages = 0;
	reg->first_off = offset_in_page(reg->addr);
	reg->page_size = PAGE_SIZE;
	return 0;
}
#endif

/* Where the kernel cannot pin P2PDMA pages at all, @err stands. */
static int fxblk_peer_host_p2pdma(struct fxblk_peer_reg *reg,
				  unsigned long start, unsigned long nr,
				  unsigned int gup, int err)
{
#ifdef FXBLK_HAVE_FOLL_PCI_P2PDMA
	return fxblk_peer_host_per_io(reg, start, nr, gup, err);
#else
	return err;
#endif
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
	/*
	 * @len is the caller's (root has no RLIMIT_MEMLOCK): no more pages
	 * than RAM can be pinned long term, so no page array larger than
	 * that is allocated (nor warned about); P2PDMA memory that large is
	 * still taken, pinned per I/O.
	 */
	if (nr > totalram_pages())
		return fxblk_peer_host_p2pdma(reg, start, nr, gup, -ENOMEM);
	pages = kvmalloc_array(nr, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
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
	if (!got)
		got = -EFAULT;
	if (got == -EREMOTEIO || got == -EFAULT)	/* P2PDMA pages? */
		return fxblk_peer_host_p2pdma(reg, start, nr, gup, got);
	return got;
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
