// SPDX-License-Identifier: GPL-2.0
/*
 * One striped volume: members, gendisk, queue limits and the bio path.
 *
 * Layout is dm-stripe's (see fxblk_map.h), so a volume stays readable with a
 * plain "striped" device-mapper table. The bio path never touches page
 * contents and never bounces: clones share the caller's bvecs, so pages that
 * are not host memory (PCI P2PDMA) pass through unchanged to the members.
 *
 * PCI P2PDMA (the "direct" path). The volume takes P2PDMA pages only if
 * every member's queue does (fxblk_volume_flags()); stacking never passes
 * the feature on. Upstream (6.12) keeps such pages away from a queue in
 * two places: get_user_pages refuses them unless the queue has the feature
 * (FOLL_PCI_P2PDMA, so O_DIRECT to a volume without it fails with
 * EREMOTEIO before any bio exists), and the driver's dma_map_sg() checks
 * that the provider is reachable from its own DMA device
 * (pci_p2pdma_map_type(), the cached pci_p2pdma_distance()) and fails the
 * request with BLK_STS_TARGET (EREMOTEIO) if not: nvme-pci does this in
 * nvme_map_data(). Below the first check the block layer trusts the bio:
 * a queue without the feature is never asked. So a bio that carries
 * P2PDMA pages anyway (an in-kernel submitter building bios from device
 * pages, which get_user_pages did not filter) is failed here with
 * EREMOTEIO when the volume lacks the feature: a member without it might
 * map device memory as if it were RAM (nvme-rdma over a software RDMA
 * device copies through its kernel address). Reachability is left to the
 * member's own mapping, as upstream does: only it knows the device that
 * does the DMA (for NVMe-oF the RDMA NIC, not the disk's parent), and the
 * page-to-provider lookup is private to the PCI core. Its refusal
 * (BLK_STS_TARGET on a bio with P2PDMA pages) is counted as refused, not
 * as a sign of a failing member.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <trace/events/block.h>

#include "fxblk.h"
#include "fxblk_peerq.h"

/* ---- bio path ---------------------------------------------------------- */

static inline struct fxblk_io *fxblk_io_of(struct bio *bio)
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

/* Hand @bio to a worker of the volume: @work on @wq, which takes @list. */
static void fxblk_to_worker(struct fxblk_volume *vol, struct bio_list *list,
			    struct bio *bio, struct workqueue_struct *wq,
			    struct work_struct *work)
{
	unsigned long flags;

	spin_lock_irqsave(&vol->deferred_lock, flags);
	bio_list_add(list, bio);
	spin_unlock_irqrestore(&vol->deferred_lock, flags);
	queue_work(wq, work);
}

/*
 * A PREFLUSH write whose flushes all completed: its data goes out from
 * process context without PREFLUSH (dm's queue_io()/dm_wq_work()). The
 * reference taken here keeps DESTROY waiting until it was resubmitted.
 */
static void fxblk_defer(struct fxblk_volume *vol, struct bio *bio)
{
	percpu_ref_get(&vol->active);
	/* The worker may block; the submitter already had its answer. */
	bio->bi_opf &= ~(REQ_PREFLUSH | REQ_NOWAIT);
	fxblk_to_worker(vol, &vol->deferred, bio, vol->wq, &vol->deferred_work);
}

/*
 * Sends the data of PREFLUSH writes through fxblk_submit_bio(), which
 * may wait for the pools. What it waits for never waits for this work:
 * bios refused with AGAIN are sent again by fxblk_reissue_work().
 */
static void fxblk_deferred_work(struct work_struct *work)
{
	struct fxblk_volume *vol = container_of(work, struct fxblk_volume,
						deferred_work);
	struct bio_list bios;
	struct bio *bio;

	spin_lock_irq(&vol->deferred_lock);
	bios = vol->deferred;
	bio_list_init(&vol->deferred);
	spin_unlock_irq(&vol->deferred_lock);
	while ((bio = bio_list_pop(&bios))) {
		submit_bio_noacct(bio);
		percpu_ref_put(&vol->active);
	}
}

static void fxblk_submit_fanout(struct fxblk_volume *vol, struct bio *bio,
				bool flush, bool flush_data);

/*
 * A PREFLUSH bio while fxblk's peer queues hold writes no Flush covered:
 * those associations are flushed first, from process context (they wait
 * for a reply from the fabric), then the members as always. The reference
 * keeps DESTROY, and so the peer queues, waiting until it was sent.
 */
static void fxblk_peer_flush_defer(struct fxblk_volume *vol, struct bio *bio)
{
	percpu_ref_get(&vol->active);
	fxblk_clear_polled(bio);
	bio->bi_opf &= ~REQ_NOWAIT;
	fxblk_to_worker(vol, &vol->peer_flushes, bio, vol->wq,
			&vol->peer_flush_work);
}

static void fxblk_peer_flush_work(struct work_struct *work)
{
	struct fxblk_volume *vol = container_of(work, struct fxblk_volume,
						peer_flush_work);
	struct bio_list bios;
	struct bio *bio;
	int ret;

	spin_lock_irq(&vol->deferred_lock);
	bios = vol->peer_flushes;
	bio_list_init(&vol->peer_flushes);
	spin_unlock_irq(&vol->deferred_lock);
	if (bio_list_empty(&bios))
		return;
	/* one pass covers every PREFLUSH queued before it */
	ret = fxblk_peerq_flush(vol);
	/*
	 * One queued while the pass ran found its members due until their
	 * Flushes completed (fxblk_peerq_flush()): its caller's writes may be
	 * among those a failed Flush covered, so it shares the error; after
	 * a pass that succeeded it gets a pass of its own (this work runs
	 * again).
	 */
	if (ret) {
		spin_lock_irq(&vol->deferred_lock);
		bio_list_merge(&bios, &vol->peer_flushes);
		bio_list_init(&vol->peer_flushes);
		spin_unlock_irq(&vol->deferred_lock);
	}
	while ((bio = bio_list_pop(&bios))) {
		if (ret) {
			bio->bi_status = errno_to_blk_status(ret);
			bio_endio(bio);
		} else {
			fxblk_submit_fanout(vol, bio, true,
					    bio_sectors(bio) != 0);
		}
		percpu_ref_put(&vol->active);
	}
}

