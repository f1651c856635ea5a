/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stripe mapping math, shared by fxblk.ko and the userspace unit tests, so it
 * must not depend on anything but <linux/types.h>.
 *
 * The layout is dm-stripe's: volume chunk c lives on member (c mod N) at
 * member chunk (c div N); within the member, data starts at a per-member data
 * offset which the caller adds. Chunks are a power of two in sectors, so the
 * chunk arithmetic is shifts; the member count is arbitrary.
 *
 * All quantities are 512-byte sectors. Plain 64-bit division is used: fxblk
 * is built for 64-bit architectures only (x86_64, arm64).
 */
#ifndef FXBLK_MAP_H
#define FXBLK_MAP_H

#include <linux/types.h>

struct fxblk_geom {
	__u32 chunk_shift;	/* log2(chunk size in sectors) */
	__u32 nr_members;
	__u64 member_sectors;	/* usable per member, whole chunks */
};

static inline __u64 fxblk_chunk_sectors(const struct fxblk_geom *g)
{
	return 1ULL << g->chunk_shift;
}

/* Volume capacity: every member contributes the same number of chunks. */
static inline __u64 fxblk_capacity(const struct fxblk_geom *g)
{
	return g->member_sectors * g->nr_members;
}

/* Round a member's usable size down to whole chunks. */
static inline __u64 fxblk_round_member(__u64 sectors, __u32 chunk_shift)
{
	return sectors & ~((1ULL << chunk_shift) - 1);
}

/* Map a volume sector to (member, sector within the member's data area). */
static inline void fxblk_map_sector(const struct fxblk_geom *g, __u64 sector,
				    __u32 *member, __u64 *msector)
{
	__u64 chunk = sector >> g->chunk_shift;
	__u64 off = sector & (fxblk_chunk_sectors(g) - 1);

	*member = (__u32)(chunk % g->nr_members);
	*msector = ((chunk / g->nr_members) << g->chunk_shift) + off;
}

/* Sectors from @sector to the end of its chunk: the longest unsplit piece. */
static inline __u64 fxblk_sectors_to_boundary(const struct fxblk_geom *g,
					      __u64 sector)
{
	return fxblk_chunk_sectors(g) - (sector & (fxblk_chunk_sectors(g) - 1));
}

/*
 * The first member sector at or after volume sector @sector that belongs to
 * @member: used to cut a volume range into one contiguous range per member
 * (discard, write-zeroes), as dm-stripe's stripe_map_range_sector() does.
 */
static inline __u64 fxblk_map_range_sector(const struct fxblk_geom *g,
					   __u64 sector, __u32 member)
{
	__u32 m;
	__u64 ms;

	fxblk_map_sector(g, sector, &m, &ms);
	if (m == member)
		return ms;
	/* Round down to this member-chunk's start, then step to the next
	 * chunk if @member's chunk in this stripe row lies before @sector.
	 */
	ms &= ~(fxblk_chunk_sectors(g) - 1);
	if (member < m)
		ms += fxblk_chunk_sectors(g);
	return ms;
}

/*
 * Member @member's share of volume range [start, end): the member range
 * [*mstart, *mend). Empty when *mstart == *mend.
 */
static inline void fxblk_map_range(const struct fxblk_geom *g, __u64 start,
				   __u64 end, __u32 member,
				   __u64 *mstart, __u64 *mend)
{
	*mstart = fxblk_map_range_sector(g, start, member);
	*mend = fxblk_map_range_sector(g, end, member);
	if (*mend < *mstart)
		*mend = *mstart;
}

#endif /* FXBLK_MAP_H */
