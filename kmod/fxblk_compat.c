// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line kernel-compat wrappers (see fxblk_compat.h): member open and
 * close, disk allocation with stacked limits and features, add and put.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>

#include "fxblk.h"

/* ---- member open/close ------------------------------------------------- */

#if defined(FXBLK_HAVE_BDEV_FILE_OPEN)
int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct file *f = bdev_file_open_by_dev(m->dev,
					       BLK_OPEN_READ | BLK_OPEN_WRITE,
					       holder, FXBLK_HOLDER_OPS);

	if (IS_ERR(f))
		return PTR_ERR(f);
	m->handle = f;
	m->bdev = file_bdev(f);
	return 0;
}

void fxblk_member_close(struct fxblk_member *m)
{
#ifdef FXBLK_HAVE_BDEV_FPUT
	bdev_fput(m->handle);
#else
	fput(m->handle);
#endif
}
#elif defined(FXBLK_HAVE_BDEV_OPEN_HANDLE)
int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct bdev_handle *h = bdev_open_by_dev(m->dev,
						 BLK_OPEN_READ | BLK_OPEN_WRITE,
						 holder, FXBLK_HOLDER_OPS);

	if (IS_ERR(h))
		return PTR_ERR(h);
	m->handle = h;
	m->bdev = h->bdev;
	return 0;
}

void fxblk_member_close(struct fxblk_member *m)
{
	bdev_release(m->handle);
}
#elif defined(FXBLK_HAVE_BLKDEV_GET_HOLDER_OPS)
int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct block_device *b = blkdev_get_by_dev(m->dev,
						   BLK_OPEN_READ | BLK_OPEN_WRITE,
						   holder, FXBLK_HOLDER_OPS);

	if (IS_ERR(b))
		return PTR_ERR(b);
	m->handle = holder;
	m->bdev = b;
	return 0;
}

void fxblk_member_close(struct fxblk_member *m)
{
	blkdev_put(m->bdev, m->handle);
}
#else
#define FXBLK_MEMBER_MODE	(FMODE_READ | FMODE_WRITE | FMODE_EXCL)
int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct block_device *b = blkdev_get_by_dev(m->dev, FXBLK_MEMBER_MODE,
						   holder);

	if (IS_ERR(b))
		return PTR_ERR(b);
	m->handle = b;
	m->bdev = b;
	return 0;
}

void fxblk_member_close(struct fxblk_member *m)
{
	blkdev_put(m->bdev, FXBLK_MEMBER_MODE);
}
#endif

/*
 * Wait for the kernel's own work on a dma-buf (a move its exporter started,
 * e.g. for a pin) to finish, as ib_umem_dmabuf_map_pages() does before an
 * RDMA NIC uses the pages. 0, or -errno.
 */
int fxblk_dma_resv_wait_kernel(struct dma_resv *obj)
{
	long ret;

#ifdef FXBLK_HAVE_DMA_RESV_USAGE
	ret = dma_resv_wait_timeout(obj, DMA_RESV_USAGE_KERNEL, false,
				    MAX_SCHEDULE_TIMEOUT);
#else
	ret = dma_resv_wait_timeout_rcu(obj, false, false,
					MAX_SCHEDULE_TIMEOUT);
#endif
	return ret < 0 ? ret : 0;
}

/* The kernel treats @bdev as having a volatile write cache (flushes sent). */
bool fxblk_bdev_write_cache(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_BDEV_WRITE_CACHE
	return bdev_write_cache(bdev);
#else
	return test_bit(QUEUE_FLAG_WC, &bdev_get_queue(bdev)->queue_flags);
#endif
}

sector_t fxblk_bdev_sectors(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_BDEV_NR_SECTORS
	return bdev_nr_sectors(bdev);
#else
	return i_size_read(bdev->bd_inode) >> SECTOR_SHIFT;
#endif
}

bool fxblk_bdev_nowait(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_BDEV_NOWAIT
	return bdev_nowait(bdev);
#else
	return blk_queue_nowait(bdev_get_queue(bdev));
#endif
}

/* The member's queue takes polled bios (it has poll queues). */
bool fxblk_bdev_poll(struct block_device *bdev)
{
#if defined(FXBLK_HAVE_BLK_FEATURES)
	return bdev_get_queue(bdev)->limits.features & BLK_FEAT_POLL;
#else
	return test_bit(QUEUE_FLAG_POLL, &bdev_get_queue(bdev)->queue_flags);
#endif
}

