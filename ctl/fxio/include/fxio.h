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
#define FXIO_VERSION_MINOR 3

#if defined(__GNUC__)
#define FXIO_API __attribute__((visibility("default")))
#else
#define FXIO_API
#endif

typedef struct fxio_file *fxio_handle_t;

/* fxio_open @flags: O_RDONLY, O_WRONLY or O_RDWR (O_DIRECT is added). */
FXIO_API int fxio_open(const char *path, int flags, fxio_handle_t *out);
/* A handle on a descriptor the caller opened (since 0.3, as
 * cuFileHandleRegister): a block device (/dev/fxN) or a regular file, e.g. a
 * file on a file system on fxN opened with O_DIRECT. The fd is used as it
 * is: its access mode decides what I/O is allowed (a write on an O_RDONLY
 * fd fails -EBADF) and nothing is added to it (without O_DIRECT the posix
 * and staged paths go through the page cache; the fd's file status flags
 * are shared with every dup of it, so libfxio does not change them). The
 * handle does not own the fd: fxio_close leaves it open, and the caller
 * must keep it open until then; with FXIO_OPEN_FD_OWN, fxio_close closes
 * it. A failed call never closes it. -EBADF: @fd is not an open descriptor
 * (or an O_PATH one); -ENOTBLK: neither a block device nor a regular file;
 * -EINVAL: @out null, unknown @flags, or an O_APPEND fd (pwrite(2) on it
 * writes at the end, whatever the offset). */
#define FXIO_OPEN_FD_OWN	0x1u	/* fxio_close closes the fd */
FXIO_API int fxio_open_fd(int fd, unsigned flags, fxio_handle_t *out);
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
#define FXIO_BUF_AUTO		0x4u	/* (0.3) ask the runtimes already in the
					 * process: HIP's hipPointerGetAttributes,
					 * ACL's aclrtPointerGetAttributes; their
					 * device memory is registered as _HIP or
					 * _ACL, anything else (no runtime loaded,
					 * host memory registered with it or not,
					 * managed memory, a runtime too old to
					 * tell) as FXIO_BUF_HOST. fxio_buf_register
					 * only. */
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

/*
 * Batches (since 0.3: symbol version FXIO_0.3), shaped like cuFile's
 * cuFileBatchIO*: up to @max_entries reads and writes of one handle in
 * flight at once, each with the caller's cookie, each finishing alone
 * (a failed entry leaves the others running). Entries run on the handle's
 * asynchronous workers (FXIO_WORKERS, as fxio_submit_*) and take the same
 * paths; their completions go to the batch only (fxio_poll never sees
 * them). Unlike cuFile, a batch belongs to one handle (one batch per
 * file). A batch is used by one thread at a time; several batches of one
 * handle may be used by several threads. Entries run concurrently and in
 * no set order: two entries that write parts of one disk block (not block
 * aligned) race in the staged path's read-modify-write of that block, as
 * any two concurrent writers do; split writes at block boundaries.
 */
typedef struct fxio_batch *fxio_batch_t;

enum fxio_batch_op { FXIO_BATCH_READ, FXIO_BATCH_WRITE };

/* One entry: @size bytes between base + buf_off and the disk at @dev_off. */
struct fxio_batch_io {
	int32_t op;		/* enum fxio_batch_op */
	uint32_t reserved;	/* 0 */
	void *base;		/* a write only reads it */
	size_t size;
	off_t dev_off;
	off_t buf_off;
	uint64_t cookie;	/* returned in the entry's event */
};

enum fxio_batch_status {
	FXIO_BATCH_DONE,	/* result: bytes moved (short at the end of the disk) */
	FXIO_BATCH_FAILED,	/* result: -errno; path NONE if it never ran
				 * (EINVAL: a negative offset or unknown op;
				 * EFAULT: no buffer; ENOSPC: a write past the
				 * end of a disk) */
	FXIO_BATCH_CANCELED,	/* result: -ECANCELED; never started */
};

/* An entry's end; @path, @reason and @why as in struct fxio_completion. */
struct fxio_batch_event {
	uint64_t cookie;
	int64_t result;		/* bytes, or -errno */
	int32_t status;		/* enum fxio_batch_status */
	int32_t path;		/* enum fxio_path */
	int32_t reason;		/* enum fxio_reason */
	uint32_t reserved;
	const char *why;	/* lives as long as the process */
};

/* A batch on @h for up to @max_entries (1..65536) entries submitted and not
 * yet returned by fxio_batch_status. -EINVAL, -EBADF. */
FXIO_API int fxio_batch_setup(fxio_handle_t h, unsigned max_entries, fxio_batch_t *out);
/* Queues @n entries (all or none: -EAGAIN when they do not fit beside the
 * entries not yet collected, -EINVAL when @n exceeds max_entries or @flags
 * is not 0). An entry with bad arguments is not refused here: it ends
 * FXIO_BATCH_FAILED alone. Returns @n. */
