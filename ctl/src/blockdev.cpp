#include "blockdev.hpp"

#include "error.hpp"
#include "sysfs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <libudev.h>
#include <memory>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace fxctl {
namespace fs = std::filesystem;
namespace {

// A number sysfs must have for @dev.
std::uint64_t need_number(const fs::path &file, const std::string &dev)
{
	std::optional<std::uint64_t> v = read_number(file);
	if (!v)
		throw Error(fmt::format("cannot read {} for {}; is sysfs mounted on /sys?",
					file.string(), dev),
			    errno_error(EIO));
	return *v;
}

struct UdevFree {
	void operator()(udev *u) const noexcept { udev_unref(u); }
	void operator()(udev_enumerate *e) const noexcept { udev_enumerate_unref(e); }
	void operator()(udev_device *d) const noexcept { udev_device_unref(d); }
};
template <typename T> using UdevPtr = std::unique_ptr<T, UdevFree>;

std::string value_or_empty(const char *s)
{
	return s ? s : "";
}

}  // namespace

void read_sysfs_block(const fs::path &sysfs, BlockDevice &dev)
{
	fs::path dir = sysfs / "dev/block" / fmt::format("{}:{}", dev.major, dev.minor);
	std::error_code ec;
	fs::path real = fs::canonical(dir, ec);
	if (ec)
		throw Error(fmt::format("{} ({}:{}) is not known to the kernel ({} missing); "
					"check that the device still exists",
					dev.path, dev.major, dev.minor, dir.string()),
			    errno_error(ENODEV));
	dev.name = real.filename().string();
	dev.size_sectors = need_number(real / "size", dev.path);
	dev.partition = fs::exists(real / "partition");
	dev.disk = dev.partition ? real.parent_path().filename().string() : "";
	// Partitions have no queue/ of their own: it is the parent disk's.
	fs::path queue = dev.partition ? real.parent_path() / "queue" : real / "queue";
	dev.logical_block_size =
		static_cast<std::uint32_t>(need_number(queue / "logical_block_size", dev.path));
	// A partition is read-only if it or its disk is (5.10's partition
	// "ro" shows only its own flag).
	dev.read_only = need_number(real / "ro", dev.path) != 0;
	if (dev.partition)
		dev.read_only = dev.read_only || need_number(real.parent_path() / "ro", dev.path) != 0;
	dev.zoned = read_line(queue / "zoned");
	if (dev.zoned.empty())
		dev.zoned = "none";  // kernels without zoned support have no file
	dev.holders.clear();
	for (const auto &e : fs::directory_iterator(real / "holders", ec))
		dev.holders.push_back(e.path().filename().string());
	std::sort(dev.holders.begin(), dev.holders.end());
}

PathStat SystemBlockDevices::stat(const std::string &path)
{
	PathStat ps;
	struct stat st;
	if (::stat(path.c_str(), &st) < 0) {
		ps.error = errno;
		return ps;
	}
	ps.type = st.st_mode & S_IFMT;
	ps.major = major(st.st_rdev);
	ps.minor = minor(st.st_rdev);
	return ps;
}

PathStat require_block_device(BlockDevices &devs, const std::string &path)
{
	PathStat ps = devs.stat(path);
	if (ps.error)
		throw Error(fmt::format("cannot access {}: {}; check the device path", path,
					std::strerror(ps.error)),
			    errno_error(ps.error));
	if (ps.type == S_IFBLK)
		return ps;
	const char *is = "not a device node";
	switch (ps.type) {
	case S_IFCHR: is = "a character device"; break;
	case S_IFDIR: is = "a directory"; break;
	case S_IFREG: is = "a regular file"; break;
	case S_IFIFO: is = "a FIFO"; break;
	case S_IFSOCK: is = "a socket"; break;
	}
	throw Error(fmt::format("{} is not a block device (it is {}); give a block device, "
				"e.g. /dev/nvme0n1", path, is),
		    errno_error(ENOTBLK));
}

std::string SystemBlockDevices::canonical(const std::string &path)
{
	std::error_code ec;
	fs::path real = fs::canonical(path, ec);
	if (ec)
		throw Error(fmt::format("cannot access {}: {}", path, ec.message()),
			    errno_error(ENOENT));
	return real.string();
}

std::vector<std::string> SystemBlockDevices::present_disks()
{
	UdevPtr<udev> u(udev_new());
	if (!u)
		throw Error("cannot initialise libudev", errno_error(errno ? errno : ENOMEM));
	UdevPtr<udev_enumerate> en(udev_enumerate_new(u.get()));
	if (!en || udev_enumerate_add_match_subsystem(en.get(), "block") < 0 ||
	    udev_enumerate_add_match_property(en.get(), "DEVTYPE", "disk") < 0 ||
	    udev_enumerate_scan_devices(en.get()) < 0)
		throw Error("cannot enumerate block devices through libudev; is sysfs mounted "
			    "on /sys?", errno_error(EIO));
	std::vector<std::string> names;
	for (udev_list_entry *e = udev_enumerate_get_list_entry(en.get()); e;
	     e = udev_list_entry_get_next(e)) {
		UdevPtr<udev_device> d(
			udev_device_new_from_syspath(u.get(), udev_list_entry_get_name(e)));
		if (!d)
			continue;  // gone meanwhile
		std::string name = value_or_empty(udev_device_get_sysname(d.get()));
		std::string size = value_or_empty(udev_device_get_sysattr_value(d.get(), "size"));
		if (name.empty() || name.starts_with("fx") || size.empty() || size == "0" ||
		    !udev_device_get_devnode(d.get()))
			continue;
		names.push_back(name);
	}
	return names;
}

BlockDevice SystemBlockDevices::probe(const std::string &path)
{
	BlockDevice dev;
	dev.path = path;
	PathStat st = require_block_device(*this, path);
	dev.major = st.major;
	dev.minor = st.minor;
	read_sysfs_block(sysfs_, dev);
	// O_EXCL on a block device fails with EBUSY while someone else holds
	// it exclusively (mounted, md/dm member, another fxblk volume).
	int fd = open(path.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	else if (errno == EBUSY)
		dev.busy = true;
	return dev;
}

}  // namespace fxctl
