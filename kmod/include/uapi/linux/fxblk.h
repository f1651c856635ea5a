/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * fxblk - striped block device over NVMe-oF namespaces.
 *
 * Generic netlink API, family "fxblk". Shared, unchanged, by fxblk.ko and
 * fxctl: definitions only.
 *
 * Units: every size, offset and capacity is in 512-byte sectors unless the
 * attribute name says otherwise. Latency histogram bucket i counts
 * completions whose latency t (microseconds) satisfies 2^i <= t < 2^(i+1);
 * bucket 0 also takes t < 1, the last bucket takes everything above.
 *
 * Attribute tree of a volume (reply to GET, STATS, CREATE; EVENT carries a
 * subset):
 *
 *   FXBLK_ATTR_INDEX, FXBLK_ATTR_NAME, FXBLK_ATTR_DISK_NAME, ...
 *   FXBLK_ATTR_UUID                    (if CREATE was given one)
 *   FXBLK_ATTR_MEMBERS
 *     FXBLK_ATTR_MEMBER                (one per member, in stripe order)
 *       FXBLK_MEMBER_ATTR_MAJOR, _MINOR, _DATA_OFFSET, _DATA_SECTORS, ...
 *       FXBLK_MEMBER_ATTR_STATS_READ   (STATS only)
 *         FXBLK_STAT_ATTR_IOS, _SECTORS, _ERRORS, _INFLIGHT, _LAT_HIST
 *       FXBLK_MEMBER_ATTR_STATS_WRITE, _STATS_DISCARD, _STATS_FLUSH
 *   FXBLK_ATTR_DIRECT                  (STATS only)
 *     FXBLK_DIRECT_ATTR_READ_IOS, _READ_BYTES, _WRITE_IOS, _WRITE_BYTES,
 *     _REFUSED
 *
 * DESTROY names the volume by NAME or INDEX; given both, they must name the
 * same volume. With FXBLK_ATTR_FORCE an open volume is removed too: its I/O
 * fails with EIO at once and the disk goes away at its last close. The ack
 * comes without waiting for I/O in flight (FXBLK_FEAT_ASYNC_DESTROY): the
 * DESTROYED event marks the end of the removal.
 *
 * CREATE takes FXBLK_ATTR_NAME, FXBLK_ATTR_CHUNK_SECTORS and FXBLK_ATTR_MEMBERS
 * with, per member, MAJOR, MINOR, DATA_OFFSET and optionally DATA_SECTORS
 * (default: the rest of the member after DATA_OFFSET), and optionally
 * FXBLK_ATTR_UUID (FXBLK_FEAT_UUID): the volume's UUID as its members'
 * labels record it, which replies then carry and /sys/block/fxN/fxblk/uuid
 * shows. The module only keeps it: it reads no label.
 */
#ifndef _UAPI_LINUX_FXBLK_H
#define _UAPI_LINUX_FXBLK_H

#include <linux/types.h>

#define FXBLK_GENL_NAME		"fxblk"
#define FXBLK_GENL_VERSION	1
#define FXBLK_GENL_MCAST_EVENTS	"events"

/* Bumped on any incompatible change of the attributes below. */
#define FXBLK_API_VERSION	1

#define FXBLK_NAME_MAX		32	/* volume name, including the NUL */
#define FXBLK_UUID_LEN		16	/* FXBLK_ATTR_UUID, bytes */
/*
 * A volume name is 1..FXBLK_NAME_MAX-1 of these characters and neither "."
 * nor "..": it becomes /dev/fx/<name>. fxblk.ko and fxctl check it alike.
 */
#define FXBLK_NAME_CHARS	"ABCDEFGHIJKLMNOPQRSTUVWXYZ" \
				"abcdefghijklmnopqrstuvwxyz" \
				"0123456789._-"
#define FXBLK_DISK_NAME_MAX	32	/* "fxN", member "nvme0n1", incl. NUL */
/* A STATS reply's MEMBERS nest (~1.4 KiB a member) must fit nla_len's 16 bits. */
#define FXBLK_MAX_MEMBERS	32
#define FXBLK_MAX_VOLUMES	256

