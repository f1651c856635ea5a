// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk peer queues: fxblk's own NVMe-oF/RDMA association to the subsystem
 * of each nvme-rdma member, next to (never instead of) the kernel's
 * nvme-rdma controller, so that FXBLK_PEER_IOC_RW moves registered memory
 * with an FRWR registration and a keyed SGL and not through the member's
 * block queue: the memory does not need to go into a bio.
 *
 * Per member (opened lazily by the first peer RW of its volume when the
 * module parameter peer_queues is set, closed with the volume):
 *  - the address, subsystem NQN, host NQN and host ID of one live rdma
 *    controller of the member's subsystem, read from the kernel's
 *    controller device (never through a path: see fxblk_peerq_lookup());
 *  - an admin queue: RDMA CM connect with the NVMe/RDMA private data,
 *    Fabrics Connect (cntlid 0xffff, KATO), Property Get CAP, Set CC.EN,
 *    Get CSTS.RDY, Identify Controller (MDTS, SGLS: keyed SGL data block
 *    required), Keep Alive every KATO/2;
 *  - one I/O queue, Fabrics Connect with the admin queue's cntlid;
 *  - Identify Namespace: the member's NGUID, EUI-64 and UUID, or the
 *    association is refused (fxblk_peerq_check_ns()).
 * The wire formats and the order of events follow the upstream host,
 * drivers/nvme/host/rdma.c and fabrics.c (5.10 to 6.12): a command holds a
 * reference for its SEND completion and one for its response; data is
 * registered with IB_WR_REG_MR chained before the SEND and described by a
 * keyed SGL with the invalidate flag, so the target invalidates remotely
 * (SEND with invalidate) or we post a LOCAL_INV before completing it.
 * Completions run in softirq (IB_POLL_SOFTIRQ). A WC error or a disconnect
 * stops the association from a work item: rdma_disconnect(), ib_drain_qp()
 * (no completion runs after it), then every command still posted is failed.
 * A stopped association stays down until its volume goes (no reconnect
 * yet); the RW then takes the block path.
 *
 * Locking: vol->peerq_sem, read by an RW for its whole I/O and by the
 * debugfs dump, written to open members' associations and to tear one
 * down (volume close, RDMA device removal); q->lock guards a queue's
 * slots and its live flag, which every post checks; ctrl->stop_lock
 * serialises the stops. The lookup runs outside peerq_sem (when it read
 * sysfs files, lockdep on the debug kernel saw their seq_file lock taken
 * in the reverse order of the debugfs dump's).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/blkdev.h>
#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nvme.h>
#include <linux/scatterlist.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uuid.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "fxblk.h"
#include "fxblk_peer.h"
#include "fxblk_peerq.h"

#define FXBLK_PEERQ_DEPTH	32	/* entries of each queue, NVME_AQ_DEPTH */
#define FXBLK_PEERQ_CM_MS	3000	/* RDMA CM resolve timeouts */
/*
 * An RDMA CM connect of a queue, from address resolution to ESTABLISHED:
 * the two resolves, then the CM's own REQ retries (cma's 15 retries of
 * about 4 s each: a minute against a silent target). The peer path has
 * the block path to fall back on, so a queue gives up sooner.
 */
#define FXBLK_PEERQ_CONNECT_MS	10000
#define FXBLK_PEERQ_KATO_MS	5000	/* Keep Alive Timeout we ask for */
#define FXBLK_PEERQ_CMD_TIMEOUT	(30 * HZ)
#define FXBLK_PEERQ_MAX_PAGES	256	/* 4 KiB pages per MR: 1 MiB */
/*
 * include/linux/nvme.h's, spelled here: NVME_CAP_CSS() and the AUTHREQ
 * bits are not in every kernel the module builds for (5.10)
 */
#define FXBLK_PEERQ_CAP_CSS(cap)	(((cap) >> 37) & 0xff)
#define FXBLK_PEERQ_CAP_CSS_NVM		BIT(0)
#define FXBLK_PEERQ_AUTHREQ_ATR		BIT(17)
#define FXBLK_PEERQ_AUTHREQ_ASCR	BIT(18)
/* Back-off after a failed open or a stop: 1 s, doubling, at most 64 s. */
#define FXBLK_PEERQ_RETRY_MIN	HZ
#define FXBLK_PEERQ_RETRY_SHIFT	6
#define FXBLK_PEERQ_LOST_UNFLUSHED 1	/* bit of member->peerq_flags */
#define FXBLK_PEERQ_SGLS_KEYED	(1U << 2)	/* Identify SGLS bit 2 */
/* Status of a command failed by a stop: above any (status >> 1) of a CQE. */
#define FXBLK_PEERQ_ABORTED	0x8000
/*
 * Fields of a CQE's status (>> 1; NVMe base specification, Completion
 * Queue Entry): Status Code Type in bits 10:8, path-related 3h (ANA
 * inaccessible, persistent loss, transition; host path error), and Do
 * Not Retry. Our own names: the kernel renamed its macros (NVME_SC_DNR
 * became NVME_STATUS_DNR in 6.11).
 */
#define FXBLK_PEERQ_SCT_MASK	0x0700
#define FXBLK_PEERQ_SCT_PATH	0x0300
#define FXBLK_PEERQ_DNR		0x4000
#define FXBLK_PEERQ_WHY_LEN	96

/* @m's association completed writes that no completed Flush covered */
static bool fxblk_peerq_unflushed(struct fxblk_member *m)
{
	return atomic64_read(&m->peerq_wr_seq) !=
	       atomic64_read(&m->peerq_flushed_seq);
}

static bool fxblk_peerq_enabled;
module_param_named(peer_queues, fxblk_peerq_enabled, bool, 0644);
MODULE_PARM_DESC(peer_queues,
		 "Peer RW over fxblk's own NVMe-oF/RDMA queues to nvme-rdma members (lab only; default: off)");

/*
 * Lab only: hold back the Keep Alives of every association, as a host that
 * stalled would, so that the target's Keep Alive Timeout expires and it
 * drops the association (lab 56); they resume when it is cleared.
 */
static bool fxblk_peerq_ka_hold;
module_param_named(peer_ka_hold, fxblk_peerq_ka_hold, bool, 0644);
MODULE_PARM_DESC(peer_ka_hold,
		 "Lab only: send no Keep Alive on the peer queues (let the target's KATO expire)");

/*
 * A software RDMA device (rxe, siw: ib_uses_virt_dma()) moves data with
 * the CPU through kernel virtual addresses, so it cannot reach device
 * memory and DMA-only memory is never mapped for it: such RWs are
 * refused (EREMOTEIO, staged). The lab's fake providers (tests/peer/) hand
 * out, for a device without a DMA mask, the kernel virtual addresses of
 * their host "device memory", which rxe can use; this parameter lets
 * fxblk ask them, passing the ib_device's own struct device. Never set it
 * with a real vendor driver: its dma_map_*() of such a device fails.
 */
static bool fxblk_peerq_virt_dma;
module_param_named(peer_virt_dma, fxblk_peerq_virt_dma, bool, 0644);
MODULE_PARM_DESC(peer_virt_dma,
		 "Lab only: map DMA-only peer memory for software RDMA devices (only test providers can; default: off)");

/*
 * Lab only (lab 70): hold every peer Flush pass this long after its
 * Flushes were sent, the window in which a concurrent fsync once returned
 * before them (review 2026-12-06-peer H1); and take every peer Flush's
 * reply as an error (Internal Error), as a controller that failed it.
 */
static unsigned int fxblk_peerq_lab_flush_ms;
module_param_named(peer_lab_flush_ms, fxblk_peerq_lab_flush_ms, uint, 0644);
MODULE_PARM_DESC(peer_lab_flush_ms,
		 "Lab only: wait this many ms after sending peer Flushes (default: 0)");

/*
 * Lab only (lab 71): hold every association's open this long before its
 * first RDMA CM step, as a target that answers slowly would (resolve,
 * connect retries, 30 s per unanswered admin command).
 */
static unsigned int fxblk_peerq_lab_open_ms;
module_param_named(peer_lab_open_ms, fxblk_peerq_lab_open_ms, uint, 0644);
MODULE_PARM_DESC(peer_lab_open_ms,
		 "Lab only: wait this many ms before opening each peer association (default: 0)");

/*
 * Writes an association completed and could not flush (it closed first,
 * or is down at the flush): by default the volume's flush covers them by
 * the member's own Flush through the kernel's controller, which follows
 * the peer Flushes of every PREFLUSH (fxblk_submit_fanout()) and which
 * nvme multipath counts on for writes completed through another path of
 * the namespace (it never flushes a failed path again); nvmet flushes the
 * whole namespace. Set, such a flush fails with EIO instead (review
 * 2026-12-06-peer H5): for a target whose Flush covers only what its own
 * controller completed.
 */
static bool fxblk_peerq_strict_flush;
module_param_named(peer_strict_flush, fxblk_peerq_strict_flush, bool, 0644);
MODULE_PARM_DESC(peer_strict_flush,
		 "Fail a flush with EIO when a peer association closed with writes no peer Flush covered (default: off, the member's own Flush covers them)");

static bool fxblk_peerq_lab_flush_fail;
module_param_named(peer_lab_flush_fail, fxblk_peerq_lab_flush_fail, bool,
		   0644);
MODULE_PARM_DESC(peer_lab_flush_fail,
		 "Lab only: fail every peer Flush as its controller could (default: off)");

/*
 * rdma_cm private data of a connect request (NVMe/RDMA transport binding;
 * include/linux/nvme-rdma.h, whose cntlid field 5.10 and 6.1 lack).
 */
struct fxblk_peerq_cm_req {
	__le16 recfmt;
	__le16 qid;
	__le16 hrqsize;
	__le16 hsqsize;
	__le16 cntlid;
	u8 rsvd[22];
};

struct fxblk_peerq_cm_rej {
	__le16 recfmt;
	__le16 sts;
};

struct fxblk_peerq_queue;

/* One command slot: its capsule, its MR, and its data while in flight. */
struct fxblk_peerq_cmd {
	struct fxblk_peerq_queue *q;
	struct nvme_command *sqe;	/* mapped DMA_TO_DEVICE at @sqe_dma */
	u64 sqe_dma;
	struct ib_cqe send_cqe;
	struct ib_cqe reg_cqe;		/* REG_MR errors, LOCAL_INV */
	struct ib_reg_wr reg_wr;
	struct ib_mr *mr;
	struct scatterlist *sgl;	/* the data, while @mapped */
	int nents;
	enum dma_data_direction dir;
	bool mapped;			/* @mr registered for @sgl */
	bool unmap_sg;			/* @sgl was DMA-mapped here */
	bool posted;			/* a stop must fail it; q->lock */
	refcount_t ref;			/* SEND + response (+ LOCAL_INV) */
	u16 status;			/* CQE status >> 1, or ABORTED */
	union nvme_result result;
	void (*done)(void *priv, u16 status, const union nvme_result *res);
	void *priv;
};

struct fxblk_peerq_rsp {
	struct ib_cqe cqe;
	struct nvme_completion *buf;
	u64 dma;
};

struct fxblk_peerq_queue {
	struct fxblk_peerq_ctrl *ctrl;
	u16 qid;
	u16 depth;
	unsigned int max_pages;		/* 4 KiB pages per MR */
	struct rdma_cm_id *cm_id;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	bool ib_ready;			/* pd, cq, qp, slots, responses */
	struct fxblk_peerq_cmd *cmds;
	struct fxblk_peerq_rsp *rsps;
	struct nvme_completion *rsp_buf;	/* depth CQEs, one mapping */
	u64 rsp_dma;
	struct completion cm_done;
	int cm_error;
	spinlock_t lock;		/* @busy, @live, cmd->posted */
	unsigned long *busy;
	bool live;
	wait_queue_head_t wait;		/* a slot freed, or !live */
};

/* enum fxblk_peerq_state (uapi); NONE is a member without a ctrl */
static const char *const fxblk_peerq_state_name[] = {
	[FXBLK_PEERQ_NONE] = "none",
	[FXBLK_PEERQ_OPENING] = "opening",
	[FXBLK_PEERQ_LIVE] = "live",
	[FXBLK_PEERQ_FAILED] = "failed",
	[FXBLK_PEERQ_DOWN] = "down",
};

struct fxblk_peerq_ctrl {
	struct list_head node;		/* fxblk_peerq_ctrls */
	struct fxblk_member *m;
	struct sockaddr_storage addr;
	char kctrl[16];			/* the kernel's controller we copied */
	char traddr[64];
	char trsvcid[16];
	char subsysnqn[NVMF_NQN_FIELD_LEN];
	char hostnqn[NVMF_NQN_FIELD_LEN];
	uuid_t hostid;
	u32 nsid;
	unsigned int lbs_shift;
	struct fxblk_peerq_queue admin, io;
	int state;			/* enum fxblk_peerq_state */
	bool closing;
	unsigned long retry_at;		/* jiffies, after FAILED */
	char why[FXBLK_PEERQ_WHY_LEN];
	int lookup_err;			/* of fxblk_peerq_ctrl_prepare() */
	const char *err_why;		/* for the error work */
	struct mutex stop_lock;
	u64 cap;
	u16 cntlid;
	u16 maxcmd;
	u8 mdts;
	bool vwc;			/* a volatile write cache: flush writes */
	u32 sgls;
	u32 max_bytes;			/* of one Read/Write */
	struct delayed_work ka_work;
	struct work_struct err_work;
	struct work_struct remove_work;
	atomic64_t ka_sent;
	atomic64_t ios[2];		/* completed Read, Write */
	atomic64_t bytes[2];
	atomic64_t errors;
	atomic64_t dma_bytes;		/* of bytes[]: DMA-only memory */
	atomic64_t fua_writes;		/* of ios[1]: with FUA */
	atomic64_t flushes;		/* Flush commands completed */
};

static struct workqueue_struct *fxblk_peerq_wq;
static struct dentry *fxblk_peerq_debugfs;
/* Every association, for RDMA device removal. */
static LIST_HEAD(fxblk_peerq_ctrls);
static DEFINE_MUTEX(fxblk_peerq_ctrls_lock);

/* ---- the member's controller, from the kernel's own devices ----------- */

/*
 * Where the target comes from (review C3). nvme-rdma's controller keeps its
 * target in ctrl->opts (struct nvmf_ctrl_options), parsed by
 * nvmf_create_ctrl() from the string root writes to /dev/nvme-fabrics
 * (nvme-cli and libnvme's nvmf_add_ctrl() do); nvme core shows it, read
 * only, as attributes of the controller device: address (->get_address(),
 * nvmf_get_address()), transport, state, subsysnqn, hostnqn, hostid
 * (drivers/nvme/host/sysfs.c; core.c before 6.8), which nvme-cli and
 * libnvme read back from /sys/class/nvme/nvmeN/. struct nvme_ctrl is
 * private to nvme, so fxblk calls those show functions itself, on the
 * device it reaches from the member disk it holds open: the disk's parent
 * is the controller (nvme_alloc_ns(): device_add_disk(ctrl->device, ...))
 * or, for a multipath head, the subsystem (&head->subsys->dev), whose
 * controllers are the parents of its hidden path disks nvmeXcYnZ.
 *
 * No path is looked up. Until issue 34 this file read /sys/block/<member>/
 * with filp_open(), which walks the calling process's root in its mount
 * namespace: a user who may read /dev/fxN could `unshare -Urm`, mount a
 * tmpfs over /sys/block and choose the address and NQNs that every user's
 * peer I/O then went to (lab 69). The other design, fxctl handing the
 * target over netlink at CREATE, would keep a second copy of what the
 * kernel's controller already holds, stale once that controller reconnects
 * elsewhere; reading the controller when the association opens follows it.
 * Whatever the source, the association is used only after Identify
 * Namespace over it names the member's namespace (fxblk_peerq_check_ns()).
 */

/*
 * Lab only: the NSID every association opens instead of the member's own
 * (0: the member's), so that lab 69 can point one at another namespace of
 * the member's subsystem, which fxblk_peerq_check_ns() must refuse. Only
 * root can set a module parameter.
 */
static unsigned int fxblk_peerq_lab_nsid;
module_param_named(peer_lab_nsid, fxblk_peerq_lab_nsid, uint, 0644);
MODULE_PARM_DESC(peer_lab_nsid,
		 "Lab only: open every peer association to this NSID, not the member's (default: 0, the member's)");

/*
 * @dev's attribute @name into @buf (a page, as sysfs hands one: its
 * sysfs_emit() refuses any other buffer), trailing newline cut, as a read
 * of the file would give it: by the show function of an attribute of the
 * device's own groups, if is_visible lets the file exist. -ENOENT: none.
 */
static int fxblk_peerq_dev_attr(struct device *dev, const char *name,
				char *buf)
{
	const struct attribute_group **g;
	ssize_t n;
	int i;

	for (g = dev->groups; g && *g; g++) {
		if ((*g)->name || !(*g)->attrs)	/* a subdirectory */
			continue;
		for (i = 0; (*g)->attrs[i]; i++) {
			struct attribute *a = (*g)->attrs[i];
			struct device_attribute *da;

			if (strcmp(a->name, name))
				continue;
			if ((*g)->is_visible &&
			    !(*g)->is_visible(&dev->kobj, a, i))
				return -ENOENT;
			da = container_of(a, struct device_attribute, attr);
			if (!da->show)
				return -ENOENT;
			n = da->show(dev, da, buf);
			if (n < 0)
				return n;
			n = min_t(ssize_t, n, PAGE_SIZE - 1);
			while (n && isspace(buf[n - 1]))
				n--;
			buf[n] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

/* @dev of the device class @name ("nvme": a controller; "nvme-subsystem") */
static bool fxblk_peerq_dev_is(struct device *dev, const char *name)
{
	return dev && dev->class && !strcmp(dev->class->name, name);
}

/* @c an nvme controller of transport rdma, live, of subsystem @nqn? */
static bool fxblk_peerq_ctrl_usable(struct device *c, const char *nqn,
				    char *buf)
{
	return fxblk_peerq_dev_is(c, "nvme") &&
	       !fxblk_peerq_dev_attr(c, "transport", buf) &&
	       !strcmp(buf, "rdma") &&
	       !fxblk_peerq_dev_attr(c, "state", buf) && !strcmp(buf, "live") &&
	       !fxblk_peerq_dev_attr(c, "subsysnqn", buf) && !strcmp(buf, nqn);
}

struct fxblk_peerq_find {
	u32 nsid;
	const char *subsysnqn;
	char *buf;			/* a page */
	struct device *found;		/* a controller, referenced */
};

/*
 * class_for_each_device() over the block class: @d a path disk of the
 * member's namespace (its nsid, a controller of its subsystem) whose
 * controller is usable? The iteration holds @d, and @d its parent.
 */
static int fxblk_peerq_find_path(struct device *d, void *data)
{
	struct fxblk_peerq_find *f = data;
	u32 nsid;

	if (!fxblk_peerq_dev_is(d->parent, "nvme") ||
	    fxblk_peerq_dev_attr(d, "nsid", f->buf) ||
	    kstrtou32(f->buf, 10, &nsid) || nsid != f->nsid ||
	    !fxblk_peerq_ctrl_usable(d->parent, f->subsysnqn, f->buf))
		return 0;
	f->found = get_device(d->parent);
	return 1;
}

/* "traddr=10.0.0.1,trsvcid=4420[,src_addr=...]" */
static int fxblk_peerq_parse_address(struct fxblk_peerq_ctrl *ctrl, char *val)
{
	char *kv;

	while ((kv = strsep(&val, ","))) {
		if (!strncmp(kv, "traddr=", 7))
			strscpy(ctrl->traddr, kv + 7, sizeof(ctrl->traddr));
		else if (!strncmp(kv, "trsvcid=", 8))
			strscpy(ctrl->trsvcid, kv + 8, sizeof(ctrl->trsvcid));
	}
	if (!ctrl->traddr[0] || !ctrl->trsvcid[0])
		return -EINVAL;
	return inet_pton_with_scope(&init_net, AF_UNSPEC, ctrl->traddr,
				    ctrl->trsvcid, &ctrl->addr);
}

/* The member's whole nvme disk, its parent: a controller or subsystem. */
static struct device *fxblk_peerq_nvme_disk(struct fxblk_member *m)
{
	struct device *d = disk_to_dev(m->bdev->bd_disk);

	/* the association addresses LBAs of the namespace, not a partition */
	if (bdev_is_partition(m->bdev))
		return NULL;
	if (!fxblk_peerq_dev_is(d->parent, "nvme") &&
	    !fxblk_peerq_dev_is(d->parent, "nvme-subsystem"))
		return NULL;
	return d;
}

/*
 * Where and as whom to connect: the member disk's nsid, and the address,
 * NQNs and host ID of a live rdma controller of its subsystem (the disk's
 * parent, or the controller of one of its paths), from those devices.
 */
static int fxblk_peerq_lookup(struct fxblk_peerq_ctrl *ctrl)
{
	struct fxblk_peerq_find f = { .subsysnqn = ctrl->subsysnqn };
	struct device *disk = fxblk_peerq_nvme_disk(ctrl->m);
	int ret;

	if (!disk)
		return -EPROTONOSUPPORT;
	f.buf = (char *)__get_free_page(GFP_KERNEL);
	if (!f.buf)
		return -ENOMEM;
	ret = fxblk_peerq_dev_attr(disk, "nsid", f.buf);
	if (!ret)
		ret = kstrtou32(f.buf, 10, &f.nsid);
	if (!ret)
		ret = fxblk_peerq_dev_attr(disk->parent, "subsysnqn", f.buf);
	if (ret)
		goto out;
	strscpy(ctrl->subsysnqn, f.buf, sizeof(ctrl->subsysnqn));
	if (fxblk_peerq_ctrl_usable(disk->parent, ctrl->subsysnqn, f.buf))
		f.found = get_device(disk->parent);
	else if (fxblk_peerq_dev_is(disk->parent, "nvme-subsystem"))
		class_for_each_device(disk->class, NULL, &f,
				      fxblk_peerq_find_path);
	ret = -EPROTONOSUPPORT;
	if (!f.found)
		goto out;
	strscpy(ctrl->kctrl, dev_name(f.found), sizeof(ctrl->kctrl));
	ctrl->nsid = READ_ONCE(fxblk_peerq_lab_nsid) ?: f.nsid;
	ret = fxblk_peerq_dev_attr(f.found, "hostnqn", f.buf);
	if (ret)
		goto out_put;
	strscpy(ctrl->hostnqn, f.buf, sizeof(ctrl->hostnqn));
	ret = fxblk_peerq_dev_attr(f.found, "hostid", f.buf);
	if (!ret)
		ret = uuid_parse(f.buf, &ctrl->hostid);
	if (!ret)
		ret = fxblk_peerq_dev_attr(f.found, "address", f.buf);
	if (!ret)
		ret = fxblk_peerq_parse_address(ctrl, f.buf);
out_put:
	put_device(f.found);
out:
	free_page((unsigned long)f.buf);
	return ret;
}

/*
 * The namespace identifiers nvme core read over its own controller when it
 * made the member's disk (its head's ids; wwid says "uuid." only when the
 * UUID is set: uuid_show() falls back to the NGUID), recorded when the
 * volume opens the member (CREATE or assemble, CAP_SYS_ADMIN). They do not
 * change under an open disk: nvme core removes a namespace whose
 * identifiers changed (nvme_validate_ns(), "identifiers changed").
 */
void fxblk_peerq_member_setup(struct fxblk_member *m)
{
	struct fxblk_ns_ids *ids = &m->ns_ids;
	struct device *disk = fxblk_peerq_nvme_disk(m);
	u8 *e = ids->eui64;
	char *buf;

	memset(ids, 0, sizeof(*ids));
	if (!disk)
		return;
	buf = (char *)__get_free_page(GFP_KERNEL);
	if (!buf)
		return;
	if (!fxblk_peerq_dev_attr(disk, "wwid", buf) &&
	    !strncmp(buf, "uuid.", 5))
		uuid_parse(buf + 5, (uuid_t *)ids->uuid);
	/* "%pU", the 16 bytes in order */
	if (!fxblk_peerq_dev_attr(disk, "nguid", buf))
		uuid_parse(buf, (uuid_t *)ids->nguid);
	/* "%8ph": "00 11 22 33 44 55 66 77" */
	if (!fxblk_peerq_dev_attr(disk, "eui", buf) &&
	    sscanf(buf, "%hhx %hhx %hhx %hhx %hhx %hhx %hhx %hhx",
		   &e[0], &e[1], &e[2], &e[3], &e[4], &e[5], &e[6], &e[7]) != 8)
		memset(e, 0, sizeof(ids->eui64));
	free_page((unsigned long)buf);
}

/* ---- commands ---------------------------------------------------------- */

static void fxblk_peerq_error(struct fxblk_peerq_ctrl *ctrl, const char *why)
{
	if (READ_ONCE(ctrl->closing))
		return;
	WRITE_ONCE(ctrl->err_why, why);
	queue_work(fxblk_peerq_wq, &ctrl->err_work);
}

static void fxblk_peerq_wr_error(struct fxblk_peerq_queue *q,
				 struct ib_wc *wc, const char *op)
{
	if (READ_ONCE(q->live) && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_info_ratelimited("peer queue %u of %s: %s failed: %s (%d)\n",
				    q->qid, q->ctrl->m->disk_name, op,
				    ib_wc_status_msg(wc->status), wc->status);
	fxblk_peerq_error(q->ctrl, "work request failed");
}

static void fxblk_peerq_unmap(struct fxblk_peerq_cmd *cmd)
{
	if (!cmd->mapped)
		return;
	if (cmd->unmap_sg)
		ib_dma_unmap_sg(cmd->q->ibdev, cmd->sgl, cmd->nents, cmd->dir);
	cmd->mapped = false;
}

/* Give back a slot: its command completed, or was never posted. */
static void fxblk_peerq_put(struct fxblk_peerq_cmd *cmd)
{
	struct fxblk_peerq_queue *q = cmd->q;
	unsigned long flags;

	fxblk_peerq_unmap(cmd);
	spin_lock_irqsave(&q->lock, flags);
	cmd->posted = false;
	clear_bit(cmd - q->cmds, q->busy);
	spin_unlock_irqrestore(&q->lock, flags);
	wake_up(&q->wait);
}

/* Drops one reference; the last one frees the slot and reports. */
static void fxblk_peerq_cmd_end(struct fxblk_peerq_cmd *cmd)
{
	void (*done)(void *priv, u16 status, const union nvme_result *res);
	union nvme_result res;
	u16 status;
	void *priv;

	if (!refcount_dec_and_test(&cmd->ref))
		return;
	done = cmd->done;
	priv = cmd->priv;
	status = cmd->status;
	res = cmd->result;
	fxblk_peerq_put(cmd);
	done(priv, status, &res);
}

static void fxblk_peerq_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct fxblk_peerq_cmd *cmd = container_of(wc->wr_cqe,
						   struct fxblk_peerq_cmd,
						   send_cqe);

	if (wc->status != IB_WC_SUCCESS)
		fxblk_peerq_wr_error(cmd->q, wc, "SEND");
	else
		fxblk_peerq_cmd_end(cmd);
}

static void fxblk_peerq_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct fxblk_peerq_cmd *cmd = container_of(wc->wr_cqe,
						   struct fxblk_peerq_cmd,
						   reg_cqe);

	if (wc->status != IB_WC_SUCCESS)
		fxblk_peerq_wr_error(cmd->q, wc, "REG_MR");
}

static void fxblk_peerq_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct fxblk_peerq_cmd *cmd = container_of(wc->wr_cqe,
						   struct fxblk_peerq_cmd,
						   reg_cqe);

	if (wc->status != IB_WC_SUCCESS)
		fxblk_peerq_wr_error(cmd->q, wc, "LOCAL_INV");
	else
		fxblk_peerq_cmd_end(cmd);
}

static int fxblk_peerq_post_recv(struct fxblk_peerq_queue *q,
				 struct fxblk_peerq_rsp *rsp)
{
	struct ib_sge sge = {
		.addr = rsp->dma,
		.length = sizeof(struct nvme_completion),
		.lkey = q->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &rsp->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return ib_post_recv(q->qp, &wr, NULL);
}

/* The target did not invalidate the MR: do it before completing. */
static int fxblk_peerq_local_inv(struct fxblk_peerq_cmd *cmd)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
		.ex.invalidate_rkey = cmd->mr->rkey,
		.wr_cqe = &cmd->reg_cqe,
	};

	cmd->reg_cqe.done = fxblk_peerq_inv_done;
	return ib_post_send(cmd->q->qp, &wr, NULL);
}

static void fxblk_peerq_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct fxblk_peerq_rsp *rsp = container_of(wc->wr_cqe,
						   struct fxblk_peerq_rsp, cqe);
	struct fxblk_peerq_queue *q = cq->cq_context;
	struct nvme_completion *cqe = rsp->buf;
	struct fxblk_peerq_cmd *cmd;
	u16 id;

	if (wc->status != IB_WC_SUCCESS) {
		fxblk_peerq_wr_error(q, wc, "RECV");
		return;
	}
	if (wc->byte_len < sizeof(*cqe)) {
		fxblk_peerq_error(q->ctrl, "short NVMe completion");
		return;
	}
	ib_dma_sync_single_for_cpu(q->ibdev, rsp->dma, sizeof(*cqe),
				   DMA_FROM_DEVICE);
	id = cqe->command_id;
	if (id >= q->depth || !test_bit(id, q->busy)) {
		fxblk_peerq_error(q->ctrl, "completion of an unknown command");
		return;
	}
	cmd = &q->cmds[id];
	cmd->status = le16_to_cpu(cqe->status) >> 1;
	cmd->result = cqe->result;
	ib_dma_sync_single_for_device(q->ibdev, rsp->dma, sizeof(*cqe),
				      DMA_FROM_DEVICE);
	if (READ_ONCE(q->live) && fxblk_peerq_post_recv(q, rsp))
		fxblk_peerq_error(q->ctrl, "posting a receive failed");

	if (wc->wc_flags & IB_WC_WITH_INVALIDATE) {
		if (!cmd->mapped || wc->ex.invalidate_rkey != cmd->mr->rkey)
			fxblk_peerq_error(q->ctrl, "bogus remote invalidation");
	} else if (cmd->mapped) {
		/* the LOCAL_INV completion drops the response's reference */
		if (fxblk_peerq_local_inv(cmd))
			fxblk_peerq_error(q->ctrl, "posting LOCAL_INV failed");
		return;
	}
	fxblk_peerq_cmd_end(cmd);
}

