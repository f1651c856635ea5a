// The disk side of every path: positional O_DIRECT reads and writes, and a
// queue that keeps several of them in flight for the staged path. An
// interface so the pipeline's tests run against memory with injected
// faults instead of /dev/fxN.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace fxio {

struct DiskDone {
	std::uint64_t tag;
	ssize_t result;  // bytes, or -errno
};

// Disk I/Os in flight, completed in any order (the shape of CopyStream).
class DiskQueue {
public:
	virtual ~DiskQueue() = default;
	// How many I/Os it takes at once.
	virtual unsigned depth() const = 0;
	// "io_uring", or "threads" (a pread/pwrite per worker thread).
	virtual const char *name() const = 0;
	// Starts a pread (or pwrite) of @n bytes at @off; 0 or -errno (then
	// nothing was started). At most depth() may be in flight.
	virtual int submit(std::uint64_t tag, bool write, void *buf, std::size_t n,
			   std::uint64_t off) = 0;
	// Appends finished I/Os to @out; @block: wait for at least one when any
	// is in flight. 0 or -errno.
	virtual int reap(std::vector<DiskDone> &out, bool block) = 0;
};

// Where the bytes of a disk live: a striped volume's chunk and member count
// (the block layer's io_min and io_opt / io_min, which fxblk and md raid0
// set so); 0 when unknown.
struct Geometry {
	std::uint64_t chunk = 0;  // bytes
	unsigned members = 0;
};

class BlockDev;
// A queue of @depth worker threads, each running the disk's own
// pread/pwrite: where io_uring is not available, and for the tests' disks.
std::unique_ptr<DiskQueue> make_thread_queue(BlockDev &dev, unsigned depth);

class BlockDev {
public:
	virtual ~BlockDev() = default;
	// As pread/pwrite(2) on an O_DIRECT descriptor: bytes or -errno.
	virtual ssize_t pread(void *buf, std::size_t n, std::uint64_t off) = 0;
	virtual ssize_t pwrite(const void *buf, std::size_t n, std::uint64_t off) = 0;
	virtual std::uint64_t size() const = 0;          // bytes
	virtual std::uint32_t block_size() const = 0;    // O_DIRECT alignment
	virtual int fd() const { return -1; }            // for the kernel's RW ioctl
	// A regular file grows on writes past its end (reads there are short).
	virtual bool growable() const { return false; }
	virtual Geometry geometry() const { return {}; }
	// A growable file: cut to @size bytes; 0 or -errno.
	virtual int truncate(std::uint64_t) { return -EOPNOTSUPP; }
	// Every write completed so far on stable media (fdatasync(2)); 0 or
	// -errno. A disk without a volatile cache has nothing to do.
	virtual int sync() { return 0; }
	// A queue for @depth I/Os in flight; @why says why it is not io_uring
	// when it is not (unchanged otherwise).
	virtual std::unique_ptr<DiskQueue> queue(unsigned depth, std::string &why)
	{
		why = "not a file descriptor";
		return make_thread_queue(*this, depth);
	}
};

// How many staged disk I/Os of @slot bytes keep a volume busy: enough to
// have two in flight on every member (2 x members x chunk bytes), at least
// 4, at most 32; 4 when the geometry is unknown.
unsigned auto_depth(const Geometry &g, std::size_t slot);

// Opens @path with O_DIRECT (block device or regular file); -errno.
int open_blockdev(const std::string &path, int flags, std::unique_ptr<BlockDev> &out);
// The caller's open @fd as it is (its access mode and O_DIRECT or not):
// -EBADF when it is not an open descriptor or an O_PATH one, -EINVAL with
// O_APPEND, -ENOTBLK when neither a block device nor a regular file. Closed with the BlockDev only
// when @own; never on failure.
int open_blockdev_fd(int fd, bool own, std::unique_ptr<BlockDev> &out);

}  // namespace fxio