/* @bio and its parent are done: end the parent (or send its data). */
static void fxblk_io_finish(struct bio *bio)
{
	struct fxblk_io *io = fxblk_io_of(bio);
	struct bio *parent = io->parent;
	struct fxblk_member *m = io->member;
	bool flush_data = io->flush_data;

	if (io->acct)
		bio_end_io_acct(parent, io->acct_start);
	bio_put(bio);
	if (flush_data && !parent->bi_status)
		fxblk_defer(fxblk_bio_disk(parent)->private_data, parent);
	else
		bio_endio(parent);
	/* Last: the volume may be torn down once this reference is gone. */
	if (m)
		percpu_ref_put(&m->vol->active);
}

/*
 * A member refused a REQ_NOWAIT bio with BLK_STS_AGAIN: no tag free, its
 * queue frozen for a controller reset, a dm member suspended, a multipath
 * requeue. Passing that up is right only while nothing else of the
 * original bio is in flight and the answer reaches its submitter at once:
 * io_uring retries an -EAGAIN only when it completes in the submitting task
 * (io_rw_should_reissue()); one that completes later, from a completion
 * context or a worker, reaches the application as an I/O error. The block
 * core never splits a NOWAIT bio for that reason (bio_split_rw_at()); fxblk
 * does (fxblk_submit_rw()), and a member may refuse long after submission,
 * so fxblk sends the piece again itself, without NOWAIT, from the volume's
 * worker, where waiting is allowed. A polled bio's completion reaches its
 * poller, which is the submitting task: it is passed up, as dm does.
 */
static bool fxblk_may_reissue(const struct fxblk_io *io)
{
	return !io->polled && (io->opf & REQ_NOWAIT);
}

static void fxblk_endio(struct bio *bio)
{
	struct fxblk_io *io = fxblk_io_of(bio);
	struct bio *parent = io->parent;
	struct fxblk_member *m = io->member;
	blk_status_t status = bio->bi_status;

	if (m) {
		if (unlikely(status == BLK_STS_AGAIN) && fxblk_may_reissue(io)) {
			fxblk_stats_cancel(m, io->dir);
			/* it keeps its reference to the volume */
			fxblk_to_worker(m->vol, &m->vol->reissue, bio,
					m->vol->reissue_wq,
					&m->vol->reissue_work);
			return;
		}
		fxblk_stats_done(m, io, bio->bi_opf, status);
		if (io->p2p)
			fxblk_direct_done(m->vol, io, status);
		/* Refusals (NOTSUPP, AGAIN, P2P TARGET) are no fault. */
		if (unlikely(status) && fxblk_io_fault(io, status))
			fxblk_health_io_error(m, status);
		/* dm's clone_endio(): a member without it turns it off. */
		if (unlikely(status) && io->child)
			fxblk_limits_refused(m, bio_op(bio), status);
	}
	/* Benign race as in bio_chain_endio(): any error wins. */
	if (status && !parent->bi_status)
		parent->bi_status = status;
	/* A polled parent is ended by its poller: fxblk_poll_bio(). */
	if (io->polled && !atomic_dec_and_test(&io->poll_ref))
		return;
	fxblk_io_finish(bio);
}

/*
 * Send @bio, allocated from clone_bs, to member @m; @parent completes after.
 * @bio takes over a reference to the volume its caller holds, dropped in
 * fxblk_io_finish().
 */
static void fxblk_issue_held(struct fxblk_member *m, struct bio *bio,
			     struct bio *parent, unsigned int dir)
{
	struct fxblk_io *io = fxblk_io_of(bio);

	io->parent = parent;
	io->member = m;
	io->dir = dir;
	io->flush_data = false;
	io->sectors = bio_sectors(bio);
	io->iter = bio->bi_iter;
	io->opf = bio->bi_opf;
	io->bi_flags = bio->bi_flags;
	io->start_ns = ktime_get_ns();
	fxblk_stats_start(m, dir);
	bio->bi_end_io = fxblk_endio;
	submit_bio_noacct(bio);
}

/* The same with a reference of its own; the submitter's covers taking it. */
static void fxblk_issue(struct fxblk_member *m, struct bio *bio,
			struct bio *parent, unsigned int dir)
{
	percpu_ref_get(&m->vol->active);
	fxblk_issue_held(m, bio, parent, dir);
}

/*
 * Send a member bio refused with AGAIN again, without NOWAIT, from the
 * volume's re-issue worker (see fxblk_may_reissue()). The refused bio
 * itself goes out again: nothing is allocated, so the re-issue never waits
 * for a pool entry, which might be held by bios that wait for it (bios
 * refused after it, the PREFLUSH data of fxblk_deferred_work()). Since it
 * cannot be refused again (no NOWAIT), it only waits for the member, whose
 * bios complete on their own. Freeing it and cloning anew from clone_bs
 * would bring that wait back (lab 37 counts such allocations).
 *
 * It is reset first, as a new clone: bio_reset() (as md raid1/raid10 reuse
 * their bios) and what fxblk_clone() or the fan-out set. A member may have
 * split it before it refused a piece: dm cuts a bio at a target boundary
 * with bio_inc_remaining() and sends the rest again
 * (dm_split_and_process_bio()); a 5.10 blk-mq queue splits with
 * bio_chain(). Then it came back through bio_endio() with its remaining
 * count used up, and re-sent as it was, the next split counted one
 * completion too few: fxblk_endio() ran on the first piece's completion,
 * ending the caller's bio while the rest still moved data, and the rest's
 * bio_endio() then touched a freed clone (review 2026-12-06 H1).
 * dm itself never meets this: it requeues its original bio from
 * dm_io_complete() before bio_endio() (dm_handle_requeue()), while fxblk
 * only learns of the refusal in its bio's ->bi_end_io. Everything else a
 * member or the completion changed goes too: the iterator (advanced or
 * remapped to a partition), the device (nvme multipath sends it to a
 * path), the flags and status. bio_endio() dropped the cgroup association:
 * it is taken again from the bio fxblk_issue()'s clone was charged to.
 * fxN has no crypto or integrity profile, so the bio has neither context
 * (blk-crypto's fallback took it off above fxN; the member's integrity
 * payload was freed with the AGAIN status).
 */
