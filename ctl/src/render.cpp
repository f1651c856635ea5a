#include "render.hpp"

#include "error.hpp"
#include "label.hpp"
#include "units.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fmt/format.h>

namespace fxctl {
namespace {

const char *const ops[] = {"read", "write", "discard", "flush"};

// {"ge": lower, "lt": upper} in microseconds of the bucket holding the
// quantile; "lt" is null for the open-ended last bucket; null if no I/O.
json quantile_json(const std::vector<std::uint64_t> &hist, unsigned permille)
{
	auto b = quantile_bucket(hist, permille);
	if (!b)
		return nullptr;
	json lt = *b + 1 < hist.size() ? json(1ULL << (*b + 1)) : json(nullptr);
	return {{"ge", *b ? 1ULL << *b : 0ULL}, {"lt", lt}};
}

std::vector<std::uint64_t> hist_of(const json &s)
{
	return s.at("latency_us_log2").get<std::vector<std::uint64_t>>();
}

json stat_json(const StatCounters &s, bool write)
{
	std::vector<std::uint64_t> hist(s.lat_hist.begin(), s.lat_hist.end());
	json j = {{"ios", s.ios}, {"bytes", s.sectors * sector_size}, {"errors", s.errors},
		  {"inflight", s.inflight}};
	if (write)
		j["fua"] = s.fua.value_or(0);
	j["p50_us"] = quantile_json(hist, 500);
	j["p99_us"] = quantile_json(hist, 990);
	j["latency_us_log2"] = hist;
	return j;
}

json path_json(const NvmePath &p)
{
	return {{"controller", p.controller}, {"state", p.state},     {"transport", p.transport},
		{"traddr", p.traddr},         {"trsvcid", p.trsvcid}, {"host_traddr", p.host_traddr}};
}

json opt_json(const auto &v)
{
	return v ? json(*v) : json(nullptr);
}

json member_json(const Member &m)
{
	json j = {{"index", m.index},
		  {"disk", m.disk},
		  {"device", "/dev/" + m.disk},
		  {"major", m.major},
		  {"minor", m.minor},
		  {"state", state_name(m.state)},
		  {"errors", opt_json(m.errors)},
		  {"data_offset_bytes", m.data_offset * sector_size},
		  {"data_bytes", m.data_sectors * sector_size},
		  {"pci_p2pdma", opt_json(m.pci_p2pdma)}};
	if (m.nvme) {
		j["subsys_nqn"] = m.nvme->subsys_nqn;
		json paths = json::array();
		for (const auto &p : m.nvme->paths)
			paths.push_back(path_json(p));
		j["paths"] = paths;
	}
	if (m.stats) {
		j["read"] = stat_json(m.stats->read, false);
		j["write"] = stat_json(m.stats->write, true);
		j["discard"] = stat_json(m.stats->discard, false);
		j["flush"] = stat_json(m.stats->flush, false);
	}
	return j;
}

// "nvme-rdma" for an NVMe-oF member reached over RDMA, "nvme-pci" for a
// local PCIe one; "" when fxctl could not tell.
std::string member_transport(const Member &m)
{
	if (!m.nvme || m.nvme->paths.empty() || m.nvme->paths.front().transport.empty())
		return "";
	const std::string &t = m.nvme->paths.front().transport;
	return t == "pcie" ? "nvme-pci" : "nvme-" + t;
}

}  // namespace

json p2pdma_json(const Volume &v)
{
	auto no = [](const std::string &why) { return json{{"capable", false}, {"reason", why}}; };
	if (!v.p2pdma)
		return {{"capable", nullptr},
			{"reason", "the fxblk module does not report PCI P2PDMA (an older release)"}};
	switch (*v.p2pdma) {
	case FXBLK_P2PDMA_CAPABLE:
		return {{"capable", true}, {"reason", nullptr}};
	case FXBLK_P2PDMA_NO_KERNEL:
		return no("the kernel has no PCI P2PDMA (built without CONFIG_PCI_P2PDMA)");
	case FXBLK_P2PDMA_NO_MEMBER: {
		std::string who;
		unsigned n = 0;
		for (const auto &m : v.members) {
			if (m.pci_p2pdma.value_or(true))
				continue;
			std::string t = member_transport(m);
			who += fmt::format("{}{}{}", n++ ? ", " : "", m.disk,
					   t.empty() ? "" : " (" + t + ")");
		}
		if (!n)
			return no("a member does not support PCI P2PDMA");
		return no(fmt::format("member{} {} {} not support PCI P2PDMA", n > 1 ? "s" : "", who,
				      n > 1 ? "do" : "does"));
	}
	default:
		return no(fmt::format("reason {} (a newer fxblk module)", *v.p2pdma));
	}
}

namespace {

json direct_json(const DirectCounters &d)
{
	return {{"read", {{"ios", d.read_ios}, {"bytes", d.read_bytes}}},
		{"write", {{"ios", d.write_ios}, {"bytes", d.write_bytes}}},
		{"refused", d.refused}};
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

std::string flags_text(const json &flags)
{
	if (flags.is_null())
		return "unknown";
	std::string out;
	for (const auto &f : flags)
		out += (out.empty() ? "" : ",") + f.get<std::string>();
	return out.empty() ? "-" : out;
}

std::string errors_text(const json &e)
{
	return e.is_null() ? "unknown" : std::to_string(e.get<std::uint64_t>());
}

// "<128us", "<16.384ms", ">=2147483648us"; "-" without I/O.
std::string quantile_text(const json &q)
{
	if (q.is_null())
		return "-";
	if (q.at("lt").is_null())
		return fmt::format(">={}us", q.at("ge").get<std::uint64_t>());
	auto us = q.at("lt").get<std::uint64_t>();
	if (us < 10000)
		return fmt::format("<{}us", us);
	// 2^k microseconds have at most 3 decimals in milliseconds: exact.
	return fmt::format("<{}.{:03}ms", us / 1000, us % 1000);
}

// The kernel's controller state, except that "connecting" of a controller
// that already has namespaces is a reconnect after a path loss.
std::string path_state_text(const std::string &state)
{
	return state == "connecting" ? "reconnecting" : state;
}

std::size_t widest(const json &arr, const char *key, std::size_t least)
{
	std::size_t w = least;
	for (const auto &e : arr)
		w = std::max(w, e.at(key).get<std::string>().size());
	return w;
}

}  // namespace

std::optional<std::size_t> quantile_bucket(const std::vector<std::uint64_t> &hist,
					   unsigned permille)
{
	unsigned __int128 total = 0;
	for (auto c : hist)
		total += c;
	if (!total)
		return std::nullopt;
	// Nearest rank: the smallest bucket whose cumulative count reaches
	// ceil(q * total), at least the first sample.
	unsigned __int128 rank = (total * permille + 999) / 1000;
	rank = std::max<unsigned __int128>(rank, 1);
	unsigned __int128 seen = 0;
	for (std::size_t i = 0; i < hist.size(); ++i) {
		seen += hist[i];
		if (seen >= rank)
			return i;
	}
	return hist.size() - 1;
}

std::string state_name(const std::optional<std::uint32_t> &state)
{
	if (!state)
		return "unknown";
	switch (*state) {
	case FXBLK_STATE_LIVE: return "live";
	case FXBLK_STATE_FAILING: return "failing";
	case FXBLK_STATE_GONE: return "gone";
	default: return fmt::format("state{}", *state);  // a newer module's
	}
}

namespace {

std::vector<std::string> bit_names(std::uint64_t bits,
				   std::initializer_list<std::pair<std::uint64_t, const char *>> known)
{
	std::vector<std::string> out;
	for (auto [bit, name] : known)
		if (bits & bit)
			out.emplace_back(name);
	for (unsigned i = 0; i < 64; ++i) {
		std::uint64_t bit = 1ULL << i;
		bool is_known = false;
		for (auto [k, name] : known)
			is_known |= (k == bit);
		if ((bits & bit) && !is_known)
			out.push_back(fmt::format("bit{}", i));
	}
	return out;
}

}  // namespace

std::vector<std::string> feature_names(std::uint64_t features)
{
	return bit_names(features, {{FXBLK_FEAT_STRIPE, "stripe"},
				    {FXBLK_FEAT_STATS, "stats"},
				    {FXBLK_FEAT_EVENTS, "events"},
				    {FXBLK_FEAT_NOWAIT, "nowait"},
				    {FXBLK_FEAT_HEALTH, "health"},
				    {FXBLK_FEAT_PCI_P2PDMA, "pci-p2pdma"},
				    {FXBLK_FEAT_UUID, "uuid"}});
}

std::vector<std::string> volume_flag_names(std::uint64_t flags)
{
	return bit_names(flags, {{FXBLK_VOL_READ_ONLY, "read-only"},
				 {FXBLK_VOL_NOWAIT, "nowait"},
				 {FXBLK_VOL_REMOVED, "removed"},
				 {FXBLK_VOL_PCI_P2PDMA, "pci-p2pdma"}});
}

json volume_json(const Volume &v)
{
	json members = json::array();
	for (const auto &m : v.members)
		members.push_back(member_json(m));
	json j = {{"name", v.name},
		  {"index", v.index},
		  {"disk", v.disk},
		  {"device", "/dev/" + v.disk},
		  // the labels' volume UUID; null: not known to the module
		  {"uuid", v.uuid ? json(label::uuid_to_string(*v.uuid)) : json(nullptr)},
		  {"state", state_name(v.state)},
		  {"flags", v.flags ? json(volume_flag_names(*v.flags)) : json(nullptr)},
		  {"chunk_bytes", std::uint64_t{v.chunk_sectors} * sector_size},
		  {"capacity_bytes", v.capacity * sector_size},
		  {"logical_block_size", v.logical_block_size},
		  {"open_count", v.open_count},
		  {"p2pdma", p2pdma_json(v)}};
	if (v.direct)
		j["direct"] = direct_json(*v.direct);
	j["members"] = members;
	return j;
}

json event_json(const Event &ev)
{
	static const char *const names[] = {"unspec", "created", "destroyed", "member_error",
					    "member_state"};
	json j = {{"event", ev.type < std::size(names) ? names[ev.type]
						       : fmt::format("event{}", ev.type)},
		  {"volume", {{"name", ev.name}, {"index", opt_json(ev.index)}, {"disk", ev.disk}}}};
	if (ev.member) {
		// MEMBER_STATE carries errno 0: no error.
		int err = ev.err ? -*ev.err : 0;
		j["member"] = {{"index", ev.member->index},
			       {"disk", ev.member->disk},
			       {"state", state_name(ev.member->state)},
			       {"errors", opt_json(ev.member->errors)},
			       {"errno", err ? json(err) : json(nullptr)},
			       {"errno_name", err ? json(errno_name(err)) : json(nullptr)}};
	}
	return j;
}

json event_doc(const Event &ev, double timestamp)
{
	json j = {{"schema_version", schema_version}, {"timestamp", timestamp}};
	j.update(event_json(ev));
	return j;
}

json version_doc(const std::optional<ModuleStatus> &st)
{
	json module = nullptr;
	if (st) {
		module = {{"version", st->version},
			  {"api_version", st->api_version},
			  {"features", feature_names(st->features)}};
		if (st->live_volumes)
			module["live_volumes"] = *st->live_volumes;
	}
	return {{"schema_version", schema_version},
		{"fxctl", {{"version", FXCTL_VERSION}}},
		{"module", module}};
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

json stats_doc(const Volume &v, double timestamp)
{
	return {{"schema_version", schema_version},
		{"timestamp", timestamp},
		{"volume", volume_json(v)}};
}

bool add_interval(json &doc, const json &prev, double seconds)
{
	const auto &now_v = doc.at("volume"), &prev_v = prev.at("volume");
	const auto &mn = now_v.at("members"), &mp = prev_v.at("members");
	if (!(seconds > 0) || now_v.at("index") != prev_v.at("index") ||
	    now_v.at("name") != prev_v.at("name") || mn.size() != mp.size())
		return false;
	for (std::size_t i = 0; i < mn.size(); ++i)
		if (mn[i].at("disk") != mp[i].at("disk"))
			return false;
	// A counter that went backwards means a different volume: no rates.
	auto delta = [](const json &a, const json &b, const char *k) -> std::optional<std::uint64_t> {
		auto x = a.at(k).get<std::uint64_t>(), y = b.at(k).get<std::uint64_t>();
		return x >= y ? std::optional(x - y) : std::nullopt;
	};
	std::vector<json> intervals;
	for (std::size_t i = 0; i < mn.size(); ++i)
		for (const char *op : ops) {
			if (!mn[i].contains(op) || !mp[i].contains(op))
				return false;
			const auto &s = mn[i].at(op), &p = mp[i].at(op);
			auto dios = delta(s, p, "ios"), dbytes = delta(s, p, "bytes"),
			     derr = delta(s, p, "errors");
			auto h = hist_of(s), hp = hist_of(p);
			if (!dios || !dbytes || !derr || h.size() != hp.size())
				return false;
			for (std::size_t b = 0; b < h.size(); ++b) {
				if (h[b] < hp[b])
					return false;
				h[b] -= hp[b];
			}
			intervals.push_back({{"ios_per_sec", static_cast<double>(*dios) / seconds},
					     {"bytes_per_sec", static_cast<double>(*dbytes) / seconds},
					     {"errors", *derr},
					     {"p50_us", quantile_json(h, 500)},
					     {"p99_us", quantile_json(h, 990)}});
		}
	doc["interval_seconds"] = seconds;
	std::size_t k = 0;
	for (auto &m : doc["volume"]["members"])
		for (const char *op : ops)
			m[op]["interval"] = std::move(intervals[k++]);
	return true;
}

json error_doc(const std::string &message, int code, int err)
{
	json e = {{"message", message}, {"code", code}};
	e["errno"] = err ? json(err) : json(nullptr);
	e["errno_name"] = err ? json(errno_name(err)) : json(nullptr);
	return {{"schema_version", schema_version}, {"error", e}};
}

std::string text_version(const json &doc)
{
	std::string out = fmt::format("fxctl {}\n", doc.at("fxctl").at("version").get<std::string>());
	const auto &m = doc.at("module");
	if (m.is_null())
		return out + "fxblk module not loaded\n";
	std::string feats;
	for (const auto &f : m.at("features"))
		feats += (feats.empty() ? "" : " ") + f.get<std::string>();
	out += fmt::format("fxblk module {} (API {})\nfeatures: {}\n", m.at("version").get<std::string>(),
			   m.at("api_version").get<int>(), feats.empty() ? "none" : feats);
	if (m.contains("live_volumes"))
		out += fmt::format("live volumes: {}\n", m.at("live_volumes").get<std::uint32_t>());
	return out;
}

namespace {

template <std::size_t N>
std::string hex_id(const std::array<std::uint8_t, N> &a)
{
	if (std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; }))
		return "";
	std::string s;
	for (auto b : a)
		s += fmt::format("{:02x}", b);
	return s;
}

json copy_json(bool valid, bool blank, const std::string &reason)
{
	return {{"valid", valid}, {"blank", blank},
		{"reason", reason.empty() ? json(nullptr) : json(reason)}};
}

}  // namespace

json member_id_json(const label::MemberId &m, json into)
{
	into["nsid"] = m.nsid;
	into["subsys_nqn"] = m.subsys_nqn;
	into["nguid"] = hex_id(m.nguid);
	into["uuid"] = hex_id(m.uuid).empty() ? "" : label::uuid_to_string(m.uuid);
	into["eui64"] = hex_id(m.eui64);
	return into;
}

json examine_doc(const std::string &device, const label::MemberLabel &ml,
		 const std::string &reused)
{
	json doc = {{"schema_version", schema_version},
		    {"device", device},
		    {"member", ml.label.has_value()},
		    {"label_source", ml.label ? json(ml.source()) : json(nullptr)}};
	doc["primary"] = copy_json(ml.primary_reason.empty(), ml.primary_blank, ml.primary_reason);
	doc["backup"] = copy_json(ml.backup_reason.empty(), ml.backup_blank, ml.backup_reason);
	doc["reused"] = reused.empty() ? json(nullptr) : json(reused);
	if (!ml.label) {
		doc["label"] = nullptr;
		return doc;
	}
	const label::Label &l = *ml.label;
	json members = json::array();
	for (std::size_t i = 0; i < l.members.size(); i++) {
		const auto &m = l.members[i];
		members.push_back(member_id_json(m, json{{"index", i}}));
	}
	doc["label"] = {{"format_version", l.format_version()},
			{"owner", l.owner_nqn.empty() ? json(nullptr) : json(l.owner_nqn)},
			{"volume_uuid", label::uuid_to_string(l.volume_uuid)},
			{"volume_name", l.volume_name},
			{"member_index", l.member_index},
			{"member_count", l.member_count},
			{"generation", l.generation},
			{"created", l.created_unix},
			{"chunk_bytes", std::uint64_t(l.chunk_sectors) * sector_size},
			{"data_offset_bytes", l.data_offset_sectors * sector_size},
			{"data_bytes", l.data_sectors * sector_size},
			{"capacity_bytes", l.data_sectors * sector_size * l.member_count},
			{"members", members}};
	return doc;
}

std::string text_examine(const json &doc)
{
	auto dev = doc.at("device").get<std::string>();
	auto copy_text = [](const char *which, const json &c) {
		return fmt::format("{} label: {}", which, c.at("reason").get<std::string>());
	};
	if (!doc.at("member").get<bool>())
		return fmt::format("{}: not an fxblk member ({}; {})\n", dev,
				   copy_text("primary", doc.at("primary")),
				   copy_text("backup", doc.at("backup")));
	const auto &l = doc.at("label");
	auto src = doc.at("label_source").get<std::string>();
	std::string out = fmt::format(
		"{}: member {} of {} of volume \"{}\" (label: {})\n", dev,
		l.at("member_index").get<std::uint32_t>(), l.at("member_count").get<std::uint32_t>(),
		l.at("volume_name").get<std::string>(), src);
	out += fmt::format("  volume uuid  {}\n", l.at("volume_uuid").get<std::string>());
	out += fmt::format("  generation   {}, created {}\n", l.at("generation").get<std::uint64_t>(),
			   iso_time(static_cast<double>(l.at("created").get<std::uint64_t>())));
	out += fmt::format("  owner        {}\n", l.at("owner").is_null()
							 ? "none recorded (label format 1)"
							 : l.at("owner").get<std::string>());
	out += fmt::format("  geometry     chunk {}, data offset {}, {} per member, capacity {}\n",
			   format_size(l.at("chunk_bytes").get<std::uint64_t>()),
			   format_size(l.at("data_offset_bytes").get<std::uint64_t>()),
			   format_size(l.at("data_bytes").get<std::uint64_t>()),
			   format_size(l.at("capacity_bytes").get<std::uint64_t>()));
	out += "  members (stripe order):\n";
	auto self = l.at("member_index").get<std::size_t>();
	for (const auto &m : l.at("members")) {
		auto i = m.at("index").get<std::size_t>();
		label::MemberId id;
		id.nsid = m.at("nsid").get<std::uint32_t>();
		id.subsys_nqn = m.at("subsys_nqn").get<std::string>();
		std::string ident;
		for (const char *k : {"nguid", "uuid", "eui64"})
			if (!m.at(k).get<std::string>().empty()) {
				ident = fmt::format(" ({} {})", k, m.at(k).get<std::string>());
				break;
			}
		std::string where = id.subsys_nqn.empty() && !id.nsid
					    ? (ident.empty() ? "unknown device (no NVMe identity)"
							     : ident.substr(2, ident.size() - 3))
					    : fmt::format("nsid {} of {}{}", id.nsid,
							  id.subsys_nqn.empty() ? "?" : id.subsys_nqn,
							  ident);
		out += fmt::format("    {:>2}{} {}\n", i, i == self ? "*" : " ", where);
	}
	// A damaged copy is worth saying even when the other one serves.
	for (const char *which : {"primary", "backup"}) {
		const auto &c = doc.at(which);
		if (!c.at("valid").get<bool>())
			out += fmt::format("  warning: {}; the {} label serves\n", copy_text(which, c), src);
	}
	if (doc.contains("reused") && !doc.at("reused").is_null())
		out += fmt::format("  warning: reused: {}; not assembled as a member: 'fxctl wipe "
				   "{}' removes the old label, 'fxctl assemble --force {}' takes "
				   "it back\n", doc.at("reused").get<std::string>(), dev,
				   l.at("volume_name").get<std::string>());
	return out;
}

std::string export_examine(const json &doc)
{
	if (!doc.at("member").get<bool>())
		return "";
	const auto &l = doc.at("label");
	// Values are safe unquoted: UUID hex, names of [A-Za-z0-9._-], numbers.
	return fmt::format("FXBLK_MEMBER=1\nFXBLK_UUID={}\nFXBLK_NAME={}\nFXBLK_INDEX={}\n"
			   "FXBLK_COUNT={}\nFXBLK_GENERATION={}\nFXBLK_LABEL={}\n",
			   l.at("volume_uuid").get<std::string>(),
			   l.at("volume_name").get<std::string>(),
			   l.at("member_index").get<std::uint32_t>(),
			   l.at("member_count").get<std::uint32_t>(),
			   l.at("generation").get<std::uint64_t>(),
			   doc.at("label_source").get<std::string>()) +
	       (doc.contains("reused") && !doc.at("reused").is_null() ? "FXBLK_REUSED=1\n" : "");
}

std::string text_created(const json &doc)
{
	const auto &v = doc.at("volume");
	return fmt::format("created {}: {}\n", vol_title(v), vol_summary(v));
}

std::string iso_time(double epoch)
{
	auto t = static_cast<std::time_t>(std::floor(epoch));
	std::tm tm{};
	gmtime_r(&t, &tm);
	char buf[32];
	std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

std::string text_event(const json &doc)
{
	const auto &v = doc.at("volume");
	std::string type = doc.at("event").get<std::string>();
	std::replace(type.begin(), type.end(), '_', '-');
	std::string out = fmt::format("{} {} {} ({})", iso_time(doc.at("timestamp").get<double>()),
				      type, v.at("name").get<std::string>(),
				      v.at("disk").get<std::string>());
	if (doc.contains("member")) {
		const auto &m = doc.at("member");
		std::string state = m.at("state").get<std::string>();
		out += fmt::format(" member {} {}:", m.at("index").get<std::uint32_t>(),
				   m.at("disk").get<std::string>());
		if (!m.at("errno").is_null())
			out += fmt::format(" error -{} ({}){}", m.at("errno").get<int>(),
					   m.at("errno_name").get<std::string>(),
					   state == "unknown" ? "" : ", " + state);
		else
			out += " " + state;
	}
	return out + '\n';
}

std::string text_removed(const json &doc)
{
	return fmt::format("removed {}\n", vol_title(doc.at("volume")));
}

namespace {

// "  PCI P2PDMA: yes" / "  PCI P2PDMA: no, member nvme1n1 (nvme-rdma) ..."
std::string p2pdma_text(const json &p)
{
	const auto &c = p.at("capable");
	if (c.is_boolean() && c.get<bool>())
		return "  PCI P2PDMA: yes (O_DIRECT from device memory goes direct)\n";
	return fmt::format("  PCI P2PDMA: {}, {}\n", c.is_null() ? "unknown" : "no",
			   p.at("reason").get<std::string>());
}

// "-" when the module does not know the volume's UUID (an older module, or
// a volume created without one).
std::string uuid_text(const json &uuid)
{
	return uuid.is_null() ? "-" : uuid.get<std::string>();
}

}  // namespace

std::string text_volume(const json &doc)
{
	const auto &v = doc.at("volume");
	const auto &members = v.at("members");
	std::string out = fmt::format("{}  {}\n", vol_title(v), v.at("device").get<std::string>());
	out += fmt::format("  uuid {}\n", uuid_text(v.at("uuid")));
	out += fmt::format("  state {}, flags {}\n", v.at("state").get<std::string>(),
			   flags_text(v.at("flags")));
	out += fmt::format("  {}, logical block {} B, open {}\n", vol_summary(v),
			   v.at("logical_block_size").get<std::uint32_t>(),
			   v.at("open_count").get<std::uint32_t>());
	out += p2pdma_text(v.at("p2pdma"));
	std::size_t w = widest(members, "device", 6);
	auto row = [&](const auto &idx, const auto &dev, const auto &majmin, const auto &state,
		       const auto &errors, const auto &off, const auto &size) {
		return fmt::format("  {:>3}  {:<{}} {:>9}  {:<8} {:>8}  {:>12}  {:>12}\n", idx, dev,
				   w, majmin, state, errors, off, size);
	};
	out += row("#", "member", "maj:min", "state", "errors", "data offset", "data size");
	for (const auto &m : members) {
		out += row(m.at("index").get<std::uint32_t>(), m.at("device").get<std::string>(),
			   fmt::format("{}:{}", m.at("major").get<std::uint32_t>(),
				       m.at("minor").get<std::uint32_t>()),
			   m.at("state").get<std::string>(), errors_text(m.at("errors")),
			   format_size(m.at("data_offset_bytes").get<std::uint64_t>()),
			   format_size(m.at("data_bytes").get<std::uint64_t>()));
		if (!m.contains("paths"))
			continue;
		out += fmt::format("       subsystem {}\n", m.at("subsys_nqn").get<std::string>());
		for (const auto &p : m.at("paths")) {
			std::string addr = p.at("traddr").get<std::string>();
			if (!p.at("trsvcid").get<std::string>().empty())
				addr += ":" + p.at("trsvcid").get<std::string>();
			out += fmt::format("       path {} {} {} {}\n",
					   p.at("controller").get<std::string>(),
					   p.at("transport").get<std::string>(), addr,
					   path_state_text(p.at("state").get<std::string>()));
		}
	}
	return out;
}

std::string text_list(const json &doc)
{
	const auto &vols = doc.at("volumes");
	if (vols.empty())
		return "no volumes\n";
	// Names are up to 31 characters: the column grows to the longest.
	std::size_t wd = widest(vols, "disk", 5), wn = widest(vols, "name", 4);
	auto row = [&](const auto &disk, const auto &name, const auto &state, const auto &cap,
		       const auto &chunk, const auto &members, const auto &open,
		       const auto &uuid, const auto &flags) {
		return fmt::format("{:<{}} {:<{}} {:<8} {:>12} {:>10} {:>7} {:>4}  {:<36}  {}\n",
				   disk, wd, name, wn, state, cap, chunk, members, open, uuid,
				   flags);
	};
	std::string out = row("DISK", "NAME", "STATE", "CAPACITY", "CHUNK", "MEMBERS", "OPEN",
			      "UUID", "FLAGS");
	for (const auto &v : vols)
		out += row(v.at("disk").get<std::string>(), v.at("name").get<std::string>(),
			   v.at("state").get<std::string>(),
			   format_size(v.at("capacity_bytes").get<std::uint64_t>()),
			   format_size(v.at("chunk_bytes").get<std::uint64_t>()),
			   v.at("members").size(), v.at("open_count").get<std::uint32_t>(),
			   uuid_text(v.at("uuid")), flags_text(v.at("flags")));
	return out;
}

std::string text_stats(const json &doc)
{
	const auto &v = doc.at("volume");
	std::string out = fmt::format("{}: {}, state {}\n", vol_title(v), vol_summary(v),
				      v.at("state").get<std::string>());
	const auto &members = v.at("members");
	std::size_t w = widest(members, "disk", 6);
	bool rates = doc.contains("interval_seconds");
	if (rates)
		out += fmt::format("  {:<{}} {:<7} {:>10} {:>12} {:>7} {:>8} {:>10} {:>10}   "
				   "(last {:.2f} s)\n",
				   "member", w, "op", "ios/s", "bytes/s", "errors", "inflight",
				   "p50", "p99", doc.at("interval_seconds").get<double>());
	else
		out += fmt::format("  {:<{}} {:<7} {:>12} {:>12} {:>7} {:>8} {:>10} {:>10}\n",
				   "member", w, "op", "ios", "bytes", "errors", "inflight", "p50",
				   "p99");
	for (const auto &m : members) {
		for (const char *op : ops) {
			if (!m.contains(op))
				continue;
			const auto &s = m[op];
			std::string disk = m.at("disk").get<std::string>();
			auto inflight = s.at("inflight").get<std::uint32_t>();
			if (rates) {
				const auto &iv = s.at("interval");
				out += fmt::format(
					"  {:<{}} {:<7} {:>10.0f} {:>10}/s {:>7} {:>8} {:>10} {:>10}\n",
					disk, w, op, iv.at("ios_per_sec").get<double>(),
					format_size(static_cast<std::uint64_t>(
						iv.at("bytes_per_sec").get<double>())),
					iv.at("errors").get<std::uint64_t>(), inflight,
					quantile_text(iv.at("p50_us")), quantile_text(iv.at("p99_us")));
			} else {
				out += fmt::format("  {:<{}} {:<7} {:>12} {:>12} {:>7} {:>8} {:>10} {:>10}\n",
						   disk, w, op, s.at("ios").get<std::uint64_t>(),
						   format_size(s.at("bytes").get<std::uint64_t>()),
						   s.at("errors").get<std::uint64_t>(), inflight,
						   quantile_text(s.at("p50_us")),
						   quantile_text(s.at("p99_us")));
			}
		}
	}
	if (v.contains("direct")) {
		const auto &d = v.at("direct");
		out += fmt::format("  direct (PCI P2PDMA): read {} I/Os, {} B; write {} I/Os, {} B; "
				   "refused {}\n",
				   d.at("read").at("ios").get<std::uint64_t>(),
				   d.at("read").at("bytes").get<std::uint64_t>(),
				   d.at("write").at("ios").get<std::uint64_t>(),
				   d.at("write").at("bytes").get<std::uint64_t>(),
				   d.at("refused").get<std::uint64_t>());
	}
	return out;
}

}  // namespace fxctl

// ---- NVMe-oF connections and the doctor -----------------------------------

namespace fxctl {
namespace {

json opt_int(const std::optional<int> &v)
{
	return v ? json(*v) : json(nullptr);
}

json target_json(const FabricTarget &t)
{
	return {{"subsysnqn", t.subsysnqn},
		{"transport", t.transport},
		{"traddr", t.traddr},
		{"trsvcid", t.trsvcid.empty() ? default_trsvcid(t) : t.trsvcid},
		{"host_traddr", t.host_traddr.empty() ? json(nullptr) : json(t.host_traddr)},
		{"host_iface", t.host_iface.empty() ? json(nullptr) : json(t.host_iface)},
		{"hostnqn", t.hostnqn}};
}

json controller_json(const Controller &c)
{
	return {{"controller", c.name},       {"state", c.state},
		{"subsysnqn", c.subsysnqn},   {"transport", c.transport},
		{"traddr", c.traddr},         {"trsvcid", c.trsvcid},
		{"hostnqn", c.hostnqn},       {"ctrl_loss_tmo", opt_int(c.ctrl_loss_tmo)},
		{"fast_io_fail_tmo", opt_int(c.fast_io_fail_tmo)},
		{"reconnect_delay", opt_int(c.reconnect_delay)}};
}

}  // namespace

json connect_doc(const std::vector<ConnectResult> &results)
{
	json arr = json::array();
	for (const auto &r : results) {
		json j = target_json(r.target);
		j["status"] = r.status;
		j["controller"] = r.controller.empty() ? json(nullptr) : json(r.controller);
		j["state"] = r.state.empty() ? json(nullptr) : json(r.state);
		j["attempts"] = r.attempts;
		j["error"] = r.error.empty() ? json(nullptr) : json(r.error);
		if (r.err)
			j["errno_name"] = errno_name(r.err);
		arr.push_back(j);
	}
	return {{"schema_version", schema_version}, {"connections", arr}};
}

std::string text_connect(const json &doc)
{
	std::string out;
	for (const auto &c : doc.at("connections")) {
		std::string what = fmt::format("{} via {} {}:{}", c.at("subsysnqn").get<std::string>(),
					       c.at("transport").get<std::string>(),
					       c.at("traddr").get<std::string>(),
					       c.at("trsvcid").get<std::string>());
		if (c.value("host_traddr", json()).is_string())
			what += " from " + c.at("host_traddr").get<std::string>();
		if (c.value("host_iface", json()).is_string())
			what += " through " + c.at("host_iface").get<std::string>();
		auto status = c.at("status").get<std::string>();
		if (status == "failed")
			out += fmt::format("failed: {}: {}\n", what, c.at("error").get<std::string>());
		else if (status == "already-connected")
			out += fmt::format("already connected as {} ({}): {}\n",
					   c.at("controller").get<std::string>(),
					   c.at("state").get<std::string>(), what);
		else
			out += fmt::format("connected {} as {}{}\n", what,
					   c.at("controller").get<std::string>(),
					   c.at("attempts").get<unsigned>() > 1
						   ? fmt::format(" (attempt {})",
								 c.at("attempts").get<unsigned>())
						   : "");
	}
	return out;
}

json discovery_doc(const FabricTarget &t, const std::vector<DiscoveryEntry> &entries)
{
	json arr = json::array();
	for (const auto &e : entries)
		arr.push_back({{"subsysnqn", e.subsysnqn}, {"subtype", e.subtype},
			       {"transport", e.transport}, {"traddr", e.traddr},
			       {"trsvcid", e.trsvcid},     {"portid", e.portid}});
	json from = target_json(t);
	from.erase("subsysnqn");
	return {{"schema_version", schema_version}, {"discovery", from}, {"entries", arr}};
}

std::string text_discovery(const json &doc)
{
	std::string out;
	for (const auto &e : doc.at("entries"))
		out += fmt::format("{:<9} {} {}:{} port {} {}\n", e.at("subtype").get<std::string>(),
				   e.at("transport").get<std::string>(),
				   e.at("traddr").get<std::string>(),
				   e.at("trsvcid").get<std::string>(), e.at("portid").get<int>(),
				   e.at("subsysnqn").get<std::string>());
	return out.empty() ? "no entries\n" : out;
}

json disconnect_doc(const std::vector<Controller> &ctrls)
{
	json arr = json::array();
	for (const auto &c : ctrls)
		arr.push_back(controller_json(c));
	return {{"schema_version", schema_version}, {"disconnected", arr}};
}

std::string text_disconnect(const json &doc)
{
	std::string out;
	for (const auto &c : doc.at("disconnected"))
		out += fmt::format("disconnected {} ({})\n", c.at("controller").get<std::string>(),
				   c.at("subsysnqn").get<std::string>());
	return out;
}

json doctor_doc(const DoctorFacts &f, const std::vector<Finding> &findings)
{
	json rdma = json::array();
	for (const auto &d : f.rdma) {
		json ports = json::array();
		for (const auto &p : d.ports) {
			json gids = json::array();
			for (const auto &g : p.gids)
				gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", g.type},
						{"netdev", g.netdev}, {"netdev_mtu", opt_json(g.netdev_mtu)}});
			ports.push_back({{"port", p.port}, {"state", p.state},
					 {"link_layer", p.link_layer}, {"active_mtu", p.active_mtu},
					 {"gids", gids}});
		}
		rdma.push_back({{"device", d.name}, {"ports", ports}});
	}
	json modules = json::object();
	for (const auto &[m, on] : f.modules)
		modules[m] = on;
	json ctrls = json::array();
	for (const auto &c : f.controllers)
		if (!transport_module(c.transport).empty())
			ctrls.push_back(controller_json(c));
	json vols = nullptr;
	if (f.volumes) {
		vols = json::array();
		for (const auto &v : *f.volumes) {
			json members = json::array();
			bool complete = true;
			for (const auto &m : v.members) {
				members.push_back({{"index", m.index}, {"disk", m.disk},
						   {"state", state_name(m.state)}});
				complete &= m.state != FXBLK_STATE_GONE;
			}
			vols.push_back({{"name", v.name}, {"disk", v.disk},
					{"state", state_name(v.state)}, {"complete", complete},
					{"members", members}});
		}
	}
	json fs = json::array();
	unsigned errors = 0, warnings = 0;
	for (const auto &x : findings) {
		errors += x.severity == "error";
		warnings += x.severity == "warning";
		fs.push_back({{"severity", x.severity}, {"check", x.check}, {"message", x.message},
			      {"fix", x.fix.empty() ? json(nullptr) : json(x.fix)}});
	}
	return {{"schema_version", schema_version},
		{"summary", {{"errors", errors}, {"warnings", warnings}}},
		{"findings", fs},
		{"rdma", rdma},
		{"modules", modules},
		{"host", {{"hostnqn", f.hostnqn.empty() ? json(nullptr) : json(f.hostnqn)},
			  {"hostid", f.hostid.empty() ? json(nullptr) : json(f.hostid)}}},
		{"multipath", opt_json(f.multipath)},
		{"controllers", ctrls},
		{"volumes", vols}};
}

