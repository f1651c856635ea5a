// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk: stripes several block devices (NVMe-oF namespaces) into one
 * bio-based block device /dev/fxN, controlled over generic netlink "fxblk".
 *
 * This file: module init/exit and the volume registry. Volumes live in an
 * IDR keyed by N of /dev/fxN; fxblk_lock serialises every registry change and
 * every netlink request that walks it. It is a mutex because creating and
 * destroying volumes sleeps (member opens, add_disk, del_gendisk).
 */
#include <linux/blkdev.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "fxblk.h"

DEFINE_MUTEX(fxblk_lock);
static DEFINE_IDR(fxblk_idr);
int fxblk_major;

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

/* Look a volume up by name, or by index if @name is NULL. */
struct fxblk_volume *fxblk_find(const char *name, int index)
{
	struct fxblk_volume *vol;
	int id;

	lockdep_assert_held(&fxblk_lock);
	if (!name) {
		vol = idr_find(&fxblk_idr, index);
		return IS_ERR(vol) ? NULL : vol;
	}
	idr_for_each_entry(&fxblk_idr, vol, id)
		if (!IS_ERR(vol) && !strcmp(vol->name, name))
			return vol;
	return NULL;
}

/* The volume with the smallest index >= *@index, for dumps. */
struct fxblk_volume *fxblk_next(int *index)
{
	struct fxblk_volume *vol;

	lockdep_assert_held(&fxblk_lock);
	do {
		vol = idr_get_next(&fxblk_idr, index);
		if (!vol)
			return NULL;
		/* Reserved slot of a volume still being created. */
		if (IS_ERR(vol))
			(*index)++;
	} while (IS_ERR(vol));
	return vol;
}

int fxblk_create(const struct fxblk_create_req *req,
		 struct fxblk_volume **volp, struct netlink_ext_ack *extack)
{
	struct fxblk_volume *vol;
	int index;

	lockdep_assert_held(&fxblk_lock);
	if (fxblk_find(req->name, 0)) {
		FXBLK_ERR(extack, "volume \"%s\" already exists", req->name);
		return -EEXIST;
	}
	/* Reserve the index; an ERR_PTR is skipped by lookups meanwhile. */
	index = idr_alloc(&fxblk_idr, ERR_PTR(-EBUSY), 0, fxblk_max_volumes,
			  GFP_KERNEL);
	if (index < 0) {
		if (index == -ENOSPC)
			FXBLK_ERR(extack, "all %u volumes in use (max_volumes)",
				  fxblk_max_volumes);
		return index;
	}
	vol = fxblk_dev_create(req, index, extack);
	if (IS_ERR(vol)) {
		idr_remove(&fxblk_idr, index);
		return PTR_ERR(vol);
	}
	idr_replace(&fxblk_idr, vol, index);
	*volp = vol;
	return 0;
}

int fxblk_destroy(struct fxblk_volume *vol, struct netlink_ext_ack *extack)
{
	lockdep_assert_held(&fxblk_lock);
	if (fxblk_dev_mark_dying(vol)) {
		FXBLK_ERR(extack, "fx%d (%s) is open; close or unmount it first",
			  vol->index, vol->name);
		return -EBUSY;
	}
	idr_remove(&fxblk_idr, vol->index);
	fxblk_dev_destroy(vol);
	return 0;
}

static int __init fxblk_init(void)
{
	int ret;

	fxblk_major = register_blkdev(0, "fxblk");
	if (fxblk_major < 0)
		return fxblk_major;
	ret = fxblk_nl_init();
	if (ret)
		goto out_blkdev;
	pr_info("fxblk: version %s loaded, major %d\n", FXBLK_MOD_VERSION,
		fxblk_major);
	return 0;

out_blkdev:
	unregister_blkdev(fxblk_major, "fxblk");
	return ret;
}

/*
 * The netlink family goes first so no request races the teardown. No volume
 * is open here: an open disk holds a module reference (fops.owner), so
 * rmmod is refused until it is closed.
 */
static void __exit fxblk_exit(void)
{
	struct fxblk_volume *vol;
	int id;

	fxblk_nl_exit();
	mutex_lock(&fxblk_lock);
	idr_for_each_entry(&fxblk_idr, vol, id) {
		if (WARN_ON_ONCE(fxblk_dev_mark_dying(vol)))
			continue;
		fxblk_dev_destroy(vol);
	}
	idr_destroy(&fxblk_idr);
	mutex_unlock(&fxblk_lock);
	unregister_blkdev(fxblk_major, "fxblk");
}

module_init(fxblk_init);
module_exit(fxblk_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("fxblk developers");
MODULE_DESCRIPTION("Striped block device over NVMe-oF namespaces");
MODULE_VERSION(FXBLK_MOD_VERSION);