static void fxblk_reissue(struct bio *bio)
{
	struct fxblk_io *io = fxblk_io_of(bio);
	struct fxblk_member *m = io->member;
	/* a fan-out child was charged as the fan-out's original bio */
	struct bio *src = io->child ? fxblk_io_of(io->parent)->parent :
				      io->parent;

	fxblk_bio_reset(bio, m->bdev, io->opf & ~REQ_NOWAIT);
	bio->bi_flags = io->bi_flags;	/* BIO_CLONED for a data clone */
	bio->bi_iter = io->iter;
	bio_clone_blkg_association(bio, src);
	if (io->child) {
		bio->bi_ioprio = src->bi_ioprio;
	} else {
		/* a clone of @src (fxblk_map_one()): its pages, its hints */
		bio->bi_io_vec = src->bi_io_vec;
		fxblk_bio_copy_hints(bio, src);
	}
	/* with the reference the refused bio held */
	fxblk_issue_held(m, bio, io->parent, io->dir);
}

/*
 * Its own work item on its own WQ_MEM_RECLAIM workqueue: its rescuer
 * never waits behind fxblk_deferred_work(), which may sleep in a pool.
 */
static void fxblk_reissue_work(struct work_struct *work)
{
	struct fxblk_volume *vol = container_of(work, struct fxblk_volume,
						reissue_work);
	struct bio_list bios;
	struct bio *bio;

	spin_lock_irq(&vol->deferred_lock);
	bios = vol->reissue;
	bio_list_init(&vol->reissue);
	spin_unlock_irq(&vol->deferred_lock);
	while ((bio = bio_list_pop(&bios)))
		fxblk_reissue(bio);
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

#ifdef FXBLK_HAVE_POLL_BIO
/*
 * Polled bios (io_uring IOPOLL), as dm polls (dm_poll_bio()): the parent
 * completes only in its poller's fxblk_poll_bio(), which polls the clone on
 * the member's queue. Until then the parent's bi_private points at the
 * clone's fxblk_io (the caller's value is kept there), and REQ_DRV on the
 * parent says so; bi_cookie must not be BLK_QC_T_NONE, or bio_poll() does
 * not call us. Only the one-clone fast path polls: split and fan-out bios
 * complete normally, their poller simply waits (as blk-merge does). The
 * disk takes polled bios even if some member cannot poll (a bio-based disk
 * without POLL fails them on 6.11+); bios to such a member are not polled.
 */
#define FXBLK_REQ_POLL_PARENT	REQ_DRV

static void fxblk_poll_prep(struct bio *parent, struct bio *clone)
{
	struct fxblk_io *io = fxblk_io_of(clone);

	io->polled = false;
	if (likely(!(parent->bi_opf & REQ_POLLED)))
		return;
	io->polled = true;
	atomic_set(&io->poll_ref, 2);
	io->poll_private = parent->bi_private;
	parent->bi_private = io;
	parent->bi_opf |= FXBLK_REQ_POLL_PARENT;
	WRITE_ONCE(parent->bi_cookie, ~BLK_QC_T_NONE);
}

static int fxblk_poll_bio(struct bio *bio, struct io_comp_batch *iob,
			  unsigned int flags)
{
	struct fxblk_io *io;

	if (!(bio->bi_opf & FXBLK_REQ_POLL_PARENT))
		return 0;
	io = bio->bi_private;
	/* The clone's completion may also come from @iob's batch later. */
	if (atomic_read(&io->poll_ref) > 1)
		bio_poll(&io->bio, iob, flags);
	if (atomic_read(&io->poll_ref) > 1)
		return 0;
	/* fxblk_endio() ran: hand back bi_private, end the parent. */
	bio->bi_opf &= ~FXBLK_REQ_POLL_PARENT;
	bio->bi_private = io->poll_private;
	if (atomic_dec_and_test(&io->poll_ref))
		fxblk_io_finish(&io->bio);
	return 1;
}
#else
static inline void fxblk_poll_prep(struct bio *parent, struct bio *clone)
{
	fxblk_io_of(clone)->polled = false;
}
#endif

/* @bio's own range carries PCI P2PDMA pages (a bio may mix them on 6.12). */
static bool fxblk_bio_p2pdma(struct bio *bio)
{
#ifdef FXBLK_P2PDMA_KERNEL
	struct bvec_iter iter;
	struct bio_vec bv;

	bio_for_each_bvec(bv, bio, iter)
		if (is_pci_p2pdma_page(bv.bv_page))
			return true;
#endif
	return false;
}

/*
 * @clone takes the first @sectors of @bio; the rest of @bio goes round
 * again, dm's way (dm_split_and_process_bio()): @bio itself is advanced
 * and resubmitted, with one more completion to wait for (its pieces' clones
 * end it), and comes back to fxblk_submit_rw() through current->bio_list
 * once this call returns. The block core sends @clone (to a lower device)
 * before it. So a piece costs one bio, its clone, and each pass holds one
 * clone: no pool can run dry under us.
 */
static void fxblk_send_rest(struct bio *bio, struct bio *clone,
			    unsigned int sectors)
{
	bio_trim(clone, 0, sectors);
	bio_advance(bio, sectors << SECTOR_SHIFT);
	bio_inc_remaining(bio);
	fxblk_trace_split(bio, bio->bi_iter.bi_sector);
	submit_bio_noacct(bio);
}

/*
 * Send the first @sectors of @bio, all within one chunk, to their member as
 * one clone; with fewer than all of @bio's sectors, the rest goes round
 * again. With @acct @bio is an original bio sent whole, accounted here; a
 * bio sent in pieces was accounted as a whole (fxblk_acct_clone()). The
 * clone takes over the caller's reference to the volume (one get and put
 * less per I/O): true if it was sent and so took it.
 */
static bool fxblk_map_one(struct fxblk_volume *vol, struct bio *bio,
			  unsigned int sectors, bool acct, gfp_t gfp)
{
	u64 sector = bio->bi_iter.bi_sector;
	struct fxblk_member *m;
	struct bio *clone;
	u64 msector;
	bool p2p;
	u32 mi;

	fxblk_map_sector(&vol->geom, sector, &mi, &msector);
	m = &vol->members[mi];
	/*
	 * A member without poll queues: complete normally, by interrupt. Clear
	 * it on the original too, as the block core does (6.1 also drops
	 * REQ_ALLOC_CACHE then: such a bio must not be put from an interrupt).
	 */
	if (unlikely(fxblk_bio_polled(bio)) && !fxblk_bdev_poll(m->bdev))
		fxblk_clear_polled(bio);
	clone = fxblk_clone(bio, m->bdev, gfp, &vol->clone_bs);
	if (unlikely(!clone)) {
		/* only with GFP_NOWAIT: nothing of @bio was sent yet */
		bio_wouldblock_error(bio);
		return false;
	}
	if (sectors < bio_sectors(bio))
		fxblk_send_rest(bio, clone, sectors);
	/* See the top of this file: never to a member that cannot map them. */
	p2p = fxblk_bio_p2pdma(clone);
	if (unlikely(p2p) && !(vol->flags & FXBLK_VOL_PCI_P2PDMA)) {
		bio_put(clone);
		fxblk_direct_refused(vol);
		bio->bi_status = BLK_STS_TARGET;
		bio_endio(bio);
		return false;
	}
	clone->bi_iter.bi_sector = m->data_offset + msector;
	fxblk_io_of(clone)->acct = false;
	fxblk_io_of(clone)->child = false;
	fxblk_io_of(clone)->p2p = p2p;
	if (acct)
		fxblk_start_acct(fxblk_io_of(clone), bio);
	fxblk_poll_prep(bio, clone);
	fxblk_trace_remap(clone, disk_devt(vol->disk), sector);
	fxblk_issue_held(m, clone, bio, fxblk_dir(bio));
	return true;
}

/* A chunk-crossing bio and all its pieces completed: end the original. */
static void fxblk_acct_endio(struct bio *bio)
{
	struct fxblk_io *io = fxblk_io_of(bio);
	struct bio *orig = io->parent;
	struct fxblk_volume *vol = fxblk_bio_disk(orig)->private_data;

	orig->bi_status = bio->bi_status;
	bio_end_io_acct(orig, io->acct_start);
	bio_put(bio);
	bio_endio(orig);
	percpu_ref_put(&vol->active);
}

/*
 * One /proc/diskstats I/O per original bio, not one per chunk piece: a bio
 * about to be split is accounted once as a whole, and a clone of it from
 * acct_bs (own pool: it lives as long as all pieces) is split instead; its
 * completion ends the accounting and the original (md_account_bio()).
 */
static struct bio *fxblk_acct_clone(struct fxblk_volume *vol, struct bio *bio,
				    gfp_t gfp)
{
	struct bio *clone = fxblk_clone_same(bio, gfp, &vol->acct_bs);
	struct fxblk_io *io;

	if (unlikely(!clone))
		return NULL;
	io = fxblk_io_of(clone);
	io->parent = bio;
	io->acct_start = bio_start_io_acct(bio);
	clone->bi_end_io = fxblk_acct_endio;
	/* Until fxblk_acct_endio(): DESTROY waits before freeing acct_bs. */
	percpu_ref_get(&vol->active);
	return clone;
}

/*
 * The longest piece of @bio that starts at its first sector: up to the
 * chunk boundary, and for a REQ_NOWAIT bio no longer than the members take
 * whole (the volume's max_sectors, stacked from theirs). A member's block
 * core never splits a NOWAIT bio (bio_split_rw_at()): it would refuse a
 * longer piece with AGAIN after fxN sent it, and fxblk would send that
 * piece again from the volume's worker, one after the other (0.6x md raid0
 * for 512 KiB io_uring reads over members taking 128 KiB). So fxN cuts
 * such bios to max_sectors itself, as dm cuts every bio to its queue's
 * max_sectors (__max_io_len()), and each piece goes out at once, still
 * NOWAIT. Refusing the whole bio with AGAIN instead (as the core does for
 * one disk, and md at its entry split) makes io_uring send it again from
 * an io-wq worker, which cost ~60-90 us per 512 KiB read on one CPU in
 * make bench's cost kind (docs/benchmarks.md). Without NOWAIT the members'
 * cores split larger pieces themselves, which costs less than a split and
 * a clone here. Not polled bios: a polled bio stays whole where it can
 * (fxblk_poll_prep()), as the block core keeps it.
 */
static unsigned int fxblk_piece_max(struct fxblk_volume *vol, struct bio *bio)
{
	struct request_queue *q = vol->disk->queue;
	unsigned int max = fxblk_sectors_to_boundary(&vol->geom,
						     bio->bi_iter.bi_sector);
	unsigned int lbs = queue_logical_block_size(q) >> SECTOR_SHIFT;

	/* whole blocks, even if max_sectors_kb of fxN was set to less */
	if ((bio->bi_opf & REQ_NOWAIT) && !fxblk_bio_polled(bio))
		max = min(max, max(round_down(queue_max_sectors(q), lbs), lbs));
	return max;
}

/*
 * Reads and writes: cut at the chunk boundary as md raid0 does, a piece at
 * a time (fxblk_map_one(), fxblk_send_rest()).
 *
 * REQ_NOWAIT bios are cut too (dm does the same): failing them with EAGAIN
 * would punt every large io_uring read to an io-wq worker, and on 6.1 every
 * polled bio is NOWAIT, so io_uring would retry a polled chunk-crossing bio
 * forever. But only the first allocations may fail, while nothing was sent:
 * a bio with a piece in flight that ended with EAGAIN would complete in
 * that piece's completion context, where io_uring cannot retry it
 * (fxblk_may_reissue()). So for every rest that comes back, allocations
 * wait for the pool as without NOWAIT; fxblk_send_rest() says why no pool
 * can run dry under us. True if a clone was sent, with the caller's
 * reference to the volume.
 */
static bool fxblk_submit_rw(struct fxblk_volume *vol, struct bio *bio)
{
	unsigned int max = fxblk_piece_max(vol, bio);
	unsigned int sectors = bio_sectors(bio);
	/* A rest coming back is a bio of acct_bs, accounted already. */
	bool acct = bio->bi_end_io != fxblk_acct_endio;
	/* A rest of an unaccounted bio (or a bio chained above us). */
	bool sent = !acct || bio_flagged(bio, BIO_CHAIN);
	gfp_t gfp = sent ? GFP_NOIO : fxblk_gfp(bio);

	if (sectors > max) {
		/* Only a single clone is polled: see fxblk_poll_prep(). */
		fxblk_clear_polled(bio);
		if (acct && blk_queue_io_stat(vol->disk->queue)) {
			struct bio *clone = fxblk_acct_clone(vol, bio, gfp);

			if (unlikely(!clone)) {
				bio_wouldblock_error(bio);
				return false;
			}
			bio = clone;
		}
		acct = false;
		sectors = max;
	}
	return fxblk_map_one(vol, bio, sectors, acct, gfp);
}

/*
 * Allocate a fan-out: the parent and @n children (on @children), all before
 * any is sent. Children sent early would sit on current->bio_list, holding
 * pool entries while we wait for more: so first try without waiting, then
 * wait for the pool under alloc_lock, which lets one fan-out at a time hold
 * a partial set (dm's alloc_multiple_bios()). clone_bs holds n + 1 bios.
 */
static struct bio *fxblk_fan_alloc(struct fxblk_volume *vol, struct bio *orig,
				   unsigned int n, fxblk_opf_t opf,
				   struct bio_list *children)
{
	bool nowait = orig->bi_opf & REQ_NOWAIT;
	struct bio *parent, *bio;
	unsigned int i, try;

	for (try = 0; try < 2; try++) {
		gfp_t gfp = try ? GFP_NOIO : GFP_NOWAIT;

		if (try)
			mutex_lock(&vol->alloc_lock);
		parent = fxblk_alloc_bio(NULL, orig->bi_opf, gfp,
					 &vol->clone_bs);
		for (i = 0; parent && i < n; i++) {
			bio = fxblk_alloc_bio(NULL, opf, gfp, &vol->clone_bs);
			if (!bio)
				break;
			bio_list_add(children, bio);
		}
		if (try)
			mutex_unlock(&vol->alloc_lock);
		if (parent && i == n)
			return parent;
		while ((bio = bio_list_pop(children)))
			bio_put(bio);
		if (parent)
			bio_put(parent);
		if (nowait)
			break;
	}
	return NULL;
}

/* Member @i's part of a fan-out: everything for a flush, else its range. */
static bool fxblk_fan_range(struct fxblk_volume *vol, struct bio *bio,
			    bool flush, unsigned int i, u64 *ms, u64 *me)
{
	*ms = 0;
	*me = 0;
	if (flush)
		return true;
	fxblk_map_range(&vol->geom, bio->bi_iter.bi_sector,
			bio_end_sector(bio), i, ms, me);
	return *ms != *me;
}

/*
 * Flushes, discard, secure erase and write-zeroes go to the members
 * themselves: an empty flush to every member (with @flush_data, the data
 * of a PREFLUSH write follows once all of them completed), the others as
 * one contiguous range per member (dm-stripe's stripe_map_range()). A
 * parent bio from clone_bs, never submitted, gathers the children.
 */
static void fxblk_submit_fanout(struct fxblk_volume *vol, struct bio *bio,
				bool flush, bool flush_data)
{
	fxblk_opf_t opf;
	struct bio_list children = BIO_EMPTY_LIST;
	unsigned int i, n = 0;
	struct fxblk_io *pio;
	struct bio *parent;
	u64 ms, me;

	/* Completes normally; children must not inherit REQ_POLLED. */
	fxblk_clear_polled(bio);
	opf = flush ? REQ_OP_WRITE | REQ_PREFLUSH |
	      (bio->bi_opf & (REQ_SYNC | REQ_NOWAIT)) : bio->bi_opf;
	for (i = 0; i < vol->nr_members; i++)
		n += fxblk_fan_range(vol, bio, flush, i, &ms, &me);
	parent = fxblk_fan_alloc(vol, bio, n, opf, &children);
	if (unlikely(!parent)) {
		bio_wouldblock_error(bio);
		return;
	}
	pio = fxblk_io_of(parent);
	pio->parent = bio;
	pio->member = NULL;
	pio->flush_data = flush_data;
	pio->acct = false;
	pio->polled = false;
	pio->p2p = false;
	parent->bi_end_io = fxblk_endio;
	/* A flush is no I/O of the volume's own; dm does not count it. */
	if (!flush)
		fxblk_start_acct(pio, bio);

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_member *m = &vol->members[i];
		struct bio *child;

		if (!fxblk_fan_range(vol, bio, flush, i, &ms, &me))
			continue;
		child = bio_list_pop(&children);
		bio_set_dev(child, m->bdev);
		/* Charged to the submitter's cgroup, at its priority. */
		bio_clone_blkg_association(child, bio);
		child->bi_ioprio = bio->bi_ioprio;
		child->bi_iter.bi_sector = m->data_offset + ms;
		child->bi_iter.bi_size = (me - ms) << SECTOR_SHIFT;
		fxblk_io_of(child)->acct = false;
		fxblk_io_of(child)->polled = false;
		fxblk_io_of(child)->child = true;
		fxblk_io_of(child)->p2p = false;
		if (!flush)
			fxblk_trace_remap(child, disk_devt(vol->disk),
					  bio->bi_iter.bi_sector);
		bio_inc_remaining(parent);
		fxblk_issue(m, child, parent,
			    flush ? FXBLK_DIR_FLUSH : FXBLK_DIR_DISCARD);
	}
	bio_endio(parent);	/* drop the initial reference */
}

