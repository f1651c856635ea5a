#include "member_io.hpp"

#include "device_fd.hpp"
#include "error.hpp"

#include <blkid/blkid.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fxctl {
namespace {

struct ProbeDeleter {
	void operator()(blkid_probe p) const noexcept { blkid_free_probe(p); }
};
using probe_ptr = std::unique_ptr<std::remove_pointer_t<blkid_probe>, ProbeDeleter>;

std::string value(blkid_probe pr, const char *name)
{
	const char *data = nullptr;
	if (blkid_probe_lookup_value(pr, name, &data, nullptr) == 0 && data)
		return data;
	return "";
}

// A probe over @fd for every superblock and partition table, wipefs' way.
probe_ptr new_probe(int fd, const std::string &path)
{
	probe_ptr pr(blkid_new_probe());
	if (!pr || blkid_probe_set_device(pr.get(), fd, 0, 0) != 0)
		throw Error(fmt::format("cannot probe {} for signatures (libblkid)", path),
			    errno_error(EIO));
	blkid_probe_enable_superblocks(pr.get(), 1);
	blkid_probe_set_superblocks_flags(pr.get(), BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE |
							    BLKID_SUBLKS_USAGE |
							    BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(pr.get(), 1);
	blkid_probe_set_partitions_flags(pr.get(), BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT);
	return pr;
}

Signature current(blkid_probe pr)
{
	Signature s;
	s.type = value(pr, "TYPE");
	s.usage = value(pr, "USAGE");
	std::string off = value(pr, "SBMAGIC_OFFSET");
	if (s.type.empty()) {
		s.type = value(pr, "PTTYPE");
		s.usage = "partition table";
		off = value(pr, "PTMAGIC_OFFSET");
	}
	if (s.usage.empty())
		s.usage = "other";
	if (!off.empty())
		s.offset = std::strtoull(off.c_str(), nullptr, 10);
	return s;
}

}  // namespace

std::string describe(const Signature &s)
{
	return fmt::format("{} {} signature at byte {}", s.type, s.usage, s.offset);
}

std::vector<Signature> SystemMemberIO::signatures(const std::string &path)
{
	DeviceFd f(path, O_RDONLY);
	probe_ptr pr = new_probe(f.get(), path);
	std::vector<Signature> out;
	while (blkid_do_probe(pr.get()) == 0)
		out.push_back(current(pr.get()));
	return out;
}

void SystemMemberIO::erase_signatures(const std::string &path)
{
	DeviceFd f(path, O_RDWR | O_EXCL);
	probe_ptr pr = new_probe(f.get(), path);
	// blkid_do_wipe steps the probe back: the same area is probed again
	// for further signatures.
	while (blkid_do_probe(pr.get()) == 0)
		if (blkid_do_wipe(pr.get(), 0) != 0)
			throw Error(fmt::format("cannot erase the {} signature on {}",
						current(pr.get()).type, path),
				    errno_error(EIO));
	if (::fsync(f.get()) < 0)
		throw Error(fmt::format("cannot flush {}: {}", path, std::strerror(errno)),
			    errno_error(errno));
}

bool SystemMemberIO::udev_running()
{
	return exists("/run/udev/control");
}

bool SystemMemberIO::exists(const std::string &path)
{
	struct stat st;
	return ::stat(path.c_str(), &st) == 0;
}

std::shared_ptr<void> SystemMemberIO::lock(const std::string &path)
{
	auto f = std::make_shared<DeviceFd>(DeviceFd::try_open(path, O_RDONLY));
	if (f->get() < 0)
		return nullptr;  // the member checks say why
	while (::flock(f->get(), LOCK_EX) < 0)
		if (errno != EINTR)
			throw Error(fmt::format("cannot lock {}: {}", path, std::strerror(errno)),
				    errno_error(errno));
	return f;
}

}  // namespace fxctl
