#include "error.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <netlink/errno.h>

namespace fxctl {
namespace {

class nl_category_impl final : public std::error_category {
public:
	const char *name() const noexcept override { return "libnl"; }
	std::string message(int code) const override { return nl_geterror(code); }
};

}  // namespace

const std::error_category &nl_category() noexcept
{
	static const nl_category_impl cat;
	return cat;
}

std::error_code nl_error(int nle) noexcept
{
	return {std::abs(nle), nl_category()};
}

std::string open_failed(const std::string &path, int err)
{
	std::string msg = fmt::format("cannot open {}: {}", path, std::strerror(err));
	if (err == EACCES || err == EPERM)
		msg += "; reading and writing member labels needs permission to open the "
		       "device: run fxctl as root";
	return msg;
}

std::error_code errno_error(int err) noexcept
{
	return {std::abs(err), std::generic_category()};
}

KernelError::KernelError(int err, std::string extack, const std::string &what)
	: std::runtime_error(what), err_(std::abs(err)), extack_(std::move(extack))
{
}

ModuleNotLoaded::ModuleNotLoaded()
	: Error("fxblk module not loaded (netlink family 'fxblk' not found); "
		"run 'modprobe fxblk'",
		nl_error(NLE_OBJ_NOTFOUND))
{
}

ModuleNotLoaded::ModuleNotLoaded(const std::string &msg) : Error(msg, nl_error(NLE_OBJ_NOTFOUND))
{
}

exit_code exit_code_for_errno(int err) noexcept
{
	switch (std::abs(err)) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		return exit_not_found;
	case EBUSY:
		return exit_busy;
	case EPERM:
	case EACCES:
		return exit_permission;
	default:
		return exit_runtime;
	}
}

std::string errno_name(int err)
{
	if (!err)
		return "OK";
	const char *name = strerrorname_np(std::abs(err));
	return name ? name : fmt::format("errno {}", std::abs(err));
}

}  // namespace fxctl