static struct fxblk_peerq_cmd *fxblk_peerq_try_get(struct fxblk_peerq_queue *q,
						   bool *down)
{
	struct fxblk_peerq_cmd *cmd = NULL;
	unsigned long flags, bit;

	spin_lock_irqsave(&q->lock, flags);
	*down = !q->live;
	if (q->live) {
		bit = find_first_zero_bit(q->busy, q->depth);
		if (bit < q->depth) {
			set_bit(bit, q->busy);
			cmd = &q->cmds[bit];
		}
	}
	spin_unlock_irqrestore(&q->lock, flags);
	return cmd;
}

/* A free slot, waiting for one; NULL once the queue is down. */
static struct fxblk_peerq_cmd *fxblk_peerq_get(struct fxblk_peerq_queue *q)
{
	struct fxblk_peerq_cmd *cmd = NULL;
	bool down = false;

	wait_event(q->wait, (cmd = fxblk_peerq_try_get(q, &down)) || down);
	return cmd;
}

/* Little-endian fields of a keyed SGL: 3 bytes of length, 4 of key. */
static void fxblk_peerq_put_le(u8 *p, u32 v, unsigned int bytes)
{
	unsigned int i;

	for (i = 0; i < bytes; i++)
		p[i] = v >> (8 * i);
}

