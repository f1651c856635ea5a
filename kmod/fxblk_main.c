// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk: stripes several block devices (NVMe-oF namespaces) into one
 * bio-based block device /dev/fxN, controlled over generic netlink "fxblk".
 *
 * This file: module init/exit and the volume registry. Volumes live in an
 * IDR keyed by N of /dev/fxN. fxblk_lock guards the IDR and each volume's
 * @published and is held only for lookups and registry changes, never
 * across member I/O, add_disk() or del_gendisk(): a CREATE stuck opening a
 * member whose paths are down must not stall GET, dumps or STATS. Lookups
 * return a reference (fxblk_vol_put()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/wait_bit.h>

#include "fxblk.h"
#include "fxblk_peer.h"
#include "fxblk_peerq.h"

DEFINE_MUTEX(fxblk_lock);
static DEFINE_IDR(fxblk_idr);
/* Teardowns; destroyed at module exit, after the last one finished. */
static struct workqueue_struct *fxblk_wq;
int fxblk_major;
/* Volumes allocated and not yet freed, removed-but-open ones included. */
static atomic_t fxblk_nr_live = ATOMIC_INIT(0);

static int fxblk_set_max_volumes(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (n < 1 || n > FXBLK_MAX_VOLUMES)
		return -EINVAL;
	*(unsigned int *)kp->arg = n;
	return 0;
}

static const struct kernel_param_ops fxblk_max_volumes_ops = {
	.set = fxblk_set_max_volumes,
	.get = param_get_uint,
};

static unsigned int fxblk_max_volumes = FXBLK_MAX_VOLUMES;
module_param_cb(max_volumes, &fxblk_max_volumes_ops, &fxblk_max_volumes, 0444);
MODULE_PARM_DESC(max_volumes,
		 "Most volumes (/dev/fx0 .. fxN-1) at once, 1..256 (default 256)");

/*
 * fxblk.auto=0 on the kernel command line turns udev and boot auto-assembly
 * off; fxctl reads it from /proc/cmdline. The module assembles nothing
 * itself, but modprobe hands it every fxblk.* word of the command line, and
 * the kernel logs "unknown parameter 'auto' ignored" for a word no module
 * parameter takes. Any text is taken (fxctl decides what it means) and shown
 * read-only in sysfs.
 */
static char *fxblk_auto = "1";
/*
 * compiler_types.h defines auto as __auto_type (6.1 and later stable trees),
 * which the parameter macros would expand into the name "__auto_type".
 */
#pragma push_macro("auto")
#undef auto
module_param_named(auto, fxblk_auto, charp, 0444);
MODULE_PARM_DESC(auto,
		 "Read by fxctl, not by the module: 0 (on the kernel command line) turns auto-assembly off");
#pragma pop_macro("auto")

static void fxblk_vol_release(struct kref *ref)
{
	fxblk_dev_free(container_of(ref, struct fxblk_volume, ref));
	if (atomic_dec_and_test(&fxblk_nr_live))
		wake_up_var(&fxblk_nr_live);
}

void fxblk_vol_put(struct fxblk_volume *vol)
{
	kref_put(&vol->ref, fxblk_vol_release);
}

unsigned int fxblk_live_volumes(void)
{
	return atomic_read(&fxblk_nr_live);
}

/*
 * A published volume by name, or by index if @name is NULL. With @any,
 * also one still being created (its name is taken) but none being removed.
 */
static struct fxblk_volume *__fxblk_find(const char *name, int index, bool any)
{
	struct fxblk_volume *vol;
	int id;

	lockdep_assert_held(&fxblk_lock);
	if (!name) {
		vol = idr_find(&fxblk_idr, index);
		return vol && vol->published ? vol : NULL;
	}
	idr_for_each_entry(&fxblk_idr, vol, id)
		if ((vol->published || (any && !READ_ONCE(vol->dying))) &&
		    !strcmp(vol->name, name))
			return vol;
	return NULL;
}

struct fxblk_volume *fxblk_get_volume(const char *name, int index)
{
	struct fxblk_volume *vol;

	mutex_lock(&fxblk_lock);
	vol = __fxblk_find(name, index, false);
	if (vol)
		kref_get(&vol->ref);
	mutex_unlock(&fxblk_lock);
	return vol;
}

/* The published volume with the smallest index >= *@index, for dumps. */
struct fxblk_volume *fxblk_get_next(int *index)
{
	struct fxblk_volume *vol;

	mutex_lock(&fxblk_lock);
	while ((vol = idr_get_next(&fxblk_idr, index)) && !vol->published)
		(*index)++;
	if (vol)
		kref_get(&vol->ref);
	mutex_unlock(&fxblk_lock);
	return vol;
}

/* On success *@volp holds a reference for the caller. */
int fxblk_create(const struct fxblk_create_req *req,
		 struct fxblk_volume **volp, struct netlink_ext_ack *extack)
{
	struct fxblk_volume *vol;
	int index, ret;

	vol = fxblk_dev_alloc(req, -1);
	if (!vol)
		return -ENOMEM;
	atomic_inc(&fxblk_nr_live);
	ret = mutex_lock_killable(&fxblk_lock);
	if (ret)
		goto out_put;
	if (__fxblk_find(req->name, 0, true)) {
		mutex_unlock(&fxblk_lock);
		FXBLK_ERR(extack, "volume \"%s\" already exists", req->name);
		ret = -EEXIST;
		goto out_put;
	}
	/* Reserves fx<index> and the name; lookups skip it until published. */
	index = idr_alloc(&fxblk_idr, vol, 0, fxblk_max_volumes, GFP_KERNEL);
	mutex_unlock(&fxblk_lock);
	if (index < 0) {
		if (index == -ENOSPC)
			FXBLK_ERR(extack, "all %u volumes in use (max_volumes)",
				  fxblk_max_volumes);
		ret = index;
		goto out_put;
	}
	vol->index = index;

	ret = fxblk_dev_setup(vol, req, extack);
	mutex_lock(&fxblk_lock);
	if (ret)
		idr_remove(&fxblk_idr, index);
	else
		vol->published = true;
	mutex_unlock(&fxblk_lock);
	if (ret)
		goto out_put;
	kref_get(&vol->ref);
	*volp = vol;
	return 0;

out_put:
	fxblk_vol_put(vol);
	return ret;
}

/*
 * Drains the volume's I/O (as long as its members take to answer, up to
 * nvme's ctrl_loss_tmo for a member without a path), deletes the disk and
 * closes the members, then tells listeners (DESTROYED, built when DESTROY
 * committed); after that fx<index> may be reused.
 */
static void fxblk_teardown(struct fxblk_volume *vol)
{
	fxblk_dev_destroy(vol);
	fxblk_nl_send(vol->destroyed_event);
	vol->destroyed_event = NULL;
	mutex_lock(&fxblk_lock);
	idr_remove(&fxblk_idr, vol->index);
	mutex_unlock(&fxblk_lock);
	pr_info("removed fx%d \"%s\"\n", vol->index, vol->name);
	complete_all(&vol->torn_down);
	fxblk_vol_put(vol);	/* the registry's */
}

static void fxblk_teardown_work(struct work_struct *work)
{
	fxblk_teardown(container_of(work, struct fxblk_volume, teardown_work));
}

/*
 * Stop new I/O and tell whether any is still in flight. The switch to
 * atomic mode waits for an RCU grace period, never for a member; after it
 * the kill drops the initial reference at once, so @drained is complete
 * here exactly if nothing was in flight.
 */
static bool fxblk_kill_idle(struct fxblk_volume *vol)
{
	percpu_ref_switch_to_atomic_sync(&vol->active);
	percpu_ref_kill(&vol->active);
	return completion_done(&vol->drained);
}

/*
 * The caller holds a reference, which stays its own. DESTROY runs under
 * genetlink's global lock (genl_rcv() holds cb_lock for every request):
 * sleeping there until a member answers would block every generic netlink
 * family of the host, and with a module load queued (cb_lock for writing)
 * even their readers. So an idle volume is torn down here, and one with
 * I/O in flight by the teardown work, whose DESTROYED event says when it
 * is gone; killing the requester changes nothing. @event is sent then (or
 * freed); on error it stays the caller's. Module exit (@wait) waits for
 * every teardown.
 */
static int __fxblk_destroy(struct fxblk_volume *vol, bool force, bool wait,
			   struct sk_buff *event, struct netlink_ext_ack *extack)
{
	int ret = 0;

	if (!wait)
		ret = mutex_lock_killable(&fxblk_lock);
	else
		mutex_lock(&fxblk_lock);
	if (ret)
		return ret;
	ret = vol->published ? fxblk_dev_mark_dying(vol, force) : -ENOENT;
	if (!ret) {
		vol->published = false;
		vol->destroyed_event = event;
	}
	mutex_unlock(&fxblk_lock);
	if (ret == -ENOENT)
		FXBLK_ERR(extack, "fx%d (%s) is being removed already",
			  vol->index, vol->name);
	else if (ret == -EBUSY)
		FXBLK_ERR(extack, "fx%d (%s) is open; close or unmount it first",
			  vol->index, vol->name);
	else if (ret == -EOPNOTSUPP)
		FXBLK_ERR(extack, "fx%d (%s) is open and this kernel cannot remove an open disk; close it first",
			  vol->index, vol->name);
	if (ret)
		return ret;

	if (fxblk_kill_idle(vol)) {
		fxblk_teardown(vol);
		return 0;
	}
	pr_info("removing fx%d \"%s\": waiting for its I/O in flight\n",
		vol->index, vol->name);
	INIT_WORK(&vol->teardown_work, fxblk_teardown_work);
	queue_work(fxblk_wq, &vol->teardown_work);
	if (wait)
		wait_for_completion(&vol->torn_down);
	return 0;
}

int fxblk_destroy(struct fxblk_volume *vol, bool force, struct sk_buff *event,
		  struct netlink_ext_ack *extack)
{
	return __fxblk_destroy(vol, force, false, event, extack);
}

static int __init fxblk_init(void)
{
	int ret;

	fxblk_wq = alloc_workqueue("fxblk", WQ_UNBOUND, 0);
	if (!fxblk_wq)
		return -ENOMEM;
	fxblk_major = register_blkdev(0, "fxblk");
	if (fxblk_major < 0) {
		ret = fxblk_major;
		goto out_wq;
	}
	ret = fxblk_peer_init();
	if (ret)
		goto out_blkdev;
	ret = fxblk_peerq_init();
	if (ret)
		goto out_peer;
	ret = fxblk_nl_init();
	if (ret)
		goto out_peerq;
	pr_info("version %s loaded, major %d\n", FXBLK_MOD_VERSION,
		fxblk_major);
	return 0;

out_peerq:
	fxblk_peerq_exit();
	fxblk_peerq_exit_late();
out_peer:
	fxblk_peer_exit();
out_blkdev:
	unregister_blkdev(fxblk_major, "fxblk");
out_wq:
	destroy_workqueue(fxblk_wq);
	return ret;
}

/*
 * The netlink family goes first so no request races the teardown and no
 * event is sent after it. No volume is open here: an open disk holds a
 * module reference (fops.owner), so rmmod is refused until it is closed.
 * A gendisk may still be referenced briefly (udev): wait for ->free_disk.
 */
static void __exit fxblk_exit(void)
{
	struct fxblk_volume *vol;
	int index = 0;

	fxblk_nl_exit();
	fxblk_peer_exit();
	fxblk_peerq_exit();
	while ((vol = fxblk_get_next(&index))) {
		/* Not killable: nobody could remove what is left after exit. */
		WARN_ON_ONCE(__fxblk_destroy(vol, false, true, NULL, NULL));
		fxblk_vol_put(vol);
	}
	wait_var_event(&fxblk_nr_live, !atomic_read(&fxblk_nr_live));
	fxblk_peerq_exit_late();
	destroy_workqueue(fxblk_wq);
	idr_destroy(&fxblk_idr);
	unregister_blkdev(fxblk_major, "fxblk");
}

module_init(fxblk_init);
module_exit(fxblk_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("fxblk developers");
MODULE_DESCRIPTION("Striped block device over NVMe-oF namespaces");
MODULE_VERSION(FXBLK_MOD_VERSION);
