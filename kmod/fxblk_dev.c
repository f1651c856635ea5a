// SPDX-License-Identifier: GPL-2.0
/*
 * One striped volume: members, gendisk, queue limits and the bio path.
 *
 * Layout is dm-stripe's (see fxblk_map.h), so a volume stays readable with a
 * plain "striped" device-mapper table. The bio path never touches page
 * contents and never bounces: clones share the caller's bvecs, so pages that
 * are not host memory (PCI P2PDMA) pass through unchanged to the members.
 */
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "fxblk.h"

/* Enough for a burst of fan-outs under memory pressure; as in dm/md. */
#define FXBLK_POOL_SIZE		256

/* ---- compat: member open/close ---------------------------------------- */

#if defined(FXBLK_HAVE_BDEV_FILE_OPEN)
static int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct file *f = bdev_file_open_by_dev(m->dev,
					       BLK_OPEN_READ | BLK_OPEN_WRITE,
					       holder, NULL);

	if (IS_ERR(f))
		return PTR_ERR(f);
	m->handle = f;
	m->bdev = file_bdev(f);
	return 0;
}

static void fxblk_member_close(struct fxblk_member *m)
{
#ifdef FXBLK_HAVE_BDEV_FPUT
	bdev_fput(m->handle);
#else
	fput(m->handle);
#endif
}
#elif defined(FXBLK_HAVE_BDEV_OPEN_HANDLE)
static int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct bdev_handle *h = bdev_open_by_dev(m->dev,
						 BLK_OPEN_READ | BLK_OPEN_WRITE,
						 holder, NULL);

	if (IS_ERR(h))
		return PTR_ERR(h);
	m->handle = h;
	m->bdev = h->bdev;
	return 0;
}

static void fxblk_member_close(struct fxblk_member *m)
{
	bdev_release(m->handle);
}
#elif defined(FXBLK_HAVE_BLKDEV_GET_HOLDER_OPS)
static int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct block_device *b = blkdev_get_by_dev(m->dev,
						   BLK_OPEN_READ | BLK_OPEN_WRITE,
						   holder, NULL);

	if (IS_ERR(b))
		return PTR_ERR(b);
	m->handle = holder;
	m->bdev = b;
	return 0;
}

static void fxblk_member_close(struct fxblk_member *m)
{
	blkdev_put(m->bdev, m->handle);
}
#else
#define FXBLK_MEMBER_MODE	(FMODE_READ | FMODE_WRITE | FMODE_EXCL)
static int fxblk_member_open(struct fxblk_member *m, void *holder)
{
	struct block_device *b = blkdev_get_by_dev(m->dev, FXBLK_MEMBER_MODE,
						   holder);

	if (IS_ERR(b))
		return PTR_ERR(b);
	m->handle = b;
	m->bdev = b;
	return 0;
}

static void fxblk_member_close(struct fxblk_member *m)
{
	blkdev_put(m->bdev, FXBLK_MEMBER_MODE);
}
#endif

static sector_t fxblk_bdev_sectors(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_BDEV_NR_SECTORS
	return bdev_nr_sectors(bdev);
#else
	return i_size_read(bdev->bd_inode) >> SECTOR_SHIFT;
#endif
}

static bool fxblk_bdev_nowait(struct block_device *bdev)
{
#ifdef FXBLK_HAVE_BDEV_NOWAIT
	return bdev_nowait(bdev);
#else
	return blk_queue_nowait(bdev_get_queue(bdev));
#endif
}

/* ---- compat: bios ------------------------------------------------------ */

static inline struct gendisk *fxblk_bio_disk(struct bio *bio)
{
#ifdef FXBLK_HAVE_BIO_BI_BDEV
	return bio->bi_bdev->bd_disk;
#else
	return bio->bi_disk;
#endif
}

static inline struct bio *fxblk_clone(struct bio *bio,
				      struct block_device *bdev, gfp_t gfp,
				      struct bio_set *bs)
{
#ifdef FXBLK_HAVE_BIO_ALLOC_CLONE
	return bio_alloc_clone(bdev, bio, gfp, bs);
#else
	struct bio *clone = bio_clone_fast(bio, gfp, bs);

	if (clone)
		bio_set_dev(clone, bdev);
	return clone;
#endif
}

