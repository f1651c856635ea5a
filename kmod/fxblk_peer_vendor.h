/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the vendor glue modules (fxblk_rocm.ko from fxblk_peer_rocm.c,
 * fxblk_ascend.ko from fxblk_peer_ascend.c) share. Each links normally
 * against its vendor's exported symbols, with the vendor's own header
 * (amdgpu-dkms' drm/amd_rdma.h, the Ascend driver's ascend_kernel_hal.h)
 * and Module.symvers (KBUILD_EXTRA_SYMBOLS; kmod/vendor-glue.sh finds
 * them), so the module loader holds the vendor module while the glue is
 * loaded and refuses to load the glue without it: there is no
 * symbol_get(), which since 6.6 finds EXPORT_SYMBOL_GPL symbols only.
 * fxblk.ko itself references no vendor symbol and loads anywhere.
 *
 * A glue's module init checks the vendor interface, then takes its slot
 * with fxblk_peer_register_provider(ops) (ops->owner = THIS_MODULE); its
 * exit gives it back. Its ops run in the registering process (pin) or in
 * fxblk's process context (unpin), its vendor callback calls
 * fxblk_peer_revoke() and nothing else of fxblk.
 */
#ifndef FXBLK_PEER_VENDOR_H
#define FXBLK_PEER_VENDOR_H

#include <linux/module.h>

#include "fxblk_peer.h"

#endif /* FXBLK_PEER_VENDOR_H */