static fxblk_qc_t fxblk_submit_bio(struct bio *bio)
{
	struct fxblk_volume *vol = fxblk_bio_disk(bio)->private_data;

	/* Removed (DESTROY --force): fail at once, touch nothing. */
	if (unlikely(!percpu_ref_tryget_live(&vol->active))) {
		bio_io_error(bio);
		return FXBLK_QC_NONE;
	}
#ifdef FXBLK_HAVE_POLL_BIO
	/* REQ_DRV is ours here; one copied from a stacked driver's is not. */
	bio->bi_opf &= ~FXBLK_REQ_POLL_PARENT;
#endif
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		/*
		 * Writes completed before a PREFLUSH bio must be stable before
		 * its data is written (writeback_cache_control.rst): every
		 * member flushes first, then the data goes out.
		 */
		if (unlikely(bio->bi_opf & REQ_PREFLUSH)) {
			if (unlikely(fxblk_peerq_flush_due(vol)))
				fxblk_peer_flush_defer(vol, bio);
			else
				fxblk_submit_fanout(vol, bio, true,
						    bio_sectors(bio) != 0);
		} else if (fxblk_submit_rw(vol, bio)) {
			/* the clone sent took over our reference */
			return FXBLK_QC_NONE;
		}
		break;
	/* Discard, secure erase: only if every member has it (limits) */
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:
	case REQ_OP_WRITE_ZEROES:
		fxblk_submit_fanout(vol, bio, false, false);
		break;
	default:
		bio->bi_status = BLK_STS_NOTSUPP;
		bio_endio(bio);
		break;
	}
	percpu_ref_put(&vol->active);
	return FXBLK_QC_NONE;
}

