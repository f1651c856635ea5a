/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel differences behind small wrappers, so the core reads like upstream
 * code. What each kernel has is decided by the compile probes in compat/
 * (fxblk_probes.h, generated at build time), never by version numbers.
 * Out-of-line wrappers live in fxblk_compat.c.
 */
#ifndef FXBLK_COMPAT_H
#define FXBLK_COMPAT_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <net/genetlink.h>

#include "fxblk_probes.h"

/* Request flags: blk_opf_t from 6.0, a plain unsigned int before. */
#ifdef FXBLK_HAVE_BLK_OPF_T
#define fxblk_opf_t blk_opf_t
#else
#define fxblk_opf_t unsigned int
#endif

#ifdef FXBLK_HAVE_SUBMIT_BIO_VOID
#define fxblk_qc_t void
#define FXBLK_QC_NONE
#else
#define fxblk_qc_t blk_qc_t
#define FXBLK_QC_NONE BLK_QC_T_NONE
#endif

struct fxblk_volume;
struct fxblk_member;

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
static inline struct bio *fxblk_alloc_bio(struct block_device *bdev,
					  fxblk_opf_t opf, gfp_t gfp,
					  struct bio_set *bs)
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

/* False once the disk's removal started (the member is gone for good). */
static inline bool fxblk_disk_live(struct gendisk *disk)
{
#ifdef FXBLK_HAVE_DISK_LIVE
	return disk_live(disk);
#else
	return disk->flags & GENHD_FL_UP;
#endif
}

/* Holder ops (6.5+) tell us when a member's disk goes away. */
#if defined(FXBLK_HAVE_HOLDER_OPS_SURPRISE) || defined(FXBLK_HAVE_HOLDER_OPS)
#define FXBLK_HOLDER_OPS	(&fxblk_holder_ops)
extern const struct blk_holder_ops fxblk_holder_ops;
#else
#define FXBLK_HOLDER_OPS	NULL
#endif

int fxblk_member_open(struct fxblk_member *m, void *holder);
void fxblk_member_close(struct fxblk_member *m);
sector_t fxblk_bdev_sectors(struct block_device *bdev);
bool fxblk_bdev_nowait(struct block_device *bdev);
struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol);
void fxblk_set_features(struct fxblk_volume *vol);
int fxblk_add_disk(struct gendisk *disk,
		   const struct attribute_group **groups);
void fxblk_put_disk(struct gendisk *disk);

#endif /* FXBLK_COMPAT_H */
