#include "scan.hpp"

#include <fmt/format.h>
#include <ostream>

namespace fxctl {

Candidate read_candidate(MemberIO &io, const std::string &devname, std::ostream &log)
{
	Candidate c;
	c.devname = devname;
	c.devnode = "/dev/" + devname;
	try {
		c.ml = io.read_label(c.devnode);
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: skipping {}: {}\n", c.devnode, e.what());
		return c;
	}
	if (!c.ml.label)
		return c;
	try {
		for (const auto &s : io.signatures(c.devnode))
			c.signatures.push_back(describe(s));
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: {}: cannot probe it for other signatures: {}\n",
				   c.devnode, e.what());
	}
	try {
		c.identity = io.identity(devname);
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: {}: cannot read its identity: {}\n", c.devnode,
				   e.what());
	}
	return c;
}

std::vector<Candidate> scan_members(BlockDevices &devs, MemberIO &io, std::ostream &log)
{
	std::vector<Candidate> out;
	for (const auto &name : devs.present_disks()) {
		Candidate c = read_candidate(io, name, log);
		if (c.ml.label)
			out.push_back(std::move(c));
	}
	return out;
}

}  // namespace fxctl
