#include "nvme_info.hpp"

// libnvme 1.3 headers carry no extern "C" guards.
extern "C" {
#include <nvme/tree.h>
}
#include <syslog.h>

namespace fxctl {
namespace {

struct nvme_root_deleter {
	// Frees the root and every host, subsystem, controller and namespace
	// under it: we own the root and only borrow the rest.
	void operator()(nvme_root *r) const noexcept { nvme_free_tree(r); }
};
using root_ptr = std::unique_ptr<nvme_root, nvme_root_deleter>;

std::string str(const char *s)
{
	return s ? s : "";
}

class LibnvmeLookup final : public NvmeLookup {
public:
	std::optional<NvmeIdentity> identify(const std::string &disk) override
	{
		if (!scanned_)
			scan();
		auto it = ids_.find(disk);
		if (it == ids_.end())
			return std::nullopt;
		return it->second;
	}

private:
	bool scanned_ = false;
	std::map<std::string, NvmeIdentity> ids_;

	void scan()
	{
		scanned_ = true;
		root_ptr root(nvme_create_root(nullptr, LOG_EMERG));
		if (!root || nvme_scan_topology(root.get(), nullptr, nullptr) < 0)
			return;
		nvme_host_t h;
		nvme_subsystem_t s;
		nvme_ctrl_t c;
		nvme_ns_t n;
		nvme_for_each_host(root.get(), h) {
			nvme_for_each_subsystem(h, s) {
				NvmeIdentity id;
				id.subsys_nqn = str(nvme_subsystem_get_nqn(s));
				nvme_subsystem_for_each_ctrl(s, c) {
					if (id.transport.empty()) {
						id.transport = str(nvme_ctrl_get_transport(c));
						id.traddr = str(nvme_ctrl_get_traddr(c));
					}
					nvme_ctrl_for_each_ns(c, n)
						ids_[str(nvme_ns_get_name(n))] = id;
				}
				nvme_subsystem_for_each_ns(s, n)
					ids_[str(nvme_ns_get_name(n))] = id;
			}
		}
	}
};

}  // namespace

std::unique_ptr<NvmeLookup> make_libnvme_lookup()
{
	return std::make_unique<LibnvmeLookup>();
}

}  // namespace fxctl