FXIO_API int fxio_batch_submit(fxio_batch_t b, const struct fxio_batch_io *ios, unsigned n,
			       unsigned flags);
/* Stores up to @max ended entries (done, failed or canceled; each once, in
 * the order they ended) in @ev. Waits up to @timeout_ms (-1: forever, 0:
 * not at all) until @min_nr have ended, or all of them if fewer are
 * outstanding; returns how many were stored (fewer than @min_nr on
 * timeout; 0 at once when nothing is outstanding), or -errno. */
FXIO_API int fxio_batch_status(fxio_batch_t b, struct fxio_batch_event *ev, unsigned min_nr,
			       unsigned max, int timeout_ms);
/* Cancels every entry not yet started: each ends FXIO_BATCH_CANCELED
 * (-ECANCELED), reported by fxio_batch_status. Entries already running
 * finish (an I/O is never cut short). Returns how many were canceled. */
FXIO_API int fxio_batch_cancel(fxio_batch_t b);
/* Cancels what has not started, waits for the entries running (their
 * buffers are in use until then), drops every event not collected and
 * frees the batch. fxio_close of a handle refuses (-EBUSY) while a batch
 * of it exists. */
FXIO_API int fxio_batch_destroy(fxio_batch_t b);

/*
 * What this library and the kernel under it offer (since 0.3), as
 * cuFileDriverGetProperties. fxio_get_properties(&p, sizeof(p)) fills
 * min(@size, the library's size) bytes, so a caller built against an older,
 * shorter struct keeps working; p.size says how many were filled. Strings
 * live as long as the process. The first call may load the HIP and ACL
 * runtimes (dlopen) to see whether their engines work.
 */
#define FXIO_PROVIDER_PRESENT	0x1u	/* the kernel found the vendor's interface */
#define FXIO_PROVIDER_DIRECT	0x2u	/* its memory has pages the kernel's RW
					 * puts in bios: the direct path */
#define FXIO_PROVIDER_PEERQ	0x4u	/* its DMA-only memory moves over fxblk's
					 * own NVMe-oF queues (direct where a disk
					 * has them) */
#define FXIO_MAX_PROVIDERS	8

struct fxio_provider_info {
	const char *name;	/* the kernel's: "host", "rocm", "ascend", "dmabuf" */
	uint32_t flags;		/* FXIO_PROVIDER_* */
	uint32_t reserved;
	const char *reason;	/* the kernel's words: why not present or not
				 * direct; "" when present and direct */
};

struct fxio_engine_info {
	const char *name;	/* "host", "hip" (ROCm), "acl" (Ascend) */
	uint32_t present;	/* 1: the staged path can copy this memory kind */
	uint32_t reserved;
	const char *reason;	/* why not ("libamdhip64.so not found ..."); "" */
};

struct fxio_properties {
	uint32_t size;			/* bytes of this struct filled */
	uint16_t version_major;		/* the library's FXIO_VERSION_MAJOR, */
	uint16_t version_minor;		/* ... _MINOR (may exceed the header's) */
	/* The kernel (/dev/fxblk-peer): ABI 0 and every provider absent when
	 * the control node cannot be used; @kernel_reason says why. */
	uint32_t kernel_abi;
	uint32_t nproviders;		/* entries of @providers filled */
	const char *kernel_reason;
	struct fxio_provider_info providers[FXIO_MAX_PROVIDERS];
	/* Bytes one kernel RW moves at most (0 without the control node): a
	 * longer direct I/O is split into RWs of this size, one after the
	 * other, so it is the direct path's step, not a limit on fxio_read. */
	uint64_t max_direct_io;
	/* Copy engines of the staged path, indexed by FXIO_BUF_HOST, _HIP,
	 * _ACL. */
	struct fxio_engine_info engines[3];
	/* The bounce pool each open handle maps on its first staged I/O:
	 * @pool_slots slots of @pool_slot_bytes (FXIO_POOL_SLOTS,
	 * FXIO_SLOT_KIB); a handle whose queue depth needs more maps depth + 2
	 * slots (fxio_stats has a handle's own). */
	uint64_t pool_slots;
	uint64_t pool_slot_bytes;
	uint32_t queue_depth;		/* staged disk I/Os in flight per request
					 * (FXIO_DEPTH); 0: per disk, from its
					 * members and chunk (fxio_stats.queue_depth) */
	uint32_t async_workers;		/* threads per handle running asynchronous
					 * and batch entries (FXIO_WORKERS) */
};
/* 0, or -EINVAL (@out null, @size < 8). */
FXIO_API int fxio_get_properties(struct fxio_properties *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* FXIO_H */