/*
 * What the target may do to the memory: RDMA READ it for a write (data
 * to the device), RDMA WRITE it for a read, which the verbs allow only
 * with local write access too. nvme-rdma grants all three to every MR;
 * a peer write from a registration pinned read-only (no FOLL_WRITE)
 * must not be writable by the target (review 2026-12-06-peer L1).
 */
static int fxblk_peerq_access(enum dma_data_direction dir)
{
	switch (dir) {
	case DMA_TO_DEVICE:
		return IB_ACCESS_REMOTE_READ;
	case DMA_FROM_DEVICE:
		return IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	default:
		return IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		       IB_ACCESS_REMOTE_WRITE;
	}
}

/*
 * Register @len bytes of @sgl for the target (drivers/nvme/host/rdma.c
 * nvme_rdma_map_sg_fr(), 4 KiB MR pages), or a null keyed SGL. @sgl holds
 * pages to map for the queue's device, or (@dma) DMA segments a provider
 * already mapped for it.
 */
static int fxblk_peerq_map(struct fxblk_peerq_cmd *cmd,
			   struct scatterlist *sgl, int nents, bool dma,
			   u32 len, enum dma_data_direction dir)
{
	struct nvme_keyed_sgl_desc *ksgl = &cmd->sqe->common.dptr.ksgl;
	struct fxblk_peerq_queue *q = cmd->q;
	int count, nr;

	cmd->sqe->common.flags |= NVME_CMD_SGL_METABUF;
	ksgl->type = NVME_KEY_SGL_FMT_DATA_DESC << 4;
	if (!nents)
		return 0;
	count = dma ? nents : ib_dma_map_sg(q->ibdev, sgl, nents, dir);
	if (count <= 0)
		return -EIO;
	nr = ib_map_mr_sg(cmd->mr, sgl, count, NULL, SZ_4K);
	if (nr != count || cmd->mr->length != len) {
		if (!dma)
			ib_dma_unmap_sg(q->ibdev, sgl, nents, dir);
		return nr < 0 ? nr : -EINVAL;
	}
	cmd->sgl = sgl;
	cmd->nents = nents;
	cmd->dir = dir;
	cmd->mapped = true;
	cmd->unmap_sg = !dma;
	ib_update_fast_reg_key(cmd->mr, ib_inc_rkey(cmd->mr->rkey));
	memset(&cmd->reg_wr, 0, sizeof(cmd->reg_wr));
	cmd->reg_cqe.done = fxblk_peerq_reg_done;
	cmd->reg_wr.wr.opcode = IB_WR_REG_MR;
	cmd->reg_wr.wr.wr_cqe = &cmd->reg_cqe;
	cmd->reg_wr.mr = cmd->mr;
	cmd->reg_wr.key = cmd->mr->rkey;
	cmd->reg_wr.access = fxblk_peerq_access(dir);
	ksgl->addr = cpu_to_le64(cmd->mr->iova);
	fxblk_peerq_put_le(ksgl->length, cmd->mr->length, 3);
	fxblk_peerq_put_le(ksgl->key, cmd->mr->rkey, 4);
	ksgl->type |= NVME_SGL_FMT_INVALIDATE;
	return 0;
}

