// Volumes from their labels: `assemble` (by name, UUID or all), `stop` and
// `incremental` (one device at a time, for udev). The commands' entries in
// the table are in cli.cpp; the policy is assembly_plan.hpp.
#pragma once

#include "command.hpp"

#include <string>

namespace fxctl {

// Where `incremental` records the members it has seen: RUN_DIR/<uuid>/<disk>,
// serialised by flock on RUN_DIR/lock. FXBLK_RUN_DIR overrides (tests).
inline constexpr const char *default_run_dir = "/run/fxblk";

void assemble_options(boost::program_options::options_description &,
		      boost::program_options::options_description &hidden,
		      boost::program_options::positional_options_description &);
void stop_options(boost::program_options::options_description &,
		  boost::program_options::options_description &hidden,
		  boost::program_options::positional_options_description &);
void incremental_options(boost::program_options::options_description &,
			 boost::program_options::options_description &hidden,
			 boost::program_options::positional_options_description &);

int cmd_assemble(Ctx &ctx);
int cmd_stop(Ctx &ctx);
int cmd_incremental(Ctx &ctx);

}  // namespace fxctl
