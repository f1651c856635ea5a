#include "kernel_error.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <linux/fxblk.h>

namespace fxctl {
namespace {

std::string kernel_says(const KernelError &e)
{
	return e.extack().empty() ? "" : fmt::format(" (kernel: {})", e.extack());
}

}  // namespace

void fail_kernel(const KernelError &e, const std::string &verb, const std::string &command,
		 const std::string &object)
{
	std::string msg;
	switch (e.err()) {
	case EPERM:
	case EACCES:
		msg = fmt::format("permission denied to {} {}{}; run fxctl as root "
				  "(needs CAP_SYS_ADMIN and CAP_NET_ADMIN)", verb, object, kernel_says(e));
		break;
	case ENOENT:
		// The kernel's message only repeats the name.
		msg = fmt::format("no volume {}; see 'fxctl list'", object);
		break;
	case EEXIST:
		msg = fmt::format("a volume named {} already exists{}; choose another name or "
				  "remove it first", object, kernel_says(e));
		break;
	case EBUSY:
		msg = fmt::format("cannot {} {}: a member is in use{}; remove the volume using "
				  "it or unmount it first", verb, object, kernel_says(e));
		break;
	case EINVAL:
		msg = fmt::format("cannot {} {}: {}; check the arguments against "
				  "'fxctl {} --help'", verb, object,
				  e.extack().empty() ? "the module rejected the request as invalid"
						     : e.extack(),
				  command);
		break;
	case ENODEV:
	case ENXIO:
		msg = fmt::format("cannot {} {}: a member device disappeared{}; check the "
				  "NVMe-oF connections ('nvme list')", verb, object, kernel_says(e));
		break;
	case ENOSPC:
	case EMFILE:
		msg = fmt::format("cannot {} {}: too many volumes (at most {}){}; remove unused "
				  "volumes first", verb, object, FXBLK_MAX_VOLUMES, kernel_says(e));
		break;
	default:
		msg = fmt::format("cannot {} {}: {}{}; see dmesg for details", verb, object,
				  std::strerror(e.err()), kernel_says(e));
	}
	throw Error(msg, errno_error(e.err()));
}

}  // namespace fxctl
