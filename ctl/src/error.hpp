// Error types. libnl reports NLE_* codes and the kernel reports errno: they
// get separate std::error_category objects so a code is never printed with
// the wrong table. Exceptions are turned into exit codes only in cli.cpp.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace fxctl {

enum exit_code : int { exit_ok = 0, exit_runtime = 1, exit_usage = 2 };

// libnl's NLE_* codes (stored positive), messages from nl_geterror().
const std::error_category &nl_category() noexcept;
std::error_code nl_error(int nle) noexcept;  // accepts -NLE_x or NLE_x
std::error_code errno_error(int err) noexcept;  // accepts -E or E

// A runtime failure (exit 1). what() names the object and the fix.
class Error : public std::runtime_error {
public:
	explicit Error(const std::string &msg, std::error_code ec = {})
		: std::runtime_error(msg), code_(ec) {}
	const std::error_code &code() const noexcept { return code_; }

private:
	std::error_code code_;
};

// Bad command line (exit 2).
class UsageError : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// The module answered a request with an error: errno plus the extack message
// the kernel attached (empty if none).
class KernelError : public std::runtime_error {
public:
	KernelError(int err, std::string extack, const std::string &what);
	int err() const noexcept { return err_; }
	const std::string &extack() const noexcept { return extack_; }

private:
	int err_;
	std::string extack_;
};

// The netlink family is not registered: the module is not loaded.
class ModuleNotLoaded : public Error {
public:
	ModuleNotLoaded();
};

// "EBUSY", "EINVAL", ... for messages and the test tool.
std::string errno_name(int err);

}  // namespace fxctl