/* REG_MR (if any) chained before the SEND of the capsule. */
static int fxblk_peerq_post(struct fxblk_peerq_cmd *cmd)
{
	struct fxblk_peerq_queue *q = cmd->q;
	struct ib_sge sge = {
		.addr = cmd->sqe_dma,
		.length = sizeof(struct nvme_command),
		.lkey = q->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &cmd->send_cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *first = &wr;
	unsigned long flags;
	int ret = -ENOTCONN;

	if (cmd->mapped) {
		cmd->reg_wr.wr.next = &wr;
		first = &cmd->reg_wr.wr;
	}
	ib_dma_sync_single_for_device(q->ibdev, cmd->sqe_dma,
				      sizeof(struct nvme_command),
				      DMA_TO_DEVICE);
	spin_lock_irqsave(&q->lock, flags);
	if (q->live) {
		ret = ib_post_send(q->qp, first, NULL);
		cmd->posted = !ret;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	return ret;
}

/*
 * Send @c on @q with @nents entries of @sgl (@len bytes; @dma: DMA segments
 * mapped for @q's device, else pages) as its data; @done is called once,
 * from the completion (softirq) or a stop, with the NVMe status
 * (FXBLK_PEERQ_ABORTED when stopped). Sleeps for a slot.
 */
static int fxblk_peerq_issue(struct fxblk_peerq_queue *q,
			     const struct nvme_command *c,
			     struct scatterlist *sgl, int nents, bool dma,
			     u32 len, enum dma_data_direction dir,
			     void (*done)(void *, u16,
					  const union nvme_result *),
			     void *priv)
{
	struct fxblk_peerq_cmd *cmd = fxblk_peerq_get(q);
	int ret;

	if (!cmd)
		return -ENOTCONN;
	ib_dma_sync_single_for_cpu(q->ibdev, cmd->sqe_dma,
				   sizeof(struct nvme_command), DMA_TO_DEVICE);
	*cmd->sqe = *c;
	cmd->sqe->common.command_id = cmd - q->cmds;
	cmd->done = done;
	cmd->priv = priv;
	cmd->status = 0;
	memset(&cmd->result, 0, sizeof(cmd->result));
	refcount_set(&cmd->ref, 2);
	ret = fxblk_peerq_map(cmd, sgl, nents, dma, len, dir);
	if (!ret)
		ret = fxblk_peerq_post(cmd);
	if (ret)
		fxblk_peerq_put(cmd);
	return ret;
}

struct fxblk_peerq_wait {
	struct completion done;
	u16 status;
	union nvme_result res;
};

static void fxblk_peerq_wait_done(void *priv, u16 status,
				  const union nvme_result *res)
{
	struct fxblk_peerq_wait *w = priv;

	w->status = status;
	w->res = *res;
	complete(&w->done);
}

static void fxblk_peerq_stop(struct fxblk_peerq_ctrl *ctrl, const char *why);

/* A command's reply; one that does not come stops @ctrl (@why), failing it. */
static void fxblk_peerq_await_for(struct fxblk_peerq_ctrl *ctrl,
				  struct fxblk_peerq_wait *w,
				  unsigned long timeout, const char *why)
{
	if (!wait_for_completion_timeout(&w->done, timeout)) {
		fxblk_peerq_stop(ctrl, why);
		wait_for_completion(&w->done);
	}
}

static void fxblk_peerq_await(struct fxblk_peerq_ctrl *ctrl,
			      struct fxblk_peerq_wait *w, const char *why)
{
	fxblk_peerq_await_for(ctrl, w, FXBLK_PEERQ_CMD_TIMEOUT, why);
}

/*
 * One command, waited for at most @timeout (then the association is
 * stopped, which ends it); @buf (kmalloc'ed) holds its data.
 */
static int fxblk_peerq_sync_for(struct fxblk_peerq_queue *q,
				const struct nvme_command *c, void *buf,
				u32 len, enum dma_data_direction dir,
				union nvme_result *res, unsigned long timeout)
{
	struct fxblk_peerq_wait w;
	struct scatterlist sg;
	int ret;

	init_completion(&w.done);
	if (len)
		sg_init_one(&sg, buf, len);
	ret = fxblk_peerq_issue(q, c, len ? &sg : NULL, len ? 1 : 0, false,
				len, dir, fxblk_peerq_wait_done, &w);
	if (ret)
		return ret;
	fxblk_peerq_await_for(q->ctrl, &w, timeout, "admin command timed out");
	if (w.status) {
		pr_info("peer queue %u of %s: command 0x%02x failed: status 0x%x\n",
			q->qid, q->ctrl->m->disk_name, c->common.opcode,
			w.status);
		return w.status == FXBLK_PEERQ_ABORTED ? -ENOTCONN : -EIO;
	}
	if (res)
		*res = w.res;
	return 0;
}

static int fxblk_peerq_sync(struct fxblk_peerq_queue *q,
			    const struct nvme_command *c, void *buf, u32 len,
			    enum dma_data_direction dir,
			    union nvme_result *res)
{
	return fxblk_peerq_sync_for(q, c, buf, len, dir, res,
				    FXBLK_PEERQ_CMD_TIMEOUT);
}

/* ---- queues ------------------------------------------------------------ */

static void fxblk_peerq_free_slots(struct fxblk_peerq_queue *q)
{
	unsigned int i;

	for (i = 0; q->cmds && i < q->depth; i++) {
		struct fxblk_peerq_cmd *cmd = &q->cmds[i];

		if (cmd->mr)
			ib_dereg_mr(cmd->mr);
		if (cmd->sqe) {
			ib_dma_unmap_single(q->ibdev, cmd->sqe_dma,
					    sizeof(*cmd->sqe), DMA_TO_DEVICE);
			kfree(cmd->sqe);
		}
	}
	kfree(q->cmds);
	q->cmds = NULL;
	if (q->rsp_buf) {
		ib_dma_unmap_single(q->ibdev, q->rsp_dma,
				    q->depth * sizeof(*q->rsp_buf),
				    DMA_FROM_DEVICE);
		kfree(q->rsp_buf);
		q->rsp_buf = NULL;
	}
	kfree(q->rsps);
	q->rsps = NULL;
	bitmap_free(q->busy);
	q->busy = NULL;
}

static int fxblk_peerq_alloc_slots(struct fxblk_peerq_queue *q)
{
	size_t rsp_len = q->depth * sizeof(*q->rsp_buf);
	unsigned int i;

	q->busy = bitmap_zalloc(q->depth, GFP_KERNEL);
	q->cmds = kcalloc(q->depth, sizeof(*q->cmds), GFP_KERNEL);
	q->rsps = kcalloc(q->depth, sizeof(*q->rsps), GFP_KERNEL);
	q->rsp_buf = kzalloc(rsp_len, GFP_KERNEL);
	if (!q->busy || !q->cmds || !q->rsps || !q->rsp_buf)
		return -ENOMEM;
	q->rsp_dma = ib_dma_map_single(q->ibdev, q->rsp_buf, rsp_len,
				       DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(q->ibdev, q->rsp_dma)) {
		kfree(q->rsp_buf);
		q->rsp_buf = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < q->depth; i++) {
		struct fxblk_peerq_cmd *cmd = &q->cmds[i];

		q->rsps[i].buf = &q->rsp_buf[i];
		q->rsps[i].dma = q->rsp_dma + i * sizeof(*q->rsp_buf);
		q->rsps[i].cqe.done = fxblk_peerq_recv_done;
		cmd->q = q;
		cmd->send_cqe.done = fxblk_peerq_send_done;
		/* +1: a range not starting on a 4 KiB boundary */
		cmd->mr = ib_alloc_mr(q->pd, IB_MR_TYPE_MEM_REG,
				      q->max_pages + 1);
		if (IS_ERR(cmd->mr)) {
			cmd->mr = NULL;
			return -ENOMEM;
		}
		cmd->sqe = kzalloc(sizeof(*cmd->sqe), GFP_KERNEL);
		if (!cmd->sqe)
			return -ENOMEM;
		cmd->sqe_dma = ib_dma_map_single(q->ibdev, cmd->sqe,
						 sizeof(*cmd->sqe),
						 DMA_TO_DEVICE);
		if (ib_dma_mapping_error(q->ibdev, cmd->sqe_dma)) {
			kfree(cmd->sqe);
			cmd->sqe = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static void fxblk_peerq_qp_event(struct ib_event *event, void *context)
{
	pr_debug("peer queue QP event %s (%d)\n", ib_event_msg(event->event),
		 event->event);
}

/* On ADDR_RESOLVED, as nvme_rdma_create_queue_ib() (the CM handler). */
static int fxblk_peerq_create_ib(struct fxblk_peerq_queue *q)
{
	struct ib_device *ibdev = q->cm_id->device;
	struct ib_qp_init_attr attr = {};
	int ret;

	if (!(ibdev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS))
		return -EOPNOTSUPP;
	q->ibdev = ibdev;
	q->max_pages = min_t(u32, q->max_pages,
			     ibdev->attrs.max_fast_reg_page_list_len - 1);
	q->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(q->pd))
		return PTR_ERR(q->pd);
	/* SEND, REG_MR, LOCAL_INV and RECV per entry, +1 for the drain */
	q->cq = ib_alloc_cq(ibdev, q, 4 * q->depth + 1, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(q->cq)) {
		ret = PTR_ERR(q->cq);
		goto out_pd;
	}
	attr.event_handler = fxblk_peerq_qp_event;
	attr.cap.max_send_wr = 3 * q->depth + 1;
	attr.cap.max_recv_wr = q->depth + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.qp_type = IB_QPT_RC;
	attr.send_cq = q->cq;
	attr.recv_cq = q->cq;
	attr.qp_context = q;
	ret = rdma_create_qp(q->cm_id, q->pd, &attr);
	if (ret)
		goto out_cq;
	q->qp = q->cm_id->qp;
	ret = fxblk_peerq_alloc_slots(q);
	if (ret)
		goto out_slots;
	q->ib_ready = true;
	return 0;

out_slots:
	fxblk_peerq_free_slots(q);
	rdma_destroy_qp(q->cm_id);
out_cq:
	ib_free_cq(q->cq);
out_pd:
	ib_dealloc_pd(q->pd);
	return ret;
}

static int fxblk_peerq_route_resolved(struct fxblk_peerq_queue *q)
{
	struct fxblk_peerq_cm_req priv = {
		.recfmt = cpu_to_le16(0),	/* NVME_RDMA_CM_FMT_1_0 */
		.qid = cpu_to_le16(q->qid),
		.hrqsize = cpu_to_le16(q->depth),
		.hsqsize = cpu_to_le16(q->depth - 1),
	};
	struct rdma_conn_param param = {
		.qp_num = q->qp->qp_num,
		.flow_control = 1,
		.responder_resources = q->ibdev->attrs.max_qp_rd_atom,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.private_data = &priv,
		.private_data_len = sizeof(priv),
	};

	BUILD_BUG_ON(sizeof(priv) != 32);
	if (q->qid)
		priv.cntlid = cpu_to_le16(q->ctrl->cntlid);
	return rdma_connect_locked(q->cm_id, &param);
}

static int fxblk_peerq_established(struct fxblk_peerq_queue *q)
{
	unsigned long flags;
	unsigned int i;
	int ret;

	for (i = 0; i < q->depth; i++) {
		ret = fxblk_peerq_post_recv(q, &q->rsps[i]);
		if (ret)
			return ret;
	}
	spin_lock_irqsave(&q->lock, flags);
	q->live = true;
	spin_unlock_irqrestore(&q->lock, flags);
	return 0;
}

static int fxblk_peerq_rejected(struct fxblk_peerq_queue *q,
				struct rdma_cm_event *ev)
{
	const struct fxblk_peerq_cm_rej *rej;
	u8 len = 0;

	rej = rdma_consumer_reject_data(q->cm_id, ev, &len);
	if (rej && len >= sizeof(*rej))
		snprintf(q->ctrl->why, sizeof(q->ctrl->why),
			 "queue %u: connect rejected, NVMe/RDMA status %u",
			 q->qid, le16_to_cpu(rej->sts));
	else
		snprintf(q->ctrl->why, sizeof(q->ctrl->why),
			 "queue %u: connect rejected: %s", q->qid,
			 rdma_reject_msg(q->cm_id, ev->status));
	return -ECONNRESET;
}

static int fxblk_peerq_cm_handler(struct rdma_cm_id *cm_id,
				  struct rdma_cm_event *ev)
{
	struct fxblk_peerq_queue *q = cm_id->context;
	int err = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = fxblk_peerq_create_ib(q);
		if (!err)
			err = rdma_resolve_route(cm_id, FXBLK_PEERQ_CM_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = fxblk_peerq_route_resolved(q);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		q->cm_error = fxblk_peerq_established(q);
		complete(&q->cm_done);
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		err = fxblk_peerq_rejected(q, ev);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
		err = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * The ib_client's ->remove tears down the associations it
		 * finds; a queue still connecting (no QP yet when it
		 * looked) learns here, or its opener would wait while
		 * cma's removal waits for this cm_id (review H3).
		 */
		err = -ENETDOWN;
		break;
	default:
		/* DISCONNECTED, ADDR_CHANGE, TIMEWAIT_EXIT, ... */
		fxblk_peerq_error(q->ctrl, rdma_event_msg(ev->event));
		break;
	}
	if (err) {
		q->cm_error = err;
		complete(&q->cm_done);
	}
	return 0;
}

/* Resolve, create, connect @q (RDMA CM only; no NVMe command yet). */
static int fxblk_peerq_queue_open(struct fxblk_peerq_ctrl *ctrl,
				  struct fxblk_peerq_queue *q, u16 qid,
				  unsigned int max_pages)
{
	long left;
	int ret;

	q->ctrl = ctrl;
	q->qid = qid;
	q->depth = FXBLK_PEERQ_DEPTH;
	q->max_pages = max_pages;
	q->cm_id = rdma_create_id(&init_net, fxblk_peerq_cm_handler, q,
				  RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(q->cm_id)) {
		ret = PTR_ERR(q->cm_id);
		q->cm_id = NULL;
		return ret;
	}
	q->cm_error = -ETIMEDOUT;
	ret = rdma_resolve_addr(q->cm_id, NULL, (struct sockaddr *)&ctrl->addr,
				FXBLK_PEERQ_CM_MS);
	if (ret)
		return ret;
	/* bounded, as nvme_rdma_wait_for_cm() once was (and the CM's REQ) */
	left = wait_for_completion_killable_timeout(&q->cm_done,
			msecs_to_jiffies(FXBLK_PEERQ_CONNECT_MS));
	if (left < 0)
		return left;
	if (!left) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "queue %u: RDMA CM connect timed out (%u ms)", qid,
			 FXBLK_PEERQ_CONNECT_MS);
		return -ETIMEDOUT;
	}
	return q->cm_error;
}

/*
 * Not live any more; after the drain no completion runs, so every command
 * still posted is failed here (nvme_rdma_stop_queue(), then the cancel of
 * its tag set). Under ctrl->stop_lock.
 */
static void fxblk_peerq_queue_stop(struct fxblk_peerq_queue *q)
{
	struct fxblk_peerq_cmd *cmd;
	unsigned long flags;
	unsigned int i;
	bool was;

	spin_lock_irqsave(&q->lock, flags);
	was = q->live;
	q->live = false;
	spin_unlock_irqrestore(&q->lock, flags);
	wake_up_all(&q->wait);
	if (!was)
		return;
	rdma_disconnect(q->cm_id);
	ib_drain_qp(q->qp);
	for (i = 0; i < q->depth; i++) {
		cmd = &q->cmds[i];
		spin_lock_irqsave(&q->lock, flags);
		was = cmd->posted;
		cmd->posted = false;
		spin_unlock_irqrestore(&q->lock, flags);
		if (!was)
			continue;
		cmd->status = FXBLK_PEERQ_ABORTED;
		refcount_set(&cmd->ref, 1);
		fxblk_peerq_cmd_end(cmd);
	}
}

/* After the stop; as nvme_rdma_free_queue(): the CM id goes first. */
static void fxblk_peerq_queue_free(struct fxblk_peerq_queue *q)
{
	if (q->cm_id) {
		rdma_destroy_id(q->cm_id);
		q->cm_id = NULL;
	}
	if (!q->ib_ready)
		return;
	ib_destroy_qp(q->qp);
	ib_free_cq(q->cq);
	fxblk_peerq_free_slots(q);
	ib_dealloc_pd(q->pd);
	q->ib_ready = false;
}

/* ---- the association --------------------------------------------------- */

/*
 * When @ctrl's member may open an association again: as nvme-fabrics'
 * reconnect_delay, but doubling with each failure in a row, so that an
 * unreachable target costs one RW a connect attempt now and then.
 */
static void fxblk_peerq_backoff(struct fxblk_peerq_ctrl *ctrl)
{
	struct fxblk_member *m = ctrl->m;
	unsigned int n = READ_ONCE(m->peerq_failures);

	ctrl->retry_at = jiffies + (FXBLK_PEERQ_RETRY_MIN <<
				    min_t(unsigned int, n,
					  FXBLK_PEERQ_RETRY_SHIFT));
	WRITE_ONCE(m->peerq_failures, n + 1);
}

static void fxblk_peerq_stop(struct fxblk_peerq_ctrl *ctrl, const char *why)
{
	mutex_lock(&ctrl->stop_lock);
	if (ctrl->state == FXBLK_PEERQ_LIVE) {
		fxblk_peerq_backoff(ctrl);
		ctrl->state = FXBLK_PEERQ_DOWN;
		strscpy(ctrl->why, why, sizeof(ctrl->why));
		pr_info("peer queues of %s (%s) down: %s\n", ctrl->m->disk_name,
			ctrl->subsysnqn, why);
	}
	fxblk_peerq_queue_stop(&ctrl->io);
	fxblk_peerq_queue_stop(&ctrl->admin);
	mutex_unlock(&ctrl->stop_lock);
}

static void fxblk_peerq_err_work(struct work_struct *work)
{
	struct fxblk_peerq_ctrl *ctrl = container_of(work,
						     struct fxblk_peerq_ctrl,
						     err_work);

	fxblk_peerq_stop(ctrl, READ_ONCE(ctrl->err_why));
}

static void fxblk_peerq_ka_done(void *priv, u16 status,
				const union nvme_result *res)
{
	struct fxblk_peerq_ctrl *ctrl = priv;

	if (status)
		fxblk_peerq_error(ctrl, "keep alive failed");
}

/* Keep Alive every KATO/2, as nvme_keep_alive_work() without TBKAS. */
static void fxblk_peerq_ka_work(struct work_struct *work)
{
	struct fxblk_peerq_ctrl *ctrl = container_of(to_delayed_work(work),
						     struct fxblk_peerq_ctrl,
						     ka_work);
	struct nvme_command c = {};

	/* from the admin queue's Connect on: nvmet counts KATO from there */
	if (READ_ONCE(ctrl->closing) || !READ_ONCE(ctrl->admin.live))
		return;
	c.common.opcode = nvme_admin_keep_alive;
	if (!READ_ONCE(fxblk_peerq_ka_hold) &&
	    !fxblk_peerq_issue(&ctrl->admin, &c, NULL, 0, false, 0, DMA_NONE,
			       fxblk_peerq_ka_done, ctrl))
		atomic64_inc(&ctrl->ka_sent);
	queue_delayed_work(fxblk_peerq_wq, &ctrl->ka_work,
			   msecs_to_jiffies(FXBLK_PEERQ_KATO_MS / 2));
}

/* Fabrics Connect of @q (nvmf_connect_admin_queue(), _io_queue()). */
static int fxblk_peerq_connect(struct fxblk_peerq_queue *q)
{
	struct fxblk_peerq_ctrl *ctrl = q->ctrl;
	struct nvmf_connect_data *data;
	struct nvme_command c = {};
	union nvme_result res;
	int ret;

	data = kzalloc(sizeof(*data), GFP_KERNEL);
	if (!data)
		return -ENOMEM;
	uuid_copy(&data->hostid, &ctrl->hostid);
	data->cntlid = cpu_to_le16(q->qid ? ctrl->cntlid : 0xffff);
	strscpy(data->subsysnqn, ctrl->subsysnqn, sizeof(data->subsysnqn));
	strscpy(data->hostnqn, ctrl->hostnqn, sizeof(data->hostnqn));
	c.connect.opcode = nvme_fabrics_command;
	c.connect.fctype = nvme_fabrics_type_connect;
	c.connect.qid = cpu_to_le16(q->qid);
	c.connect.sqsize = cpu_to_le16(q->depth - 1);
	if (!q->qid)
		c.connect.kato = cpu_to_le32(FXBLK_PEERQ_KATO_MS);
	ret = fxblk_peerq_sync(q, &c, data, sizeof(*data), DMA_TO_DEVICE,
			       &res);
	if (!ret && !q->qid) {
		ctrl->cntlid = le16_to_cpu(res.u16);
		/*
		 * AUTHREQ (nvmf_connect_admin_queue()): the subsystem wants
		 * DH-HMAC-CHAP first, which these queues do not speak; every
		 * command would fail with AUTH_REQUIRED (review M2)
		 */
		if (le32_to_cpu(res.u32) & (FXBLK_PEERQ_AUTHREQ_ATR |
					    FXBLK_PEERQ_AUTHREQ_ASCR)) {
			snprintf(ctrl->why, sizeof(ctrl->why),
				 "the subsystem requires in-band authentication (DH-HMAC-CHAP)");
			ret = -EACCES;
		}
	}
	kfree(data);
	return ret;
}

static int fxblk_peerq_prop_get_for(struct fxblk_peerq_ctrl *ctrl, u32 off,
				    bool wide, u64 *val, unsigned long timeout)
{
	struct nvme_command c = {};
	union nvme_result res;
	int ret;

	c.prop_get.opcode = nvme_fabrics_command;
	c.prop_get.fctype = nvme_fabrics_type_property_get;
	c.prop_get.attrib = wide;
	c.prop_get.offset = cpu_to_le32(off);
	ret = fxblk_peerq_sync_for(&ctrl->admin, &c, NULL, 0, DMA_NONE, &res,
				   timeout);
	if (!ret)
		*val = wide ? le64_to_cpu(res.u64) : le32_to_cpu(res.u32);
	return ret;
}

static int fxblk_peerq_prop_get(struct fxblk_peerq_ctrl *ctrl, u32 off,
				bool wide, u64 *val)
{
	return fxblk_peerq_prop_get_for(ctrl, off, wide, val,
					FXBLK_PEERQ_CMD_TIMEOUT);
}

static int fxblk_peerq_prop_set_for(struct fxblk_peerq_ctrl *ctrl, u32 off,
				    u32 val, unsigned long timeout)
{
	struct nvme_command c = {};

	c.prop_set.opcode = nvme_fabrics_command;
	c.prop_set.fctype = nvme_fabrics_type_property_set;
	c.prop_set.offset = cpu_to_le32(off);
	c.prop_set.value = cpu_to_le64(val);
	return fxblk_peerq_sync_for(&ctrl->admin, &c, NULL, 0, DMA_NONE, NULL,
				    timeout);
}

static int fxblk_peerq_prop_set(struct fxblk_peerq_ctrl *ctrl, u32 off,
				u32 val)
{
	return fxblk_peerq_prop_set_for(ctrl, off, val,
					FXBLK_PEERQ_CMD_TIMEOUT);
}

#define FXBLK_PEERQ_CC	(NVME_CC_CSS_NVM | 0 << NVME_CC_MPS_SHIFT |	\
			 NVME_CC_AMS_RR | NVME_CC_SHN_NONE |		\
			 NVME_CC_IOSQES | NVME_CC_IOCQES | NVME_CC_ENABLE)

/* CC.EN, then CSTS.RDY within CAP.TO (nvme_enable_ctrl()). */
static int fxblk_peerq_enable(struct fxblk_peerq_ctrl *ctrl)
{
	unsigned long deadline;
	u64 csts;
	int ret;

	ret = fxblk_peerq_prop_get(ctrl, NVME_REG_CAP, true, &ctrl->cap);
	if (ret)
		return ret;
	/* what CC below and the queues' depth take for granted (review M2) */
	if (NVME_CAP_MPSMIN(ctrl->cap)) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "CAP.MPSMIN %llu: no 4 KiB memory pages",
			 NVME_CAP_MPSMIN(ctrl->cap));
		return -EOPNOTSUPP;
	}
	if (!(FXBLK_PEERQ_CAP_CSS(ctrl->cap) & FXBLK_PEERQ_CAP_CSS_NVM)) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "CAP.CSS 0x%llx: no NVM command set",
			 FXBLK_PEERQ_CAP_CSS(ctrl->cap));
		return -EOPNOTSUPP;
	}
	if (NVME_CAP_MQES(ctrl->cap) + 1 < FXBLK_PEERQ_DEPTH) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "CAP.MQES %llu: queues shorter than %u entries",
			 NVME_CAP_MQES(ctrl->cap), FXBLK_PEERQ_DEPTH);
		return -EOPNOTSUPP;
	}
	ret = fxblk_peerq_prop_set(ctrl, NVME_REG_CC, FXBLK_PEERQ_CC);
	if (ret)
		return ret;
	deadline = jiffies + (NVME_CAP_TIMEOUT(ctrl->cap) + 1) * HZ / 2;
	for (;;) {
		ret = fxblk_peerq_prop_get(ctrl, NVME_REG_CSTS, false, &csts);
		if (ret)
			return ret;
		if (csts & NVME_CSTS_CFS)
			return -EIO;
		if (csts & NVME_CSTS_RDY)
			return 0;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		msleep(20);
	}
}

