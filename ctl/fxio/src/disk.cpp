#include "disk.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <linux/fs.h>
#include <mutex>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
#include <unistd.h>

#ifdef FXIO_HAVE_LIBURING
#include <liburing.h>
#endif

namespace fxio {

unsigned auto_depth(const Geometry &g, std::size_t slot)
{
	if (!g.chunk || !g.members || !slot)
		return 4;
	std::uint64_t want = (2 * g.members * g.chunk + slot - 1) / slot;
	return static_cast<unsigned>(std::clamp<std::uint64_t>(want, 4, 32));
}

namespace {

// ---- a queue of threads ------------------------------------------------------

class ThreadQueue final : public DiskQueue {
public:
	ThreadQueue(BlockDev &dev, unsigned depth) : dev_(dev), depth_(std::max(depth, 1u))
	{
		for (unsigned i = 0; i < depth_; ++i)
			workers_.emplace_back([this] { run(); });
	}
	~ThreadQueue() override
	{
		{
			std::lock_guard lk(mu_);
			stop_ = true;
		}
		cv_.notify_all();
		for (auto &t : workers_)
			t.join();
	}
	unsigned depth() const override { return depth_; }
	const char *name() const override { return "threads"; }

	int submit(std::uint64_t tag, bool write, void *buf, std::size_t n,
		   std::uint64_t off) override
	{
		{
			std::lock_guard lk(mu_);
			if (pending_ >= depth_)
				return -EBUSY;
			jobs_.push_back({tag, write, buf, n, off});
			++pending_;
		}
		cv_.notify_all();
		return 0;
	}

	int reap(std::vector<DiskDone> &out, bool block) override
	{
		std::unique_lock lk(mu_);
		if (block)
			cv_.wait(lk, [&] { return !done_.empty() || pending_ == 0; });
		out.insert(out.end(), done_.begin(), done_.end());
		done_.clear();
		return 0;
	}

private:
	struct Job {
		std::uint64_t tag;
		bool write;
		void *buf;
		std::size_t n;
		std::uint64_t off;
	};

	void run()
	{
		std::unique_lock lk(mu_);
		for (;;) {
			cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
			if (jobs_.empty())
				return;
			Job j = jobs_.front();
			jobs_.pop_front();
			lk.unlock();
			ssize_t r = j.write ? dev_.pwrite(j.buf, j.n, j.off) : dev_.pread(j.buf, j.n, j.off);
			lk.lock();
			done_.push_back({j.tag, r});
			--pending_;
			cv_.notify_all();
		}
	}

	BlockDev &dev_;
	unsigned depth_;
	std::mutex mu_;
	std::condition_variable cv_;
	std::deque<Job> jobs_;
	std::vector<DiskDone> done_;
	unsigned pending_ = 0;
	bool stop_ = false;
	std::vector<std::thread> workers_;  // last: start after the members above
};

#ifdef FXIO_HAVE_LIBURING
// ---- io_uring: one ring per queue, used by one pipeline at a time ------------

class UringQueue final : public DiskQueue {
public:
	~UringQueue() override
	{
		// Never leave the kernel writing into a slot we hand back.
		while (pending_) {
			io_uring_cqe *cqe = nullptr;
			if (io_uring_wait_cqe(&ring_, &cqe) < 0)
				break;
			io_uring_cqe_seen(&ring_, cqe);
			--pending_;
		}
		io_uring_queue_exit(&ring_);
	}
	// 0 or -errno (io_uring refused: old kernel, seccomp, sysctl
	// kernel.io_uring_disabled).
	static int create(int fd, unsigned depth, std::unique_ptr<DiskQueue> &out)
	{
		auto q = std::unique_ptr<UringQueue>(new UringQueue(fd, std::max(depth, 1u)));
		if (int e = io_uring_queue_init(q->depth_, &q->ring_, 0); e < 0)
			return e;
		out = std::move(q);
		return 0;
	}
	unsigned depth() const override { return depth_; }
	const char *name() const override { return "io_uring"; }

	int submit(std::uint64_t tag, bool write, void *buf, std::size_t n,
		   std::uint64_t off) override
	{
		if (pending_ >= depth_)
			return -EBUSY;
		io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
		if (!sqe)
			return -EBUSY;
		if (write)
			io_uring_prep_write(sqe, fd_, buf, static_cast<unsigned>(n), off);
		else
			io_uring_prep_read(sqe, fd_, buf, static_cast<unsigned>(n), off);
		io_uring_sqe_set_data64(sqe, tag);
		int r = io_uring_submit(&ring_);
		if (r < 0)
			return r;
		++pending_;
		return 0;
	}

