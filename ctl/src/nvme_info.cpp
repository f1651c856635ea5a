#include "nvme_info.hpp"

#include "sysfs.hpp"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include <fmt/format.h>

// Why sysfs and not libnvme's nvme_scan_topology(): libnvme 1.3 (Debian 12)
// opens every namespace during the scan and sends it Identify Namespace
// admin commands (nvme_ns_init()). While a controller reconnects, those
// commands wait for it, so `fxctl show` stalled for the whole outage, and a
// namespace whose Identify failed was left out of the tree, so its paths
// vanished from the output exactly when they mattered. The kernel keeps the
// same facts in sysfs, readable without touching the device:
//
//   /sys/block/nvmeXnY/device            controller (no native multipath) or
//                                        nvme-subsysX (multipath head)
//   /sys/block/nvmeXcZnY                 the head's paths (hidden disks),
//                                        whose device link is controller nvmeZ
//   /sys/class/nvme/nvmeZ/{state,transport,address}
//   .../subsysnqn                        on the controller and the subsystem

namespace fxctl {
namespace {

namespace fs = std::filesystem;

// "traddr=10.0.0.1,trsvcid=4420,src_addr=10.0.0.2" (host_traddr is shown as
// host_traddr= on TCP/RDMA before 6.x and src_addr= for TCP since 5.13).
std::string address_field(const std::string &addr, const std::string &key)
{
	std::string want = key + "=";
	std::size_t pos = 0;
	while (pos <= addr.size()) {
		std::size_t end = addr.find(',', pos);
		if (end == std::string::npos)
			end = addr.size();
		std::string_view f(addr.data() + pos, end - pos);
		if (f.substr(0, want.size()) == want)
			return std::string(f.substr(want.size()));
		pos = end + 1;
	}
	return {};
}

class SysfsNvmeLookup final : public NvmeLookup {
public:
	explicit SysfsNvmeLookup(fs::path sysfs) : sysfs_(std::move(sysfs)) {}

	std::optional<NvmeIdentity> identify(const std::string &disk) override
	{
		if (disk.rfind("nvme", 0) != 0 || disk.find('/') != std::string::npos)
			return std::nullopt;
		fs::path dir = sysfs_ / "block" / disk;
		std::error_code ec;
		if (!fs::is_directory(dir, ec))
			return std::nullopt;

		NvmeIdentity id;
		id.subsys_nqn = read_line(dir / "device" / "subsysnqn");
		int subsys = 0, head = 0, used = 0;
		if (std::sscanf(disk.c_str(), "nvme%dn%d%n", &subsys, &head, &used) == 2 &&
		    static_cast<std::size_t>(used) == disk.size() &&
		    fs::canonical(dir / "device", ec).filename().string().rfind("nvme-subsys", 0) == 0) {
			// A multipath head: its paths are the hidden disks
			// nvme<subsys>c<ctrl>n<head>, each a child of its
			// controller (as libnvme and nvme-cli find them; 6.1
			// and 6.12 have no multipath/ directory on the head).
			std::vector<std::string> paths;
			std::string prefix = fmt::format("nvme{}c", subsys);
			std::string suffix = fmt::format("n{}", head);
			for (const auto &e : fs::directory_iterator(sysfs_ / "block", ec)) {
				std::string n = e.path().filename().string();
				if (n.size() > prefix.size() + suffix.size() && n.rfind(prefix, 0) == 0 &&
				    n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
				    n.find_first_not_of("0123456789", prefix.size()) ==
					    n.size() - suffix.size())
					paths.push_back(n);
			}
			// numeric controller order, stable (directory order is not)
			std::sort(paths.begin(), paths.end(), [](const auto &a, const auto &b) {
				return a.size() != b.size() ? a.size() < b.size() : a < b;
			});
			for (const auto &p : paths)
				add_controller(id, sysfs_ / "block" / p / "device");
		} else {
			add_controller(id, dir / "device");
		}
		if (id.subsys_nqn.empty() && id.paths.empty())
			return std::nullopt;
		return id;
	}

private:
	fs::path sysfs_;

	static void add_controller(NvmeIdentity &id, const fs::path &link)
	{
		std::error_code ec;
		fs::path ctrl = fs::canonical(link, ec);
		if (ec)
			return;
		std::string name = ctrl.filename().string();
		if (name.rfind("nvme", 0) != 0 || name.rfind("nvme-subsys", 0) == 0)
			return;  // a head without multipath dir: no controller here
		std::string addr = read_line(ctrl / "address");
		std::string host = address_field(addr, "host_traddr");
		if (host.empty())
			host = address_field(addr, "src_addr");
		if (id.subsys_nqn.empty())
			id.subsys_nqn = read_line(ctrl / "subsysnqn");
		id.paths.push_back({name, read_line(ctrl / "state"), read_line(ctrl / "transport"),
				    address_field(addr, "traddr"), address_field(addr, "trsvcid"),
				    host});
	}
};

}  // namespace

std::unique_ptr<NvmeLookup> make_sysfs_nvme_lookup(fs::path sysfs)
{
	return std::make_unique<SysfsNvmeLookup>(std::move(sysfs));
}

}  // namespace fxctl
