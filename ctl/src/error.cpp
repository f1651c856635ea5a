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

std::string errno_name(int err)
{
	switch (std::abs(err)) {
	case 0: return "OK";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case E2BIG: return "E2BIG";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case ENOTBLK: return "ENOTBLK";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EMSGSIZE: return "EMSGSIZE";
	case EOVERFLOW: return "EOVERFLOW";
	default: return fmt::format("errno {}", std::abs(err));
	}
}

}  // namespace fxctl
