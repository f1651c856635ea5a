/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libfxio: reads and writes between /dev/fxN and host or accelerator
 * memory, shaped like cuFile/hipFile. Every I/O takes one of three paths
 * and says which (fxio_last_path) and why (fxio_last_reason):
 *
 *   direct  the buffer is registered with the kernel (/dev/fxblk-peer) and
 *           its memory has struct page: FXBLK_PEER_IOC_RW moves the data between
 *           /dev/fxN and the buffer (O_DIRECT on a disk that is not fxblk),
 *           zero CPU copies;
 *   staged  device memory the disk cannot DMA into (DMA-address-only, or
 *           no kernel support): O_DIRECT into a bounce pool (mlocked when
 *           RLIMIT_MEMLOCK allows, NUMA-preferred), pipelined with the
 *           accelerator's copy engine;
 *   posix   a host buffer that was never registered: plain O_DIRECT when
 *           buffer, offset and size are aligned, else through the pool.
 *
 * All functions return 0 (or a byte count, or an id) on success and a
 * negative errno on failure. Thread safety: calls on one handle may come
 * from several threads. fxio_last_path/fxio_last_reason are per calling
 * thread and handle: the last fxio_read/fxio_write this thread completed on
 * the handle (asynchronous I/O never changes them: each completion carries
 * its own path and reason, fxio_poll_completions).
 */
#ifndef FXIO_H
#define FXIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FXIO_VERSION_MAJOR 0
#define FXIO_VERSION_MINOR 2

#if defined(__GNUC__)
#define FXIO_API __attribute__((visibility("default")))
#else
#define FXIO_API
#endif

typedef struct fxio_file *fxio_handle_t;

/* fxio_open @flags: O_RDONLY, O_WRONLY or O_RDWR (O_DIRECT is added). */
FXIO_API int fxio_open(const char *path, int flags, fxio_handle_t *out);
FXIO_API int fxio_close(fxio_handle_t h);

/* fxio_buf_register @flags: what the memory is, so the staged path copies
 * with the right engine. Host memory is the default. Host memory is also
 * registered with the kernel (pinned) for the direct path; HIP and ACL
 * memory only where the kernel's provider for it can move it directly
 * (fxctl peer status: "direct"), since a pin that serves no I/O would only
 * hold the memory (VRAM kept after hipFree). */
#define FXIO_BUF_HOST		0x0u	/* CPU memory: host engine (memcpy) */
#define FXIO_BUF_HIP		0x1u	/* ROCm device memory: HIP engine */
#define FXIO_BUF_ACL		0x2u	/* Ascend device memory: AscendCL engine */
#define FXIO_BUF_EMULATED	0x3u	/* host memory treated as device memory
					 * (host engine, never direct): tests, bench */
#define FXIO_BUF_KIND_MASK	0xfu
#define FXIO_BUF_NO_KERNEL	0x100u	/* do not register with the kernel */

FXIO_API int fxio_buf_register(const void *base, size_t len, unsigned flags);
/* A dma-buf (0.2): [@offset, @offset + @len) of the buffer @dmabuf_fd,
 * which the I/O calls then name by @base (fxio_read(h, base, ...)). The
 * kernel holds the buffer (the fd may be closed after) and moves it
 * directly where fxblk's peer queues reach the disk (the NIC attaches it);
 * elsewhere libfxio stages it with the engine of @flags' kind (FXIO_BUF_HOST,
 * _HIP, _ACL) to and from @base, which must then be what that engine copies:
 * the device pointer the buffer was exported from (hipMalloc memory given to
 * hsa_amd_portable_export_dmabuf), or a host mapping of it. Deregistered
 * with fxio_buf_deregister(base). -ENODEV: neither path can move it. */
FXIO_API int fxio_buf_register_dmabuf(int dmabuf_fd, uint64_t offset, size_t len,
				      const void *base, unsigned flags);
FXIO_API int fxio_buf_deregister(const void *base);

/* @base: the buffer (registered or not); the I/O uses base + buf_off.
 * A write that returned is not yet durable: see fxio_sync. */
FXIO_API ssize_t fxio_read(fxio_handle_t h, void *base, size_t size, off_t dev_off, off_t buf_off);
FXIO_API ssize_t fxio_write(fxio_handle_t h, const void *base, size_t size, off_t dev_off,
		   off_t buf_off);

/* Of the last fxio_read/fxio_write the calling thread completed on @h
 * (failed ones too, not one refused for its arguments): "direct",
 * "staged", "posix", or "none" before the first. */
FXIO_API const char *fxio_last_path(fxio_handle_t h);
/* Why that I/O did not take the direct path, "" when it did: the precise
 * text, the kernel's or provider's own words where they gave one
 * ("provider rocm: ..."), else the text of fxio_reason_str. The string
 * lives as long as the process. */