/* A bio without data pages: flushes, discards, the fan-out parent. */
static struct bio *fxblk_alloc_bio(struct block_device *bdev, fxblk_opf_t opf,
				   gfp_t gfp, struct bio_set *bs)
{
#ifdef FXBLK_HAVE_BIO_ALLOC_BIOSET_BDEV
	return bio_alloc_bioset(bdev, 0, opf, gfp, bs);
#else
	struct bio *bio = bio_alloc_bioset(gfp, 0, bs);

	if (!bio)
		return NULL;
	if (bdev)
		bio_set_dev(bio, bdev);
	bio->bi_opf = opf;
	return bio;
#endif
}

/* ---- bio path ---------------------------------------------------------- */

static inline struct fxblk_io *fxblk_io(struct bio *bio)
{
	return container_of(bio, struct fxblk_io, bio);
}

/*
 * REQ_NOWAIT bios must not sleep in the mempool: allocate without waiting and
 * fail them with BLK_STS_AGAIN instead, so the caller retries from a context
 * that may block.
 */
static inline gfp_t fxblk_gfp(struct bio *bio)
{
	return (bio->bi_opf & REQ_NOWAIT) ? GFP_NOWAIT : GFP_NOIO;
}

static unsigned int fxblk_dir(struct bio *bio)
{
	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return FXBLK_DIR_READ;
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:
	case REQ_OP_WRITE_ZEROES:
		return FXBLK_DIR_DISCARD;
	default:
		return bio_sectors(bio) ? FXBLK_DIR_WRITE : FXBLK_DIR_FLUSH;
	}
}

static void fxblk_endio(struct bio *bio)
{
	struct fxblk_io *io = fxblk_io(bio);
	struct bio *parent = io->parent;
	struct fxblk_member *m = io->member;
	blk_status_t status = bio->bi_status;

	if (m) {
		fxblk_stats_done(m, io, bio->bi_opf, status);
		/*
		 * NOTSUPP (an optional discard) and AGAIN (a NOWAIT bio) say
		 * nothing about the member's health.
		 */
		if (unlikely(status) && status != BLK_STS_NOTSUPP &&
		    status != BLK_STS_AGAIN &&
		    !test_and_set_bit(0, &m->error_seen)) {
			m->first_error = blk_status_to_errno(status);
			schedule_work(&m->error_work);
		}
	}
	/* Benign race as in bio_chain_endio(): any error wins. */
	if (status && !parent->bi_status)
		parent->bi_status = status;
	if (io->acct)
		bio_end_io_acct(parent, io->acct_start);
	bio_put(bio);
	bio_endio(parent);
}

/* Send @bio, allocated from clone_bs, to member @m; @parent completes after. */
static void fxblk_issue(struct fxblk_member *m, struct bio *bio,
			struct bio *parent, unsigned int dir)
{
	struct fxblk_io *io = fxblk_io(bio);

	io->parent = parent;
	io->member = m;
	io->dir = dir;
	io->sectors = bio_sectors(bio);
	io->start_ns = ktime_get_ns();
	fxblk_stats_start(m, dir);
	bio->bi_end_io = fxblk_endio;
	submit_bio_noacct(bio);
}

/* Account @orig in /proc/diskstats, ended when @io completes. */
static inline void fxblk_start_acct(struct fxblk_io *io, struct bio *orig)
{
	io->acct = false;
	if (blk_queue_io_stat(fxblk_bio_disk(orig)->queue)) {
		io->acct = true;
		io->acct_start = bio_start_io_acct(orig);
	}
}

/* The fast path: a bio within one chunk becomes exactly one clone. */
static void fxblk_map_one(struct fxblk_volume *vol, struct bio *bio)
{
	struct fxblk_member *m;
	struct bio *clone;
	u64 msector;
	u32 mi;

	fxblk_map_sector(&vol->geom, bio->bi_iter.bi_sector, &mi, &msector);
	m = &vol->members[mi];
	clone = fxblk_clone(bio, m->bdev, fxblk_gfp(bio), &vol->clone_bs);
	if (unlikely(!clone)) {
		bio_wouldblock_error(bio);
		return;
	}
	clone->bi_iter.bi_sector = m->data_offset + msector;
	fxblk_start_acct(fxblk_io(clone), bio);
	fxblk_issue(m, clone, bio, fxblk_dir(bio));
}

