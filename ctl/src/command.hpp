// What a command handler gets (Ctx) and how the command table in cli.cpp
// describes a command, shared by the files that implement commands
// (volume_ops.cpp: create, remove; volume_cmds.cpp: version, list, show,
// stats, monitor; member_cmds.cpp: examine, wipe; assemble.cpp: assemble,
// stop, incremental; fabric_cmds.cpp, doctor.cpp, peer.cpp: NVMe-oF,
// doctor, peer).
#pragma once

#include "cli.hpp"
#include "error.hpp"
#include "kernel_error.hpp"
#include "render.hpp"

#include <boost/program_options.hpp>
#include <ostream>
#include <string>

namespace fxctl {

namespace po = boost::program_options;

struct Ctx {
	Env &env;
	po::variables_map vm;
	po::parsed_options parsed{nullptr};  // the command's own options, in order
	bool as_json = false;
	bool verbose = false;

	// Every JSON document carries schema_version (a caller's own value wins),
	// so scripts can check the shape of any command's output the same way.
	void print(const json &doc, const std::string &text) const
	{
		if (!as_json) {
			env.out << text;
			return;
		}
		if (doc.is_object() && !doc.contains("schema_version")) {
			json d = doc;
			d["schema_version"] = schema_version;
			env.out << d.dump(2) << '\n';
			return;
		}
		env.out << doc.dump(2) << '\n';
	}
};

using OptionsFn = void (*)(po::options_description &, po::options_description &hidden,
			   po::positional_options_description &);
using HandlerFn = int (*)(Ctx &);

struct Command {
	const char *name;
	const char *synopsis;
	const char *summary;  // one line, for the command list
	const char *help;     // paragraphs for 'fxctl help CMD'
	OptionsFn options;
	HandlerFn handler;
};

}  // namespace fxctl