static int fxblk_peerq_identify(struct fxblk_peerq_ctrl *ctrl)
{
	struct nvme_id_ctrl *id;
	struct nvme_command c = {};
	unsigned int shift;
	u32 bytes;
	int ret;

	id = kzalloc(sizeof(*id), GFP_KERNEL);
	if (!id)
		return -ENOMEM;
	c.identify.opcode = nvme_admin_identify;
	c.identify.cns = NVME_ID_CNS_CTRL;
	ret = fxblk_peerq_sync(&ctrl->admin, &c, id, sizeof(*id),
			       DMA_FROM_DEVICE, NULL);
	if (!ret) {
		ctrl->mdts = id->mdts;
		ctrl->sgls = le32_to_cpu(id->sgls);
		ctrl->maxcmd = le16_to_cpu(id->maxcmd);
		ctrl->vwc = id->vwc & NVME_CTRL_VWC_PRESENT;
	}
	kfree(id);
	if (ret)
		return ret;
	bytes = FXBLK_PEERQ_MAX_PAGES * SZ_4K;
	/* 2^(12 + MPSMIN + MDTS) bytes; MDTS may be up to 255 (review M2) */
	shift = 12 + NVME_CAP_MPSMIN(ctrl->cap) + ctrl->mdts;
	if (ctrl->mdts && shift < 32)
		bytes = min_t(u64, bytes, 1ULL << shift);
	ctrl->max_bytes = bytes;
	return 0;
}

/* Namespace Identification Descriptors (CNS 03h) into @got. */
static void fxblk_peerq_parse_descs(const u8 *buf, struct fxblk_ns_ids *got)
{
	unsigned int pos = 0;

	while (pos + sizeof(struct nvme_ns_id_desc) <= NVME_IDENTIFY_DATA_SIZE) {
		const struct nvme_ns_id_desc *d = (const void *)(buf + pos);
		const u8 *v = buf + pos + sizeof(*d);

		if (!d->nidl)
			break;
		pos += sizeof(*d) + d->nidl;
		if (pos > NVME_IDENTIFY_DATA_SIZE)
			break;
		if (d->nidt == NVME_NIDT_EUI64 && d->nidl == NVME_NIDT_EUI64_LEN)
			memcpy(got->eui64, v, sizeof(got->eui64));
		else if (d->nidt == NVME_NIDT_NGUID &&
			 d->nidl == NVME_NIDT_NGUID_LEN)
			memcpy(got->nguid, v, sizeof(got->nguid));
		else if (d->nidt == NVME_NIDT_UUID &&
			 d->nidl == NVME_NIDT_UUID_LEN)
			memcpy(got->uuid, v, sizeof(got->uuid));
	}
}

/*
 * The association must reach the member's own namespace before anything
 * is read or written over it (review C3): Identify Namespace (CNS 00h:
 * NGUID, EUI-64) and its Identification Descriptor list (CNS 03h: UUID
 * too) for ctrl->nsid must give exactly the identifiers nvme core found
 * for the member (m->ns_ids): the comparison nvme_ns_ids_equal() makes
 * before a rescanned namespace may keep its disk. A member with none of
 * them cannot be told from another namespace: refused. A controller that
 * fails CNS 03h (before NVMe 1.3 it is optional; nvme core then uses only
 * CNS 00h, nvme_identify_ns_descs()) reports no UUID, which matches a
 * member without one.
 */
static int fxblk_peerq_check_ns(struct fxblk_peerq_ctrl *ctrl)
{
	const struct fxblk_ns_ids *want = &ctrl->m->ns_ids;
	static const struct fxblk_ns_ids none;
	struct fxblk_ns_ids got = {};
	struct nvme_command c = {};
	struct nvme_id_ns *id;
	u8 *buf;
	int ret;

	if (!memcmp(want, &none, sizeof(none))) {
		strscpy(ctrl->why, "the member's namespace has no NGUID, EUI-64 or UUID to check",
			sizeof(ctrl->why));
		return -EPROTONOSUPPORT;
	}
	buf = kzalloc(NVME_IDENTIFY_DATA_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	c.identify.opcode = nvme_admin_identify;
	c.identify.nsid = cpu_to_le32(ctrl->nsid);
	c.identify.cns = NVME_ID_CNS_NS;
	ret = fxblk_peerq_sync(&ctrl->admin, &c, buf, NVME_IDENTIFY_DATA_SIZE,
			       DMA_FROM_DEVICE, NULL);
	if (ret) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "Identify Namespace %u failed (%d)", ctrl->nsid, ret);
		goto out;
	}
	id = (struct nvme_id_ns *)buf;
	memcpy(got.nguid, id->nguid, sizeof(got.nguid));
	memcpy(got.eui64, id->eui64, sizeof(got.eui64));
	memset(buf, 0, NVME_IDENTIFY_DATA_SIZE);
	c.identify.cns = NVME_ID_CNS_NS_DESC_LIST;
	if (!fxblk_peerq_sync(&ctrl->admin, &c, buf, NVME_IDENTIFY_DATA_SIZE,
			      DMA_FROM_DEVICE, NULL))
		fxblk_peerq_parse_descs(buf, &got);
	if (memcmp(&got, want, sizeof(got))) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "nsid %u is not the member's namespace (NGUID %pU)",
			 ctrl->nsid, got.nguid);
		ret = -ENXIO;
	}
out:
	kfree(buf);
	return ret;
}

/* After fxblk_peerq_ctrl_prepare() found the member's controller. */
static int fxblk_peerq_ctrl_setup(struct fxblk_peerq_ctrl *ctrl)
{
	unsigned int hold = READ_ONCE(fxblk_peerq_lab_open_ms);
	int ret;

	if (hold)
		msleep(hold);
	/* 4 KiB: the Connect data and Identify, one page each */
	ret = fxblk_peerq_queue_open(ctrl, &ctrl->admin, 0, 2);
	if (!ret)
		ret = fxblk_peerq_connect(&ctrl->admin);
	if (ret) {
		if (!ctrl->why[0])
			snprintf(ctrl->why, sizeof(ctrl->why),
				 "admin queue connect failed (%d)", ret);
		return ret;
	}
	/*
	 * Keep Alive from CSTS.RDY on, as nvme_start_ctrl() starts it:
	 * before, nvmet answers it with Command Sequence Error, which would
	 * stop the association (review M2).
	 */
	ret = fxblk_peerq_enable(ctrl);
	if (!ret) {
		queue_delayed_work(fxblk_peerq_wq, &ctrl->ka_work,
				   msecs_to_jiffies(FXBLK_PEERQ_KATO_MS / 2));
		ret = fxblk_peerq_identify(ctrl);
	}
	if (ret) {
		if (!ctrl->why[0])
			snprintf(ctrl->why, sizeof(ctrl->why),
				 "enable or Identify failed (%d)", ret);
		return ret;
	}
	if (!(ctrl->sgls & FXBLK_PEERQ_SGLS_KEYED)) {
		strscpy(ctrl->why, "the controller has no keyed SGL data block",
			sizeof(ctrl->why));
		return -EOPNOTSUPP;
	}
	ret = fxblk_peerq_queue_open(ctrl, &ctrl->io, 1,
				     ctrl->max_bytes / SZ_4K);
	if (ret) {
		if (!ctrl->why[0])
			snprintf(ctrl->why, sizeof(ctrl->why),
				 "I/O queue connect failed (%d)", ret);
		return ret;
	}
	/* the MR size the RDMA device allows may be smaller */
	ctrl->max_bytes = min_t(u32, ctrl->max_bytes,
				ctrl->io.max_pages * SZ_4K);
	ret = fxblk_peerq_connect(&ctrl->io);
	if (ret) {
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "I/O queue Fabrics Connect failed (%d)", ret);
		return ret;
	}
	/*
	 * Last, with both queues up, so that a refusal unwinds as any late
	 * failure does; nothing uses the association before it is LIVE.
	 */
	return fxblk_peerq_check_ns(ctrl);
}

/* Every queue stopped and freed; @ctrl stays for the dump. */
static void fxblk_peerq_ctrl_teardown(struct fxblk_peerq_ctrl *ctrl)
{
	WRITE_ONCE(ctrl->closing, true);
	cancel_delayed_work_sync(&ctrl->ka_work);
	fxblk_peerq_stop(ctrl, "closed");
	flush_work(&ctrl->err_work);
	fxblk_peerq_queue_free(&ctrl->io);
	fxblk_peerq_queue_free(&ctrl->admin);
	/*
	 * A CM handler that read @closing false before it was set may have
	 * queued it after the flush; rdma_destroy_id() waited for every
	 * handler, so none comes after this (review M3).
	 */
	cancel_work_sync(&ctrl->err_work);
}

