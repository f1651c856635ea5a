// The C API: one process-wide Library, a handle per open disk.
#include "fxio.h"
#include "library.hpp"

#include <array>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

struct fxio_file {
	std::unique_ptr<fxio::File> f;
	std::uint64_t serial;  // never reused: the per-thread results' key
	std::mutex mu;         // guards queue
	std::string queue;     // fxio_disk_queue's text: set once, then constant
};

struct fxio_batch {
	fxio::Batch b;
};

namespace {

fxio::Library &lib()
{
	static fxio::Library l;
	return l;
}

std::atomic<std::uint64_t> next_serial{1};

// fxio_last_path/fxio_last_reason: per calling thread, per handle. A thread
// remembers its last synchronous I/O on the few handles it used last (the
// oldest is forgotten: its last path reads "none" again); the key is the
// handle's serial, so a handle allocated where a closed one was starts at
// "none".
struct LastIo {
	std::uint64_t serial = 0;
	fxio::Outcome o;
};
constexpr std::size_t last_slots = 16;
thread_local std::array<LastIo, last_slots> last_ios;
thread_local std::size_t last_next;

const fxio::Outcome *last_of(fxio_handle_t h)
{
	for (const LastIo &l : last_ios)
		if (l.serial == h->serial)
			return &l.o;
	return nullptr;
}

void remember(fxio_handle_t h, const fxio::Outcome &o)
{
	for (LastIo &l : last_ios)
		if (l.serial == h->serial) {
			l.o = o;
			return;
		}
	last_ios[last_next] = {h->serial, o};
	last_next = (last_next + 1) % last_slots;
}

const char *path_name(int p)
{
	switch (p) {
	case FXIO_PATH_DIRECT:
		return "direct";
	case FXIO_PATH_STAGED:
		return "staged";
	case FXIO_PATH_POSIX:
		return "posix";
	}
	return "none";
}

// No exception crosses the C boundary.
template <class F> auto guard(F &&f, decltype(f()) on_error) noexcept -> decltype(f())
{
	try {
		return f();
	} catch (const std::bad_alloc &) {
		return on_error;
	} catch (...) {
		return on_error;
	}
}

// What every I/O entry point checks before it touches the handle: 0 or -errno.
int io_args_error(fxio_handle_t h, off_t dev_off, off_t buf_off)
{
	if (!h)
		return -EBADF;
	if (dev_off < 0 || buf_off < 0)
		return -EINVAL;
	return 0;
}

// A handle on an open disk (fxio_open, fxio_open_fd).
int new_handle(std::unique_ptr<fxio::BlockDev> dev, fxio_handle_t *out)
{
	auto f = std::make_unique<fxio::File>(lib(), std::move(dev));
	*out = new fxio_file{std::move(f), next_serial++, {}, {}};
	return 0;
}

}  // namespace