/* The member's queue takes bios with PCI P2PDMA pages. */
bool fxblk_bdev_p2pdma(struct block_device *bdev)
{
#if defined(FXBLK_HAVE_BLK_FEAT_PCI_P2PDMA)
	return bdev_get_queue(bdev)->limits.features & BLK_FEAT_PCI_P2PDMA;
#elif defined(FXBLK_HAVE_QUEUE_FLAG_PCI_P2PDMA)
	return blk_queue_pci_p2pdma(bdev_get_queue(bdev));
#else
	return false;
#endif
}

/* ---- discard, secure erase, write-zeroes ------------------------------- */

static bool fxblk_bdev_discard(struct block_device *bdev)
{
	struct request_queue *q = bdev_get_queue(bdev);

#ifdef QUEUE_FLAG_DISCARD
	if (!blk_queue_discard(q))
		return false;
#endif
	return q->limits.max_discard_sectors;
}

static bool fxblk_bdev_secure_erase(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_MAX_SECURE_ERASE
	return bdev_get_queue(bdev)->limits.max_secure_erase_sectors;
#else
	return false;	/* QUEUE_FLAG_SECERASE: never set on fxN */
#endif
}

/*
 * Stacking keeps discard and secure erase if any member has them
 * (min_not_zero in blk_stack_limits()), but a fan-out sends them to every
 * member: one without fails its part after the others did theirs. As in
 * dm_table_set_restrictions(), they stay only if every member has them.
 * (Write-zeroes is stacked with min(), so one member without turns it off.)
 */
static void fxblk_limits_all(struct fxblk_volume *vol, struct queue_limits *lim)
{
	bool discard = true, secure_erase = true;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		discard &= fxblk_bdev_discard(vol->members[i].bdev);
		secure_erase &= fxblk_bdev_secure_erase(vol->members[i].bdev);
	}
	if (!discard) {
		lim->max_hw_discard_sectors = 0;
		lim->max_discard_sectors = 0;
	}
#ifdef FXBLK_HAVE_MAX_SECURE_ERASE
	if (!secure_erase)
		lim->max_secure_erase_sectors = 0;
#endif
}

/* Plain stores, as the kernel's helpers for completion handlers are. */
static void fxblk_disable_discard(struct request_queue *q)
{
#ifdef FXBLK_HAVE_BLK_QUEUE_DISABLE
	blk_queue_disable_discard(q);
#else
	blk_queue_max_discard_sectors(q, 0);
#ifdef QUEUE_FLAG_DISCARD
	blk_queue_flag_clear(QUEUE_FLAG_DISCARD, q);
#endif
#endif
}

static void fxblk_disable_write_zeroes(struct request_queue *q)
{
#ifdef FXBLK_HAVE_BLK_QUEUE_DISABLE
	blk_queue_disable_write_zeroes(q);
#else
	blk_queue_max_write_zeroes_sectors(q, 0);
#endif
}

/*
 * Member @m failed a discard or write-zeroes of a fan-out with NOTSUPP, or
 * with TARGET after turning the operation off itself (dm's clone_endio()).
 * The volume stops advertising it, so the next blkdev_issue_zeroout()
 * writes zeroes at once instead of the other members doing the work twice,
 * as dm's disable_write_zeroes()/disable_discard() do. Any context.
 */
void fxblk_limits_refused(struct fxblk_member *m, unsigned int op,
			  blk_status_t status)
{
	struct request_queue *q = m->vol->disk->queue;
	const struct queue_limits *ml = &bdev_get_queue(m->bdev)->limits;
	bool notsupp = status == BLK_STS_NOTSUPP;

	if (!notsupp && status != BLK_STS_TARGET)
		return;
	if (op == REQ_OP_DISCARD && (notsupp || !ml->max_discard_sectors) &&
	    q->limits.max_discard_sectors) {
		fxblk_disable_discard(q);
		pr_info("%s: member %u (%s) refused a discard: discard off\n",
			m->vol->name, m->index, m->disk_name);
	} else if (op == REQ_OP_WRITE_ZEROES &&
		   (notsupp || !ml->max_write_zeroes_sectors) &&
		   q->limits.max_write_zeroes_sectors) {
		fxblk_disable_write_zeroes(q);
		pr_info("%s: member %u (%s) refused a write-zeroes: write-zeroes off\n",
			m->vol->name, m->index, m->disk_name);
	}
}

