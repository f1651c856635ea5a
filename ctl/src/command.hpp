// What a command handler gets: the parsed command line and the Env. Shared
// by cli.cpp (the command table) and the files holding one object's
// commands (fabric_cmds.cpp, doctor.cpp).
#pragma once

#include "cli.hpp"
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

	void print(const json &doc, const std::string &text) const
	{
		if (as_json)
			env.out << doc.dump(2) << '\n';
		else
			env.out << text;
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