/* ---- block_device_operations ------------------------------------------ */

/*
 * open_count lets DESTROY refuse with EBUSY; dying, set under the same lock
 * when DESTROY commits, keeps a racing open from getting in afterwards.
 */
static int fxblk_open_count_inc(struct fxblk_volume *vol)
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

static void fxblk_open_count_dec(struct fxblk_volume *vol)
{
	spin_lock(&vol->open_lock);
	vol->open_count--;
	/* Under the lock: a waiter seeing 0 may free @vol once it is dropped. */
	wake_up(&vol->closed);
	spin_unlock(&vol->open_lock);
}

#ifdef FXBLK_HAVE_OPEN_GENDISK
static int fxblk_open(struct gendisk *disk, blk_mode_t mode)
{
	struct fxblk_volume *vol = disk->private_data;

	if ((mode & BLK_OPEN_WRITE) && (vol->flags & FXBLK_VOL_READ_ONLY))
		return -EROFS;
	return fxblk_open_count_inc(vol);
}

static void fxblk_release(struct gendisk *disk)
{
	fxblk_open_count_dec(disk->private_data);
}
#else
static int fxblk_open(struct block_device *bdev, fmode_t mode)
{
	struct fxblk_volume *vol = bdev->bd_disk->private_data;

	if ((mode & FMODE_WRITE) && (vol->flags & FXBLK_VOL_READ_ONLY))
		return -EROFS;
	return fxblk_open_count_inc(vol);
}

