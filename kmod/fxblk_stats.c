// SPDX-License-Identifier: GPL-2.0
/*
 * Per-member, per-direction counters. The hot path touches only this cpu's
 * copy with this_cpu_*() (irq-safe, no atomics, no shared lines); the rare
 * reader (netlink STATS) sums all possible cpus. Sums read without a lock may
 * be a few I/Os apart from each other, which is fine for monitoring.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/string.h>

#include "fxblk.h"

int fxblk_stats_init(struct fxblk_member *m)
{
	m->stats = alloc_percpu(struct fxblk_stat_cpu);
	return m->stats ? 0 : -ENOMEM;
}

void fxblk_stats_exit(struct fxblk_member *m)
{
	free_percpu(m->stats);
	m->stats = NULL;
}

void fxblk_stats_start(struct fxblk_member *m, unsigned int dir)
{
	this_cpu_inc(m->stats->inflight[dir]);
}

/* A bio that is sent again (fxblk_reissue()): not an I/O of its own. */
void fxblk_stats_cancel(struct fxblk_member *m, unsigned int dir)
{
	this_cpu_dec(m->stats->inflight[dir]);
}

/* Bucket i holds 2^i <= t < 2^(i+1) microseconds; 0 also takes t < 1. */
static unsigned int fxblk_lat_bucket(u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);
	unsigned int b = us ? fls64(us) - 1 : 0;

	return min_t(unsigned int, b, FXBLK_LAT_BUCKETS - 1);
}

/*
 * A member fault, counted as an error and seen by health: any failure but
 * the refusals that say nothing about the member. NOTSUPP: an optional
 * operation it lacks (a discard, a write-zeroes); AGAIN: a NOWAIT bio it
 * had no room for; TARGET on a bio with P2PDMA pages: its DMA mapping
 * refused the provider (counted as refused on the volume instead).
 */
bool fxblk_io_fault(const struct fxblk_io *io, blk_status_t status)
{
	return status && status != BLK_STS_NOTSUPP &&
	       status != BLK_STS_AGAIN &&
	       !(io->p2p && status == BLK_STS_TARGET);
}

static void fxblk_stats_add(struct fxblk_member *m, unsigned int dir,
			    unsigned int sectors, unsigned int bucket,
			    bool fault)
{
	this_cpu_inc(m->stats->ios[dir]);
	this_cpu_add(m->stats->sectors[dir], sectors);
	this_cpu_inc(m->stats->lat[dir][bucket]);
	if (fault)
		this_cpu_inc(m->stats->errors[dir]);
}

void fxblk_stats_done(struct fxblk_member *m, const struct fxblk_io *io,
		      fxblk_opf_t opf, blk_status_t status)
{
	unsigned int bucket = fxblk_lat_bucket(ktime_get_ns() - io->start_ns);

	this_cpu_dec(m->stats->inflight[io->dir]);
	fxblk_stats_add(m, io->dir, io->sectors, bucket,
			unlikely(status) && fxblk_io_fault(io, status));
	if (io->dir == FXBLK_DIR_WRITE && (opf & REQ_FUA))
		this_cpu_inc(m->stats->fua);
}

void fxblk_stats_sum(struct fxblk_member *m, struct fxblk_stat_cpu *sum)
{
	int cpu, d, b;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct fxblk_stat_cpu *s = per_cpu_ptr(m->stats, cpu);

		for (d = 0; d < FXBLK_NR_DIRS; d++) {
			sum->ios[d] += s->ios[d];
			sum->sectors[d] += s->sectors[d];
			sum->errors[d] += s->errors[d];
			sum->inflight[d] += s->inflight[d];
			for (b = 0; b < FXBLK_LAT_BUCKETS; b++)
				sum->lat[d][b] += s->lat[d][b];
		}
		sum->fua += s->fua;
	}
}

/* ---- the direct path: bios with PCI P2PDMA pages, per volume ------------ */

int fxblk_direct_init(struct fxblk_volume *vol)
{
	vol->direct = alloc_percpu(struct fxblk_direct_cpu);
	return vol->direct ? 0 : -ENOMEM;
}

void fxblk_direct_exit(struct fxblk_volume *vol)
{
	free_percpu(vol->direct);
	vol->direct = NULL;
}

/* A member completed @io, which carried P2PDMA pages. */
void fxblk_direct_done(struct fxblk_volume *vol, const struct fxblk_io *io,
		       blk_status_t status)
{
	if (status == BLK_STS_TARGET) {
		this_cpu_inc(vol->direct->refused);
	} else if (!status && io->dir <= FXBLK_DIR_WRITE) {
		this_cpu_inc(vol->direct->ios[io->dir]);
		this_cpu_add(vol->direct->bytes[io->dir],
			     (u64)io->sectors << SECTOR_SHIFT);
	}
}

void fxblk_direct_refused(struct fxblk_volume *vol)
{
	this_cpu_inc(vol->direct->refused);
}

void fxblk_direct_sum(struct fxblk_volume *vol, struct fxblk_direct_cpu *sum)
{
	int cpu, d;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct fxblk_direct_cpu *s = per_cpu_ptr(vol->direct, cpu);

		for (d = 0; d < 2; d++) {
			sum->ios[d] += s->ios[d];
			sum->bytes[d] += s->bytes[d];
		}
		sum->refused += s->refused;
	}
}