#define FXBLK_CHUNK_MIN_SECTORS	8		/* 4 KiB */
#define FXBLK_CHUNK_MAX_SECTORS	32768		/* 16 MiB */
#define FXBLK_CHUNK_DEF_SECTORS	1024		/* 512 KiB */

#define FXBLK_LAT_BUCKETS	32

/*
 * The first 4 MiB of every member are reserved for labels: CREATE refuses a
 * DATA_OFFSET below this (docs/on-disk-format.md).
 */
#define FXBLK_RESERVED_HEAD_SECTORS	8192
/*
 * The last 1 MiB of every member is reserved for the backup label: CREATE
 * refuses a data area reaching into it, and its default DATA_SECTORS stop
 * before it.
 */
#define FXBLK_RESERVED_TAIL_SECTORS	2048

/* FXBLK_ATTR_FEATURES bits */
#define FXBLK_FEAT_STRIPE	(1ULL << 0)	/* CREATE/DESTROY/GET work */
#define FXBLK_FEAT_STATS	(1ULL << 1)	/* per-member counters */
#define FXBLK_FEAT_EVENTS	(1ULL << 2)	/* "events" multicast group */
#define FXBLK_FEAT_NOWAIT	(1ULL << 3)	/* REQ_NOWAIT honoured */
#define FXBLK_FEAT_HEALTH	(1ULL << 4)	/* member/volume STATE, FORCE */
/* Built for a kernel with PCI P2PDMA: volumes may take P2PDMA pages. */
#define FXBLK_FEAT_PCI_P2PDMA	(1ULL << 5)
/*
 * DESTROY acks once the removal is committed. An idle volume is gone by
 * then; one with I/O in flight is torn down in the background, and the
 * DESTROYED event says when it is gone (members closed, index free).
 */
#define FXBLK_FEAT_ASYNC_DESTROY	(1ULL << 6)
/* CREATE takes FXBLK_ATTR_UUID; volume replies carry it, sysfs shows it. */
#define FXBLK_FEAT_UUID		(1ULL << 7)

/* FXBLK_ATTR_FLAGS bits of a volume */
#define FXBLK_VOL_READ_ONLY	(1ULL << 0)	/* a member is read-only */
#define FXBLK_VOL_NOWAIT	(1ULL << 1)	/* every member takes REQ_NOWAIT */
/* Reserved: a removed volume leaves the registry, so no reply carries it. */
#define FXBLK_VOL_REMOVED	(1ULL << 2)
/* Every member's queue takes PCI P2PDMA pages: so does /dev/fxN. */
#define FXBLK_VOL_PCI_P2PDMA	(1ULL << 3)

/*
 * FXBLK_ATTR_P2PDMA: whether the volume takes PCI P2PDMA pages (device
 * memory with struct page, e.g. GPU VRAM or an NVMe CMB) in its bios, the
 * "direct" path with zero CPU copies, and if not, why. NO_MEMBER: see
 * FXBLK_MEMBER_ATTR_PCI_P2PDMA for which members lack it.
 */
enum fxblk_p2pdma {
	FXBLK_P2PDMA_CAPABLE,
	FXBLK_P2PDMA_NO_KERNEL,		/* kernel without CONFIG_PCI_P2PDMA */
	FXBLK_P2PDMA_NO_MEMBER,		/* a member's queue does not take them */
	__FXBLK_P2PDMA_MAX,
};
#define FXBLK_P2PDMA_MAX (__FXBLK_P2PDMA_MAX - 1)

/*
 * Member and volume health (FXBLK_ATTR_STATE, FXBLK_MEMBER_ATTR_STATE).
 * A member is FAILING after an I/O error and LIVE again after
 * FXBLK_FAILING_SECS seconds without one; GONE once its disk was removed
 * (for good: nvme gave up after ctrl_loss_tmo). A volume takes the worst
 * state of its members. Path flaps that nvme multipath rides out are not
 * errors here: the I/O waits and then succeeds.
 */
enum fxblk_state {
	FXBLK_STATE_LIVE,
	FXBLK_STATE_FAILING,
	FXBLK_STATE_GONE,
	__FXBLK_STATE_MAX,
};
#define FXBLK_STATE_MAX (__FXBLK_STATE_MAX - 1)
#define FXBLK_FAILING_SECS	30