/*
 * Reads and writes: cut at the chunk boundary as md raid0 does; the rest is
 * chained to the piece and resubmitted, coming back here through
 * current->bio_list once this call returns.
 */
static void fxblk_submit_rw(struct fxblk_volume *vol, struct bio *bio)
{
	unsigned int max = fxblk_sectors_to_boundary(&vol->geom,
						     bio->bi_iter.bi_sector);

	if (bio_sectors(bio) > max) {
		struct bio *split;

		/*
		 * Like the block core (bio_split_to_limits()), refuse to split
		 * NOWAIT bios: part of the bio could block or fail with
		 * EAGAIN after the rest was done.
		 */
		if (bio->bi_opf & REQ_NOWAIT) {
			bio_wouldblock_error(bio);
			return;
		}
		split = bio_split(bio, max, GFP_NOIO, &vol->split_bs);
		bio_chain(split, bio);
		/* The PREFLUSH travels with the first piece only. */
		bio->bi_opf &= ~REQ_PREFLUSH;
		submit_bio_noacct(bio);
		bio = split;
	}
	fxblk_map_one(vol, bio);
}

/*
 * Child of a fan-out for member @m: an empty flush, or @m's share of a
 * discard/write-zeroes. Returns false if a NOWAIT allocation failed.
 */
static bool fxblk_fan_child(struct fxblk_volume *vol, struct fxblk_member *m,
			    struct bio *parent, struct bio *orig, fxblk_opf_t opf,
			    sector_t sector, sector_t nr)
{
	struct bio *bio = fxblk_alloc_bio(m->bdev, opf, fxblk_gfp(orig),
					  &vol->clone_bs);

	if (unlikely(!bio))
		return false;
	bio->bi_iter.bi_sector = m->data_offset + sector;
	bio->bi_iter.bi_size = nr << SECTOR_SHIFT;
	fxblk_io(bio)->acct = false;
	bio_inc_remaining(parent);
	fxblk_issue(m, bio, parent, nr ? FXBLK_DIR_DISCARD : FXBLK_DIR_FLUSH);
	return true;
}

/*
 * Empty flushes go to every member; discard, secure erase and write-zeroes
 * to each member
 * as one contiguous range (dm-stripe's stripe_map_range()). A parent bio
 * from clone_bs, never submitted, gathers the children so the original is
 * accounted once and completed after the last child.
 */
static void fxblk_submit_fanout(struct fxblk_volume *vol, struct bio *bio)
{
	bool flush = !bio_sectors(bio);
	sector_t start = bio->bi_iter.bi_sector;
	sector_t end = bio_end_sector(bio);
	struct fxblk_io *pio;
	struct bio *parent;
	unsigned int i;

	parent = fxblk_alloc_bio(NULL, bio->bi_opf, fxblk_gfp(bio),
				 &vol->clone_bs);
	if (unlikely(!parent)) {
		bio_wouldblock_error(bio);
		return;
	}
	pio = fxblk_io(parent);
	pio->parent = bio;
	pio->member = NULL;
	parent->bi_end_io = fxblk_endio;
	fxblk_start_acct(pio, bio);

	for (i = 0; i < vol->nr_members; i++) {
		u64 ms = 0, me = 0;

		if (!flush) {
			fxblk_map_range(&vol->geom, start, end, i, &ms, &me);
			if (ms == me)
				continue;
		}
		if (!fxblk_fan_child(vol, &vol->members[i], parent, bio,
				     bio->bi_opf, ms, me - ms)) {
			parent->bi_status = BLK_STS_AGAIN;
			break;
		}
	}
	bio_endio(parent);	/* drop the initial reference */
}

/*
 * PREFLUSH with data: the data keeps its PREFLUSH and goes to its member;
 * every other member gets an empty flush chained to the original. Returns
 * false if the bio was ended here.
 */
static bool fxblk_submit_data_flush(struct fxblk_volume *vol, struct bio *bio)
{
	fxblk_opf_t opf = REQ_OP_WRITE | REQ_PREFLUSH |
			(bio->bi_opf & (REQ_SYNC | REQ_NOWAIT));
	u64 msector;
	u32 owner, i;

	fxblk_map_sector(&vol->geom, bio->bi_iter.bi_sector, &owner, &msector);
	for (i = 0; i < vol->nr_members; i++) {
		if (i == owner)
			continue;
		if (!fxblk_fan_child(vol, &vol->members[i], bio, bio, opf,
				     0, 0)) {
			bio->bi_status = BLK_STS_AGAIN;
			bio_endio(bio);
			return false;
		}
	}
	return true;
}

