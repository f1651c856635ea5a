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

/* A clone of @bio for the same disk (a bio of fxN itself). */
static inline struct bio *fxblk_clone_same(struct bio *bio, gfp_t gfp,
					   struct bio_set *bs)
{
#ifdef FXBLK_HAVE_BIO_ALLOC_CLONE
	return bio_alloc_clone(bio->bi_bdev, bio, gfp, bs);
#else
	return bio_clone_fast(bio, gfp, bs);
#endif
}

/*
 * @bio, ours and completed (bio_endio() ran: it holds no cgroup, crypt or
 * integrity context), as bio_alloc_bioset() returned it, for @bdev and
 * @opf: what a lower driver and the completion left in it (the remaining
 * count that bio_chain() and bio_inc_remaining() count on, BIO_CHAIN, the
 * iterator, the status) is cleared; its pool, bvec table and references
 * are kept.
 */
static inline void fxblk_bio_reset(struct bio *bio, struct block_device *bdev,
				   fxblk_opf_t opf)
{
#ifdef FXBLK_HAVE_BIO_RESET_BDEV
	bio_reset(bio, bdev, opf);
#else
	bio_reset(bio);
	bio_set_dev(bio, bdev);
	bio->bi_opf = opf;
#endif
}

/* The hints __bio_clone() copies from @src besides the iterator and cgroup. */
static inline void fxblk_bio_copy_hints(struct bio *bio, const struct bio *src)
{
	bio->bi_ioprio = src->bi_ioprio;
#ifdef FXBLK_HAVE_BIO_WRITE_HINT
	bio->bi_write_hint = src->bi_write_hint;
#endif
#ifdef FXBLK_HAVE_BIO_WRITE_STREAM
	bio->bi_write_stream = src->bi_write_stream;
#endif
}

/*
 * blktrace of the stack: block_bio_remap for each bio sent to a member,
 * block_split for each chunk-boundary split. The tracepoints are exported
 * (GPL) on every kernel we build for, as md and dm use them; before 5.11
 * they take the request_queue first.
 */
#ifdef FXBLK_HAVE_TRACE_BLOCK_NOQ
#define fxblk_trace_remap(bio, dev, from) trace_block_bio_remap(bio, dev, from)
#define fxblk_trace_split(bio, sector)	trace_block_split(bio, sector)
#else
#define fxblk_trace_remap(bio, dev, from) \
	trace_block_bio_remap((bio)->bi_disk->queue, bio, dev, from)
#define fxblk_trace_split(bio, sector) \
	trace_block_split((bio)->bi_disk->queue, bio, sector)
#endif

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

/*
 * Polled bios (io_uring IOPOLL, REQ_POLLED) are passed through to the
 * members by ->poll_bio (5.18+). Older kernels clear REQ_HIPRI before a
 * bio reaches a queue without QUEUE_FLAG_POLL, so it completes normally.
 */
#ifdef FXBLK_HAVE_POLL_BIO
static inline bool fxblk_bio_polled(struct bio *bio)
{
	return bio->bi_opf & REQ_POLLED;
}

static inline void fxblk_clear_polled(struct bio *bio)
{
	bio_clear_polled(bio);
}
#else
static inline bool fxblk_bio_polled(struct bio *bio)
{
	return false;
}

static inline void fxblk_clear_polled(struct bio *bio)
{
}
#endif

/*
 * PCI P2PDMA: the queue feature is BLK_FEAT_PCI_P2PDMA in queue_limits
 * from 6.11, QUEUE_FLAG_PCI_P2PDMA before. FXBLK_P2PDMA_KERNEL: this kernel
 * can have P2PDMA pages in bios at all.
 */
#if IS_ENABLED(CONFIG_PCI_P2PDMA) && \
	(defined(FXBLK_HAVE_BLK_FEAT_PCI_P2PDMA) || \
	 defined(FXBLK_HAVE_QUEUE_FLAG_PCI_P2PDMA))
#define FXBLK_P2PDMA_KERNEL	1
#endif

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
bool fxblk_bdev_write_cache(struct block_device *bdev);
struct dma_resv;
int fxblk_dma_resv_wait_kernel(struct dma_resv *obj);
bool fxblk_bdev_nowait(struct block_device *bdev);
bool fxblk_bdev_poll(struct block_device *bdev);
bool fxblk_bdev_p2pdma(struct block_device *bdev);
struct gendisk *fxblk_alloc_disk(struct fxblk_volume *vol);
void fxblk_set_features(struct fxblk_volume *vol);
void fxblk_limits_refused(struct fxblk_member *m, unsigned int op,
			  blk_status_t status);
int fxblk_add_disk(struct gendisk *disk,
		   const struct attribute_group **groups);
void fxblk_put_disk(struct gendisk *disk);

/*
 * A per-CPU workqueue says so from 6.17 (WQ_PERCPU, an enum constant, hence
 * the probe): without WQ_PERCPU or WQ_UNBOUND alloc_workqueue() WARNs.
 */
#ifdef FXBLK_HAVE_WQ_PERCPU
#define FXBLK_WQ_PERCPU WQ_PERCPU
#else
#define FXBLK_WQ_PERCPU 0
#endif

#endif /* FXBLK_COMPAT_H */
