// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "fxblk" (attribute tree: uapi/linux/fxblk.h).
 *
 * One family-level policy validates every request strictly, nested member
 * attributes included (resv_start_op is 0: no op is exempt). Ops that change
 * state are GENL_ADMIN_PERM (CAP_NET_ADMIN, checked by the genetlink core,
 * which answers EPERM without a message) and, as for nbd, need
 * CAP_SYS_ADMIN too: they claim block devices. Every refusal of ours says why
 * in the extended ack. Requests run in parallel (parallel_ops) and hold a
 * volume reference, never fxblk_lock, while they build a reply.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <net/genetlink.h>

#include "fxblk.h"
#include "fxblk_peerq.h"

/*
 * Before 6.2 extack messages must be static strings. FXBLK_ERR then formats
 * into one of these slots; a slot is reused only after FXBLK_MSG_SLOTS later
 * refusals, long after the ack that carried it was sent.
 */
#ifndef NL_SET_ERR_MSG_FMT_MOD
#define FXBLK_MSG_SLOTS		16
static char fxblk_msgs[FXBLK_MSG_SLOTS][FXBLK_MSG_LEN];
static atomic_t fxblk_msg_next = ATOMIC_INIT(0);

char *fxblk_msg_buf(void)
{
	unsigned int i = atomic_inc_return(&fxblk_msg_next);

	return fxblk_msgs[i % FXBLK_MSG_SLOTS];
}
#endif

/* A required attribute: missing-attribute report plus a message. */
static bool fxblk_missing(struct genl_info *info, int attr, const char *name)
{
#ifdef GENL_REQ_ATTR_CHECK
	if (!GENL_REQ_ATTR_CHECK(info, attr))
		return false;
#else
	if (info->attrs[attr])
		return false;
#endif
	FXBLK_ERR(info->extack, "missing attribute %s", name);
	return true;
}

static struct genl_family fxblk_genl_family;
/*
 * Events come from health work and requests; fxblk_nl_exit() clears
 * fxblk_nl_live under the write lock, so none is sent once the family is
 * being unregistered.
 */
static DECLARE_RWSEM(fxblk_nl_rwsem);
static bool fxblk_nl_live;

/* Only what CREATE takes; output-only attributes are refused as unknown. */
static const struct nla_policy fxblk_member_policy[FXBLK_MEMBER_ATTR_MAX + 1] = {
	[FXBLK_MEMBER_ATTR_MAJOR] = { .type = NLA_U32 },
	[FXBLK_MEMBER_ATTR_MINOR] = { .type = NLA_U32 },
	[FXBLK_MEMBER_ATTR_DATA_OFFSET] = { .type = NLA_U64 },
	[FXBLK_MEMBER_ATTR_DATA_SECTORS] = { .type = NLA_U64 },
};

static const struct nla_policy fxblk_members_policy[FXBLK_ATTR_MAX + 1] = {
	[FXBLK_ATTR_MEMBER] = NLA_POLICY_NESTED(fxblk_member_policy),
};

static const struct nla_policy fxblk_policy[FXBLK_ATTR_MAX + 1] = {
	[FXBLK_ATTR_INDEX] = { .type = NLA_U32 },
	[FXBLK_ATTR_NAME] = { .type = NLA_NUL_STRING,
			      .len = FXBLK_NAME_MAX - 1 },
	/* Range checked in code: policy ranges answer ERANGE, not EINVAL. */
	[FXBLK_ATTR_CHUNK_SECTORS] = { .type = NLA_U32 },
	[FXBLK_ATTR_MEMBERS] = NLA_POLICY_NESTED(fxblk_members_policy),
	[FXBLK_ATTR_FORCE] = { .type = NLA_FLAG },
	/* Length checked in code: policy lengths answer ERANGE, not EINVAL. */
	[FXBLK_ATTR_UUID] = { .type = NLA_BINARY },
};

/* ---- replies ----------------------------------------------------------- */

