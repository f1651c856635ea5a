/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fxblk private header: volume and member structures shared by the registry
 * (fxblk_main.c), the block device (fxblk_dev.c), netlink (fxblk_netlink.c)
 * and the counters (fxblk_stats.c).
 */
#ifndef FXBLK_H
#define FXBLK_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/percpu.h>
#include <linux/percpu-refcount.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/uuid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/fxblk.h>

#include "fxblk_compat.h"
#include "fxblk_map.h"

/* FXBLK_MOD_VERSION comes from the VERSION file, passed in by Kbuild. */
#ifndef FXBLK_MOD_VERSION
#error "FXBLK_MOD_VERSION is not set: build with kmod/Kbuild (reads VERSION)"
#endif
#define FXBLK_MINORS		16	/* partitions per volume */

/*
 * Refusals carry a formatted extack message, at most FXBLK_MSG_LEN bytes
 * with the "fxblk: " prefix. Kernels without NL_SET_ERR_MSG_FMT (before 6.2)
 * get the text formatted into a slot of fxblk_netlink.c's message ring.
 */
#define FXBLK_MSG_LEN		80
#ifdef NL_SET_ERR_MSG_FMT_MOD
#define FXBLK_ERR(extack, fmt, args...) \
	NL_SET_ERR_MSG_FMT_MOD(extack, fmt, ##args)
#else
char *fxblk_msg_buf(void);
#define FXBLK_ERR(extack, fmt, args...) do {				\
	struct netlink_ext_ack *__extack = (extack);			\
									\
	if (__extack) {							\
		char *__buf = fxblk_msg_buf();				\
									\
		snprintf(__buf, FXBLK_MSG_LEN, KBUILD_MODNAME ": " fmt,	\
			 ##args);					\
		__extack->_msg = __buf;					\
	}								\
} while (0)
#endif

/* Counter sets per member; REQ_OP_DISCARD and WRITE_ZEROES share one. */
enum fxblk_dir {
	FXBLK_DIR_READ,
	FXBLK_DIR_WRITE,
	FXBLK_DIR_DISCARD,
	FXBLK_DIR_FLUSH,
	FXBLK_NR_DIRS,
};

/*
 * Per-cpu so the completion path never bounces a shared cache line; readers
 * sum over all cpus. inflight is incremented on the submitting cpu and
 * decremented on the completing one, so only the sum is meaningful.
 */
struct fxblk_stat_cpu {
	u64 ios[FXBLK_NR_DIRS];
	u64 sectors[FXBLK_NR_DIRS];
	u64 errors[FXBLK_NR_DIRS];
	s64 inflight[FXBLK_NR_DIRS];
	u64 fua;			/* completed writes carrying REQ_FUA */
	u64 lat[FXBLK_NR_DIRS][FXBLK_LAT_BUCKETS];	/* log2(us) */
};

/*
 * The direct path (PCI P2PDMA pages in bios), per volume and per cpu like
 * the member counters: completed bios and bytes by direction (READ, WRITE),
 * and bios failed with EREMOTEIO (see uapi FXBLK_DIRECT_ATTR_REFUSED).
 */
struct fxblk_direct_cpu {
	u64 ios[2];
	u64 bytes[2];
	u64 refused;
};

struct fxblk_volume;
struct fxblk_peerq_ctrl;

/* An NVMe namespace's NGUID, EUI-64 and UUID (zero: it has none). */
struct fxblk_ns_ids {
	u8 nguid[16];
	u8 eui64[8];
	u8 uuid[16];
};

struct fxblk_member {
	struct fxblk_volume *vol;
	unsigned int index;		/* position in the stripe */
	dev_t dev;
	struct block_device *bdev;	/* only while the volume is set up */
	void *handle;			/* what the open API returned */
	char disk_name[FXBLK_DISK_NAME_MAX];	/* at open, for replies */
	sector_t data_offset;		/* sectors from the member start */
	sector_t data_sectors;		/* usable after data_offset */
	bool holder_linked;
	bool p2pdma;			/* its queue takes P2PDMA pages */
	struct fxblk_stat_cpu __percpu *stats;
	/* fxblk's own association (fxblk_peerq.c); vol->peerq_sem */
	struct fxblk_peerq_ctrl *peerq;
	/*
	 * Writes its association completed into a volatile cache (a count),
	 * and the count the last completed Flush pass covered: writes are
	 * unflushed while they differ, a Flush in flight included (review
	 * 2026-12-06-peer H1); peerq_flags bit 1: an association went away
	 * with writes unflushed (the next flush pass: EIO).
	 */
	atomic64_t peerq_wr_seq;
	atomic64_t peerq_flushed_seq;
	unsigned long peerq_flags;
	unsigned int peerq_failures;	/* opens failed or stopped in a row */
	/* its namespace's identifiers at open, for the peer queues' check */
	struct fxblk_ns_ids ns_ids;

	/* Health (fxblk_health.c); written from completions, any context. */
	unsigned int state;		/* enum fxblk_state */
	unsigned int reported_state;	/* last one sent as an event */
	int last_errno;
	unsigned long last_error;	/* jiffies of the latest I/O error */
	unsigned long last_event;	/* jiffies of the last MEMBER_ERROR */
	unsigned long last_kick;	/* jiffies health_work was last kicked */
	u64 errors_reported;		/* error count at the last event */
	struct delayed_work health_work;
};

/*
 * Lifetime. @ref counts the registry's reference, the gendisk's (dropped
 * in ->free_disk, after the last opener closed) and short-lived ones of
 * netlink readers; the last put frees the volume. @active counts bios in
 * flight below us: DESTROY kills it, so new bios fail fast, and waits for
 * it to drain before the members are closed and the biosets go away.
 */
struct fxblk_volume {
	int index;			/* N of /dev/fxN, key in the registry */
	char name[FXBLK_NAME_MAX];
	uuid_t uuid;			/* from CREATE, null if none: its labels' */
	struct kref ref;
	struct percpu_ref active;
	struct completion drained;	/* @active reached zero after kill */
	struct gendisk *disk;
	struct fxblk_geom geom;
	unsigned int lbs;		/* logical block size, bytes */
	u64 flags;			/* FXBLK_VOL_* */
	unsigned int p2pdma;		/* enum fxblk_p2pdma */
	struct fxblk_direct_cpu __percpu *direct;
	/* Serialises open against destroy; see fxblk_dev_open(). */
	spinlock_t open_lock;
	unsigned int open_count;
	bool dying;
	wait_queue_head_t closed;	/* open_count fell (see dev abort) */
	/* fxN added and linked: health work may report (fxblk_health.c) */
	bool ready;
	bool published;			/* found by lookups; fxblk_lock */
	/*
	 * DESTROY of a volume with I/O in flight drains it here, not under
	 * genetlink's global lock; the DESTROYED event, built when DESTROY
	 * committed, is sent once the teardown is done (fxblk_main.c).
	 */
	struct work_struct teardown_work;
	struct completion torn_down;
	struct sk_buff *destroyed_event;
	struct bio_set clone_bs;	/* bios sent to members, with fxblk_io */
	struct bio_set acct_bs;		/* accounts a chunk-crossing bio once */
	/* Only one fan-out at a time may wait for the pool: see fan-out. */
	struct mutex alloc_lock;
	/* PREFLUSH writes whose flushes completed, data still to send. */
	spinlock_t deferred_lock;
	struct bio_list deferred;
	struct work_struct deferred_work;
	struct workqueue_struct *wq;
	/* PREFLUSH bios that flush the peer queues first (deferred_lock) */
	struct bio_list peer_flushes;
	struct work_struct peer_flush_work;
	/*
	 * Member bios refused with AGAIN, sent again in place by their own
	 * worker on their own workqueue (rescuer): see fxblk_reissue().
	 */
	struct bio_list reissue;
	struct work_struct reissue_work;
	struct workqueue_struct *reissue_wq;
	/*
	 * Peer queues: read by their I/O, written to publish or close them;
	 * one opener at a time connects them without it (peerq_open_lock,
	 * taken first: fxblk_peerq_vol_open()).
	 */
	struct rw_semaphore peerq_sem;
	struct mutex peerq_open_lock;
	unsigned int nr_members;
	struct fxblk_member members[];
};

/*
 * Context of one bio sent to a member, in the front_pad of clone_bs, so the
 * fast path allocates exactly one object per I/O. Also used, with member
 * NULL, as the accounting parent of a fan-out (flush, discard).
 */
struct fxblk_io {
	struct bio *parent;		/* completed when this bio is */
	struct fxblk_member *member;	/* NULL: fan-out parent */
	u64 start_ns;
	unsigned long acct_start;	/* from bio_start_io_acct() */
	unsigned int sectors;		/* size at submission */
	/* As sent, to send it again in place (fxblk_reissue()) */
	struct bvec_iter iter;
	fxblk_opf_t opf;
	unsigned short bi_flags;
	u8 dir;				/* enum fxblk_dir */
	bool acct;			/* end accounting on parent */
	bool flush_data;		/* parent: data follows the flushes */
	bool child;			/* a fan-out's child, not a data clone */
	bool polled;			/* parent completes from ->poll_bio */
	bool p2p;			/* carries PCI P2PDMA pages: direct */
	/*
	 * Polled bios: 2 while the clone is in flight (its completion and the
	 * poller each drop one); the parent's bi_private, which points here
	 * until the poller finishes it.
	 */
	atomic_t poll_ref;
	void *poll_private;
	struct bio bio;			/* must be last: bios follow front_pad */
};

/* A CREATE request after netlink parsing. */
struct fxblk_member_spec {
	dev_t dev;
	u64 data_offset;		/* sectors */
	u64 data_sectors;		/* 0: up to the end of the member */
};

struct fxblk_create_req {
	char name[FXBLK_NAME_MAX];
	uuid_t uuid;			/* null: CREATE gave none */
	u32 chunk_sectors;
	u32 nr_members;
	struct fxblk_member_spec members[FXBLK_MAX_MEMBERS];
};

/*
 * fxblk_main.c: volume registry. fxblk_lock guards only the registry and is
 * never held across member I/O, add_disk or del_gendisk; lookups take a
 * volume reference and drop the lock.
 */
extern struct mutex fxblk_lock;
extern int fxblk_major;
struct fxblk_volume *fxblk_get_volume(const char *name, int index);
struct fxblk_volume *fxblk_get_next(int *index);
int fxblk_create(const struct fxblk_create_req *req,
		 struct fxblk_volume **volp, struct netlink_ext_ack *extack);
int fxblk_destroy(struct fxblk_volume *vol, bool force, struct sk_buff *event,
		  struct netlink_ext_ack *extack);
void fxblk_vol_put(struct fxblk_volume *vol);
unsigned int fxblk_live_volumes(void);

/* fxblk_dev.c */
struct fxblk_volume *fxblk_dev_alloc(const struct fxblk_create_req *req,
				     int index);
int fxblk_dev_setup(struct fxblk_volume *vol, const struct fxblk_create_req *req,
		    struct netlink_ext_ack *extack);
int fxblk_dev_mark_dying(struct fxblk_volume *vol, bool force);
void fxblk_dev_destroy(struct fxblk_volume *vol);
void fxblk_dev_free(struct fxblk_volume *vol);
unsigned int fxblk_dev_open_count(struct fxblk_volume *vol);

/* fxblk_health.c */
void fxblk_health_init(struct fxblk_member *m);
void fxblk_health_start(struct fxblk_volume *vol);
void fxblk_health_exit(struct fxblk_member *m);
void fxblk_health_io_error(struct fxblk_member *m, blk_status_t status);
unsigned int fxblk_volume_state(struct fxblk_volume *vol);
u64 fxblk_member_errors(struct fxblk_member *m);

/* fxblk_stats.c */
int fxblk_stats_init(struct fxblk_member *m);
void fxblk_stats_exit(struct fxblk_member *m);
void fxblk_stats_start(struct fxblk_member *m, unsigned int dir);
void fxblk_stats_cancel(struct fxblk_member *m, unsigned int dir);
void fxblk_stats_done(struct fxblk_member *m, const struct fxblk_io *io,
		      fxblk_opf_t opf, blk_status_t status);
bool fxblk_io_fault(const struct fxblk_io *io, blk_status_t status);
void fxblk_stats_sum(struct fxblk_member *m, struct fxblk_stat_cpu *sum);
int fxblk_direct_init(struct fxblk_volume *vol);
void fxblk_direct_exit(struct fxblk_volume *vol);
void fxblk_direct_done(struct fxblk_volume *vol, const struct fxblk_io *io,
		       blk_status_t status);
void fxblk_direct_refused(struct fxblk_volume *vol);
void fxblk_direct_sum(struct fxblk_volume *vol, struct fxblk_direct_cpu *sum);

/* fxblk_netlink.c */
int fxblk_nl_init(void);
void fxblk_nl_exit(void);
void fxblk_nl_event(struct fxblk_volume *vol, u32 event,
		    struct fxblk_member *m, int err);
void fxblk_nl_send(struct sk_buff *event);

#endif /* FXBLK_H */