/* ---- disk ---------------------------------------------------------------- */

static unsigned int fxblk_io_opt(struct fxblk_volume *vol)
{
	u64 opt = (u64)vol->nr_members <<
		  (vol->geom.chunk_shift + SECTOR_SHIFT);

	/* 32 x 16 MiB overflows io_opt (unsigned int bytes): leave it. */
	return opt <= UINT_MAX ? opt : 0;
}

#ifdef FXBLK_HAVE_QUEUE_LIMITS_STACK_BDEV
/* 6.9+: the limits are complete before the disk exists. */
struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol)
{
	struct queue_limits lim;
	unsigned int i;

	blk_set_stacking_limits(&lim);
#ifdef FXBLK_HAVE_BLK_FEATURES
	/*
	 * Set before stacking, which clears NOWAIT if a member lacks it and
	 * ORs in the members' WRITE_CACHE, FUA, ROTATIONAL and STABLE_WRITES.
	 */
	lim.features |= BLK_FEAT_IO_STAT | BLK_FEAT_NOWAIT;
#endif
	for (i = 0; i < vol->nr_members; i++)
		queue_limits_stack_bdev(&lim, vol->members[i].bdev,
					vol->members[i].data_offset,
					vol->name);
	fxblk_limits_all(vol, &lim);
	/* After stacking, which would take the LCM with member hints. */
	lim.io_min = fxblk_chunk_sectors(&vol->geom) << SECTOR_SHIFT;
	lim.io_opt = fxblk_io_opt(vol);
#if defined(FXBLK_HAVE_BLK_FEATURES) && defined(FXBLK_HAVE_POLL_BIO)
	/*
	 * After stacking too, which keeps POLL only if every member polls:
	 * the block core fails a polled bio to a bio-based disk without it
	 * (EOPNOTSUPP), so take them always and poll the members that can.
	 */
	lim.features |= BLK_FEAT_POLL;
#endif
#ifdef FXBLK_HAVE_BLK_FEAT_PCI_P2PDMA
	/*
	 * Not in BLK_FEAT_INHERIT_MASK, so stacking never sets it: ours when
	 * every member's queue has it (fxblk_volume_flags()).
	 */
	if (vol->flags & FXBLK_VOL_PCI_P2PDMA)
		lim.features |= BLK_FEAT_PCI_P2PDMA;
#endif
	return blk_alloc_disk(&lim, NUMA_NO_NODE);
}
#else
struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol)
{
	struct gendisk *disk;
	unsigned int i;

#if defined(FXBLK_HAVE_BLK_ALLOC_DISK_NODE)
	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk)
		return ERR_PTR(-ENOMEM);
#else
	struct request_queue *q = blk_alloc_queue(NUMA_NO_NODE);

	if (!q)
		return ERR_PTR(-ENOMEM);
	disk = alloc_disk(FXBLK_MINORS);
	if (!disk) {
		blk_cleanup_queue(q);
		return ERR_PTR(-ENOMEM);
	}
	disk->queue = q;
#endif
	blk_set_stacking_limits(&disk->queue->limits);
	/* Before queue_limits_stack_bdev() the offset is in bytes. */
	for (i = 0; i < vol->nr_members; i++)
		disk_stack_limits(disk, vol->members[i].bdev,
				  (sector_t)vol->members[i].data_offset <<
				  SECTOR_SHIFT);
	fxblk_limits_all(vol, &disk->queue->limits);
	blk_queue_io_min(disk->queue,
			 fxblk_chunk_sectors(&vol->geom) << SECTOR_SHIFT);
	blk_queue_io_opt(disk->queue, fxblk_io_opt(vol));
	return disk;
}
#endif

#ifndef FXBLK_HAVE_BLK_FEATURES
/*
 * Before 6.11 these are queue flags, which stacking does not inherit: write
 * cache and FUA if any member has them, non-rotational only if all are,
 * stable writes if any member needs them (checksumming transports), NOWAIT
 * only if every member takes it; POLL always (see fxblk_poll_prep()). 5.10
 * also needs QUEUE_FLAG_DISCARD, or discards are refused although discard
 * limits were stacked.
 */
