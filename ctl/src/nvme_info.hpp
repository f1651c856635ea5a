// NVMe-oF identity of member disks (subsystem NQN, transport, address),
// looked up through libnvme. Best effort: non-NVMe members have none.
#pragma once

#include "model.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace fxctl {

class NvmeLookup {
public:
	virtual ~NvmeLookup() = default;
	virtual std::optional<NvmeIdentity> identify(const std::string &disk) = 0;
};

// Scans the NVMe topology once, on first use.
std::unique_ptr<NvmeLookup> make_libnvme_lookup();

}  // namespace fxctl