/* Upper bounds of the attribute sizes below, for genlmsg_new(). */
#define FXBLK_DIRECT_MSG_SIZE	(nla_total_size(0) + 5 * nla_total_size_64bit(8))
#define FXBLK_VOL_MSG_SIZE	(256 + nla_total_size(4) +			\
				 nla_total_size(FXBLK_UUID_LEN) +	\
				 FXBLK_DIRECT_MSG_SIZE)
#define FXBLK_MEMBER_MSG_SIZE	168
#define FXBLK_STAT_MSG_SIZE	(4 * nla_total_size(0) +		\
				 FXBLK_NR_DIRS * (nla_total_size(0) +	\
				 5 * nla_total_size_64bit(8) +		\
				 nla_total_size(8 * FXBLK_LAT_BUCKETS)))

static size_t fxblk_msg_size(unsigned int nr_members, bool stats)
{
	/* The MEMBERS nest of the largest STATS reply must fit nla_len. */
	BUILD_BUG_ON(FXBLK_MAX_MEMBERS * (FXBLK_MEMBER_MSG_SIZE +
					  FXBLK_STAT_MSG_SIZE) > U16_MAX);

	return GENL_HDRLEN + FXBLK_VOL_MSG_SIZE + nr_members *
	       (FXBLK_MEMBER_MSG_SIZE + (stats ? FXBLK_STAT_MSG_SIZE : 0));
}

static int fxblk_put_stat(struct sk_buff *skb, int type,
			  const struct fxblk_stat_cpu *s, unsigned int dir)
{
	struct nlattr *nest = nla_nest_start(skb, type);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, FXBLK_STAT_ATTR_IOS, s->ios[dir],
			      FXBLK_STAT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_STAT_ATTR_SECTORS, s->sectors[dir],
			      FXBLK_STAT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_STAT_ATTR_ERRORS, s->errors[dir],
			      FXBLK_STAT_ATTR_PAD) ||
	    nla_put_u32(skb, FXBLK_STAT_ATTR_INFLIGHT,
			max_t(s64, s->inflight[dir], 0)) ||
	    nla_put(skb, FXBLK_STAT_ATTR_LAT_HIST, sizeof(s->lat[dir]),
		    s->lat[dir]))
		goto cancel;
	if (dir == FXBLK_DIR_WRITE &&
	    nla_put_u64_64bit(skb, FXBLK_STAT_ATTR_FUA, s->fua,
			      FXBLK_STAT_ATTR_PAD))
		goto cancel;
	nla_nest_end(skb, nest);
	return 0;

cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int fxblk_put_member_stats(struct sk_buff *skb, struct fxblk_member *m)
{
	static const int types[FXBLK_NR_DIRS] = {
		[FXBLK_DIR_READ] = FXBLK_MEMBER_ATTR_STATS_READ,
		[FXBLK_DIR_WRITE] = FXBLK_MEMBER_ATTR_STATS_WRITE,
		[FXBLK_DIR_DISCARD] = FXBLK_MEMBER_ATTR_STATS_DISCARD,
		[FXBLK_DIR_FLUSH] = FXBLK_MEMBER_ATTR_STATS_FLUSH,
	};
	struct fxblk_stat_cpu *sum;
	unsigned int d;
	int ret = 0;

	/* 1.2 KiB: too big for the stack. */
	sum = kmalloc(sizeof(*sum), GFP_KERNEL);
	if (!sum)
		return -ENOMEM;
	fxblk_stats_sum(m, sum);
	for (d = 0; d < FXBLK_NR_DIRS && !ret; d++)
		ret = fxblk_put_stat(skb, types[d], sum, d);
	kfree(sum);
	return ret;
}