/*
 * A member's peer queues (FXBLK_MEMBER_ATTR_PEERQ_STATE): fxblk's own
 * NVMe-oF/RDMA association to its subsystem, with the module parameter
 * peer_queues=1, opened by the first peer RW of its volume.
 */
enum fxblk_peerq_state {
	FXBLK_PEERQ_NONE,		/* not opened (peer_queues off, no RW yet) */
	FXBLK_PEERQ_OPENING,
	FXBLK_PEERQ_LIVE,
	FXBLK_PEERQ_FAILED,		/* open failed; a later RW retries */
	FXBLK_PEERQ_DOWN,		/* was live, stopped: block path */
	__FXBLK_PEERQ_MAX,
};
#define FXBLK_PEERQ_MAX (__FXBLK_PEERQ_MAX - 1)

enum fxblk_cmd {
	FXBLK_CMD_UNSPEC,
	FXBLK_CMD_STATUS,	/* module version, API version, features */
	FXBLK_CMD_CREATE,	/* admin */
	FXBLK_CMD_DESTROY,	/* admin; by NAME or INDEX */
	FXBLK_CMD_GET,		/* doit by NAME or INDEX; dumpit: all */
	FXBLK_CMD_STATS,	/* doit by NAME or INDEX */
	FXBLK_CMD_EVENT,	/* multicast only */
	__FXBLK_CMD_MAX,
};
#define FXBLK_CMD_MAX (__FXBLK_CMD_MAX - 1)

enum fxblk_attr {
	FXBLK_ATTR_UNSPEC,
	FXBLK_ATTR_MOD_VERSION,		/* string */
	FXBLK_ATTR_API_VERSION,		/* u32 */
	FXBLK_ATTR_FEATURES,		/* u64, FXBLK_FEAT_* */
	FXBLK_ATTR_INDEX,		/* u32: N of /dev/fxN */
	FXBLK_ATTR_NAME,		/* string, [A-Za-z0-9._-], 1..31 */
	FXBLK_ATTR_DISK_NAME,		/* string "fxN" */
	FXBLK_ATTR_CHUNK_SECTORS,	/* u32, power of two */
	FXBLK_ATTR_CAPACITY,		/* u64 sectors */
	FXBLK_ATTR_LOGICAL_BLOCK_SIZE,	/* u32 bytes */
	FXBLK_ATTR_OPEN_COUNT,		/* u32 */
	FXBLK_ATTR_MEMBERS,		/* nest of FXBLK_ATTR_MEMBER */
	FXBLK_ATTR_MEMBER,		/* nest of FXBLK_MEMBER_ATTR_* */
	FXBLK_ATTR_EVENT,		/* u32, enum fxblk_event */
	FXBLK_ATTR_ERRNO,		/* s32, with FXBLK_EVENT_MEMBER_ERROR */
	FXBLK_ATTR_PAD,
	FXBLK_ATTR_STATE,		/* u32, enum fxblk_state */
	FXBLK_ATTR_FLAGS,		/* u64, FXBLK_VOL_* */
	FXBLK_ATTR_FORCE,		/* flag, DESTROY: even while open */
	FXBLK_ATTR_LIVE_VOLUMES,	/* u32, STATUS: volumes not yet freed */
	FXBLK_ATTR_P2PDMA,		/* u32, enum fxblk_p2pdma */
	FXBLK_ATTR_DIRECT,		/* nest of FXBLK_DIRECT_ATTR_* */
	FXBLK_ATTR_UUID,		/* binary, FXBLK_UUID_LEN bytes */
	__FXBLK_ATTR_MAX,
};
#define FXBLK_ATTR_MAX (__FXBLK_ATTR_MAX - 1)