std::string text_doctor(const json &doc)
{
	std::string out;
	for (const auto &d : doc.at("rdma"))
		for (const auto &p : d.at("ports"))
			for (const auto &g : p.at("gids"))
				if (g.at("type") == "RoCEv2")
					out += fmt::format("rdma: {} port {} {} RoCEv2 GID {} (index {}) "
							   "on {}, MTU {}\n",
							   d.at("device").get<std::string>(),
							   p.at("port").get<unsigned>(),
							   p.at("state").get<std::string>(),
							   g.at("gid").get<std::string>(),
							   g.at("index").get<unsigned>(),
							   g.at("netdev").get<std::string>(),
							   g.at("netdev_mtu").is_null()
								   ? std::string("?")
								   : g.at("netdev_mtu").dump());
	for (const auto &c : doc.at("controllers"))
		out += fmt::format("controller: {} {} {} via {} {}:{} ctrl_loss_tmo {} "
				   "fast_io_fail_tmo {}\n",
				   c.at("controller").get<std::string>(), c.at("state").get<std::string>(),
				   c.at("subsysnqn").get<std::string>(), c.at("transport").get<std::string>(),
				   c.at("traddr").get<std::string>(), c.at("trsvcid").get<std::string>(),
				   c.at("ctrl_loss_tmo").dump(), c.at("fast_io_fail_tmo").dump());
	for (const auto &x : doc.at("findings")) {
		out += fmt::format("{}: {}\n", x.at("severity").get<std::string>(),
				   x.at("message").get<std::string>());
		if (!x.at("fix").is_null())
			out += fmt::format("  fix: {}\n", x.at("fix").get<std::string>());
	}
	const auto &s = doc.at("summary");
	out += fmt::format("{} error(s), {} warning(s)\n", s.at("errors").get<unsigned>(),
			   s.at("warnings").get<unsigned>());
	return out;
}

}  // namespace fxctl