/* The direct path's counters (FXBLK_ATTR_DIRECT), STATS only. */
static int fxblk_put_direct(struct sk_buff *skb, struct fxblk_volume *vol)
{
	struct nlattr *nest = nla_nest_start(skb, FXBLK_ATTR_DIRECT);
	struct fxblk_direct_cpu sum;

	if (!nest)
		return -EMSGSIZE;
	fxblk_direct_sum(vol, &sum);
	if (nla_put_u64_64bit(skb, FXBLK_DIRECT_ATTR_READ_IOS,
			      sum.ios[FXBLK_DIR_READ], FXBLK_DIRECT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_DIRECT_ATTR_READ_BYTES,
			      sum.bytes[FXBLK_DIR_READ], FXBLK_DIRECT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_DIRECT_ATTR_WRITE_IOS,
			      sum.ios[FXBLK_DIR_WRITE], FXBLK_DIRECT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_DIRECT_ATTR_WRITE_BYTES,
			      sum.bytes[FXBLK_DIR_WRITE], FXBLK_DIRECT_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_DIRECT_ATTR_REFUSED, sum.refused,
			      FXBLK_DIRECT_ATTR_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int fxblk_put_member(struct sk_buff *skb, struct fxblk_member *m,
			    bool stats)
{
	struct nlattr *nest = nla_nest_start(skb, FXBLK_ATTR_MEMBER);
	char nic[FXBLK_PEERQ_NIC_LEN];
	u32 peerq;

	if (!nest)
		return -EMSGSIZE;
	fxblk_peerq_member_info(m, &peerq, nic, sizeof(nic));
	/* No m->bdev here: a reader may race DESTROY closing the members. */
	if (nla_put_u32(skb, FXBLK_MEMBER_ATTR_INDEX, m->index) ||
	    nla_put_u32(skb, FXBLK_MEMBER_ATTR_MAJOR, MAJOR(m->dev)) ||
	    nla_put_u32(skb, FXBLK_MEMBER_ATTR_MINOR, MINOR(m->dev)) ||
	    nla_put_string(skb, FXBLK_MEMBER_ATTR_DISK_NAME, m->disk_name) ||
	    nla_put_u32(skb, FXBLK_MEMBER_ATTR_STATE, READ_ONCE(m->state)) ||
	    nla_put_u8(skb, FXBLK_MEMBER_ATTR_PCI_P2PDMA, m->p2pdma) ||
	    nla_put_u32(skb, FXBLK_MEMBER_ATTR_PEERQ_STATE, peerq) ||
	    (nic[0] && nla_put_string(skb, FXBLK_MEMBER_ATTR_PEERQ_NIC, nic)) ||
	    nla_put_u64_64bit(skb, FXBLK_MEMBER_ATTR_ERRORS,
			      fxblk_member_errors(m), FXBLK_MEMBER_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, FXBLK_MEMBER_ATTR_DATA_OFFSET,
			      m->data_offset, FXBLK_MEMBER_ATTR_PAD) ||
	    /* What the stripe uses: whole chunks, equal on all members. */
	    nla_put_u64_64bit(skb, FXBLK_MEMBER_ATTR_DATA_SECTORS,
			      m->vol->geom.member_sectors,
			      FXBLK_MEMBER_ATTR_PAD) ||
	    (stats && fxblk_put_member_stats(skb, m))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int fxblk_put_ident(struct sk_buff *skb, struct fxblk_volume *vol)
{
	char disk[FXBLK_DISK_NAME_MAX];

	/* Not disk->disk_name: events may outlive the gendisk. */
	snprintf(disk, sizeof(disk), "fx%d", vol->index);
	if (nla_put_u32(skb, FXBLK_ATTR_INDEX, vol->index) ||
	    nla_put_string(skb, FXBLK_ATTR_NAME, vol->name) ||
	    nla_put_string(skb, FXBLK_ATTR_DISK_NAME, disk))
		return -EMSGSIZE;
	return 0;
}

static int fxblk_put_volume(struct sk_buff *skb, struct fxblk_volume *vol,
			    bool stats)
{
	struct nlattr *members;
	unsigned int i;

	if (fxblk_put_ident(skb, vol) ||
	    nla_put_u32(skb, FXBLK_ATTR_CHUNK_SECTORS,
			fxblk_chunk_sectors(&vol->geom)) ||
	    nla_put_u64_64bit(skb, FXBLK_ATTR_CAPACITY,
			      fxblk_capacity(&vol->geom), FXBLK_ATTR_PAD) ||
	    nla_put_u32(skb, FXBLK_ATTR_LOGICAL_BLOCK_SIZE, vol->lbs) ||
	    nla_put_u32(skb, FXBLK_ATTR_OPEN_COUNT, fxblk_dev_open_count(vol)) ||
	    nla_put_u32(skb, FXBLK_ATTR_STATE, fxblk_volume_state(vol)) ||
	    nla_put_u64_64bit(skb, FXBLK_ATTR_FLAGS, vol->flags, FXBLK_ATTR_PAD) ||
	    nla_put_u32(skb, FXBLK_ATTR_P2PDMA, vol->p2pdma) ||
	    (!uuid_is_null(&vol->uuid) &&
	     nla_put(skb, FXBLK_ATTR_UUID, FXBLK_UUID_LEN, &vol->uuid)) ||
	    (stats && fxblk_put_direct(skb, vol)))
		return -EMSGSIZE;
	members = nla_nest_start(skb, FXBLK_ATTR_MEMBERS);
	if (!members)
		return -EMSGSIZE;
	for (i = 0; i < vol->nr_members; i++)
		if (fxblk_put_member(skb, &vol->members[i], stats))
			return -EMSGSIZE;
	nla_nest_end(skb, members);
	return 0;
}

/* Reply to @info with @vol, in a message sized and allocated by the caller. */
static int fxblk_reply_volume(struct sk_buff *msg, struct genl_info *info,
			      u8 cmd, struct fxblk_volume *vol, bool stats)
{
	void *hdr = genlmsg_put_reply(msg, info, &fxblk_genl_family, 0, cmd);

	if (!hdr || fxblk_put_volume(msg, vol, stats)) {
		nlmsg_free(msg);
		NL_SET_ERR_MSG_MOD(info->extack, "reply too large");
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

/* ---- events ------------------------------------------------------------ */

static struct sk_buff *fxblk_event_msg(struct fxblk_volume *vol, u32 event,
				       struct fxblk_member *m, int err)
{
	struct sk_buff *skb = genlmsg_new(fxblk_msg_size(1, false), GFP_KERNEL);
	struct nlattr *members;
	void *hdr;

	if (!skb)
		return NULL;
	hdr = genlmsg_put(skb, 0, 0, &fxblk_genl_family, 0, FXBLK_CMD_EVENT);
	if (!hdr || nla_put_u32(skb, FXBLK_ATTR_EVENT, event) ||
	    fxblk_put_ident(skb, vol))
		goto fail;
	if (m) {
		if (nla_put_s32(skb, FXBLK_ATTR_ERRNO, err))
			goto fail;
		members = nla_nest_start(skb, FXBLK_ATTR_MEMBERS);
		if (!members || fxblk_put_member(skb, m, false))
			goto fail;
		nla_nest_end(skb, members);
	}
	genlmsg_end(skb, hdr);
	return skb;

fail:
	nlmsg_free(skb);
	return NULL;
}

static void fxblk_event_send(struct sk_buff *skb)
{
	/* -ESRCH only says nobody listens. */
	if (skb)
		genlmsg_multicast(&fxblk_genl_family, skb, 0, 0, GFP_KERNEL);
}

void fxblk_nl_event(struct fxblk_volume *vol, u32 event,
		    struct fxblk_member *m, int err)
{
	down_read(&fxblk_nl_rwsem);
	if (fxblk_nl_live)
		fxblk_event_send(fxblk_event_msg(vol, event, m, err));
	up_read(&fxblk_nl_rwsem);
}

/* Send an event built earlier (or free it: the family is going away). */
void fxblk_nl_send(struct sk_buff *event)
{
	if (!event)
		return;
	down_read(&fxblk_nl_rwsem);
	if (fxblk_nl_live)
		fxblk_event_send(event);
	else
		nlmsg_free(event);
	up_read(&fxblk_nl_rwsem);
}

/* ---- requests ---------------------------------------------------------- */

/* The uapi rule fxctl shares; also keeps "." and ".." out of /dev/fx/<name>. */
static int fxblk_check_name(const char *name, struct netlink_ext_ack *extack)
{
	if (!*name || name[strspn(name, FXBLK_NAME_CHARS)] ||
	    !strcmp(name, ".") || !strcmp(name, "..")) {
		NL_SET_ERR_MSG_MOD(extack,
				   "volume name must be 1-31 of [A-Za-z0-9._-]");
		return -EINVAL;
	}
	return 0;
}

/*
 * The volume named by NAME and/or INDEX, with a reference. Given both, they
 * must name the same volume: a remove racing a remove+create must not hit
 * the new volume that took the old one's index.
 */
static struct fxblk_volume *fxblk_nl_lookup(struct genl_info *info)
{
	struct nlattr *name = info->attrs[FXBLK_ATTR_NAME];
	struct nlattr *index = info->attrs[FXBLK_ATTR_INDEX];
	struct fxblk_volume *vol;

	if (!name && !index) {
		NL_SET_ERR_MSG_MOD(info->extack,
				   "name the volume with NAME or INDEX");
		return ERR_PTR(-EINVAL);
	}
	/* Never echo a name that could not exist (control characters...). */
	if (name && fxblk_check_name(nla_data(name), info->extack))
		return ERR_PTR(-EINVAL);
	vol = name ? fxblk_get_volume(nla_data(name), 0) :
		     fxblk_get_volume(NULL, nla_get_u32(index));
	if (!vol) {
		if (name)
			FXBLK_ERR(info->extack, "no volume named \"%s\"",
				  (char *)nla_data(name));
		else
			FXBLK_ERR(info->extack, "no volume fx%u",
				  nla_get_u32(index));
		return ERR_PTR(-ENOENT);
	}
	if (name && index && vol->index != nla_get_u32(index)) {
		FXBLK_ERR(info->extack, "NAME \"%s\" is fx%d but INDEX is %u",
			  vol->name, vol->index, nla_get_u32(index));
		fxblk_vol_put(vol);
		return ERR_PTR(-ENOENT);
	}
	return vol;
}

#ifdef FXBLK_P2PDMA_KERNEL
#define FXBLK_FEAT_P2PDMA_BIT	FXBLK_FEAT_PCI_P2PDMA
#else
#define FXBLK_FEAT_P2PDMA_BIT	0
#endif

static int fxblk_nl_status(struct sk_buff *skb, struct genl_info *info)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	void *hdr;

	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &fxblk_genl_family, 0,
				FXBLK_CMD_STATUS);
	if (!hdr ||
	    nla_put_string(msg, FXBLK_ATTR_MOD_VERSION, FXBLK_MOD_VERSION) ||
	    nla_put_u32(msg, FXBLK_ATTR_API_VERSION, FXBLK_API_VERSION) ||
	    nla_put_u64_64bit(msg, FXBLK_ATTR_FEATURES,
			      FXBLK_FEAT_STRIPE | FXBLK_FEAT_STATS |
			      FXBLK_FEAT_EVENTS | FXBLK_FEAT_NOWAIT |
			      FXBLK_FEAT_HEALTH | FXBLK_FEAT_ASYNC_DESTROY |
			      FXBLK_FEAT_UUID | FXBLK_FEAT_P2PDMA_BIT,
			      FXBLK_ATTR_PAD) ||
	    nla_put_u32(msg, FXBLK_ATTR_LIVE_VOLUMES, fxblk_live_volumes())) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int fxblk_parse_member(struct nlattr *nla, unsigned int i,
			      struct fxblk_member_spec *spec,
			      struct netlink_ext_ack *extack)
{
	struct nlattr *tb[FXBLK_MEMBER_ATTR_MAX + 1];
	u32 major, minor;
	int ret;

	ret = nla_parse_nested(tb, FXBLK_MEMBER_ATTR_MAX, nla,
			       fxblk_member_policy, extack);
	if (ret)
		return ret;
	if (!tb[FXBLK_MEMBER_ATTR_MAJOR] || !tb[FXBLK_MEMBER_ATTR_MINOR]) {
		FXBLK_ERR(extack, "member %u: MAJOR and MINOR are required", i);
		return -EINVAL;
	}
	major = nla_get_u32(tb[FXBLK_MEMBER_ATTR_MAJOR]);
	minor = nla_get_u32(tb[FXBLK_MEMBER_ATTR_MINOR]);
	if (major >= 1U << (32 - MINORBITS) || minor > MINORMASK) {
		FXBLK_ERR(extack, "member %u: device %u:%u out of range",
			  i, major, minor);
		return -EINVAL;
	}
	spec->dev = MKDEV(major, minor);
	if (tb[FXBLK_MEMBER_ATTR_DATA_OFFSET])
		spec->data_offset =
			nla_get_u64(tb[FXBLK_MEMBER_ATTR_DATA_OFFSET]);
	if (tb[FXBLK_MEMBER_ATTR_DATA_SECTORS])
		spec->data_sectors =
			nla_get_u64(tb[FXBLK_MEMBER_ATTR_DATA_SECTORS]);
	return 0;
}

static int fxblk_parse_members(struct nlattr *members,
			       struct fxblk_create_req *req,
			       struct netlink_ext_ack *extack)
{
	struct nlattr *nla;
	unsigned int i, j;
	int rem, ret;

	/*
	 * Strict policy validation has checked this already; the parser below
	 * relies on it, so say so here rather than trust the policy alone.
	 */
	if (!(members->nla_type & NLA_F_NESTED)) {
		NL_SET_ERR_MSG_ATTR(extack, members,
				    KBUILD_MODNAME ": MEMBERS lacks NLA_F_NESTED");
		return -EINVAL;
	}
	nla_for_each_nested(nla, members, rem) {
		i = req->nr_members;
		if (nla_type(nla) != FXBLK_ATTR_MEMBER) {
			NL_SET_ERR_MSG_ATTR(extack, nla,
					    KBUILD_MODNAME ": MEMBERS may hold only MEMBER attributes");
			return -EINVAL;
		}
		if (i == FXBLK_MAX_MEMBERS) {
			FXBLK_ERR(extack, "more than %u members",
				  FXBLK_MAX_MEMBERS);
			return -EINVAL;
		}
		ret = fxblk_parse_member(nla, i, &req->members[i], extack);
		if (ret)
			return ret;
		for (j = 0; j < i; j++) {
			if (req->members[j].dev == req->members[i].dev) {
				FXBLK_ERR(extack, "member %u duplicates member %u",
					  i, j);
				return -EINVAL;
			}
		}
		req->nr_members++;
	}
	if (!req->nr_members) {
		NL_SET_ERR_MSG_MOD(extack, "a volume needs at least one member");
		return -EINVAL;
	}
	return 0;
}

static int fxblk_parse_create(struct genl_info *info,
			      struct fxblk_create_req *req)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr *chunk = info->attrs[FXBLK_ATTR_CHUNK_SECTORS];
	struct nlattr *uuid = info->attrs[FXBLK_ATTR_UUID];
	int ret;

	if (fxblk_missing(info, FXBLK_ATTR_NAME, "NAME") ||
	    fxblk_missing(info, FXBLK_ATTR_MEMBERS, "MEMBERS"))
		return -EINVAL;
	/* The policy guarantees a NUL within FXBLK_NAME_MAX bytes. */
	strscpy(req->name, nla_data(info->attrs[FXBLK_ATTR_NAME]),
		sizeof(req->name));
	ret = fxblk_check_name(req->name, extack);
	if (ret)
		return ret;
	req->chunk_sectors = chunk ? nla_get_u32(chunk) :
				     FXBLK_CHUNK_DEF_SECTORS;
	if (!is_power_of_2(req->chunk_sectors) ||
	    req->chunk_sectors < FXBLK_CHUNK_MIN_SECTORS ||
	    req->chunk_sectors > FXBLK_CHUNK_MAX_SECTORS) {
		NL_SET_ERR_MSG_ATTR(extack, chunk,
				    KBUILD_MODNAME ": chunk size must be a power of two, 4 KiB to 16 MiB");
		return -EINVAL;
	}
	/* Optional; all zeroes would read as none. */
	if (uuid) {
		if (nla_len(uuid) != FXBLK_UUID_LEN) {
			NL_SET_ERR_MSG_ATTR(extack, uuid,
					    KBUILD_MODNAME ": UUID must be 16 bytes");
			return -EINVAL;
		}
		memcpy(&req->uuid, nla_data(uuid), FXBLK_UUID_LEN);
		if (uuid_is_null(&req->uuid)) {
			NL_SET_ERR_MSG_ATTR(extack, uuid,
					    KBUILD_MODNAME ": UUID is all zeroes");
			return -EINVAL;
		}
	}
	return fxblk_parse_members(info->attrs[FXBLK_ATTR_MEMBERS], req,
				   extack);
}

static int fxblk_nl_capable(struct sk_buff *skb, struct genl_info *info)
{
	if (netlink_capable(skb, CAP_SYS_ADMIN))
		return 0;
	NL_SET_ERR_MSG_MOD(info->extack, "operation needs CAP_SYS_ADMIN");
	return -EPERM;
}

static int fxblk_nl_create(struct sk_buff *skb, struct genl_info *info)
{
	struct fxblk_create_req *req;
	struct fxblk_volume *vol;
	struct sk_buff *msg;
	int ret;

	ret = fxblk_nl_capable(skb, info);
	if (ret)
		return ret;
	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	ret = fxblk_parse_create(info, req);
	if (ret)
		goto out_req;
	/* Before creating: a volume must not exist without its reply. */
	ret = -ENOMEM;
	msg = genlmsg_new(fxblk_msg_size(req->nr_members, false), GFP_KERNEL);
	if (!msg)
		goto out_req;

	ret = fxblk_create(req, &vol, info->extack);
	if (ret) {
		nlmsg_free(msg);
		goto out_req;
	}
	pr_info("created fx%d \"%s\": %u members, chunk %u sectors\n",
		vol->index, vol->name, vol->nr_members, req->chunk_sectors);
	fxblk_nl_event(vol, FXBLK_EVENT_CREATED, NULL, 0);
	ret = fxblk_reply_volume(msg, info, FXBLK_CMD_CREATE, vol, false);
	fxblk_vol_put(vol);
out_req:
	kfree(req);
	return ret;
}

/*
 * Acks once the removal is committed, without waiting for I/O in flight
 * (see __fxblk_destroy()); the DESTROYED event, built here while the
 * volume is whole, follows when the teardown is done.
 */
static int fxblk_nl_destroy(struct sk_buff *skb, struct genl_info *info)
{
	bool force = nla_get_flag(info->attrs[FXBLK_ATTR_FORCE]);
	struct fxblk_volume *vol;
	struct sk_buff *event;
	int ret;

	ret = fxblk_nl_capable(skb, info);
	if (ret)
		return ret;
	vol = fxblk_nl_lookup(info);
	if (IS_ERR(vol))
		return PTR_ERR(vol);
	/* Without it listeners (fxctl remove) would wait forever. */
	event = fxblk_event_msg(vol, FXBLK_EVENT_DESTROYED, NULL, 0);
	if (!event) {
		fxblk_vol_put(vol);
		return -ENOMEM;
	}
	ret = fxblk_destroy(vol, force, event, info->extack);
	if (ret)
		nlmsg_free(event);
	else if (force)
		pr_info("fx%d \"%s\": forced removal\n", vol->index, vol->name);
	fxblk_vol_put(vol);
	return ret;
}

static int fxblk_nl_get_one(struct genl_info *info, u8 cmd, bool stats)
{
	struct fxblk_volume *vol;
	struct sk_buff *msg;
	int ret = -ENOMEM;

	vol = fxblk_nl_lookup(info);
	if (IS_ERR(vol))
		return PTR_ERR(vol);
	msg = genlmsg_new(fxblk_msg_size(vol->nr_members, stats), GFP_KERNEL);
	if (msg)
		ret = fxblk_reply_volume(msg, info, cmd, vol, stats);
	fxblk_vol_put(vol);
	return ret;
}

static int fxblk_nl_get(struct sk_buff *skb, struct genl_info *info)
{
	return fxblk_nl_get_one(info, FXBLK_CMD_GET, false);
}

static int fxblk_nl_stats(struct sk_buff *skb, struct genl_info *info)
{
	return fxblk_nl_get_one(info, FXBLK_CMD_STATS, true);
}

/* cb->args[0]: index of the next volume to dump. */
static int fxblk_nl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	int index = cb->args[0];
	struct fxblk_volume *vol;
	int ret = 0;
	void *hdr;

	while ((vol = fxblk_get_next(&index))) {
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &fxblk_genl_family,
				  NLM_F_MULTI, FXBLK_CMD_GET);
		if (hdr && !fxblk_put_volume(skb, vol, false)) {
			genlmsg_end(skb, hdr);
			fxblk_vol_put(vol);
			index++;
			continue;
		}
		if (hdr)
			genlmsg_cancel(skb, hdr);
		fxblk_vol_put(vol);
		/* Not even one volume fits an empty buffer: say so. */
		if (!skb->len)
			ret = -EMSGSIZE;
		break;
	}
	cb->args[0] = index;
	return ret ?: skb->len;
}

static const struct genl_ops fxblk_genl_ops[] = {
	{
		.cmd = FXBLK_CMD_STATUS,
		.doit = fxblk_nl_status,
	},
	{
		.cmd = FXBLK_CMD_CREATE,
		.doit = fxblk_nl_create,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = FXBLK_CMD_DESTROY,
		.doit = fxblk_nl_destroy,
		.flags = GENL_ADMIN_PERM,
	},
	{
		.cmd = FXBLK_CMD_GET,
		.doit = fxblk_nl_get,
		.dumpit = fxblk_nl_dump,
	},
	{
		.cmd = FXBLK_CMD_STATS,
		.doit = fxblk_nl_stats,
	},
};

static const struct genl_multicast_group fxblk_mcgrps[] = {
	{ .name = FXBLK_GENL_MCAST_EVENTS, },
};

static struct genl_family fxblk_genl_family __ro_after_init = {
	.name		= FXBLK_GENL_NAME,
	.version	= FXBLK_GENL_VERSION,
	.maxattr	= FXBLK_ATTR_MAX,
	.policy		= fxblk_policy,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= fxblk_genl_ops,
	.n_ops		= ARRAY_SIZE(fxblk_genl_ops),
	.mcgrps		= fxblk_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(fxblk_mcgrps),
#ifdef FXBLK_HAVE_GENL_RESV_START_OP
	/* Strict validation and no reserved-field leniency for any op. */
	.resv_start_op	= 0,
#endif
};

int fxblk_nl_init(void)
{
	int ret = genl_register_family(&fxblk_genl_family);

	if (!ret)
		fxblk_nl_live = true;
	return ret;
}

void fxblk_nl_exit(void)
{
	down_write(&fxblk_nl_rwsem);
	fxblk_nl_live = false;
	up_write(&fxblk_nl_rwsem);
	genl_unregister_family(&fxblk_genl_family);
}

MODULE_ALIAS_GENL_FAMILY(FXBLK_GENL_NAME);