#ifdef FXBLK_HAVE_SUBMIT_BIO_VOID
static void fxblk_submit_bio(struct bio *bio)
#else
static blk_qc_t fxblk_submit_bio(struct bio *bio)
#endif
{
	struct fxblk_volume *vol = fxblk_bio_disk(bio)->private_data;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		if (unlikely(bio->bi_opf & REQ_PREFLUSH)) {
			if (!bio_sectors(bio)) {
				fxblk_submit_fanout(vol, bio);
				break;
			}
			if (!fxblk_submit_data_flush(vol, bio))
				break;
		}
		fxblk_submit_rw(vol, bio);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:	/* stacked limit: all members have it */
	case REQ_OP_WRITE_ZEROES:
		fxblk_submit_fanout(vol, bio);
		break;
	default:
		bio->bi_status = BLK_STS_NOTSUPP;
		bio_endio(bio);
		break;
	}
#ifndef FXBLK_HAVE_SUBMIT_BIO_VOID
	return BLK_QC_T_NONE;
#endif
}

/* ---- block_device_operations ------------------------------------------ */

/*
 * open_count lets DESTROY refuse with EBUSY; dying, set under the same lock
 * when DESTROY commits, keeps a racing open from getting in afterwards.
 */
static int fxblk_get(struct fxblk_volume *vol)
{
	int ret = 0;

	spin_lock(&vol->open_lock);
	if (vol->dying)
		ret = -ENXIO;
	else
		vol->open_count++;
	spin_unlock(&vol->open_lock);
	return ret;
}

static void fxblk_put(struct fxblk_volume *vol)
{
	spin_lock(&vol->open_lock);
	vol->open_count--;
	spin_unlock(&vol->open_lock);
}

#ifdef FXBLK_HAVE_OPEN_GENDISK
static int fxblk_open(struct gendisk *disk, blk_mode_t mode)
{
	return fxblk_get(disk->private_data);
}

static void fxblk_release(struct gendisk *disk)
{
	fxblk_put(disk->private_data);
}
#else
static int fxblk_open(struct block_device *bdev, fmode_t mode)
{
	return fxblk_get(bdev->bd_disk->private_data);
}

static void fxblk_release(struct gendisk *disk, fmode_t mode)
{
	fxblk_put(disk->private_data);
}
#endif

static const struct block_device_operations fxblk_fops = {
	.owner		= THIS_MODULE,
	.submit_bio	= fxblk_submit_bio,
	.open		= fxblk_open,
	.release	= fxblk_release,
};

unsigned int fxblk_dev_open_count(struct fxblk_volume *vol)
{
	unsigned int n;

	spin_lock(&vol->open_lock);
	n = vol->open_count;
	spin_unlock(&vol->open_lock);
	return n;
}

/* Commit to destruction unless open: -EBUSY, or 0 and no new opens. */
int fxblk_dev_mark_dying(struct fxblk_volume *vol)
{
	int ret = 0;

	spin_lock(&vol->open_lock);
	if (vol->open_count)
		ret = -EBUSY;
	else
		vol->dying = true;
	spin_unlock(&vol->open_lock);
	return ret;
}

/* ---- sysfs: /sys/block/fxN/fxblk/ -------------------------------------- */

static ssize_t name_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct fxblk_volume *vol = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%s\n", vol->name);
}
static DEVICE_ATTR_RO(name);

static ssize_t chunk_sectors_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct fxblk_volume *vol = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%llu\n", fxblk_chunk_sectors(&vol->geom));
}
static DEVICE_ATTR_RO(chunk_sectors);

static struct attribute *fxblk_attrs[] = {
	&dev_attr_name.attr,
	&dev_attr_chunk_sectors.attr,
	NULL,
};

static const struct attribute_group fxblk_attr_group = {
	.name = "fxblk",
	.attrs = fxblk_attrs,
};

static const struct attribute_group *fxblk_attr_groups[] = {
	&fxblk_attr_group,
	NULL,
};

/* ---- members ----------------------------------------------------------- */