static void fxblk_release(struct gendisk *disk, fmode_t mode)
{
	fxblk_open_count_dec(disk->private_data);
}
#endif

#ifdef FXBLK_HAVE_FREE_DISK
/* The last reference to the gendisk is gone: so is the disk's on @vol. */
static void fxblk_free_disk(struct gendisk *disk)
{
	fxblk_vol_put(disk->private_data);
}
#endif

static const struct block_device_operations fxblk_fops = {
	.owner		= THIS_MODULE,
	.submit_bio	= fxblk_submit_bio,
#ifdef FXBLK_HAVE_POLL_BIO
	.poll_bio	= fxblk_poll_bio,
#endif
	.open		= fxblk_open,
	.release	= fxblk_release,
#ifdef FXBLK_HAVE_FREE_DISK
	.free_disk	= fxblk_free_disk,
#endif
};

unsigned int fxblk_dev_open_count(struct fxblk_volume *vol)
{
	unsigned int n;

	spin_lock(&vol->open_lock);
	n = vol->open_count;
	spin_unlock(&vol->open_lock);
	return n;
}

/*
 * Commit to destruction: -EBUSY if open (unless @force), else 0 and no new
 * opens. Removing an open disk needs ->free_disk to free the volume after
 * the last close; older kernels refuse with -EOPNOTSUPP.
 */
int fxblk_dev_mark_dying(struct fxblk_volume *vol, bool force)
{
	int ret = 0;

	spin_lock(&vol->open_lock);
	if (vol->dying)
		ret = -ENOENT;
	else if (vol->open_count && !force)
		ret = -EBUSY;
#ifndef FXBLK_HAVE_FREE_DISK
	else if (vol->open_count)
		ret = -EOPNOTSUPP;
#endif
	else
		WRITE_ONCE(vol->dying, true);
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

/* The volume's UUID (its members' labels'), empty if CREATE gave none. */
static ssize_t uuid_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct fxblk_volume *vol = dev_to_disk(dev)->private_data;

	if (uuid_is_null(&vol->uuid))
		return 0;
	return sysfs_emit(buf, "%pUb\n", &vol->uuid);
}
static DEVICE_ATTR_RO(uuid);

static ssize_t chunk_sectors_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct fxblk_volume *vol = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%llu\n", fxblk_chunk_sectors(&vol->geom));
}
static DEVICE_ATTR_RO(chunk_sectors);

/* 1 if /dev/fxN takes PCI P2PDMA pages (every member's queue does). */
static ssize_t pci_p2pdma_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct fxblk_volume *vol = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%d\n", !!(vol->flags & FXBLK_VOL_PCI_P2PDMA));
}
static DEVICE_ATTR_RO(pci_p2pdma);