extern "C" {

int fxio_open(const char *path, int flags, fxio_handle_t *out)
{
	if (!path || !out)
		return -EINVAL;
	return guard([&] {
		std::unique_ptr<fxio::BlockDev> dev;
		int r = fxio::open_blockdev(path, flags, dev);
		return r ? r : new_handle(std::move(dev), out);
	}, -ENOMEM);
}

int fxio_open_fd(int fd, unsigned flags, fxio_handle_t *out)
{
	if (!out || (flags & ~FXIO_OPEN_FD_OWN))
		return -EINVAL;
	return guard([&] {
		std::unique_ptr<fxio::BlockDev> dev;
		int r = fxio::open_blockdev_fd(fd, flags & FXIO_OPEN_FD_OWN, dev);
		return r ? r : new_handle(std::move(dev), out);
	}, -ENOMEM);
}

int fxio_close(fxio_handle_t h)
{
	if (!h)
		return -EBADF;
	if (guard([&] { return h->f->batches(); }, std::size_t{0}))
		return -EBUSY;  // its batches' entries run on its workers
	delete h;
	return 0;
}

int fxio_buf_register(const void *base, size_t len, unsigned flags)
{
	return guard([&] { return lib().buf_register(base, len, flags); }, -ENOMEM);
}

int fxio_buf_register_dmabuf(int dmabuf_fd, uint64_t offset, size_t len, const void *base,
			     unsigned flags)
{
	return guard([&] { return lib().buf_register_dmabuf(dmabuf_fd, offset, len, base, flags); },
		     -ENOMEM);
}

int fxio_buf_deregister(const void *base)
{
	return guard([&] { return lib().buf_deregister(base); }, -ENOMEM);
}

ssize_t fxio_read(fxio_handle_t h, void *base, size_t size, off_t dev_off, off_t buf_off)
{
	if (int e = io_args_error(h, dev_off, buf_off))
		return e;
	return guard([&] {
		fxio::Outcome o;
		ssize_t r = h->f->read(base, size, static_cast<std::uint64_t>(dev_off),
				       static_cast<std::uint64_t>(buf_off), o);
		if (o.path != FXIO_PATH_NONE)
			remember(h, o);
		return r;
	}, static_cast<ssize_t>(-ENOMEM));
}

ssize_t fxio_write(fxio_handle_t h, const void *base, size_t size, off_t dev_off,
		   off_t buf_off)
{
	if (int e = io_args_error(h, dev_off, buf_off))
		return e;
	return guard([&] {
		fxio::Outcome o;
		ssize_t r = h->f->write(base, size, static_cast<std::uint64_t>(dev_off),
					static_cast<std::uint64_t>(buf_off), o);
		if (o.path != FXIO_PATH_NONE)
			remember(h, o);
		return r;
	}, static_cast<ssize_t>(-ENOMEM));
}

const char *fxio_last_path(fxio_handle_t h)
{
	const fxio::Outcome *o = h ? last_of(h) : nullptr;
	return path_name(o ? o->path : FXIO_PATH_NONE);
}

const char *fxio_last_reason(fxio_handle_t h)
{
	const fxio::Outcome *o = h ? last_of(h) : nullptr;
	return o ? o->why : "";
}

const char *fxio_path_str(int path)
{
	return path_name(path);
}

const char *fxio_disk_queue(fxio_handle_t h)
{
	if (!h)
		return "";
	return guard([&] {
		// set once (the first staged I/O's queue), then never changed
		std::lock_guard lk(h->mu);
		if (h->queue.empty())
			h->queue = h->f->disk_queue();
		return h->queue.c_str();
	}, "");
}

int64_t fxio_submit_read(fxio_handle_t h, void *base, size_t size, off_t dev_off,
			 off_t buf_off, uint64_t user_data)
{
	if (int e = io_args_error(h, dev_off, buf_off))
		return e;
	return guard([&] {
		return h->f->submit(false, base, size, static_cast<std::uint64_t>(dev_off),
				    static_cast<std::uint64_t>(buf_off), user_data);
	}, static_cast<std::int64_t>(-ENOMEM));
}

int64_t fxio_submit_write(fxio_handle_t h, const void *base, size_t size, off_t dev_off,
			  off_t buf_off, uint64_t user_data)
{
	if (int e = io_args_error(h, dev_off, buf_off))
		return e;
	return guard([&] {
		return h->f->submit(true, const_cast<void *>(base), size,
				    static_cast<std::uint64_t>(dev_off),
				    static_cast<std::uint64_t>(buf_off), user_data);
	}, static_cast<std::int64_t>(-ENOMEM));
}

int fxio_poll(fxio_handle_t h, struct fxio_event *events, int max, int timeout_ms)
{
	if (!h)
		return -EBADF;
	return guard([&] { return h->f->poll(events, max, timeout_ms); }, -ENOMEM);
}

int fxio_poll_completions(fxio_handle_t h, struct fxio_completion *c, int max, int timeout_ms)
{
	if (!h)
		return -EBADF;
	return guard([&] { return h->f->poll(c, max, timeout_ms); }, -ENOMEM);
}

const char *fxio_reason_str(int reason)
{
	switch (reason) {
	case FXIO_REASON_NONE:
		return "";
	case FXIO_REASON_NOT_REGISTERED:
		return "buffer not registered (compat mode)";
	case FXIO_REASON_NO_CONTROL_NODE:
		return "no kernel control node /dev/fxblk-peer";
	case FXIO_REASON_KERNEL_REFUSED:
		return "the kernel refused the registration";
	case FXIO_REASON_NO_STRUCT_PAGE:
		return "memory has no struct page (DMA address only)";
	case FXIO_REASON_P2PDMA_REFUSED:
		return "the disk refused peer-to-peer pages (EREMOTEIO: no P2PDMA)";
	case FXIO_REASON_UNALIGNED:
		return "buffer, offset or size not aligned to the disk's block size";
	case FXIO_REASON_NO_KERNEL_FLAG:
		return "registered with FXIO_BUF_NO_KERNEL";
	case FXIO_REASON_EMULATED:
		return "emulated device memory";
	}
	return "unknown reason";
}

int fxio_sync(fxio_handle_t h)
{
	if (!h)
		return -EBADF;
	return h->f->sync();
}

int fxio_batch_setup(fxio_handle_t h, unsigned max_entries, fxio_batch_t *out)
{
	if (!h)
		return -EBADF;
	if (!out || max_entries == 0 || max_entries > 65536)
		return -EINVAL;
	return guard([&] {
		*out = new fxio_batch{{*h->f, max_entries}};
		return 0;
	}, -ENOMEM);
}

int fxio_batch_submit(fxio_batch_t b, const struct fxio_batch_io *ios, unsigned n,
		      unsigned flags)
{
	if (!b)
		return -EBADF;
	if (flags)
		return -EINVAL;
	return guard([&] { return b->b.submit(ios, n); }, -ENOMEM);
}

int fxio_batch_status(fxio_batch_t b, struct fxio_batch_event *ev, unsigned min_nr,
		      unsigned max, int timeout_ms)
{
	if (!b)
		return -EBADF;
	return guard([&] { return b->b.status(ev, min_nr, max, timeout_ms); }, -ENOMEM);
}

int fxio_batch_cancel(fxio_batch_t b)
{
	if (!b)
		return -EBADF;
	return guard([&] { return b->b.cancel(); }, -ENOMEM);
}

int fxio_batch_destroy(fxio_batch_t b)
{
	if (!b)
		return -EBADF;
	delete b;
	return 0;
}

int fxio_get_properties(struct fxio_properties *out, size_t size)
{
	if (!out || size < 8)
		return -EINVAL;
	return guard([&] {
		fxio_properties p;
		lib().properties(p);
		p.size = static_cast<std::uint32_t>(std::min(size, sizeof(p)));
		std::memcpy(out, &p, p.size);
		return 0;
	}, -ENOMEM);
}

int fxio_get_stats(fxio_handle_t h, struct fxio_stats *out)
{
	if (!h)
		return -EBADF;
	if (!out)
		return -EINVAL;
	*out = h->f->stats();
	return 0;
}

}  // extern "C"