static void fxblk_member_error_work(struct work_struct *work)
{
	struct fxblk_member *m = container_of(work, struct fxblk_member,
					      error_work);

	pr_warn("fxblk: %s: member %u (%pg) failed I/O: error %d\n",
		m->vol->name, m->index, m->bdev, m->first_error);
	fxblk_nl_event(m->vol, FXBLK_EVENT_MEMBER_ERROR, m, m->first_error);
}

static void fxblk_members_close(struct fxblk_volume *vol, unsigned int n)
{
	while (n--) {
		struct fxblk_member *m = &vol->members[n];

		cancel_work_sync(&m->error_work);
		fxblk_member_close(m);
		fxblk_stats_exit(m);
	}
}

/* Check the spec of member @i against its opened device. */
static int fxblk_member_check(struct fxblk_volume *vol, unsigned int i,
			      const struct fxblk_member_spec *spec,
			      struct netlink_ext_ack *extack)
{
	struct fxblk_member *m = &vol->members[i];
	sector_t size = fxblk_bdev_sectors(m->bdev);
	unsigned int lbs = bdev_logical_block_size(m->bdev);
	u64 end;

	if (i && lbs != vol->lbs) {
		FXBLK_ERR(extack, "member %u (%pg): logical block size %u, member 0: %u",
			  i, m->bdev, lbs, vol->lbs);
		return -EINVAL;
	}
	vol->lbs = lbs;
	if (spec->data_offset & ((lbs >> SECTOR_SHIFT) - 1)) {
		FXBLK_ERR(extack, "member %u (%pg): data offset not aligned to %u bytes",
			  i, m->bdev, lbs);
		return -EINVAL;
	}
	if (spec->data_offset >= size) {
		FXBLK_ERR(extack, "member %u (%pg): data offset beyond member end",
			  i, m->bdev);
		return -EINVAL;
	}
	m->data_offset = spec->data_offset;
	m->data_sectors = spec->data_sectors ?: size - spec->data_offset;
	if (check_add_overflow((u64)m->data_offset, (u64)m->data_sectors, &end) ||
	    end > size) {
		FXBLK_ERR(extack, "member %u (%pg): data range exceeds member size",
			  i, m->bdev);
		return -EINVAL;
	}
	return 0;
}

static int fxblk_member_setup(struct fxblk_volume *vol, unsigned int i,
			      const struct fxblk_member_spec *spec,
			      struct netlink_ext_ack *extack)
{
	struct fxblk_member *m = &vol->members[i];
	int ret;

	m->vol = vol;
	m->index = i;
	m->dev = spec->dev;
	INIT_WORK(&m->error_work, fxblk_member_error_work);
	ret = fxblk_stats_init(m);
	if (ret)
		return ret;
	/* Exclusive with the volume as holder: EBUSY if claimed elsewhere. */
	ret = fxblk_member_open(m, vol);
	if (ret) {
		/* The open APIs say ENXIO for a dev_t without a disk. */
		if (ret == -ENXIO)
			ret = -ENODEV;
		if (ret == -ENODEV)
			FXBLK_ERR(extack, "member %u (%u:%u): no such block device",
				  i, MAJOR(m->dev), MINOR(m->dev));
		else if (ret == -EBUSY)
			FXBLK_ERR(extack, "member %u (%u:%u) is busy: opened exclusively elsewhere",
				  i, MAJOR(m->dev), MINOR(m->dev));
		else
			FXBLK_ERR(extack, "member %u (%u:%u): cannot open (error %d)",
				  i, MAJOR(m->dev), MINOR(m->dev), ret);
		goto out_stats;
	}
	ret = fxblk_member_check(vol, i, spec, extack);
	if (ret)
		goto out_close;
	return 0;

out_close:
	fxblk_member_close(m);
out_stats:
	fxblk_stats_exit(m);
	return ret;
}

static int fxblk_members_open(struct fxblk_volume *vol,
			      const struct fxblk_create_req *req,
			      struct netlink_ext_ack *extack)
{
	unsigned int i;
	int ret;

	for (i = 0; i < req->nr_members; i++) {
		ret = fxblk_member_setup(vol, i, &req->members[i], extack);
		if (ret) {
			fxblk_members_close(vol, i);
			return ret;
		}
	}
	return 0;
}

