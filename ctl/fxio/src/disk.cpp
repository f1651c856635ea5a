#include "disk.hpp"

#include <cerrno>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fxio {
namespace {

class FdDev final : public BlockDev {
public:
	FdDev(int fd, std::uint64_t size, std::uint32_t bs, bool file)
		: fd_(fd), size_(size), bs_(bs), file_(file)
	{
	}
	~FdDev() override { ::close(fd_); }
	FdDev(const FdDev &) = delete;
	FdDev &operator=(const FdDev &) = delete;

	ssize_t pread(void *buf, std::size_t n, std::uint64_t off) override
	{
		ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(off));
		return r < 0 ? -errno : r;
	}
	ssize_t pwrite(const void *buf, std::size_t n, std::uint64_t off) override
	{
		ssize_t r = ::pwrite(fd_, buf, n, static_cast<off_t>(off));
		return r < 0 ? -errno : r;
	}
	std::uint64_t size() const override
	{
		struct stat st {};
		if (file_ && fstat(fd_, &st) == 0)
			return static_cast<std::uint64_t>(st.st_size);
		return size_;
	}
	bool growable() const override { return file_; }
	std::uint32_t block_size() const override { return bs_; }
	int fd() const override { return fd_; }

private:
	int fd_;
	std::uint64_t size_;
	std::uint32_t bs_;
	bool file_;
};

}  // namespace

int open_blockdev(const std::string &path, int flags, std::unique_ptr<BlockDev> &out)
{
	int acc = flags & O_ACCMODE;
	if (flags & ~O_ACCMODE)
		return -EINVAL;
	int fd = ::open(path.c_str(), acc | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st {};
	std::uint64_t size = 0;
	std::uint32_t bs = 4096;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		::close(fd);
		return -e;
	}
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;
		if (ioctl(fd, BLKGETSIZE64, &size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0) {
			int e = errno;
			::close(fd);
			return -e;
		}
		bs = static_cast<std::uint32_t>(lbs);
	} else if (S_ISREG(st.st_mode)) {
		size = static_cast<std::uint64_t>(st.st_size);  // O_DIRECT on a file: 4 KiB is safe
	} else {
		::close(fd);
		return -ENOTBLK;
	}
	out = std::make_unique<FdDev>(fd, size, bs, S_ISREG(st.st_mode));
	return 0;
}

}  // namespace fxio
