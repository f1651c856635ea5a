// SPDX-License-Identifier: GPL-2.0
/*
 * Member and volume health.
 *
 * A member is LIVE, FAILING (an I/O error within the last
 * FXBLK_FAILING_SECS seconds) or GONE (its disk was deleted: nvme gave up on
 * the controller after ctrl_loss_tmo). GONE is final for the volume's life.
 * A volume takes the worst state of its members. Path flaps that nvme
 * multipath rides out never reach us as errors: the I/O waits, then works.
 *
 * Completions only note the error and, at most once a second per member,
 * kick health_work; the work (process context) recomputes the state, sends
 * MEMBER_ERROR and MEMBER_STATE events and a change uevent on fxN, and
 * re-arms itself to bring a FAILING member back to LIVE.
 *
 * GONE is learnt from holder ops where the kernel has them (6.5+: the
 * member's disk calls ->mark_dead), else from disk_live() when an I/O on
 * the member fails (the bdev is safe to look at while our bio is on it).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/jiffies.h>
#include <linux/kobject.h>
#include <linux/workqueue.h>

#include "fxblk.h"

#define FXBLK_FAILING_JIFFIES	(FXBLK_FAILING_SECS * HZ)

static const char * const fxblk_state_names[] = {
	[FXBLK_STATE_LIVE] = "live",
	[FXBLK_STATE_FAILING] = "failing",
	[FXBLK_STATE_GONE] = "gone",
};

u64 fxblk_member_errors(struct fxblk_member *m)
{
	u64 n = 0;
	int cpu, d;

	for_each_possible_cpu(cpu)
		for (d = 0; d < FXBLK_NR_DIRS; d++)
			n += per_cpu_ptr(m->stats, cpu)->errors[d];
	return n;
}

unsigned int fxblk_volume_state(struct fxblk_volume *vol)
{
	unsigned int i, s = FXBLK_STATE_LIVE;

	for (i = 0; i < vol->nr_members; i++)
		s = max(s, READ_ONCE(vol->members[i].state));
	return s;
}

static void fxblk_health_kick(struct fxblk_member *m)
{
	WRITE_ONCE(m->last_kick, jiffies);
	mod_delayed_work(system_wq, &m->health_work, 0);
}

/* GONE is final; a FAILING or LIVE member may become GONE. */
static bool fxblk_set_gone(struct fxblk_member *m)
{
	return xchg(&m->state, FXBLK_STATE_GONE) != FXBLK_STATE_GONE;
}

/*
 * From a member bio's completion, any context. An error storm costs a
 * few plain loads per error: only a state change or a second gone by
 * since the last kick touches the work item.
 */
void fxblk_health_io_error(struct fxblk_member *m, blk_status_t status)
{
	bool changed = false;

	WRITE_ONCE(m->last_errno, blk_status_to_errno(status));
	WRITE_ONCE(m->last_error, jiffies);
	if (!fxblk_disk_live(m->bdev->bd_disk))
		changed = fxblk_set_gone(m);
	else if (READ_ONCE(m->state) == FXBLK_STATE_LIVE)
		changed = cmpxchg(&m->state, FXBLK_STATE_LIVE,
				  FXBLK_STATE_FAILING) == FXBLK_STATE_LIVE;
	if (changed || time_after(jiffies, READ_ONCE(m->last_kick) + HZ))
		fxblk_health_kick(m);
}

static void fxblk_health_uevent(struct fxblk_member *m, unsigned int state)
{
	char member[32], st[32];
	char *envp[3];

	envp[0] = member;
	envp[1] = st;
	envp[2] = NULL;
	snprintf(member, sizeof(member), "FXBLK_MEMBER=%u", m->index);
	snprintf(st, sizeof(st), "FXBLK_MEMBER_STATE=%s",
		 fxblk_state_names[state]);
	kobject_uevent_env(&disk_to_dev(m->vol->disk)->kobj, KOBJ_CHANGE,
			   envp);
}

