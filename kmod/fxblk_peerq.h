/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fxblk peer queues (fxblk_peerq.c): fxblk's own NVMe-oF/RDMA association
 * to the subsystem of each nvme-rdma member, next to the kernel's
 * controller, so that a peer RW moves registered memory with an FRWR
 * registration and a keyed SGL, not through the member's block queue.
 * Built where the kernel has the RDMA CM (CONFIG_INFINIBAND_ADDR_TRANS);
 * elsewhere the stubs below send every RW the block path.
 */
#ifndef FXBLK_PEERQ_H
#define FXBLK_PEERQ_H

#include <linux/types.h>

#define FXBLK_PEERQ_NIC_LEN	64	/* IB_DEVICE_NAME_MAX */

struct fxblk_volume;
struct fxblk_member;
struct block_device;
struct fxblk_peer_reg;

#ifdef FXBLK_PEERQ
int fxblk_peerq_init(void);
void fxblk_peerq_exit(void);		/* before the volumes go */
void fxblk_peerq_exit_late(void);	/* after */
void fxblk_peerq_vol_close(struct fxblk_volume *vol);
/* Record @m's namespace identifiers (m->ns_ids), at CREATE or assemble. */
void fxblk_peerq_member_setup(struct fxblk_member *m);
/* For netlink: @m's enum fxblk_peerq_state and its NIC's name ("": none). */
void fxblk_peerq_member_info(struct fxblk_member *m, u32 *state, char *nic,
			     size_t len);
/*
 * Move @len bytes between @reg's memory (@pos: byte offset into its pages,
 * or into its DMA-only range) and [@dev_off, @dev_off + @len) of the fxN
 * disk @bdev over the peer queues. -EOPNOTSUPP: not for this disk now
 * (peer_queues off, a member not nvme-rdma or its queue not up, DMA-only
 * memory that cannot be mapped for a member's NIC): the caller takes the
 * block path, or refuses DMA-only memory.
 */
int fxblk_peerq_rw(struct block_device *bdev, struct fxblk_peer_reg *reg,
		   u64 pos, u64 dev_off, u64 len, bool write, bool fua);
/*
 * Stop every association with a command posted whose data is @reg's
 * memory (process context): no NIC moves that memory after it returns.
 */
void fxblk_peerq_fence(struct fxblk_peer_reg *reg);
/* A member's peer queue completed writes no Flush has covered yet. */
bool fxblk_peerq_flush_due(struct fxblk_volume *vol);
/* Flush those (process context); -EIO if one could not be. */
int fxblk_peerq_flush(struct fxblk_volume *vol);
#else
static inline int fxblk_peerq_init(void)
{
	return 0;
}

static inline void fxblk_peerq_exit(void)
{
}

static inline void fxblk_peerq_exit_late(void)
{
}

static inline void fxblk_peerq_vol_close(struct fxblk_volume *vol)
{
}

static inline void fxblk_peerq_member_setup(struct fxblk_member *m)
{
}

static inline void fxblk_peerq_member_info(struct fxblk_member *m,
					   u32 *state, char *nic, size_t len)
{
	*state = 0;		/* FXBLK_PEERQ_NONE */
	nic[0] = '\0';
}

static inline int fxblk_peerq_rw(struct block_device *bdev,
				 struct fxblk_peer_reg *reg, u64 pos,
				 u64 dev_off, u64 len, bool write, bool fua)
{
	return -EOPNOTSUPP;
}

static inline void fxblk_peerq_fence(struct fxblk_peer_reg *reg)
{
}

static inline bool fxblk_peerq_flush_due(struct fxblk_volume *vol)
{
	return false;
}

static inline int fxblk_peerq_flush(struct fxblk_volume *vol)
{
	return 0;
}
#endif

#endif /* FXBLK_PEERQ_H */