void fxblk_set_features(struct fxblk_volume *vol)
{
	struct request_queue *q = vol->disk->queue;
	bool wc = false, fua = false, rot = false, stable = false;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct request_queue *mq = bdev_get_queue(vol->members[i].bdev);

		wc |= test_bit(QUEUE_FLAG_WC, &mq->queue_flags);
		fua |= test_bit(QUEUE_FLAG_FUA, &mq->queue_flags);
		rot |= !blk_queue_nonrot(mq);
		stable |= test_bit(QUEUE_FLAG_STABLE_WRITES, &mq->queue_flags);
	}
	blk_queue_write_cache(q, wc, fua);
	blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);
	if (rot)
		blk_queue_flag_clear(QUEUE_FLAG_NONROT, q);
	else
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	if (stable)
		blk_queue_flag_set(QUEUE_FLAG_STABLE_WRITES, q);
	if (vol->flags & FXBLK_VOL_NOWAIT)
		blk_queue_flag_set(QUEUE_FLAG_NOWAIT, q);
	else
		blk_queue_flag_clear(QUEUE_FLAG_NOWAIT, q);
#ifdef FXBLK_HAVE_POLL_BIO
	/* Polled bios reach ->poll_bio; clones poll where the member can. */
	blk_queue_flag_set(QUEUE_FLAG_POLL, q);
#endif
#ifdef FXBLK_HAVE_QUEUE_FLAG_PCI_P2PDMA
	/* Set only if every member's queue has it (fxblk_volume_flags()). */
	if (vol->flags & FXBLK_VOL_PCI_P2PDMA)
		blk_queue_flag_set(QUEUE_FLAG_PCI_P2PDMA, q);
#endif
#ifdef QUEUE_FLAG_DISCARD
	if (q->limits.max_discard_sectors)
		blk_queue_flag_set(QUEUE_FLAG_DISCARD, q);
#endif
}
#else
void fxblk_set_features(struct fxblk_volume *vol)
{
}
#endif

#ifdef FXBLK_HAVE_GENHD_FL_NO_PART
#define FXBLK_NO_PART	GENHD_FL_NO_PART
#else
#define FXBLK_NO_PART	GENHD_FL_NO_PART_SCAN
#endif

/*
 * add_disk() reads the partition table: I/O to the members, which waits as
 * long as nvme queues it (ctrl_loss_tmo), in CREATE, under genetlink's
 * global lock. So the disk is added without the scan, then marked for one
 * (GD_NEED_PART_SCAN, which the next open of the whole disk honours) and
 * announced with a change uevent, on which udev opens it: the scan runs in
 * the opener's context, as for md (and nbd, also a genetlink driver).
 * fxctl create opens the disk itself. (loop toggles the flag the same way.)
 */
int fxblk_add_disk(struct gendisk *disk, const struct attribute_group **groups)
{
	int ret = 0;

	disk->flags |= FXBLK_NO_PART;
#ifdef FXBLK_HAVE_ADD_DISK_INT
	ret = device_add_disk(NULL, disk, groups);
#else
	device_add_disk(NULL, disk, groups);
#endif
	disk->flags &= ~FXBLK_NO_PART;
	if (ret)
		return ret;
	set_bit(GD_NEED_PART_SCAN, &disk->state);
	kobject_uevent(&disk_to_dev(disk)->kobj, KOBJ_CHANGE);
	return 0;
}

/* Drops the reference from fxblk_alloc_disk(); after del_gendisk() if added. */
void fxblk_put_disk(struct gendisk *disk)
{
#if defined(FXBLK_HAVE_BLK_CLEANUP_DISK)
	blk_cleanup_disk(disk);
#elif defined(FXBLK_HAVE_BLK_ALLOC_DISK_NODE) || defined(FXBLK_HAVE_BLK_ALLOC_DISK_LIM)
	put_disk(disk);
#else
	/* 5.10: the queue is the driver's; del_gendisk() came first. */
	struct request_queue *q = disk->queue;

	blk_cleanup_queue(q);
	put_disk(disk);
#endif
}