enum fxblk_member_attr {
	FXBLK_MEMBER_ATTR_UNSPEC,
	FXBLK_MEMBER_ATTR_INDEX,	/* u32, position in the stripe */
	FXBLK_MEMBER_ATTR_MAJOR,	/* u32 */
	FXBLK_MEMBER_ATTR_MINOR,	/* u32 */
	FXBLK_MEMBER_ATTR_DISK_NAME,	/* string, e.g. "nvme0n1" */
	FXBLK_MEMBER_ATTR_DATA_OFFSET,	/* u64 sectors from member start */
	FXBLK_MEMBER_ATTR_DATA_SECTORS,	/* u64 sectors usable after offset */
	FXBLK_MEMBER_ATTR_STATS_READ,	/* nest of FXBLK_STAT_ATTR_* */
	FXBLK_MEMBER_ATTR_STATS_WRITE,
	FXBLK_MEMBER_ATTR_STATS_DISCARD, /* discard and write-zeroes */
	FXBLK_MEMBER_ATTR_STATS_FLUSH,
	FXBLK_MEMBER_ATTR_PAD,
	FXBLK_MEMBER_ATTR_STATE,	/* u32, enum fxblk_state */
	FXBLK_MEMBER_ATTR_ERRORS,	/* u64, failed I/Os, all directions */
	FXBLK_MEMBER_ATTR_PCI_P2PDMA,	/* u8, 1: its queue takes P2PDMA pages */
	FXBLK_MEMBER_ATTR_PEERQ_STATE,	/* u32, enum fxblk_peerq_state */
	FXBLK_MEMBER_ATTR_PEERQ_NIC,	/* string: RDMA device of its peer queues */
	__FXBLK_MEMBER_ATTR_MAX,
};
#define FXBLK_MEMBER_ATTR_MAX (__FXBLK_MEMBER_ATTR_MAX - 1)

enum fxblk_stat_attr {
	FXBLK_STAT_ATTR_UNSPEC,
	FXBLK_STAT_ATTR_IOS,		/* u64, completed bios sent to member */
	FXBLK_STAT_ATTR_SECTORS,	/* u64 */
	FXBLK_STAT_ATTR_ERRORS,		/* u64, completions with an error */
	FXBLK_STAT_ATTR_INFLIGHT,	/* u32 */
	FXBLK_STAT_ATTR_LAT_HIST,	/* binary: __u64[FXBLK_LAT_BUCKETS] */
	FXBLK_STAT_ATTR_FUA,		/* u64, writes with FUA (WRITE only) */
	FXBLK_STAT_ATTR_PAD,
	__FXBLK_STAT_ATTR_MAX,
};
#define FXBLK_STAT_ATTR_MAX (__FXBLK_STAT_ATTR_MAX - 1)

/*
 * The direct path of a volume (STATS): bios sent to members that carry PCI
 * P2PDMA pages and completed without error (one per chunk piece), with
 * their bytes - data that moved between device memory and the members with
 * no CPU copy. REFUSED: such bios failed with EREMOTEIO instead, either
 * before reaching a member (the volume does not take P2PDMA pages) or by
 * the member's DMA mapping (the provider is not reachable from its device,
 * pci_p2pdma_distance()).
 */
enum fxblk_direct_attr {
	FXBLK_DIRECT_ATTR_UNSPEC,
	FXBLK_DIRECT_ATTR_READ_IOS,	/* u64 */
	FXBLK_DIRECT_ATTR_READ_BYTES,	/* u64 */
	FXBLK_DIRECT_ATTR_WRITE_IOS,	/* u64 */
	FXBLK_DIRECT_ATTR_WRITE_BYTES,	/* u64 */
	FXBLK_DIRECT_ATTR_REFUSED,	/* u64 */
	FXBLK_DIRECT_ATTR_PAD,
	__FXBLK_DIRECT_ATTR_MAX,
};
#define FXBLK_DIRECT_ATTR_MAX (__FXBLK_DIRECT_ATTR_MAX - 1)

enum fxblk_event {
	FXBLK_EVENT_UNSPEC,
	FXBLK_EVENT_CREATED,
	FXBLK_EVENT_DESTROYED,
	FXBLK_EVENT_MEMBER_ERROR,	/* at most one a second per member */
	FXBLK_EVENT_MEMBER_STATE,	/* member state changed (MEMBER nest) */
	__FXBLK_EVENT_MAX,
};
#define FXBLK_EVENT_MAX (__FXBLK_EVENT_MAX - 1)

#endif /* _UAPI_LINUX_FXBLK_H */