/* Capacity = N x the smallest member data area in whole chunks. */
static int fxblk_geometry(struct fxblk_volume *vol, u32 chunk_sectors,
			  struct netlink_ext_ack *extack)
{
	u64 min = U64_MAX, cap;
	unsigned int i;

	if ((chunk_sectors << SECTOR_SHIFT) < vol->lbs) {
		FXBLK_ERR(extack, "chunk is smaller than the logical block size %u",
			  vol->lbs);
		return -EINVAL;
	}
	vol->geom.chunk_shift = ilog2(chunk_sectors);
	vol->geom.nr_members = vol->nr_members;
	for (i = 0; i < vol->nr_members; i++)
		min = min_t(u64, min,
			    fxblk_round_member(vol->members[i].data_sectors,
					       vol->geom.chunk_shift));
	vol->geom.member_sectors = min;
	if (!min || check_mul_overflow(min, (u64)vol->nr_members, &cap) ||
	    cap > (u64)(sector_t)-1) {
		FXBLK_ERR(extack, "capacity invalid: smallest member holds %llu chunks",
			  min >> vol->geom.chunk_shift);
		return -EINVAL;
	}
	return 0;
}

/* ---- gendisk and queue limits ------------------------------------------ */

static bool fxblk_all_nowait(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++)
		if (!fxblk_bdev_nowait(vol->members[i].bdev))
			return false;
	return true;
}

static unsigned int fxblk_io_opt(struct fxblk_volume *vol)
{
	u64 opt = (u64)vol->nr_members <<
		  (vol->geom.chunk_shift + SECTOR_SHIFT);

	/* 64 x 16 MiB overflows io_opt (unsigned int bytes): leave it. */
	return opt <= UINT_MAX ? opt : 0;
}

#ifdef FXBLK_HAVE_QUEUE_LIMITS_STACK_BDEV
/* 6.9+: the limits are complete before the disk exists. */
static struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol)
{
	struct queue_limits lim;
	unsigned int i;

	blk_set_stacking_limits(&lim);
	for (i = 0; i < vol->nr_members; i++)
		queue_limits_stack_bdev(&lim, vol->members[i].bdev,
					vol->members[i].data_offset,
					vol->name);
	/* After stacking, which would take the LCM with member hints. */
	lim.io_min = fxblk_chunk_sectors(&vol->geom) << SECTOR_SHIFT;
	lim.io_opt = fxblk_io_opt(vol);
#ifdef FXBLK_HAVE_BLK_FEATURES
	/* WRITE_CACHE and FUA were inherited from the members by stacking. */
	lim.features &= ~(BLK_FEAT_NOWAIT | BLK_FEAT_POLL);
	lim.features |= BLK_FEAT_IO_STAT;
	if (fxblk_all_nowait(vol))
		lim.features |= BLK_FEAT_NOWAIT;
#endif
	return blk_alloc_disk(&lim, NUMA_NO_NODE);
}
#else
static struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol)
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
	for (i = 0; i < vol->nr_members; i++)
		disk_stack_limits(disk, vol->members[i].bdev,
				  vol->members[i].data_offset);
	blk_queue_io_min(disk->queue,
			 fxblk_chunk_sectors(&vol->geom) << SECTOR_SHIFT);
	blk_queue_io_opt(disk->queue, fxblk_io_opt(vol));
	return disk;
}
#endif

#ifndef FXBLK_HAVE_BLK_FEATURES
/* Before 6.11 cache and nowait are queue flags, not stacked limits. */
static void fxblk_set_queue_flags(struct fxblk_volume *vol)
{
	struct request_queue *q = vol->disk->queue;
	bool wc = false, fua = false;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct request_queue *mq = bdev_get_queue(vol->members[i].bdev);

		wc |= test_bit(QUEUE_FLAG_WC, &mq->queue_flags);
		fua |= test_bit(QUEUE_FLAG_FUA, &mq->queue_flags);
	}
	blk_queue_write_cache(q, wc, fua);
	blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);
	if (fxblk_all_nowait(vol))
		blk_queue_flag_set(QUEUE_FLAG_NOWAIT, q);
	else
		blk_queue_flag_clear(QUEUE_FLAG_NOWAIT, q);
}
#else
static void fxblk_set_queue_flags(struct fxblk_volume *vol)
{
}
#endif

static void fxblk_free_disk(struct gendisk *disk)
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

