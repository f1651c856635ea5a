// Kernel errors as messages that name the object and the fix: the one
// mapping from the module's errno (and extended ack) to what an admin
// reads, for every command that talks to the module.
#pragma once

#include "error.hpp"

#include <string>

namespace fxctl {

// Throws Error (errno of @e) saying what failed and what to do: @verb is
// what failed ("show statistics of"), @command the fxctl command whose
// help to point at ("stats"), @object what it was done to ("\"vol1\"",
// "fx0 (vol1)").
[[noreturn]] void fail_kernel(const KernelError &e, const std::string &verb,
			      const std::string &command, const std::string &object);

}  // namespace fxctl
