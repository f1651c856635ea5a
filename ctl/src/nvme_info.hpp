// NVMe-oF identity of member disks (subsystem NQN, and every controller that
// reaches the namespace with its state, transport and address), read from
// sysfs. Best effort: non-NVMe members have none.
#pragma once

#include "model.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace fxctl {

class NvmeLookup {
public:
	virtual ~NvmeLookup() = default;
	virtual std::optional<NvmeIdentity> identify(const std::string &disk) = 0;
};

// Reads @sysfs (/sys) on each call and never sends a command to a device,
// so it answers at once while a controller reconnects.
std::unique_ptr<NvmeLookup> make_sysfs_nvme_lookup(std::filesystem::path sysfs = "/sys");

}  // namespace fxctl