/* On the RDMA device's removal (fxblk_peerq_remove_one()). */
static void fxblk_peerq_remove_work(struct work_struct *work)
{
	struct fxblk_peerq_ctrl *ctrl = container_of(work,
						     struct fxblk_peerq_ctrl,
						     remove_work);
	struct fxblk_volume *vol = ctrl->m->vol;

	/* @ctrl may be opening: its opener holds the lock (bounded waits) */
	mutex_lock(&vol->peerq_open_lock);
	down_write(&vol->peerq_sem);
	fxblk_peerq_stop(ctrl, "RDMA device removed");
	fxblk_peerq_ctrl_teardown(ctrl);
	up_write(&vol->peerq_sem);
	mutex_unlock(&vol->peerq_open_lock);
}

/*
 * What a stop, a wake-up and a free touch, ready before anything can fail:
 * an open that fails before a queue was opened (no controller found, the
 * admin queue refused or timed out) stops and frees both queues, as
 * nvme_rdma_alloc_queue() sets up its queue before anything can fail.
 */
static void fxblk_peerq_queue_init(struct fxblk_peerq_queue *q)
{
	spin_lock_init(&q->lock);
	init_waitqueue_head(&q->wait);
	init_completion(&q->cm_done);
}

static struct fxblk_peerq_ctrl *fxblk_peerq_ctrl_alloc(struct fxblk_member *m)
{
	struct fxblk_peerq_ctrl *ctrl = kzalloc(sizeof(*ctrl), GFP_KERNEL);
	unsigned int i;

	if (!ctrl)
		return NULL;
	ctrl->m = m;
	ctrl->state = FXBLK_PEERQ_OPENING;
	INIT_LIST_HEAD(&ctrl->node);
	ctrl->lbs_shift = ilog2(bdev_logical_block_size(m->bdev));
	mutex_init(&ctrl->stop_lock);
	fxblk_peerq_queue_init(&ctrl->admin);
	fxblk_peerq_queue_init(&ctrl->io);
	INIT_DELAYED_WORK(&ctrl->ka_work, fxblk_peerq_ka_work);
	INIT_WORK(&ctrl->err_work, fxblk_peerq_err_work);
	INIT_WORK(&ctrl->remove_work, fxblk_peerq_remove_work);
	atomic64_set(&ctrl->ka_sent, 0);
	atomic64_set(&ctrl->errors, 0);
	for (i = 0; i < 2; i++) {
		atomic64_set(&ctrl->ios[i], 0);
		atomic64_set(&ctrl->bytes[i], 0);
	}
	return ctrl;
}

/*
 * A live association closed on purpose (its volume stopped or removed,
 * or replaced) ends as nvme_rdma_shutdown_ctrl() ends one (review M2):
 * Keep Alive stopped; a Flush, since a target may keep its volatile
 * write cache across a shutdown (nvmet does: a shutdown flushes nothing
 * there), so what this association wrote is on media before it goes;
 * then CC.SHN normal and CSTS.SHST complete awaited, as
 * nvme_disable_ctrl(ctrl, true) does, within nvme core's default
 * shutdown_timeout. Each command waits as long at most. A failure is
 * logged, never returned: the close goes on, as nvme's does.
 */
#define FXBLK_PEERQ_SHUTDOWN_MS	5000

static void fxblk_peerq_shutdown(struct fxblk_peerq_ctrl *ctrl)
{
	unsigned long tmo = msecs_to_jiffies(FXBLK_PEERQ_SHUTDOWN_MS);
	unsigned long deadline = jiffies + tmo;
	struct nvme_command c = {};
	const char *what;
	u64 csts;
	int ret;

	if (READ_ONCE(ctrl->state) != FXBLK_PEERQ_LIVE)
		return;
	cancel_delayed_work_sync(&ctrl->ka_work);
	if (ctrl->vwc) {
		what = "Flush";
		c.common.opcode = nvme_cmd_flush;
		c.common.nsid = cpu_to_le32(ctrl->nsid);
		ret = fxblk_peerq_sync_for(&ctrl->io, &c, NULL, 0, DMA_NONE,
					   NULL, tmo);
		if (ret)
			goto fail;
		atomic64_inc(&ctrl->flushes);
	}
	what = "CC.SHN";
	ret = fxblk_peerq_prop_set_for(ctrl, NVME_REG_CC,
				       (FXBLK_PEERQ_CC & ~NVME_CC_SHN_MASK) |
				       NVME_CC_SHN_NORMAL, tmo);
	if (ret)
		goto fail;
	what = "CSTS.SHST";
	for (;;) {
		ret = fxblk_peerq_prop_get_for(ctrl, NVME_REG_CSTS, false,
					       &csts, tmo);
		if (ret)
			goto fail;
		if ((csts & NVME_CSTS_SHST_MASK) == NVME_CSTS_SHST_CMPLT)
			return;
		if (time_after(jiffies, deadline)) {
			ret = -ETIMEDOUT;
			goto fail;
		}
		msleep(20);
	}
fail:
	pr_info("peer queues of %s (%s): shutdown: %s: error %d\n",
		ctrl->m->disk_name, ctrl->subsysnqn, what, ret);
}

/* Unlinked (no device removal can queue its work) and freed. */
static void fxblk_peerq_ctrl_free(struct fxblk_peerq_ctrl *ctrl)
{
	mutex_lock(&fxblk_peerq_ctrls_lock);
	list_del_init(&ctrl->node);
	mutex_unlock(&fxblk_peerq_ctrls_lock);
	cancel_work_sync(&ctrl->remove_work);
	fxblk_peerq_shutdown(ctrl);
	fxblk_peerq_ctrl_teardown(ctrl);
	mutex_destroy(&ctrl->stop_lock);
	kfree(ctrl);
}

/*
 * Whether @m's association is due to be opened (again): never, or failed
 * or stopped and its back-off over; never for a member the volume lost
 * (health state gone: it gets no I/O from fxblk, peer I/O neither).
 */
static bool fxblk_peerq_member_due(struct fxblk_member *m)
{
	struct fxblk_peerq_ctrl *ctrl = m->peerq;
	int state;

	if (READ_ONCE(m->state) == FXBLK_STATE_GONE)
		return false;
	if (!ctrl)
		return true;
	state = READ_ONCE(ctrl->state);
	return (state == FXBLK_PEERQ_FAILED || state == FXBLK_PEERQ_DOWN) &&
	       time_after_eq(jiffies, READ_ONCE(ctrl->retry_at));
}

/*
 * A new association of @m with its controller's address and names read
 * from the kernel's controller device, or NULL (no memory). Without
 * vol->peerq_sem. A failed lookup leaves @lookup_err and @why set.
 */
static struct fxblk_peerq_ctrl *fxblk_peerq_ctrl_prepare(struct fxblk_member *m)
{
	struct fxblk_peerq_ctrl *ctrl = fxblk_peerq_ctrl_alloc(m);

	if (!ctrl)
		return NULL;
	ctrl->lookup_err = fxblk_peerq_lookup(ctrl);
	if (ctrl->lookup_err)
		snprintf(ctrl->why, sizeof(ctrl->why),
			 "no live rdma controller of the member found (%d)",
			 ctrl->lookup_err);
	return ctrl;
}

/*
 * Connect @ctrl (prepared), under vol->peerq_open_lock and without
 * vol->peerq_sem: nothing but fxblk_peerq_remove_one() sees it yet. On
 * the device list first, so that an RDMA device removal finds it; its
 * remove work waits for the open lock. Leaves @ctrl LIVE, or FAILED and
 * torn down with @why set.
 */
static void fxblk_peerq_ctrl_connect(struct fxblk_peerq_ctrl *ctrl)
{
	bool live;

	if (ctrl->lookup_err)
		goto out_failed;
	mutex_lock(&fxblk_peerq_ctrls_lock);
	list_add_tail(&ctrl->node, &fxblk_peerq_ctrls);
	mutex_unlock(&fxblk_peerq_ctrls_lock);
	if (fxblk_peerq_ctrl_setup(ctrl))
		goto out_teardown;
	mutex_lock(&ctrl->stop_lock);
	live = ctrl->io.live && ctrl->admin.live;
	if (live) {
		ctrl->state = FXBLK_PEERQ_LIVE;
		ctrl->why[0] = '\0';
	}
	mutex_unlock(&ctrl->stop_lock);
	if (live)
		return;
	strscpy(ctrl->why, "stopped while opening", sizeof(ctrl->why));
out_teardown:
	fxblk_peerq_ctrl_teardown(ctrl);
out_failed:
	ctrl->state = FXBLK_PEERQ_FAILED;
}

/*
 * Publish @ctrl (connected or failed) as @m's association; under
 * vol->peerq_sem (write), which it holds for no wait and no allocation.
 * The association it replaces, or @ctrl itself when @m is not due any
 * more (lost meanwhile), is handed back in @oldp for the caller to free
 * without the semaphore and the open lock: freeing waits for its remove
 * work (cancel_work_sync()), which takes both (fxblk_peerq_remove_work()).
 */
static void fxblk_peerq_member_open(struct fxblk_member *m,
				    struct fxblk_peerq_ctrl *ctrl,
				    struct fxblk_peerq_ctrl **oldp)
{
	struct fxblk_peerq_ctrl *old;
	int state;

	*oldp = NULL;
	if (!ctrl)
		return;
	if (!fxblk_peerq_member_due(m)) {
		*oldp = ctrl;
		return;
	}
	old = m->peerq;
	if (old) {
		m->peerq = NULL;
		*oldp = old;
		/* a Flush on the new association would not cover them */
		if (fxblk_peerq_unflushed(m)) {
			atomic64_set(&m->peerq_flushed_seq,
				     atomic64_read(&m->peerq_wr_seq));
			set_bit(FXBLK_PEERQ_LOST_UNFLUSHED, &m->peerq_flags);
		}
	}
	m->peerq = ctrl;
	mutex_lock(&ctrl->stop_lock);
	state = ctrl->state;
	if (state == FXBLK_PEERQ_LIVE)
		WRITE_ONCE(m->peerq_failures, 0);
	else if (state == FXBLK_PEERQ_FAILED)
		fxblk_peerq_backoff(ctrl);
	/* else DOWN: stopped since it went live, fxblk_peerq_stop() backed off */
	mutex_unlock(&ctrl->stop_lock);
	if (state == FXBLK_PEERQ_LIVE) {
		pr_info("%s: peer queues of member %u (%s) to %s at %s:%s: cntlid %u, MDTS %u, %u bytes per command, on %s\n",
			m->vol->disk->disk_name, m->index, m->disk_name,
			ctrl->subsysnqn, ctrl->traddr, ctrl->trsvcid,
			ctrl->cntlid, ctrl->mdts, ctrl->max_bytes,
			dev_name(&ctrl->io.ibdev->dev));
		return;
	}
	pr_info("%s: peer queues of member %u (%s) not opened: %s (again in %u s)\n",
		m->vol->disk->disk_name, m->index, m->disk_name, ctrl->why,
		jiffies_to_msecs(ctrl->retry_at - jiffies) / 1000);
}

static bool fxblk_peerq_vol_live(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_peerq_ctrl *ctrl = vol->members[i].peerq;

		if (!ctrl || READ_ONCE(ctrl->state) != FXBLK_PEERQ_LIVE)
			return false;
		if (READ_ONCE(vol->members[i].state) == FXBLK_STATE_GONE)
			return false;
	}
	return true;
}

/*
 * A member the volume lost keeps no association: fxblk sends it nothing
 * any more (an admin may be replacing it). Under vol->peerq_sem.
 */
static void fxblk_peerq_stop_gone(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_peerq_ctrl *ctrl = vol->members[i].peerq;

		if (ctrl && READ_ONCE(ctrl->state) == FXBLK_PEERQ_LIVE &&
		    READ_ONCE(vol->members[i].state) == FXBLK_STATE_GONE)
			fxblk_peerq_stop(ctrl, "member gone");
	}
}

/* A member whose association could be opened now. */
static bool fxblk_peerq_vol_due(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++)
		if (fxblk_peerq_member_due(&vol->members[i]))
			return true;
	return false;
}

/*
 * Open the associations that are due, one opener per volume at a time
 * (vol->peerq_open_lock): each looked up and connected without the
 * semaphore, then all published under it written (review H3). A connect
 * takes seconds against a slow target (RDMA CM, Fabrics Connect, enable,
 * Identify, up to 30 s per unanswered command); held written across them,
 * the semaphore stalled every peer RW of the volume, its peer flush worker
 * (which reclaim can wait for: the connects allocate GFP_KERNEL) and the
 * removal of an RDMA device. An RW that finds an open in progress does
 * not wait for it: it takes the block path, as while an association is
 * down. A member found not due here may be due by then; it is tried by
 * the next RW. Lock order: peerq_open_lock, then peerq_sem.
 */
static void fxblk_peerq_vol_open(struct fxblk_volume *vol)
{
	struct fxblk_peerq_ctrl **new;
	unsigned int i;

	if (!mutex_trylock(&vol->peerq_open_lock))
		return;
	new = kcalloc(vol->nr_members, sizeof(*new), GFP_KERNEL);
	if (!new)
		goto out_unlock;
	down_read(&vol->peerq_sem);
	for (i = 0; i < vol->nr_members; i++)
		new[i] = fxblk_peerq_member_due(&vol->members[i]) ?
			 ERR_PTR(-EAGAIN) : NULL;
	up_read(&vol->peerq_sem);
	for (i = 0; i < vol->nr_members; i++) {
		if (!new[i])
			continue;
		new[i] = fxblk_peerq_ctrl_prepare(&vol->members[i]);
		if (new[i])
			fxblk_peerq_ctrl_connect(new[i]);
	}
	down_write(&vol->peerq_sem);
	for (i = 0; i < vol->nr_members; i++)
		fxblk_peerq_member_open(&vol->members[i], new[i], &new[i]);
	up_write(&vol->peerq_sem);
	mutex_unlock(&vol->peerq_open_lock);
	/* the replaced associations, freed without either lock */
	for (i = 0; i < vol->nr_members; i++)
		if (new[i])
			fxblk_peerq_ctrl_free(new[i]);
	kfree(new);
	return;

out_unlock:
	mutex_unlock(&vol->peerq_open_lock);
}