	int reap(std::vector<DiskDone> &out, bool block) override
	{
		io_uring_cqe *cqe = nullptr;
		if (block && pending_) {
			int r;
			do
				r = io_uring_wait_cqe(&ring_, &cqe);
			while (r == -EINTR);
			if (r < 0)
				return r;
		}
		while (pending_ && io_uring_peek_cqe(&ring_, &cqe) == 0) {
			out.push_back({io_uring_cqe_get_data64(cqe), cqe->res});
			io_uring_cqe_seen(&ring_, cqe);
			--pending_;
		}
		return 0;
	}

private:
	UringQueue(int fd, unsigned depth) : fd_(fd), depth_(depth) {}
	int fd_;
	unsigned depth_;
	unsigned pending_ = 0;
	io_uring ring_{};
};
#endif

// The chunk and member count from the block layer's limits of the disk
// holding @dev (a partition's are its disk's).
Geometry sysfs_geometry(dev_t dev)
{
	std::string base = "/sys/dev/block/" + std::to_string(major(dev)) + ":" +
			   std::to_string(minor(dev));
	auto read_u64 = [](const std::string &p) -> std::uint64_t {
		std::ifstream f(p);
		std::uint64_t v = 0;
		return f >> v ? v : 0;
	};
	std::string q = base + "/queue";
	if (access(q.c_str(), F_OK) != 0)
		q = base + "/../queue";
	std::uint64_t io_min = read_u64(q + "/io_min"), io_opt = read_u64(q + "/io_opt");
	if (io_min < 4096 || io_opt < io_min)
		return {};  // not striped, or says nothing
	return {io_min, static_cast<unsigned>(io_opt / io_min)};
}

class FdDev final : public BlockDev {
public:
	FdDev(int fd, bool own, std::uint64_t size, std::uint32_t bs, bool file, Geometry g)
		: fd_(fd), own_(own), size_(size), bs_(bs), file_(file), geom_(g)
	{
	}
	~FdDev() override
	{
		if (own_)
			::close(fd_);
	}
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
	Geometry geometry() const override { return geom_; }
	int truncate(std::uint64_t size) override
	{
		return ::ftruncate(fd_, static_cast<off_t>(size)) ? -errno : 0;
	}
	// On /dev/fxN this flushes the members and fxblk's peer queues too.
	int sync() override { return ::fdatasync(fd_) ? -errno : 0; }
	std::unique_ptr<DiskQueue> queue(unsigned depth, std::string &why) override
	{
#ifdef FXIO_HAVE_LIBURING
		std::unique_ptr<DiskQueue> q;
		int e = std::getenv("FXIO_NO_URING") ? -ENOSYS : UringQueue::create(fd_, depth, q);
		if (!e)
			return q;
		why = std::string("io_uring: ") + std::strerror(-e);
#else
		why = "built without liburing";
#endif
		return make_thread_queue(*this, depth);
	}

private:
	int fd_;
	bool own_;  // fxio_open's, or fxio_open_fd's with FXIO_OPEN_FD_OWN
	std::uint64_t size_;
	std::uint32_t bs_;
	bool file_;
	Geometry geom_;
};

}  // namespace

std::unique_ptr<DiskQueue> make_thread_queue(BlockDev &dev, unsigned depth)
{
	return std::make_unique<ThreadQueue>(dev, depth);
}

namespace {

// @fd's size, block size and geometry: a block device or a regular file,
// else -ENOTBLK. Never closes @fd.
int make_fd_dev(int fd, bool own, std::unique_ptr<BlockDev> &out)
{
	struct stat st {};
	std::uint64_t size = 0;
	std::uint32_t bs = 4096;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;
		if (ioctl(fd, BLKGETSIZE64, &size) < 0 || ioctl(fd, BLKSSZGET, &lbs) < 0)
			return -errno;
		bs = static_cast<std::uint32_t>(lbs);
	} else if (S_ISREG(st.st_mode)) {
		size = static_cast<std::uint64_t>(st.st_size);  // O_DIRECT on a file: 4 KiB is safe
	} else {
		return -ENOTBLK;
	}
	Geometry g = sysfs_geometry(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev);
	out = std::make_unique<FdDev>(fd, own, size, bs, S_ISREG(st.st_mode), g);
	return 0;
}

}  // namespace

int open_blockdev(const std::string &path, int flags, std::unique_ptr<BlockDev> &out)
{
	int acc = flags & O_ACCMODE;
	if (flags & ~O_ACCMODE)
		return -EINVAL;
	int fd = ::open(path.c_str(), acc | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int e = make_fd_dev(fd, true, out);
	if (e)
		::close(fd);
	return e;
}

int open_blockdev_fd(int fd, bool own, std::unique_ptr<BlockDev> &out)
{
	if (fd < 0)
		return -EBADF;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;  // EBADF: not an open descriptor
	if (fl & O_PATH)
		return -EBADF;  // no I/O through it (pread: EBADF)
	if (fl & O_APPEND)
		return -EINVAL;  // Linux's pwrite would write at the end, not at the offset
	return make_fd_dev(fd, own, out);
}

}  // namespace fxio
