#include "nvme_info.hpp"

#include "nvme_root.hpp"

#include <syslog.h>

namespace fxctl {
namespace {

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

	static NvmePath path_of(nvme_ctrl_t c)
	{
		// nvme_ctrl_get_state() reads sysfs each time: the state is
		// current, e.g. "connecting" while a path reconnects.
		return {str(nvme_ctrl_get_name(c)),      str(nvme_ctrl_get_state(c)),
			str(nvme_ctrl_get_transport(c)), str(nvme_ctrl_get_traddr(c)),
			str(nvme_ctrl_get_trsvcid(c)),   str(nvme_ctrl_get_host_traddr(c))};
	}

	void add_path(const std::string &ns, const std::string &nqn, const NvmePath &p)
	{
		NvmeIdentity &id = ids_[ns];
		id.subsys_nqn = nqn;
		for (const auto &q : id.paths)
			if (q.controller == p.controller)
				return;
		id.paths.push_back(p);
	}

	void scan()
	{
		scanned_ = true;
		nvme_root_ptr root(nvme_create_root(nullptr, LOG_EMERG));
		if (!root || nvme_scan_topology(root.get(), nullptr, nullptr) < 0)
			return;
		nvme_host_t h;
		nvme_subsystem_t s;
		nvme_ctrl_t c;
		nvme_ns_t n;
		nvme_path_t p;
		nvme_for_each_host(root.get(), h) {
			nvme_for_each_subsystem(h, s) {
				std::string nqn = str(nvme_subsystem_get_nqn(s));
				std::vector<NvmePath> all;
				nvme_subsystem_for_each_ctrl(s, c) {
					NvmePath path = path_of(c);
					all.push_back(path);
					// Without multipath: nvmeXnY hangs off one controller.
					nvme_ctrl_for_each_ns(c, n)
						add_path(str(nvme_ns_get_name(n)), nqn, path);
					// With multipath: path nvmeXcYnZ of head nvmeXnZ.
					nvme_ctrl_for_each_path(c, p)
						if (nvme_ns_t head = nvme_path_get_ns(p))
							add_path(str(nvme_ns_get_name(head)), nqn, path);
				}
				// A head whose paths libnvme did not link (old kernels):
				// every controller of the subsystem reaches it.
				nvme_subsystem_for_each_ns(s, n) {
					std::string ns = str(nvme_ns_get_name(n));
					if (!ids_.count(ns))
						for (const auto &path : all)
							add_path(ns, nqn, path);
					ids_[ns].subsys_nqn = nqn;
				}
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