FXIO_API const char *fxio_last_reason(fxio_handle_t h);

/* Asynchronous I/O: submit returns an id (>= 0) or -errno; completions are
 * collected with fxio_poll, in any order. */
FXIO_API int64_t fxio_submit_read(fxio_handle_t h, void *base, size_t size, off_t dev_off,
			 off_t buf_off, uint64_t user_data);
FXIO_API int64_t fxio_submit_write(fxio_handle_t h, const void *base, size_t size, off_t dev_off,
			  off_t buf_off, uint64_t user_data);

enum fxio_path { FXIO_PATH_NONE, FXIO_PATH_DIRECT, FXIO_PATH_STAGED, FXIO_PATH_POSIX };

struct fxio_event {
	int64_t id;
	uint64_t user_data;
	int64_t result;		/* bytes, or -errno */
	int32_t path;		/* enum fxio_path */
	int32_t reason;		/* enum fxio_reason */
};

/* Waits up to @timeout_ms (-1: forever, 0: do not wait) for at least one
 * completion; returns how many were stored in @events (0 on timeout), or
 * -errno. */
FXIO_API int fxio_poll(fxio_handle_t h, struct fxio_event *events, int max, int timeout_ms);

/* An asynchronous completion with the precise reason (since 0.2: symbol
 * version FXIO_0.2). @why is "" when the I/O went direct, else the same
 * text fxio_last_reason would give; it lives as long as the process. */
struct fxio_completion {
	int64_t id;
	uint64_t user_data;
	int64_t result;		/* bytes, or -errno */
	int32_t path;		/* enum fxio_path */
	int32_t reason;		/* enum fxio_reason */
	const char *why;
};
/* As fxio_poll, with the reason text. Events of one handle go to whichever
 * of fxio_poll and fxio_poll_completions collects them first. */
FXIO_API int fxio_poll_completions(fxio_handle_t h, struct fxio_completion *c, int max,
				   int timeout_ms);
/* Makes every write completed on @h's disk before the call durable,
 * whichever path moved it (since 0.2): fdatasync(2) of the disk. On
 * /dev/fxN that flushes every member and also fxblk's own NVMe-oF queues
 * that completed direct writes (an NVMe Flush covers only its own
 * controller's writes). Writes still in flight (fxio_submit_write not yet
 * polled) are not covered. 0, or -errno: EIO if a write may not be durable
 * (as fsync(2): report it, write the data again). */
FXIO_API int fxio_sync(fxio_handle_t h);
/* "direct", "staged", "posix" or "none" for an enum fxio_path. */
FXIO_API const char *fxio_path_str(int path);
/* What runs the staged path's disk I/O on @h: "io_uring", or "threads
 * (why not io_uring)"; "" before the first staged I/O. Lives until the
 * handle is closed. */
FXIO_API const char *fxio_disk_queue(fxio_handle_t h);

/* Why an I/O did not go direct (fxio_stats.fallbacks is indexed by it). */
enum fxio_reason {
	FXIO_REASON_NONE,		/* went direct */
	FXIO_REASON_NOT_REGISTERED,	/* buffer never registered (compat mode) */
	FXIO_REASON_NO_CONTROL_NODE,	/* /dev/fxblk-peer absent */
	FXIO_REASON_KERNEL_REFUSED,	/* registration refused (errno in stats) */
	FXIO_REASON_NO_STRUCT_PAGE,	/* memory is DMA-address-only */
	FXIO_REASON_P2PDMA_REFUSED,	/* the disk refused the pages (EREMOTEIO) */
	FXIO_REASON_UNALIGNED,		/* buffer, offset or size not block aligned */
	FXIO_REASON_NO_KERNEL_FLAG,	/* registered with FXIO_BUF_NO_KERNEL */
	FXIO_REASON_EMULATED,		/* FXIO_BUF_EMULATED memory */
	FXIO_REASON_MAX
};
FXIO_API const char *fxio_reason_str(int reason);

struct fxio_stats {
	uint64_t ios[4];		/* indexed by enum fxio_path */
	uint64_t bytes[4];
	uint64_t overlapped_slots;	/* O_DIRECT slot I/O that ran while a copy did */
	uint64_t staged_chunks;		/* slots moved through the pool */
	uint64_t fallbacks[FXIO_REASON_MAX];	/* I/Os that did not go direct, by reason */
	uint64_t errors;
	uint64_t pool_slots, pool_slot_bytes;
	uint64_t pool_locked;		/* 1 if the pool is mlock'ed */
	int32_t pool_numa_node;		/* -1: unknown */
	int32_t queue_depth;		/* staged disk I/Os in flight per request
					 * (0.1: reserved, 0) */
};
FXIO_API int fxio_get_stats(fxio_handle_t h, struct fxio_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* FXIO_H */
