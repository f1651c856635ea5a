// Commands that rewrite a stopped volume's labels (review M4): `rename`
// (a new name, as mdadm --update=name or vgrename) and `update --identity`
// (re-record a member's NVMe identity after a target migration). Both take
// the volume's lock, refuse a running volume or an incomplete or
// inconsistent set, and bump the generation on every member
// (assemble.hpp rewrite_members), so a member that missed the rewrite is
// refused as stale. Their entries in the table are in cli.cpp.
#pragma once

#include "command.hpp"

namespace fxctl {

void rename_options(boost::program_options::options_description &,
		    boost::program_options::options_description &hidden,
		    boost::program_options::positional_options_description &);
void update_options(boost::program_options::options_description &,
		    boost::program_options::options_description &hidden,
		    boost::program_options::positional_options_description &);

int cmd_rename(Ctx &ctx);
int cmd_update(Ctx &ctx);

}  // namespace fxctl
