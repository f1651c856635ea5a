// The module's netlink API as fxctl sees it. The real implementation talks
// libnl-genl; unit tests substitute a fake. Kernel errors are thrown as
// KernelError (errno + extack), transport failures as Error.
#pragma once

#include "model.hpp"

#include <memory>
#include <vector>

namespace fxctl {

class Client {
public:
	virtual ~Client() = default;
	virtual ModuleStatus status() = 0;
	virtual Volume create(const CreateRequest &req) = 0;
	// @force: FXBLK_ATTR_FORCE, remove even while open (FXBLK_FEAT_HEALTH).
	virtual void destroy(const VolumeRef &ref, bool force) = 0;
	virtual Volume get(const VolumeRef &ref) = 0;
	virtual std::vector<Volume> list() = 0;
	virtual Volume stats(const VolumeRef &ref) = 0;
};

// Connects to family "fxblk"; throws ModuleNotLoaded if it is not registered.
std::unique_ptr<Client> make_genl_client();

}  // namespace fxctl
