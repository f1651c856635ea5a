// Commands on one member device's fxblk label: examine (and --export, which
// udev imports) and wipe. The label format is label.hpp; the commands'
// entries in the table are in cli.cpp.
#pragma once

#include "command.hpp"

namespace fxctl {

int cmd_examine(Ctx &ctx);
int cmd_wipe(Ctx &ctx);

}  // namespace fxctl
