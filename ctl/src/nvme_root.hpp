// Ownership of a libnvme tree, shared by nvme_info.cpp and fabrics.cpp.
#pragma once

// libnvme 1.3 headers carry no extern "C" guards.
extern "C" {
#include <nvme/tree.h>
}
#include <memory>

namespace fxctl {

struct nvme_root_deleter {
	// Frees the root and every host, subsystem, controller and namespace
	// under it: we own the root and only borrow the rest.
	void operator()(nvme_root *r) const noexcept { nvme_free_tree(r); }
};
using nvme_root_ptr = std::unique_ptr<nvme_root, nvme_root_deleter>;

}  // namespace fxctl
