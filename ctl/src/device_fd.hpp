// An open member device (or, in unit tests, a regular file), closed when it
// goes out of scope. The one way fxctl opens members for labels, signatures
// and locks, so that a refused open always names the device and the fix.
#pragma once

#include "error.hpp"

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace fxctl {

class DeviceFd {
public:
	enum class Direct { no, if_supported };

	// Opens @path with @flags | O_CLOEXEC; with Direct::if_supported also
	// O_DIRECT where the file system allows it (tmpfs does not: files in
	// tests then go through the page cache + fsync). Throws Error
	// (open_failed: "run as root", "check the path"...).
	DeviceFd(const std::string &path, int flags, Direct direct = Direct::no)
		: fd_(open_raw(path, flags, direct))
	{
		if (fd_ < 0) {
			int e = errno;
			throw Error(open_failed(path, e), errno_error(e));
		}
	}
	// As above, but -1 in get() instead of throwing.
	static DeviceFd try_open(const std::string &path, int flags)
	{
		return DeviceFd(open_raw(path, flags, Direct::no));
	}
	DeviceFd(DeviceFd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
	DeviceFd(const DeviceFd &) = delete;
	DeviceFd &operator=(const DeviceFd &) = delete;
	DeviceFd &operator=(DeviceFd &&) = delete;
	~DeviceFd()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	int get() const { return fd_; }

private:
	explicit DeviceFd(int fd) : fd_(fd) {}
	static int open_raw(const std::string &path, int flags, Direct direct)
	{
		int fd = -1;
		if (direct == Direct::if_supported) {
			fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC);
			if (fd >= 0 || errno != EINVAL)
				return fd;
		}
		return ::open(path.c_str(), flags | O_CLOEXEC);
	}
	int fd_;
};

}  // namespace fxctl
