// The NVMe-oF commands, registered in cli.cpp's command table.
#pragma once

#include "command.hpp"
#include "fabrics.hpp"

namespace fxctl {

void connect_options(po::options_description &, po::options_description &,
		     po::positional_options_description &);
void connect_all_options(po::options_description &, po::options_description &,
			 po::positional_options_description &);
void discover_options(po::options_description &, po::options_description &,
		      po::positional_options_description &);
void disconnect_options(po::options_description &, po::options_description &,
			po::positional_options_description &);
int cmd_connect(Ctx &ctx);
int cmd_connect_all(Ctx &ctx);
int cmd_discover(Ctx &ctx);
int cmd_disconnect(Ctx &ctx);

}  // namespace fxctl
