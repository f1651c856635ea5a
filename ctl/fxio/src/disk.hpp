// The disk side of every path: positional O_DIRECT reads and writes. An
// interface so the pipeline's tests run against memory with injected
// faults instead of /dev/fxN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>

namespace fxio {

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
};

// Opens @path with O_DIRECT (block device or regular file); -errno.
int open_blockdev(const std::string &path, int flags, std::unique_ptr<BlockDev> &out);

}  // namespace fxio