static struct attribute *fxblk_attrs[] = {
	&dev_attr_name.attr,
	&dev_attr_uuid.attr,
	&dev_attr_chunk_sectors.attr,
	&dev_attr_pci_p2pdma.attr,
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

static void fxblk_members_close(struct fxblk_volume *vol, unsigned int n)
{
	while (n--) {
		struct fxblk_member *m = &vol->members[n];

		fxblk_member_close(m);
		/* After the close: no completion or ->mark_dead kicks it. */
		fxblk_health_exit(m);
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

	if (bdev_is_zoned(m->bdev)) {
		FXBLK_ERR(extack, "member %u (%pg) is zoned: not supported",
			  i, m->bdev);
		return -EINVAL;
	}
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
	if (spec->data_offset < FXBLK_RESERVED_HEAD_SECTORS) {
		FXBLK_ERR(extack, "member %u (%pg): data offset inside the 4 MiB label area",
			  i, m->bdev);
		return -EINVAL;
	}
	/*
	 * The last FXBLK_RESERVED_TAIL_SECTORS hold the backup label: "member
	 * size" below is the size without them.
	 */
	if (size <= FXBLK_RESERVED_TAIL_SECTORS ||
	    spec->data_offset >= size - FXBLK_RESERVED_TAIL_SECTORS) {
		FXBLK_ERR(extack, "member %u (%pg): data offset beyond member end",
			  i, m->bdev);
		return -EINVAL;
	}
	size -= FXBLK_RESERVED_TAIL_SECTORS;
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

	/* Stats stay until the volume is freed: readers may hold it. */
	ret = fxblk_stats_init(m);
	if (ret)
		return ret;
	m->vol = vol;
	m->index = i;
	m->dev = spec->dev;
	fxblk_health_init(m);
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
		return ret;
	}
	snprintf(m->disk_name, sizeof(m->disk_name), "%pg", m->bdev);
	fxblk_peerq_member_setup(m);
	ret = fxblk_member_check(vol, i, spec, extack);
	if (ret) {
		fxblk_member_close(m);
		/* ->mark_dead may have kicked it while the member was open */
		fxblk_health_exit(m);
		return ret;
	}
	return 0;
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

/* ---- gendisk ------------------------------------------------------------- */

static void fxblk_volume_flags(struct fxblk_volume *vol)
{
	bool nowait = true, p2pdma = true;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_member *m = &vol->members[i];

		if (bdev_read_only(m->bdev))
			vol->flags |= FXBLK_VOL_READ_ONLY;
		nowait &= fxblk_bdev_nowait(m->bdev);
		m->p2pdma = fxblk_bdev_p2pdma(m->bdev);
		p2pdma &= m->p2pdma;
	}
	if (nowait)
		vol->flags |= FXBLK_VOL_NOWAIT;
	/* The member set never changes, so neither does this. */
#ifdef FXBLK_P2PDMA_KERNEL
	vol->p2pdma = p2pdma ? FXBLK_P2PDMA_CAPABLE : FXBLK_P2PDMA_NO_MEMBER;
#else
	vol->p2pdma = FXBLK_P2PDMA_NO_KERNEL;
#endif
	if (vol->p2pdma == FXBLK_P2PDMA_CAPABLE)
		vol->flags |= FXBLK_VOL_PCI_P2PDMA;
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

/* Allocate and add the gendisk; on error nothing of it is left. */
static int fxblk_disk_add(struct fxblk_volume *vol,
			  struct netlink_ext_ack *extack)
{
	struct gendisk *disk = fxblk_alloc_disk(vol);
	int ret;

	if (IS_ERR(disk)) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the disk");
		return PTR_ERR(disk);
	}
	vol->disk = disk;
	fxblk_set_features(vol);
	disk->major = fxblk_major;
	disk->first_minor = vol->index * FXBLK_MINORS;
	disk->minors = FXBLK_MINORS;
	disk->fops = &fxblk_fops;
	disk->private_data = vol;
	snprintf(disk->disk_name, DISK_NAME_LEN, "fx%d", vol->index);
	set_capacity(disk, fxblk_capacity(&vol->geom));
	if (vol->flags & FXBLK_VOL_READ_ONLY)
		set_disk_ro(disk, true);

	ret = fxblk_add_disk(disk, fxblk_attr_groups);
	if (ret) {
		FXBLK_ERR(extack, "cannot add disk %s (error %d)",
			  disk->disk_name, ret);
		fxblk_put_disk(disk);
		vol->disk = NULL;
		return ret;
	}
#ifdef FXBLK_HAVE_FREE_DISK
	/* Dropped by ->free_disk, only ever called for an added disk. */
	kref_get(&vol->ref);
#endif
	return 0;
}

static void fxblk_active_release(struct percpu_ref *ref)
{
	struct fxblk_volume *vol = container_of(ref, struct fxblk_volume,
						active);

	complete(&vol->drained);
}

/* A volume with its registry reference; fxblk_dev_setup() makes it work. */
struct fxblk_volume *fxblk_dev_alloc(const struct fxblk_create_req *req,
				     int index)
{
	struct fxblk_volume *vol;

	vol = kzalloc(struct_size(vol, members, req->nr_members), GFP_KERNEL);
	if (!vol)
		return NULL;
	/* Until the volume is freed: STATS readers may hold it. */
	if (fxblk_direct_init(vol)) {
		kfree(vol);
		return NULL;
	}
	vol->index = index;
	vol->nr_members = req->nr_members;
	strscpy(vol->name, req->name, sizeof(vol->name));
	uuid_copy(&vol->uuid, &req->uuid);
	kref_init(&vol->ref);
	init_completion(&vol->drained);
	init_completion(&vol->torn_down);
	spin_lock_init(&vol->open_lock);
	mutex_init(&vol->alloc_lock);
	init_rwsem(&vol->peerq_sem);
	mutex_init(&vol->peerq_open_lock);
	spin_lock_init(&vol->deferred_lock);
	bio_list_init(&vol->deferred);
	bio_list_init(&vol->reissue);
	bio_list_init(&vol->peer_flushes);
	INIT_WORK(&vol->deferred_work, fxblk_deferred_work);
	INIT_WORK(&vol->peer_flush_work, fxblk_peer_flush_work);
	INIT_WORK(&vol->reissue_work, fxblk_reissue_work);
	init_waitqueue_head(&vol->closed);
	return vol;
}

/*
 * Named after the disk (fxN), as dm names kdmflush/dm-N: WQ_NAME_LEN is 32,
 * and "fxblk/" plus a volume name of up to 31 characters was truncated
 * (6.9+ says so in the log). Both need a rescuer: I/O to fxN may be what
 * frees memory.
 */
static int fxblk_alloc_workqueues(struct fxblk_volume *vol)
{
	vol->wq = alloc_workqueue("fxblk/fx%d",
				  WQ_MEM_RECLAIM | FXBLK_WQ_PERCPU, 0,
				  vol->index);
	if (!vol->wq)
		return -ENOMEM;
	vol->reissue_wq = alloc_workqueue("fxblk-again/fx%d",
					  WQ_MEM_RECLAIM | FXBLK_WQ_PERCPU, 0,
					  vol->index);
	if (!vol->reissue_wq) {
		destroy_workqueue(vol->wq);
		return -ENOMEM;
	}
	return 0;
}

/*
 * CREATE failed after add_disk(): tear down as DESTROY --force does. udev
 * (or anyone) may have fxN open already. With ->free_disk the volume
 * outlives that opener; without it (5.10) the volume must not be freed
 * under it: new opens are refused and the open ones waited for.
 */
static void fxblk_dev_abort(struct fxblk_volume *vol)
{
#ifdef FXBLK_HAVE_FREE_DISK
	fxblk_dev_mark_dying(vol, true);
#else
	spin_lock(&vol->open_lock);
	WRITE_ONCE(vol->dying, true);
	spin_unlock(&vol->open_lock);
	wait_event(vol->closed, !fxblk_dev_open_count(vol));
#endif
	fxblk_dev_destroy(vol);
}

/*
 * Open the members, build the stripe and add /dev/fxN. Called without
 * fxblk_lock: opening members and add_disk()'s partition scan do I/O that
 * can wait as long as nvme's ctrl_loss_tmo.
 */
int fxblk_dev_setup(struct fxblk_volume *vol, const struct fxblk_create_req *req,
		    struct netlink_ext_ack *extack)
{
	int ret;