/* vol->peerq_sem read-held with every member's association live, or not. */
static int fxblk_peerq_vol_get(struct fxblk_volume *vol)
{
	down_read(&vol->peerq_sem);
	if (fxblk_peerq_vol_live(vol))
		return 0;
	fxblk_peerq_stop_gone(vol);
	if (!fxblk_peerq_vol_due(vol))
		goto out;
	up_read(&vol->peerq_sem);
	fxblk_peerq_vol_open(vol);
	down_read(&vol->peerq_sem);
	if (fxblk_peerq_vol_live(vol))
		return 0;
out:
	up_read(&vol->peerq_sem);
	return -EOPNOTSUPP;
}

void fxblk_peerq_vol_close(struct fxblk_volume *vol)
{
	unsigned int i;

	down_write(&vol->peerq_sem);
	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_peerq_ctrl *ctrl = vol->members[i].peerq;

		if (!ctrl)
			continue;
		vol->members[i].peerq = NULL;
		up_write(&vol->peerq_sem);
		/* the remove work takes the semaphore: not held here */
		fxblk_peerq_ctrl_free(ctrl);
		down_write(&vol->peerq_sem);
	}
	up_write(&vol->peerq_sem);
}

/* ---- RW ---------------------------------------------------------------- */

struct fxblk_peerq_batch {
	atomic_t pending;		/* pieces + the submitter */
	int error;
	struct completion done;
	/* DMA-only memory: its mapping for each member's NIC, by index */
	struct sg_table **dma;
};

struct fxblk_peerq_piece {
	struct fxblk_peerq_batch *b;
	struct fxblk_peerq_ctrl *ctrl;
	struct fxblk_peer_reg *reg;	/* counted: fxblk_peer_dma_get() */
	struct sg_table sgt;
	u32 bytes;
	bool write;
	bool fua;
	bool dma;			/* DMA-only memory */
};

static void fxblk_peerq_batch_put(struct fxblk_peerq_batch *b)
{
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
}

/*
 * What a failed command makes of its RW, as nvme core's
 * nvme_decide_disposition() decides for a request: Do Not Retry: -EIO;
 * a path error (an ANA state, review 2026-12-06-peer H4): the association
 * is stopped (opened again after its back-off) and the block path moves
 * the range again, where nvme core waits for a usable path or fails over;
 * any other status without DNR (Namespace Not Ready, Command Interrupted
 * during an array's failover): the block path again, which retries it;
 * stopped: nothing reached the target for it any more, the block path.
 * -ENOTCONN is the block path (fxblk_peerq_rw()).
 */
static int fxblk_peerq_status_errno(struct fxblk_peerq_ctrl *ctrl, u16 status)
{
	if (status == FXBLK_PEERQ_ABORTED)
		return -ENOTCONN;
	if (status & FXBLK_PEERQ_DNR)
		return -EIO;
	if ((status & FXBLK_PEERQ_SCT_MASK) == FXBLK_PEERQ_SCT_PATH)
		fxblk_peerq_error(ctrl, "path error (ANA state)");
	return -ENOTCONN;
}

static void fxblk_peerq_piece_done(void *priv, u16 status,
				   const union nvme_result *res)
{
	struct fxblk_peerq_piece *p = priv;
	struct fxblk_peerq_batch *b = p->b;

	if (status) {
		int err = fxblk_peerq_status_errno(p->ctrl, status);

		cmpxchg(&b->error, 0, err);
		/*
		 * The member failed it for good: its health state says so,
		 * as for a block-path error (review M6); what the block path
		 * takes again is judged there.
		 */
		if (err == -EIO)
			fxblk_health_io_error(p->ctrl->m, BLK_STS_IOERR);
		atomic64_inc(&p->ctrl->errors);
		if (status != FXBLK_PEERQ_ABORTED)
			pr_info_ratelimited("peer queue of %s: %s failed: status 0x%x\n",
					    p->ctrl->m->disk_name,
					    p->write ? "write" : "read",
					    status);
	} else {
		atomic64_inc(&p->ctrl->ios[p->write]);
		atomic64_add(p->bytes, &p->ctrl->bytes[p->write]);
		if (p->dma)
			atomic64_add(p->bytes, &p->ctrl->dma_bytes);
		if (p->fua)
			atomic64_inc(&p->ctrl->fua_writes);
		/*
		 * Before the RW returns, so a flush after it sees this; not
		 * where the kernel treats the member as having no volatile
		 * write cache (Identify VWC, or what nvme host decided for
		 * its disk: 7.3 over null_blk says write through): its
		 * completed writes are durable, and no flush would come.
		 */
		else if (p->write && p->ctrl->vwc &&
			 fxblk_bdev_write_cache(p->ctrl->m->bdev))
			atomic64_inc(&p->ctrl->m->peerq_wr_seq);
	}
	fxblk_peer_dma_put(p->reg);
	sg_free_table(&p->sgt);
	kfree(p);
	fxblk_peerq_batch_put(b);
}

/*
 * The device a provider maps DMA-only memory for, to be moved by @ibdev:
 * its DMA device; for a software device (virtual DMA) only in the lab
 * (peer_virt_dma, see there), else NULL: it cannot reach device memory.
 */
static struct device *fxblk_peerq_dma_dev(struct ib_device *ibdev)
{
	if (!ib_uses_virt_dma(ibdev))
		return ibdev->dma_device;
	return READ_ONCE(fxblk_peerq_virt_dma) ? &ibdev->dev : NULL;
}

/*
 * @sgt: the piece [@pos, @pos + @bytes) of @reg's pages, or of @dma, its
 * DMA-only memory mapped for the member's NIC (fxblk_peerq_vol_map()).
 */
static int fxblk_peerq_piece_sg(struct fxblk_peer_reg *reg,
				struct sg_table *dma, u64 pos, u32 bytes,
				struct sg_table *sgt)
{
	unsigned int off = offset_in_page(pos), n;
	int ret;

	if (reg->pages)
		return sg_alloc_table_from_pages(sgt,
						 reg->pages + (pos >> PAGE_SHIFT),
						 DIV_ROUND_UP(off + bytes, PAGE_SIZE),
						 off, bytes, GFP_KERNEL);
	n = fxblk_peer_dma_slice(dma, pos, bytes, NULL);
	if (!n)
		return -EINVAL;
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (!ret)
		fxblk_peer_dma_slice(dma, pos, bytes, sgt->sgl);
	return ret;
}

/* One NVMe Read/Write of @bytes at member sector @msector of @m. */
static int fxblk_peerq_piece(struct fxblk_peerq_batch *b,
			     struct fxblk_member *m, struct fxblk_peer_reg *reg,
			     u64 pos, u64 msector, u32 bytes, bool write,
			     bool fua)
{
	struct fxblk_peerq_ctrl *ctrl = m->peerq;
	u64 lba = ((m->data_offset + msector) << SECTOR_SHIFT) >>
		  ctrl->lbs_shift;
	struct fxblk_peerq_piece *p;
	struct nvme_command c = {};
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->b = b;
	p->ctrl = ctrl;
	p->bytes = bytes;
	p->write = write;
	p->fua = fua;
	p->dma = !reg->pages;
	ret = fxblk_peerq_piece_sg(reg, b->dma ? b->dma[m->index] : NULL, pos,
				   bytes, &p->sgt);
	if (ret) {
		kfree(p);
		return ret;
	}
	/* revoked: nothing more moves (fxblk_peer_revoke() waits for these) */
	p->reg = reg;
	if (!fxblk_peer_dma_get(reg)) {
		sg_free_table(&p->sgt);
		kfree(p);
		return -ENXIO;
	}
	c.rw.opcode = write ? nvme_cmd_write : nvme_cmd_read;
	c.rw.nsid = cpu_to_le32(ctrl->nsid);
	c.rw.slba = cpu_to_le64(lba);
	c.rw.length = cpu_to_le16((bytes >> ctrl->lbs_shift) - 1);
	if (fua)
		c.rw.control = cpu_to_le16(NVME_RW_FUA);
	atomic_inc(&b->pending);
	ret = fxblk_peerq_issue(&ctrl->io, &c, p->sgt.sgl, p->sgt.orig_nents,
				!reg->pages, bytes,
				write ? DMA_TO_DEVICE : DMA_FROM_DEVICE,
				fxblk_peerq_piece_done, p);
	if (ret) {
		atomic_dec(&b->pending);
		fxblk_peer_dma_put(reg);
		sg_free_table(&p->sgt);
		kfree(p);
	}
	return ret;
}

/* Pieces of at most one chunk and one command's size, as the stripe maps. */
static int fxblk_peerq_submit(struct fxblk_volume *vol,
			      struct fxblk_peerq_batch *b,
			      struct fxblk_peer_reg *reg, u64 pos, u64 dev_off,
			      u64 len, bool write, bool fua)
{
	sector_t sector = dev_off >> SECTOR_SHIFT;
	u64 ms, n;
	u32 mi;
	int ret = 0;

	while (len && !ret) {
		struct fxblk_member *m;

		fxblk_map_sector(&vol->geom, sector, &mi, &ms);
		m = &vol->members[mi];
		n = fxblk_sectors_to_boundary(&vol->geom, sector) <<
		    SECTOR_SHIFT;
		n = min3(n, len, (u64)m->peerq->max_bytes);
		ret = fxblk_peerq_piece(b, m, reg, pos, ms, n, write, fua);
		pos += n;
		sector += n >> SECTOR_SHIFT;
		len -= n;
	}
	return ret;
}

/*
 * DMA-only memory: mapped for the NIC of every member (@dma, by member
 * index) before any piece is sent, so that an RW that cannot go this way
 * moves nothing.
 */
static int fxblk_peerq_vol_map(struct fxblk_volume *vol,
			       struct fxblk_peer_reg *reg,
			       struct sg_table **dma)
{
	struct fxblk_peerq_ctrl *ctrl;
	struct sg_table *sgt;
	struct device *dev;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		ctrl = vol->members[i].peerq;
		dev = fxblk_peerq_dma_dev(ctrl->io.ibdev);
		if (!dev) {
			pr_info_ratelimited("%s: member %u: %s is a software RDMA device: it cannot move %s memory (staged)\n",
					    vol->disk->disk_name, i,
					    dev_name(&ctrl->io.ibdev->dev),
					    reg->ops->name);
			return -EOPNOTSUPP;
		}
		sgt = fxblk_peer_reg_dma(reg, dev);
		if (IS_ERR(sgt)) {
			pr_info_ratelimited("%s: member %u: %s memory not mapped for %s: %ld (staged)\n",
					    vol->disk->disk_name, i,
					    reg->ops->name,
					    dev_name(&ctrl->io.ibdev->dev),
					    PTR_ERR(sgt));
			return -EOPNOTSUPP;
		}
		dma[i] = sgt;
	}
	return 0;
}

static bool fxblk_peerq_ctrl_moves(struct fxblk_peerq_ctrl *ctrl,
				   struct fxblk_peer_reg *reg);

/* Stop the associations of @vol with a command on @reg; peerq_sem read. */
static void fxblk_peerq_stop_holders(struct fxblk_volume *vol,
				     struct fxblk_peer_reg *reg,
				     const char *why)
{
	struct fxblk_peerq_ctrl *ctrl;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		ctrl = vol->members[i].peerq;
		if (ctrl && fxblk_peerq_ctrl_moves(ctrl, reg))
			fxblk_peerq_stop(ctrl, why);
	}
}

/*
 * Up to FXBLK_PEERQ_CMD_TIMEOUT for an RW's commands, in one-second
 * slices as blk_wait_io() waits, so that the hung-task check does not
 * take a wait for a slow target for a hung task; false on timeout.
 */
static bool fxblk_peerq_wait_rw(struct completion *done)
{
	unsigned long end = jiffies + FXBLK_PEERQ_CMD_TIMEOUT;

	while (!wait_for_completion_timeout(done, HZ))
		if (time_after(jiffies, end))
			return false;
	return true;
}

int fxblk_peerq_rw(struct block_device *bdev, struct fxblk_peer_reg *reg,
		   u64 pos, u64 dev_off, u64 len, bool write, bool fua)
{
	struct fxblk_volume *vol = bdev->bd_disk->private_data;
	struct fxblk_peerq_batch b;
	int ret;

	if (!READ_ONCE(fxblk_peerq_enabled) || bdev_is_partition(bdev))
		return -EOPNOTSUPP;
	/* DESTROY waits for this before the members and queues go */
	if (!percpu_ref_tryget_live(&vol->active))
		return -EOPNOTSUPP;
	b.dma = NULL;
	if (!reg->pages) {
		b.dma = kcalloc(vol->nr_members, sizeof(*b.dma), GFP_KERNEL);
		if (!b.dma) {
			ret = -ENOMEM;
			goto out_ref;
		}
	}
	ret = fxblk_peerq_vol_get(vol);
	if (ret)
		goto out_ref;
	if (b.dma) {
		ret = fxblk_peerq_vol_map(vol, reg, b.dma);
		if (ret) {
			up_read(&vol->peerq_sem);
			goto out_ref;
		}
	}
	atomic_set(&b.pending, 1);
	b.error = 0;
	init_completion(&b.done);
	ret = fxblk_peerq_submit(vol, &b, reg, pos, dev_off, len, write, fua);
	fxblk_peerq_batch_put(&b);
	if (!fxblk_peerq_wait_rw(&b.done)) {
		/*
		 * Only the associations still holding a command of @reg go
		 * down (review H5: one slow member stopped every member's,
		 * and their unflushed writes with them); the memory stays
		 * pinned until nothing can reach it.
		 */
		do
			fxblk_peerq_stop_holders(vol, reg, "I/O timed out");
		while (!wait_for_completion_timeout(&b.done, HZ));
	}
	up_read(&vol->peerq_sem);
	if (!ret)
		ret = b.error;
	/*
	 * The provider took the memory back meanwhile: its pieces were not
	 * sent, or were aborted by the fence (fxblk_peer_revoke()).
	 */
	if (ret && READ_ONCE(reg->revoked))
		ret = -ENXIO;
	/*
	 * A queue went down under the I/O, or a command failed with a status
	 * nvme core retries or fails over (fxblk_peerq_status_errno()): the
	 * block path moves the whole range again (the kernel's controller
	 * has its own queues).
	 */
	if (ret == -ENOTCONN)
		ret = -EOPNOTSUPP;
out_ref:
	kfree(b.dma);
	percpu_ref_put(&vol->active);
	return ret;
}

