#include "ownership.hpp"

#include "error.hpp"
#include "sysfs.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fmt/format.h>
#include <sstream>

namespace fxctl {
namespace {

std::string lower(std::string s)
{
	std::transform(s.begin(), s.end(), s.begin(),
		       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
	return s;
}

// The file's text, or nullopt when it does not exist; other errors throw.
std::optional<std::string> slurp(const std::string &path)
{
	if (auto text = read_file(path))
		return text;
	if (errno == ENOENT)
		return std::nullopt;
	throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)),
		    errno_error(errno));
}

std::string first_line(const std::string &s)
{
	std::string line = s.substr(0, s.find('\n'));
	while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
		line.pop_back();
	return line;
}

std::string env_or(const char *var, const char *def)
{
	const char *v = std::getenv(var);
	return v && *v ? v : def;
}

}  // namespace

std::vector<AutoRule> HostPolicy::default_autos()
{
	return {{true, "homehost"}, {true, "unowned"}, {false, "all"}};
}

HostPolicy parse_conf(std::string_view text, HostPolicy p, const std::string &path)
{
	p.conf_path = path;
	std::istringstream in{std::string(text)};
	bool seen_auto = false;
	int n = 0;
	for (std::string line; std::getline(in, line);) {
		++n;
		line = line.substr(0, line.find('#'));
		std::istringstream words(line);
		std::string key;
		if (!(words >> key))
			continue;
		auto bad = [&](const std::string &why) {
			return Error(fmt::format("{} line {}: {}; see fxctl(8), FILES", path, n, why),
				     errno_error(EINVAL));
		};
		key = lower(key);
		if (key == "hostnqn") {
			std::string nqn, extra;
			if (!(words >> nqn) || (words >> extra))
				throw bad("HOSTNQN takes one word, the host NQN");
			if (nqn.size() >= label::kNqnBytes)
				throw bad(fmt::format("host NQN longer than {} characters",
						      label::kNqnBytes - 1));
			p.host_nqn = nqn;
		} else if (key == "auto") {
			if (seen_auto)
				throw bad("a second AUTO line (give all words on one)");
			seen_auto = true;
			p.autos.clear();
			for (std::string w; words >> w;) {
				if (w.size() < 2 || (w[0] != '+' && w[0] != '-'))
					throw bad(fmt::format("AUTO word '{}' does not start with + or -",
							      w));
				std::string what = w.substr(1);
				std::string lw = lower(what);
				if (lw == "homehost" || lw == "unowned" || lw == "all")
					what = lw;
				p.autos.push_back({w[0] == '+', what});
			}
		} else {
			throw bad(fmt::format("unknown keyword '{}' (known: HOSTNQN, AUTO)", key));
		}
	}
	return p;
}

bool cmdline_auto_off(std::string_view cmdline)
{
	std::istringstream words{std::string(cmdline)};
	bool off = false;
	for (std::string w; words >> w;) {
		if (w.rfind("fxblk.auto=", 0) != 0)
			continue;
		std::string v = lower(w.substr(11));
		off = v == "0" || v == "off" || v == "no" || v == "false";  // the last one wins
	}
	return off;
}

bool foreign_owner(const HostPolicy &p, const label::Label &l)
{
	return !l.owner_nqn.empty() && l.owner_nqn != p.host_nqn;
}

AutoDecision auto_assembly(const HostPolicy &p, const label::Label &l)
{
	std::string uuid = label::uuid_to_string(l.volume_uuid);
	std::string owner = l.owner_nqn.empty() ? "no owner recorded"
						: fmt::format("owned by {}", l.owner_nqn);
	for (const auto &r : p.autos) {
		bool match = false;
		if (r.what == "all")
			match = true;
		else if (r.what == "homehost")
			match = !l.owner_nqn.empty() && l.owner_nqn == p.host_nqn;
		else if (r.what == "unowned")
			match = l.owner_nqn.empty();
		else
			match = r.what == l.volume_name || lower(r.what) == uuid;
		if (match)
			return {r.allow, fmt::format("{} ({}), AUTO {}{}", owner,
						     p.host_nqn.empty() ? "this host has no host NQN"
									: "this host is " + p.host_nqn,
						     r.allow ? '+' : '-', r.what)};
	}
	return {true, owner + ", no AUTO word matches"};
}

HostPolicy load_host_policy()
{
	HostPolicy p;
	if (auto nqn = slurp(env_or("FXBLK_HOSTNQN_FILE", default_hostnqn_path)))
		p.host_nqn = first_line(*nqn);
	std::string conf = env_or("FXBLK_CONF", default_conf_path);
	if (auto text = slurp(conf))
		p = parse_conf(*text, p, conf);
	else
		p.conf_path = conf;
	try {
		if (auto cmd = slurp(env_or("FXBLK_CMDLINE", default_cmdline_path)))
			p.cmdline_off = cmdline_auto_off(*cmd);
	} catch (const Error &) {
		// no /proc: no switch
	}
	return p;
}

}  // namespace fxctl