static int fxblk_add_disk(struct fxblk_volume *vol)
{
#ifdef FXBLK_HAVE_ADD_DISK_INT
	return device_add_disk(NULL, vol->disk, fxblk_attr_groups);
#else
	device_add_disk(NULL, vol->disk, fxblk_attr_groups);
	return 0;
#endif
}

static void fxblk_unlink_holders(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_member *m = &vol->members[i];

		if (m->holder_linked)
			bd_unlink_disk_holder(m->bdev, vol->disk);
		m->holder_linked = false;
	}
}

/* /sys/block/fxN/slaves and lsblk; needs the disk's holder dir: after add. */
static int fxblk_link_holders(struct fxblk_volume *vol,
			      struct netlink_ext_ack *extack)
{
	unsigned int i;
	int ret;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_member *m = &vol->members[i];

		ret = bd_link_disk_holder(m->bdev, vol->disk);
		if (ret) {
			FXBLK_ERR(extack, "cannot link member %u as holder (error %d)",
				  i, ret);
			fxblk_unlink_holders(vol);
			return ret;
		}
		m->holder_linked = true;
	}
	return 0;
}

static int fxblk_disk_setup(struct fxblk_volume *vol,
			    struct netlink_ext_ack *extack)
{
	struct gendisk *disk = fxblk_alloc_disk(vol);
	int ret;

	if (IS_ERR(disk)) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the disk");
		return PTR_ERR(disk);
	}
	vol->disk = disk;
	fxblk_set_queue_flags(vol);
	disk->major = fxblk_major;
	disk->first_minor = vol->index * FXBLK_MINORS;
	disk->minors = FXBLK_MINORS;
	disk->fops = &fxblk_fops;
	disk->private_data = vol;
	snprintf(disk->disk_name, DISK_NAME_LEN, "fx%d", vol->index);
	set_capacity(disk, fxblk_capacity(&vol->geom));

	ret = fxblk_add_disk(vol);
	if (ret) {
		FXBLK_ERR(extack, "cannot add disk %s (error %d)",
			  disk->disk_name, ret);
		goto out_free;
	}
	ret = fxblk_link_holders(vol, extack);
	if (ret)
		goto out_del;
	return 0;

out_del:
	del_gendisk(disk);
out_free:
	fxblk_free_disk(disk);
	vol->disk = NULL;
	return ret;
}

struct fxblk_volume *fxblk_dev_create(const struct fxblk_create_req *req,
				      int index,
				      struct netlink_ext_ack *extack)
{
	struct fxblk_volume *vol;
	int ret;

	vol = kzalloc(struct_size(vol, members, req->nr_members), GFP_KERNEL);
	if (!vol)
		return ERR_PTR(-ENOMEM);
	vol->index = index;
	vol->nr_members = req->nr_members;
	strscpy(vol->name, req->name, sizeof(vol->name));
	spin_lock_init(&vol->open_lock);

	ret = fxblk_members_open(vol, req, extack);
	if (ret)
		goto out_free;
	ret = fxblk_geometry(vol, req->chunk_sectors, extack);
	if (ret)
		goto out_close;
	ret = bioset_init(&vol->split_bs, FXBLK_POOL_SIZE, 0, 0);
	if (ret)
		goto out_close;
	ret = bioset_init(&vol->clone_bs, FXBLK_POOL_SIZE,
			  offsetof(struct fxblk_io, bio), 0);
	if (ret)
		goto out_split;
	ret = fxblk_disk_setup(vol, extack);
	if (ret)
		goto out_clone;
	return vol;

out_clone:
	bioset_exit(&vol->clone_bs);
out_split:
	bioset_exit(&vol->split_bs);
out_close:
	fxblk_members_close(vol, vol->nr_members);
out_free:
	kfree(vol);
	return ERR_PTR(ret);
}

/* Caller made sure nobody has the disk open (fxblk_dev_mark_dying()). */
void fxblk_dev_destroy(struct fxblk_volume *vol)
{
	/* Before del_gendisk(), which drops the holder directory. */
	fxblk_unlink_holders(vol);
	del_gendisk(vol->disk);
	fxblk_free_disk(vol->disk);
	bioset_exit(&vol->clone_bs);
	bioset_exit(&vol->split_bs);
	fxblk_members_close(vol, vol->nr_members);
	kfree(vol);
}
