#!/bin/bash
# Runs in the lab VM: writes a lockdep "possible circular locking dependency"
# report into the kernel log through /dev/kmsg, as the debug kernel prints
# it. Its chain is nvmet-rdma's (tests/lab/known-reports) with "nvmet", and
# the same with an fxblk frame in the stack with "fxblk". The script passes;
# only the lab's kernel-log check decides: known -> pass, fxblk -> fail.
set -e
k() { echo "$*" > /dev/kmsg; }
k "======================================================"
k "WARNING: possible circular locking dependency detected"
k "6.12.117-fxdebug #1 Tainted: G           O"
k "------------------------------------------------------"
k "rm/1234 is trying to acquire lock:"
k "ffff888104a1c0c8 (&id_priv->handler_mutex){+.+.}-{4:4}, at: rdma_destroy_id+0x1c/0x60 [rdma_cm]"
k "but task is already holding lock:"
k "ffffffffc0a2e0b0 (nvmet_config_sem){++++}-{4:4}, at: nvmet_port_subsys_drop_link+0x4d/0x2b0 [nvmet]"
k "the existing dependency chain (in reverse order) is:"
k "-> #1 (nvmet_config_sem){++++}-{4:4}:"
k "       nvmet_find_get_subsys+0x3a/0x2d0 [nvmet]"
k "-> #0 (&id_priv->handler_mutex){+.+.}-{4:4}:"
k "       rdma_destroy_id+0x1c/0x60 [rdma_cm]"
k "stack backtrace:"
k "Call Trace:"
k " <TASK>"
[ "${1:-}" != fxblk ] || k " fxblk_submit_bio+0x1c/0x60 [fxblk]"
k " nvmet_rdma_remove_port+0x30/0x50 [nvmet_rdma]"
k " </TASK>"
echo "lockdep-report.sh: wrote a ${1:-nvmet} lockdep report into the kernel log"
exit 0