/*
 * Whether @q holds a posted command whose data is @reg's memory. A posted
 * command's piece lives until fxblk_peerq_put() clears @posted under
 * q->lock.
 */
static bool fxblk_peerq_queue_moves(struct fxblk_peerq_queue *q,
				    struct fxblk_peer_reg *reg)
{
	struct fxblk_peerq_piece *p;
	unsigned long flags;
	bool found = false;
	unsigned int i;

	spin_lock_irqsave(&q->lock, flags);
	for (i = 0; i < q->depth && !found; i++) {
		if (!q->cmds[i].posted ||
		    q->cmds[i].done != fxblk_peerq_piece_done)
			continue;
		p = q->cmds[i].priv;
		found = p->reg == reg;
	}
	spin_unlock_irqrestore(&q->lock, flags);
	return found;
}

/*
 * @ctrl is LIVE under its stop_lock: both queues were opened and no
 * teardown has begun (a teardown stops first, under that lock), so its
 * slots stay while the lock is held.
 */
static bool fxblk_peerq_ctrl_moves(struct fxblk_peerq_ctrl *ctrl,
				   struct fxblk_peer_reg *reg)
{
	bool found;

	mutex_lock(&ctrl->stop_lock);
	found = ctrl->state == FXBLK_PEERQ_LIVE &&
		fxblk_peerq_queue_moves(&ctrl->io, reg);
	mutex_unlock(&ctrl->stop_lock);
	return found;
}

/*
 * Only the associations with a command on @reg go down (their other RWs
 * take the block path or are staged, as after any stop); the list's lock
 * keeps each ctrl allocated (fxblk_peerq_ctrl_free() unlinks it first).
 */
void fxblk_peerq_fence(struct fxblk_peer_reg *reg)
{
	struct fxblk_peerq_ctrl *ctrl;

	mutex_lock(&fxblk_peerq_ctrls_lock);
	list_for_each_entry(ctrl, &fxblk_peerq_ctrls, node)
		if (fxblk_peerq_ctrl_moves(ctrl, reg))
			fxblk_peerq_stop(ctrl, "peer memory revoked with I/O in flight");
	mutex_unlock(&fxblk_peerq_ctrls_lock);
}

/* ---- flush ------------------------------------------------------------- */

bool fxblk_peerq_flush_due(struct fxblk_volume *vol)
{
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++)
		if (fxblk_peerq_unflushed(&vol->members[i]) ||
		    test_bit(FXBLK_PEERQ_LOST_UNFLUSHED,
			     &vol->members[i].peerq_flags))
			return true;
	return false;
}

/* One member's part of a flush pass. */
struct fxblk_peerq_flush_wait {
	struct fxblk_peerq_wait w;
	s64 seq;		/* its writes the pass covers */
	bool due;
	bool lost;
	bool sent;
};

/* Send @m's Flush if it has writes no pass covered; -EIO if it cannot. */
static int fxblk_peerq_flush_send(struct fxblk_member *m,
				  struct fxblk_peerq_flush_wait *f)
{
	struct fxblk_peerq_ctrl *ctrl = m->peerq;
	bool strict = READ_ONCE(fxblk_peerq_strict_flush);
	struct nvme_command c = {};
	int ret = 0;

	f->lost = test_bit(FXBLK_PEERQ_LOST_UNFLUSHED, &m->peerq_flags);
	if (f->lost && strict) {
		pr_warn_ratelimited("%s: member %u: an association that completed writes closed before a flush: they may not be durable\n",
				    m->vol->disk->disk_name, m->index);
		ret = -EIO;
	} else if (f->lost) {
		pr_info_ratelimited("%s: member %u: an association that completed writes closed before a flush: the member's own flush covers them\n",
				    m->vol->disk->disk_name, m->index);
	}
	f->seq = atomic64_read(&m->peerq_wr_seq);
	if (f->seq == atomic64_read(&m->peerq_flushed_seq))
		return ret;
	f->due = true;
	init_completion(&f->w.done);
	if (ctrl) {
		c.common.opcode = nvme_cmd_flush;
		c.common.nsid = cpu_to_le32(ctrl->nsid);
		f->sent = !fxblk_peerq_issue(&ctrl->io, &c, NULL, 0, false, 0,
					     DMA_NONE, fxblk_peerq_wait_done,
					     &f->w);
	}
	if (!f->sent && strict) {
		pr_warn_ratelimited("%s: member %u: its peer queue is down: writes it completed may not be durable\n",
				    m->vol->disk->disk_name, m->index);
		ret = -EIO;
	} else if (!f->sent) {
		pr_info_ratelimited("%s: member %u: its peer queue is down: the member's own flush covers the writes it completed\n",
				    m->vol->disk->disk_name, m->index);
	}
	return ret;
}

/* Wait for @m's Flush; then its writes up to f->seq are covered. */
static int fxblk_peerq_flush_end(struct fxblk_member *m,
				 struct fxblk_peerq_flush_wait *f)
{
	struct fxblk_peerq_ctrl *ctrl = m->peerq;
	u16 status;
	int ret = 0;

	if (f->sent) {
		fxblk_peerq_await(ctrl, &f->w, "flush timed out");
		status = f->w.status;
		if (!status && fxblk_peerq_lab_flush_fail)
			status = NVME_SC_INTERNAL;
		if (status) {
			pr_warn_ratelimited("%s: member %u: flush of its peer queue failed: status 0x%x\n",
					    m->vol->disk->disk_name, m->index,
					    status);
			atomic64_inc(&ctrl->errors);
			ret = -EIO;
		} else {
			atomic64_inc(&ctrl->flushes);
		}
	}
	/*
	 * Covered, or failed: then every PREFLUSH that waited for this pass
	 * gets the error (fxblk_peer_flush_work()), as every waiter of a
	 * failed flush must, and the next pass starts from here.
	 */
	if (f->due)
		atomic64_set(&m->peerq_flushed_seq, f->seq);
	if (f->lost)
		clear_bit(FXBLK_PEERQ_LOST_UNFLUSHED, &m->peerq_flags);
	return ret;
}

/*
 * The volume is being flushed: NVMe's Flush covers what the controller it
 * is sent to completed (base specification, Flush command), so the
 * members' flushes through the kernel's controllers need not cover writes
 * fxblk's own associations completed (nvmet flushes the whole namespace;
 * an array need not). Each association that completed writes since its
 * last Flush gets one, all at once, before the volume's flush completes.
 * One that went down in between cannot: the member's own Flush, sent
 * after this pass, covers its writes as nvme multipath counts on; with
 * peer_strict_flush, -EIO instead, as for a writeback error.
 *
 * A member stays due (fxblk_peerq_flush_due()) until its Flush completed,
 * not only until it was sent: a PREFLUSH that comes meanwhile cannot go
 * straight to the members and return before a Flush that covers writes
 * already acknowledged to its caller (review 2026-12-06-peer H1). It
 * waits in fxblk_peer_flush_work(), which runs one pass at a time.
 */
int fxblk_peerq_flush(struct fxblk_volume *vol)
{
	struct fxblk_peerq_flush_wait *f;
	unsigned int i;
	int ret = 0;

	f = kcalloc(vol->nr_members, sizeof(*f), GFP_NOIO);
	if (!f)
		return -ENOMEM;
	down_read(&vol->peerq_sem);
	for (i = 0; i < vol->nr_members; i++)
		ret = fxblk_peerq_flush_send(&vol->members[i], &f[i]) ?: ret;
	if (fxblk_peerq_lab_flush_ms)
		msleep(fxblk_peerq_lab_flush_ms);
	for (i = 0; i < vol->nr_members; i++)
		ret = fxblk_peerq_flush_end(&vol->members[i], &f[i]) ?: ret;
	up_read(&vol->peerq_sem);
	kfree(f);
	return ret;
}

/* ---- debugfs, device removal, module ----------------------------------- */

static void fxblk_peerq_show_member(struct seq_file *s,
				    struct fxblk_volume *vol,
				    struct fxblk_member *m)
{
	struct fxblk_peerq_ctrl *c = m->peerq;

	seq_printf(s, "%s member=%u disk=%s", vol->disk->disk_name, m->index,
		   m->disk_name);
	if (!c) {
		seq_puts(s, " state=none\n");
		return;
	}
	seq_printf(s, " state=%s nic=%s kctrl=%s traddr=%s trsvcid=%s subsysnqn=%s nsid=%u cntlid=%u mdts=%u vwc=%d sgls=0x%x keyed_sgl=%d max_bytes=%u depth=%u keep_alives=%lld reads=%lld read_bytes=%lld writes=%lld write_bytes=%lld errors=%lld dma_bytes=%lld fua_writes=%lld flushes=%lld unflushed=%d inflight=%u why=%s\n",
		   fxblk_peerq_state_name[c->state],
		   c->io.ib_ready ? dev_name(&c->io.ibdev->dev) : "-",
		   c->kctrl[0] ? c->kctrl : "-", c->traddr, c->trsvcid,
		   c->subsysnqn, c->nsid, c->cntlid, c->mdts, c->vwc, c->sgls,
		   !!(c->sgls & FXBLK_PEERQ_SGLS_KEYED), c->max_bytes,
		   FXBLK_PEERQ_DEPTH, (s64)atomic64_read(&c->ka_sent),
		   (s64)atomic64_read(&c->ios[0]),
		   (s64)atomic64_read(&c->bytes[0]),
		   (s64)atomic64_read(&c->ios[1]),
		   (s64)atomic64_read(&c->bytes[1]),
		   (s64)atomic64_read(&c->errors),
		   (s64)atomic64_read(&c->dma_bytes),
		   (s64)atomic64_read(&c->fua_writes),
		   (s64)atomic64_read(&c->flushes),
		   fxblk_peerq_unflushed(m),
		   c->io.ib_ready ? bitmap_weight(c->io.busy, c->io.depth) : 0,
		   c->why);
}

void fxblk_peerq_member_info(struct fxblk_member *m, u32 *state, char *nic,
			     size_t len)
{
	struct fxblk_peerq_ctrl *c;

	*state = FXBLK_PEERQ_NONE;
	nic[0] = '\0';
	/*
	 * A writer holds it while it opens members' associations (RDMA CM
	 * and Fabrics Connect: seconds against a dead target) or tears them
	 * down: a GET must not wait for that.
	 */
	if (!down_read_trylock(&m->vol->peerq_sem)) {
		*state = FXBLK_PEERQ_OPENING;
		return;
	}
	c = m->peerq;
	if (c) {
		*state = c->state;
		if (c->io.ib_ready)
			strscpy(nic, dev_name(&c->io.ibdev->dev), len);
	}
	up_read(&m->vol->peerq_sem);
}

/* /sys/kernel/debug/fxblk/peerq: one line per member of every volume. */
static int fxblk_peerq_show(struct seq_file *s, void *unused)
{
	struct fxblk_volume *vol;
	unsigned int i;
	int index = 0;

	seq_printf(s, "peer_queues=%d\n", READ_ONCE(fxblk_peerq_enabled));
	while ((vol = fxblk_get_next(&index))) {
		down_read(&vol->peerq_sem);
		for (i = 0; i < vol->nr_members; i++)
			fxblk_peerq_show_member(s, vol, &vol->members[i]);
		up_read(&vol->peerq_sem);
		fxblk_vol_put(vol);
		index++;
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fxblk_peerq);

/* As nvme_rdma_remove_one(): tear down what uses the device, and wait. */
static void fxblk_peerq_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct fxblk_peerq_ctrl *ctrl;

	mutex_lock(&fxblk_peerq_ctrls_lock);
	list_for_each_entry(ctrl, &fxblk_peerq_ctrls, node) {
		if ((ctrl->admin.ib_ready && ctrl->admin.ibdev == ibdev) ||
		    (ctrl->io.ib_ready && ctrl->io.ibdev == ibdev))
			queue_work(fxblk_peerq_wq, &ctrl->remove_work);
	}
	mutex_unlock(&fxblk_peerq_ctrls_lock);
	flush_workqueue(fxblk_peerq_wq);
}

static struct ib_client fxblk_peerq_ib_client = {
	.name = "fxblk_peerq",
	.remove = fxblk_peerq_remove_one,
};

int fxblk_peerq_init(void)
{
	int ret;

	fxblk_peerq_wq = alloc_workqueue("fxblk_peerq", WQ_UNBOUND | WQ_MEM_RECLAIM,
					 0);
	if (!fxblk_peerq_wq)
		return -ENOMEM;
	ret = ib_register_client(&fxblk_peerq_ib_client);
	if (ret) {
		destroy_workqueue(fxblk_peerq_wq);
		return ret;
	}
	fxblk_peerq_debugfs = debugfs_create_dir("fxblk", NULL);
	debugfs_create_file("peerq", 0400, fxblk_peerq_debugfs, NULL,
			    &fxblk_peerq_fops);
	return 0;
}

/* Before the volumes go: the dump reads them. */
void fxblk_peerq_exit(void)
{
	debugfs_remove_recursive(fxblk_peerq_debugfs);
}

/* After the volumes went: no association is left. */
void fxblk_peerq_exit_late(void)
{
	ib_unregister_client(&fxblk_peerq_ib_client);
	destroy_workqueue(fxblk_peerq_wq);
}