	ret = fxblk_members_open(vol, req, extack);
	if (ret)
		return ret;
	ret = fxblk_geometry(vol, req->chunk_sectors, extack);
	if (ret)
		goto out_close;
	fxblk_volume_flags(vol);
	/*
	 * ALLOW_REINIT keeps the per-cpu counters over the switch to atomic
	 * mode that DESTROY makes before its kill (fxblk_kill_idle()); else
	 * the switch frees them and the ref looks killed already.
	 */
	ret = percpu_ref_init(&vol->active, fxblk_active_release,
			      PERCPU_REF_ALLOW_REINIT, GFP_KERNEL);
	if (ret)
		goto out_close;
	/* The largest fan-out: a parent and a bio per member. */
	ret = bioset_init(&vol->clone_bs, vol->nr_members + 1,
			  offsetof(struct fxblk_io, bio), 0);
	if (ret)
		goto out_ref;
	ret = bioset_init(&vol->acct_bs, BIO_POOL_SIZE,
			  offsetof(struct fxblk_io, bio), 0);
	if (ret)
		goto out_clone;
	ret = fxblk_alloc_workqueues(vol);
	if (ret)
		goto out_acct;
	ret = fxblk_disk_add(vol, extack);
	if (ret)
		goto out_wq;
	ret = fxblk_link_holders(vol, extack);
	if (ret) {
		fxblk_dev_abort(vol);
		return ret;
	}
	/* Now health work may report on fxN (and catches up). */
	fxblk_health_start(vol);
	return 0;

out_wq:
	destroy_workqueue(vol->reissue_wq);
	destroy_workqueue(vol->wq);
out_acct:
	bioset_exit(&vol->acct_bs);
out_clone:
	bioset_exit(&vol->clone_bs);
out_ref:
	percpu_ref_exit(&vol->active);
out_close:
	fxblk_members_close(vol, vol->nr_members);
	return ret;
}

/*
 * After fxblk_dev_mark_dying(). New bios fail from here on; those in
 * flight drain before the disk goes and the members are closed. An open
 * disk (DESTROY --force) stays until its last close, failing all I/O.
 */
void fxblk_dev_destroy(struct fxblk_volume *vol)
{
	unsigned int i;

	/* DESTROY killed it already (fxblk_kill_idle()), a failed CREATE not */
	if (!percpu_ref_is_dying(&vol->active))
		percpu_ref_kill(&vol->active);
	wait_for_completion(&vol->drained);
	/* No peer RW holds @active any more: close fxblk's associations. */
	fxblk_peerq_vol_close(vol);
	for (i = 0; i < vol->nr_members; i++)
		cancel_delayed_work_sync(&vol->members[i].health_work);
	/* Before del_gendisk(), which drops the holder directory. */
	fxblk_unlink_holders(vol);
	del_gendisk(vol->disk);
	destroy_workqueue(vol->reissue_wq);
	destroy_workqueue(vol->wq);
	bioset_exit(&vol->acct_bs);
	bioset_exit(&vol->clone_bs);
	fxblk_members_close(vol, vol->nr_members);
	/*
	 * Without ->free_disk nobody has the disk open here (mark_dying
	 * refused that), so the caller's put may free the volume.
	 */
	fxblk_put_disk(vol->disk);
}

/* The last reference is gone: nothing uses the volume any more. */
void fxblk_dev_free(struct fxblk_volume *vol)
{
	unsigned int i;

	percpu_ref_exit(&vol->active);
	for (i = 0; i < vol->nr_members; i++)
		fxblk_stats_exit(&vol->members[i]);
	fxblk_direct_exit(vol);
	kfree(vol);
}