static void fxblk_health_work(struct work_struct *work)
{
	struct fxblk_member *m = container_of(to_delayed_work(work),
					      struct fxblk_member,
					      health_work);
	unsigned long now = jiffies, last = READ_ONCE(m->last_error);
	unsigned long next = 0;
	unsigned int state;
	u64 errors;

	/*
	 * No disk yet (CREATE is still opening members, or failed), or torn
	 * down (or being): nothing of the disk may be touched. A volume that
	 * comes up catches up in fxblk_health_start() (acquire: pairs with
	 * its release, so vol->disk is seen).
	 */
	if (!smp_load_acquire(&m->vol->ready) || READ_ONCE(m->vol->dying))
		return;
	/* A failing member that stayed quiet long enough is live again. */
	if (READ_ONCE(m->state) == FXBLK_STATE_FAILING) {
		if (time_after_eq(now, last + FXBLK_FAILING_JIFFIES))
			cmpxchg(&m->state, FXBLK_STATE_FAILING,
				FXBLK_STATE_LIVE);
		else
			next = last + FXBLK_FAILING_JIFFIES - now;
	}
	errors = fxblk_member_errors(m);
	if (errors != m->errors_reported) {
		if (time_after_eq(now, m->last_event + HZ)) {
			pr_warn("%s: member %u (%s) failed %llu I/O(s), last error %d\n",
				m->vol->name, m->index, m->disk_name,
				errors - m->errors_reported,
				READ_ONCE(m->last_errno));
			fxblk_nl_event(m->vol, FXBLK_EVENT_MEMBER_ERROR, m,
				       READ_ONCE(m->last_errno));
			m->errors_reported = errors;
			m->last_event = now;
		} else {
			next = next ? min(next, m->last_event + HZ - now) :
				      m->last_event + HZ - now;
		}
	}
	state = READ_ONCE(m->state);
	if (state != m->reported_state) {
		pr_warn("%s: member %u (%s) is %s\n", m->vol->name, m->index,
			m->disk_name, fxblk_state_names[state]);
		m->reported_state = state;
		fxblk_nl_event(m->vol, FXBLK_EVENT_MEMBER_STATE, m, 0);
		fxblk_health_uevent(m, state);
	}
	if (next)
		queue_delayed_work(system_wq, &m->health_work, next);
}

void fxblk_health_init(struct fxblk_member *m)
{
	m->state = FXBLK_STATE_LIVE;
	m->reported_state = FXBLK_STATE_LIVE;
	m->last_kick = jiffies - HZ;
	m->last_event = jiffies - HZ;
	INIT_DELAYED_WORK(&m->health_work, fxblk_health_work);
}

/*
 * fxN exists and its members are linked: from now on health work may send
 * events and uevents on it. What happened before (a member that went away
 * while CREATE ran, errors of the partition scan) is reported now.
 */
void fxblk_health_start(struct fxblk_volume *vol)
{
	unsigned int i;

	/* Pairs with the acquires below: a work that sees it sees vol->disk. */
	smp_store_release(&vol->ready, true);
	for (i = 0; i < vol->nr_members; i++)
		fxblk_health_kick(&vol->members[i]);
}

/* After the member was closed: no completion or ->mark_dead can kick. */
void fxblk_health_exit(struct fxblk_member *m)
{
	cancel_delayed_work_sync(&m->health_work);
}

/* ---- holder ops ----------------------------------------------------------- */

#if defined(FXBLK_HAVE_HOLDER_OPS_SURPRISE) || defined(FXBLK_HAVE_HOLDER_OPS)
/*
 * Called with bdev->bd_holder_lock held, so the volume cannot go away. It
 * may be called as soon as the member is opened, long before fxN exists.
 */
static void fxblk_member_dead(struct block_device *bdev)
{
	struct fxblk_volume *vol = bdev->bd_holder;
	unsigned int i;

	for (i = 0; i < vol->nr_members; i++) {
		struct fxblk_member *m = &vol->members[i];

		if (m->bdev != bdev || !fxblk_set_gone(m))
			continue;
		/* Pairs with fxblk_health_start(): before it, the state waits. */
		if (smp_load_acquire(&vol->ready) && !READ_ONCE(vol->dying))
			fxblk_health_kick(m);
	}
}

#ifdef FXBLK_HAVE_HOLDER_OPS_SURPRISE
/* 6.8+: the callee drops bd_holder_lock (see bdev_mark_dead()). */
static void fxblk_mark_dead(struct block_device *bdev, bool surprise)
{
	fxblk_member_dead(bdev);
	mutex_unlock(&bdev->bd_holder_lock);
}
#else
static void fxblk_mark_dead(struct block_device *bdev)
{
	fxblk_member_dead(bdev);
}
#endif

const struct blk_holder_ops fxblk_holder_ops = {
	.mark_dead = fxblk_mark_dead,
};
#endif
