#include "render.hpp"

#include "units.hpp"

#include <fmt/format.h>

namespace fxctl {
namespace {

json stat_json(const StatCounters &s, bool write)
{
	json j = {{"ios", s.ios},
		  {"sectors", s.sectors},
		  {"errors", s.errors},
		  {"inflight", s.inflight},
		  {"latency_us_log2", s.lat_hist}};
	if (write)
		j["fua"] = s.fua.value_or(0);
	return j;
}

json member_json(const Member &m)
{
	json j = {{"index", m.index},
		  {"disk", m.disk},
		  {"device", "/dev/" + m.disk},
		  {"major", m.major},
		  {"minor", m.minor},
		  {"data_offset_bytes", m.data_offset * sector_size},
		  {"data_bytes", m.data_sectors * sector_size}};
	if (m.nvme)
		j["nvme"] = {{"subsys_nqn", m.nvme->subsys_nqn},
			     {"transport", m.nvme->transport},
			     {"traddr", m.nvme->traddr}};
	if (m.stats) {
		j["read"] = stat_json(m.stats->read, false);
		j["write"] = stat_json(m.stats->write, true);
		j["discard"] = stat_json(m.stats->discard, false);
		j["flush"] = stat_json(m.stats->flush, false);
	}
	return j;
}

std::string vol_title(const json &v)
{
	return fmt::format("{} \"{}\"", v.at("disk").get<std::string>(),
			   v.at("name").get<std::string>());
}

std::string vol_summary(const json &v)
{
	auto n = v.at("members").size();
	return fmt::format("{} member{}, chunk {}, {}", n, n == 1 ? "" : "s",
			   format_size(v.at("chunk_bytes").get<std::uint64_t>()),
			   format_size(v.at("capacity_bytes").get<std::uint64_t>()));
}

// Upper bound in microseconds of the bucket holding quantile @q.
std::string lat_quantile(const json &hist, double q)
{
	std::uint64_t total = 0;
	for (const auto &c : hist)
		total += c.get<std::uint64_t>();
	if (!total)
		return "-";
	auto want = static_cast<std::uint64_t>(q * static_cast<double>(total));
	std::uint64_t seen = 0;
	for (std::size_t i = 0; i < hist.size(); ++i) {
		seen += hist[i].get<std::uint64_t>();
		if (seen > want || seen == total) {
			if (i + 1 >= hist.size())
				return fmt::format(">={}us", 1ULL << i);
			std::uint64_t us = 1ULL << (i + 1);
			return us >= 10000 ? fmt::format("<{}ms", us / 1000) : fmt::format("<{}us", us);
		}
	}
	return "-";
}

}  // namespace

std::vector<std::string> feature_names(std::uint64_t features)
{
	static const std::pair<std::uint64_t, const char *> known[] = {
		{FXBLK_FEAT_STRIPE, "stripe"},
		{FXBLK_FEAT_STATS, "stats"},
		{FXBLK_FEAT_EVENTS, "events"},
		{FXBLK_FEAT_NOWAIT, "nowait"},
	};
	std::vector<std::string> out;
	for (auto [bit, name] : known)
		if (features & bit)
			out.emplace_back(name);
	for (unsigned i = 0; i < 64; ++i) {
		std::uint64_t bit = 1ULL << i;
		bool is_known = false;
		for (auto [k, name] : known)
			is_known |= (k == bit);
		if ((features & bit) && !is_known)
			out.push_back(fmt::format("bit{}", i));
	}
	return out;
}

json volume_json(const Volume &v)
{
	json members = json::array();
	for (const auto &m : v.members)
		members.push_back(member_json(m));
	return {{"name", v.name},
		{"index", v.index},
		{"disk", v.disk},
		{"device", "/dev/" + v.disk},
		{"chunk_bytes", std::uint64_t{v.chunk_sectors} * sector_size},
		{"capacity_bytes", v.capacity * sector_size},
		{"logical_block_size", v.logical_block_size},
		{"open_count", v.open_count},
		{"members", members}};
}

json version_doc(const ModuleStatus &st)
{
	return {{"schema_version", schema_version},
		{"fxctl", {{"version", FXCTL_VERSION}}},
		{"module",
		 {{"version", st.version},
		  {"api_version", st.api_version},
		  {"features", feature_names(st.features)}}}};
}

json volume_doc(const Volume &v)
{
	return {{"schema_version", schema_version}, {"volume", volume_json(v)}};
}

json list_doc(const std::vector<Volume> &vols)
{
	json arr = json::array();
	for (const auto &v : vols)
		arr.push_back(volume_json(v));
	return {{"schema_version", schema_version}, {"volumes", arr}};
}

std::string text_version(const json &doc)
{
	const auto &m = doc.at("module");
	std::string feats;
	for (const auto &f : m.at("features"))
		feats += (feats.empty() ? "" : " ") + f.get<std::string>();
	return fmt::format("fxctl {}\nfxblk module {} (API {})\nfeatures: {}\n",
			   doc.at("fxctl").at("version").get<std::string>(),
			   m.at("version").get<std::string>(), m.at("api_version").get<int>(),
			   feats.empty() ? "none" : feats);
}

std::string text_created(const json &doc)
{
	const auto &v = doc.at("volume");
	return fmt::format("created {}: {}\n", vol_title(v), vol_summary(v));
}

std::string text_removed(const json &doc)
{
	return fmt::format("removed {}\n", vol_title(doc.at("volume")));
}

std::string text_volume(const json &doc)
{
	const auto &v = doc.at("volume");
	std::string out = fmt::format("{}  {}\n", vol_title(v), v.at("device").get<std::string>());
	out += fmt::format("  {}, logical block {} B, open {}\n", vol_summary(v),
			   v.at("logical_block_size").get<std::uint32_t>(),
			   v.at("open_count").get<std::uint32_t>());
	out += fmt::format("  {:>3}  {:<16} {:>9}  {:>12}  {:>12}\n", "#", "member", "maj:min",
			   "data offset", "data size");
	for (const auto &m : v.at("members")) {
		out += fmt::format("  {:>3}  {:<16} {:>9}  {:>12}  {:>12}\n",
				   m.at("index").get<std::uint32_t>(),
				   m.at("device").get<std::string>(),
				   fmt::format("{}:{}", m.at("major").get<std::uint32_t>(),
					       m.at("minor").get<std::uint32_t>()),
				   format_size(m.at("data_offset_bytes").get<std::uint64_t>()),
				   format_size(m.at("data_bytes").get<std::uint64_t>()));
		if (m.contains("nvme"))
			out += fmt::format("       {} {} {}\n",
					   m["nvme"].at("transport").get<std::string>(),
					   m["nvme"].at("traddr").get<std::string>(),
					   m["nvme"].at("subsys_nqn").get<std::string>());
	}
	return out;
}

std::string text_list(const json &doc)
{
	const auto &vols = doc.at("volumes");
	if (vols.empty())
		return "no volumes\n";
	std::string out = fmt::format("{:<6} {:<24} {:>12} {:>10} {:>7} {:>4}\n", "DISK", "NAME",
				      "CAPACITY", "CHUNK", "MEMBERS", "OPEN");
	for (const auto &v : vols)
		out += fmt::format("{:<6} {:<24} {:>12} {:>10} {:>7} {:>4}\n",
				   v.at("disk").get<std::string>(), v.at("name").get<std::string>(),
				   format_size(v.at("capacity_bytes").get<std::uint64_t>()),
				   format_size(v.at("chunk_bytes").get<std::uint64_t>()),
				   v.at("members").size(), v.at("open_count").get<std::uint32_t>());
	return out;
}

std::string text_stats(const json &doc, const json *prev, double seconds)
{
	const auto &v = doc.at("volume");
	std::string out = fmt::format("{}: {}\n", vol_title(v), vol_summary(v));
	bool rates = prev && seconds > 0;
	if (rates)
		out += fmt::format("  {:<10} {:<7} {:>10} {:>12} {:>7} {:>8}\n", "member", "op",
				   "ios/s", "bytes/s", "errors", "inflight");
	else
		out += fmt::format("  {:<10} {:<7} {:>12} {:>12} {:>7} {:>8} {:>8} {:>8}\n",
				   "member", "op", "ios", "bytes", "errors", "inflight", "p50",
				   "p99");
	const auto &members = v.at("members");
	for (std::size_t i = 0; i < members.size(); ++i) {
		const auto &m = members[i];
		for (const char *op : {"read", "write", "discard", "flush"}) {
			if (!m.contains(op))
				continue;
			const auto &s = m[op];
			auto ios = s.at("ios").get<std::uint64_t>();
			auto bytes = s.at("sectors").get<std::uint64_t>() * sector_size;
			auto errors = s.at("errors").get<std::uint64_t>();
			auto inflight = s.at("inflight").get<std::uint32_t>();
			if (rates) {
				const auto &p = prev->at("volume").at("members").at(i).at(op);
				auto d = [&](const char *k, std::uint64_t now) {
					auto before = p.at(k).get<std::uint64_t>();
					return now >= before ? static_cast<double>(now - before) : 0.0;
				};
				double dios = d("ios", ios);
				double dbytes = d("sectors", s.at("sectors").get<std::uint64_t>()) *
						sector_size;
				out += fmt::format(
					"  {:<10} {:<7} {:>10.0f} {:>10}/s {:>7} {:>8}\n",
					m.at("disk").get<std::string>(), op, dios / seconds,
					format_size(static_cast<std::uint64_t>(dbytes / seconds)),
					errors, inflight);
			} else {
				out += fmt::format("  {:<10} {:<7} {:>12} {:>12} {:>7} {:>8} {:>8} {:>8}\n",
						   m.at("disk").get<std::string>(), op, ios,
						   format_size(bytes), errors, inflight,
						   lat_quantile(s.at("latency_us_log2"), 0.5),
						   lat_quantile(s.at("latency_us_log2"), 0.99));
			}
		}
	}
	return out;
}

}  // namespace fxctl
