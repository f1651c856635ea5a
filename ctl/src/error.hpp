// Error types. libnl reports NLE_* codes and the kernel reports errno: they
// get separate std::error_category objects so a code is never printed with
// the wrong table. Exceptions are turned into exit codes only in cli.cpp.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace fxctl {

// fxctl's exit status; documented in --help and fxctl(8).
enum exit_code : int {
	exit_ok = 0,
	exit_runtime = 1,     // the operation failed (anything not below)
	exit_usage = 2,       // bad command line; nothing was done
	exit_not_found = 3,   // no such volume or device
	exit_busy = 4,        // volume open or member in use
	exit_no_module = 5,   // fxblk module not loaded
	exit_permission = 6,  // needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)
	exit_partial = 7,     // connect-all: some targets connected, others not
};

// The exit status for a failure with errno @err (positive or negative).
exit_code exit_code_for_errno(int err) noexcept;

// libnl's NLE_* codes (stored positive), messages from nl_geterror().
const std::error_category &nl_category() noexcept;
std::error_code nl_error(int nle) noexcept;  // accepts -NLE_x or NLE_x
std::error_code errno_error(int err) noexcept;  // accepts -E or E

// "cannot open PATH: <strerror>", with the fix when it is a permission
// problem (members are opened to read and write their labels).
std::string open_failed(const std::string &path, int err);

// A runtime failure. what() names the object and the fix; the exit status
// follows the errno in code() (exit_code_for_errno).
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
	explicit ModuleNotLoaded(const std::string &msg);  // e.g. unloaded meanwhile
};

// "EBUSY", "EINVAL", ... (glibc's strerrorname_np) for messages, JSON
// errors and the test tool; "OK" for 0.
std::string errno_name(int err);

}  // namespace fxctl
