// Shell completion for fxctl, generated from its command table
// ('fxctl --completion bash'), so a new command is completed without
// touching a hand-written list.
#pragma once

#include <string>
#include <vector>

namespace fxctl {

struct OptionSpec {
	std::string long_name;            // "chunk" (without dashes), may be empty
	std::string short_name;           // "o" (without the dash), may be empty
	bool takes_value = false;         // the next word is the option's value
	std::vector<std::string> values;  // the values to offer, if a fixed set
};

struct CommandSpec {
	std::string name;
	std::vector<OptionSpec> options;
};

// The bash completion script for @commands and the @globals accepted
// anywhere; throws Error if a name would need quoting in the script.
std::string bash_completion(const std::vector<CommandSpec> &commands,
			    const std::vector<OptionSpec> &globals);

}  // namespace fxctl
