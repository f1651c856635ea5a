// Commands that read volumes: version, list, show, stats (--watch) and
// monitor; and how every volume command names and fetches the volume it
// was given. The commands' entries in the table are in cli.cpp.
#pragma once

#include "command.hpp"

#include <string>

namespace fxctl {

// "\"vol1\"": a volume name in a message.
std::string quote(const std::string &name);
// A volume reference in a message: fxN as given, or the quoted name.
std::string ref_object(const VolumeRef &ref);
// The command's NAME argument (a name, fxN or /dev/fxN); UsageError when
// it is missing.
VolumeRef need_ref(const Ctx &ctx);
// GET @ref; a kernel error becomes fail_kernel's message for "show",
// pointing at @command's help.
Volume get_volume(Client &c, const VolumeRef &ref, const char *command);

int cmd_version(Ctx &ctx);
int cmd_list(Ctx &ctx);
int cmd_show(Ctx &ctx);
int cmd_stats(Ctx &ctx);
int cmd_monitor(Ctx &ctx);

}  // namespace fxctl
