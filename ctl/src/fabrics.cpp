#include "fabrics.hpp"

#include "error.hpp"
#include "nvme_root.hpp"
#include "ownership.hpp"
#include "sysfs.hpp"

// libnvme 1.3 headers carry no extern "C" guards.
extern "C" {
#include <nvme/fabrics.h>
#include <nvme/tree.h>
#include <nvme/util.h>
}
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <netinet/in.h>
#include <regex>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

namespace fxctl {

std::string FabricTarget::display() const
{
	std::string port = trsvcid.empty() ? default_trsvcid(*this) : trsvcid;
	std::string out = fmt::format("{} via {} {}:{}", subsysnqn, transport, traddr, port);
	if (!host_traddr.empty())
		out += " from " + host_traddr;
	if (!host_iface.empty())
		out += " through " + host_iface;
	return out;
}

std::string transport_module(const std::string &transport)
{
	for (const char *t : {"rdma", "tcp", "fc", "loop"})
		if (transport == t)
			return std::string("nvme_") + t;
	return "";
}

std::string default_trsvcid(const FabricTarget &t)
{
	if (t.transport == "tcp" && t.discovery())
		return "8009";
	if (t.transport == "rdma" || t.transport == "tcp")
		return "4420";
	return "";
}

std::map<std::string, std::string> parse_address(const std::string &address)
{
	std::map<std::string, std::string> kv;
	std::size_t pos = 0;
	while (pos <= address.size()) {
		std::size_t end = address.find(',', pos);
		if (end == std::string::npos)
			end = address.size();
		std::string item = address.substr(pos, end - pos);
		std::size_t eq = item.find('=');
		if (eq != std::string::npos)
			kv[item.substr(0, eq)] = item.substr(eq + 1);
		pos = end + 1;
	}
	return kv;
}

std::optional<int> parse_tmo(const std::string &text)
{
	if (text == "off")
		return -1;
	try {
		std::size_t used = 0;
		int v = std::stoi(text, &used);
		if (used == text.size())
			return v;
	} catch (const std::exception &) {
	}
	return std::nullopt;
}

std::optional<Controller> find_controller(const std::vector<Controller> &ctrls,
					  const FabricTarget &t)
{
	std::string svc = t.trsvcid.empty() ? default_trsvcid(t) : t.trsvcid;
	for (const auto &c : ctrls) {
		if (c.state == "deleting" || c.state == "deleting (no IO)" || c.state == "dead")
			continue;
		if (c.transport == t.transport && c.traddr == t.traddr && c.trsvcid == svc &&
		    c.subsysnqn == t.subsysnqn && (t.hostnqn.empty() || c.hostnqn == t.hostnqn) &&
		    (t.host_traddr.empty() || c.host_traddr == t.host_traddr) &&
		    (t.host_iface.empty() || c.host_iface == t.host_iface))
			return c;
	}
	return std::nullopt;
}

namespace {

bool log_has(const std::vector<std::string> &klog, const char *text)
{
	for (const auto &l : klog)
		if (l.find(text) != std::string::npos)
			return true;
	return false;
}

// The kernel's own words, for causes fxctl does not recognise.
std::string last_line(const std::vector<std::string> &klog)
{
	return klog.empty() ? "" : fmt::format(" (kernel: {})", klog.back());
}

}  // namespace

ConnectCause explain_connect_failure(const FabricTarget &t, int err,
				     const std::vector<std::string> &klog, bool transport_loaded,
				     int route_err)
{
	std::string where = fmt::format("{}:{}", t.traddr,
					t.trsvcid.empty() ? default_trsvcid(t) : t.trsvcid);
	std::string mod = transport_module(t.transport);
	if (err == ENVME_CONNECT_OPEN)
		return {"cannot open /dev/nvme-fabrics: nvme_fabrics not loaded (modprobe "
			"nvme-fabrics)", false, ENODEV};
	if (log_has(klog, "no handler found for transport") || (!mod.empty() && !transport_loaded))
		return {fmt::format("{} not loaded (modprobe {})",
				    mod.empty() ? "transport " + t.transport : mod,
				    mod.empty() ? "nvme-" + t.transport
						: "nvme-" + t.transport),
			false, ENODEV};
	if (log_has(klog, "key crc mismatch"))
		return {fmt::format("the kernel refused a DH-CHAP key for {} as malformed (its "
				    "checksum does not match); generate keys with 'nvme "
				    "gen-dhchap-key'", t.subsysnqn),
			false, EINVAL};
	// ENOKEY from the admin queue's connect: the target asked for
	// authentication and the host had no key for it
	if (log_has(klog, "failed to connect queue: 0 ret=-126"))
		return {fmt::format("{} requires DH-CHAP authentication and no key was given "
				    "for host {} (dhchap_key of the host or port in config.json, "
				    "or the target's key for this host)",
				    t.subsysnqn, t.hostnqn.empty() ? "(default)" : t.hostnqn),
			false, EACCES};
	if (log_has(klog, "authentication") || log_has(klog, ": no key") || err == EKEYREJECTED ||
	    err == ENOKEY)
		return {fmt::format("DH-CHAP authentication of host {} with {} failed{}; check "
				    "the dhchap_key (and dhchap_ctrl_key) configured for this "
				    "target against the key the target has for this host",
				    t.hostnqn.empty() ? "(default)" : t.hostnqn, t.subsysnqn,
				    last_line(klog)),
			false, EACCES};
	if (log_has(klog, "is not allowed, hostnqn") || log_has(klog, "Invalid Host"))
		return {fmt::format("host NQN {} rejected by the target (not an allowed host of "
				    "{}); add it to the subsystem's allowed hosts on the target, "
				    "or connect with the allowed --hostnqn",
				    t.hostnqn.empty() ? "(default)" : t.hostnqn, t.subsysnqn),
			false, EACCES};
	if (log_has(klog, "Connect Invalid Data Parameter, subsysnqn") ||
	    log_has(klog, "Invalid Data Parameter, subsysnqn"))
		return {fmt::format("subsystem {} does not exist on {} (or is not exported on that "
				    "port); check the NQN with 'fxctl discover -t {} -a {}'",
				    t.subsysnqn, where, t.transport, t.traddr),
			false, ENOENT};
	if (err == ENVME_CONNECT_ALREADY || err == EALREADY)
		return {"already connected (the kernel refused a duplicate controller)", false,
			EEXIST};
	if (route_err == ENETUNREACH || route_err == EHOSTUNREACH)
		return {fmt::format("no route to {} ({}); check the address and 'ip route get {}'",
				    t.traddr, std::strerror(route_err), t.traddr),
			true, route_err};
	if (log_has(klog, "Connect rejected") || err == ENVME_CONNECT_CONNREFUSED ||
	    err == ECONNREFUSED || log_has(klog, "failed to connect socket: -111"))
		return {fmt::format("connection refused by {} (no NVMe-oF {} port listening there, "
				    "or the target is not up yet)", where, t.transport),
			true, ECONNREFUSED};
	if (err == ETIMEDOUT || log_has(klog, "(-110)") || log_has(klog, "timed out"))
		return {fmt::format("no answer from {} (timed out); is the target up and "
				    "reachable?", where),
			true, ETIMEDOUT};
	if (log_has(klog, "establishment failed") || log_has(klog, "failed to connect socket") ||
	    err == ECONNRESET || err == EHOSTDOWN)
		return {fmt::format("could not reach {} (connection not established{}); is the "
				    "target up?", where, last_line(klog)),
			true, ECONNRESET};
	if (err == ENVME_CONNECT_ADDRINUSE)
		return {"host NQN already in use by another connection to this subsystem "
			"(give each host its own NQN in /etc/nvme/hostnqn)", false, EADDRINUSE};
	if (err == ENVME_CONNECT_INVAL || err == EINVAL)
		return {fmt::format("the kernel refused the connect options{}; check the "
				    "transport, address and tuning options",
				    klog.empty() ? "" : last_line(klog)),
			false, EINVAL};
	const char *what = err >= ENVME_CONNECT_RESOLVE ? nvme_errno_to_string(err)
						       : std::strerror(err);
	return {fmt::format("connect failed: {}{}", what ? what : "unknown error",
			    last_line(klog)),
		true, err >= ENVME_CONNECT_RESOLVE ? EIO : err};
}

std::string controller_identity(const Controller &c)
{
	return fmt::format("{} {} {} host_traddr={} host_iface={} {} {}", c.transport, c.traddr,
			   c.trsvcid, c.host_traddr, c.host_iface, c.subsysnqn, c.hostnqn);
}

std::string namespace_head(const std::string &disk)
{
	// nvme<subsys>c<ctrl>n<nsid> -> nvme<subsys>n<nsid>
	std::size_t c = disk.find('c', 4), n = disk.rfind('n');
	if (disk.rfind("nvme", 0) != 0 || c == std::string::npos || n == std::string::npos ||
	    n < c)
		return disk;
	return disk.substr(0, c) + disk.substr(n);
}

double backoff_seconds(unsigned attempt)
{
	if (attempt == 0)
		return 0;
	return attempt >= 4 ? 8.0 : static_cast<double>(1u << (attempt - 1));
}

std::string host_id_for(const std::string &nqn, const std::string &file_nqn,
			const std::string &file_id)
{
	if (nqn.empty() || nqn == file_nqn)
		return file_id;
	static const std::regex uuid_form(
		".*uuid:([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
		"[0-9a-fA-F]{12})$");
	std::smatch m;
	if (std::regex_match(nqn, m, uuid_form))
		return m[1].str();
	// Two FNV-1a 64-bit hashes of the NQN (different offset bases) as the
	// 128 bits; RFC 9562 version 8 (custom) and variant bits set. Stable,
	// so the kernel sees one ID for this NQN at every connect.
	auto fnv = [&](std::uint64_t h) {
		for (unsigned char c : nqn) {
			h ^= c;
			h *= 0x100000001b3ULL;
		}
		return h;
	};
	std::uint64_t hi = fnv(0xcbf29ce484222325ULL), lo = fnv(0x84222325cbf29ce4ULL);
	hi = (hi & ~0xf000ULL) | 0x8000ULL;                        // version 8
	lo = (lo & ~(3ULL << 62)) | (2ULL << 62);                  // variant 10
	return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
			   hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

// ---- the system: libnvme, sysfs, /dev/kmsg ------------------------------

namespace {

using root_ptr = nvme_root_ptr;

std::string str(const char *s)
{
	return s ? s : "";
}

const char *opt(const std::string &s)
{
	return s.empty() ? nullptr : s.c_str();
}

// The kernel log from now on: open /dev/kmsg at its end before a connect,
// read what the nvme drivers said after it.
class KmsgCursor {
public:
	KmsgCursor() : fd_(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC))
	{
		if (fd_ >= 0)
			::lseek(fd_, 0, SEEK_END);
	}
	~KmsgCursor()
	{
		if (fd_ >= 0)
			::close(fd_);
	}
	KmsgCursor(const KmsgCursor &) = delete;
	KmsgCursor &operator=(const KmsgCursor &) = delete;

	std::vector<std::string> nvme_lines()
	{
		std::vector<std::string> out;
		if (fd_ < 0)
			return out;
		char buf[8192];
		for (;;) {
			ssize_t n = ::read(fd_, buf, sizeof(buf) - 1);
			if (n < 0 && errno == EPIPE)
				continue;  // overwritten meanwhile: next record
			if (n <= 0)
				break;
			std::string rec(buf, static_cast<std::size_t>(n));
			auto semi = rec.find(';');
			if (semi == std::string::npos)
				continue;
			std::string msg = rec.substr(semi + 1, rec.find('\n', semi) - semi - 1);
			// (the DH-CHAP key parser's complaint names no nvme)
			if (msg.find("nvme") != std::string::npos ||
			    msg.find("key crc mismatch") != std::string::npos)
				out.push_back(msg);
		}
		return out;
	}

private:
	int fd_;
};

// Fields of a discovery log entry are space padded.
std::string field(const char *s, std::size_t n)
{
	std::string v(s, strnlen(s, n));
	while (!v.empty() && v.back() == ' ')
		v.pop_back();
	return v;
}

// FabricTuning's fields and libnvme's, side by side.
using TuningField = std::pair<std::optional<int> FabricTuning::*, int nvme_fabrics_config::*>;
constexpr TuningField tuning_fields[] = {
	{&FabricTuning::ctrl_loss_tmo, &nvme_fabrics_config::ctrl_loss_tmo},
	{&FabricTuning::fast_io_fail_tmo, &nvme_fabrics_config::fast_io_fail_tmo},
	{&FabricTuning::reconnect_delay, &nvme_fabrics_config::reconnect_delay},
	{&FabricTuning::nr_io_queues, &nvme_fabrics_config::nr_io_queues},
	{&FabricTuning::nr_poll_queues, &nvme_fabrics_config::nr_poll_queues},
	{&FabricTuning::keep_alive_tmo, &nvme_fabrics_config::keep_alive_tmo},
	{&FabricTuning::tos, &nvme_fabrics_config::tos},
};

void apply_tuning(nvme_fabrics_config &cfg, const FabricTuning &t)
{
	for (auto [ours, theirs] : tuning_fields)
		if (t.*ours)
			cfg.*theirs = *(t.*ours);
}

// The values a config file set (those differing from libnvme's defaults).
FabricTuning tuning_of(const nvme_fabrics_config &cfg)
{
	nvme_fabrics_config def;
	nvmf_default_config(&def);
	FabricTuning t;
	for (auto [ours, theirs] : tuning_fields)
		if (cfg.*theirs != def.*theirs)
			t.*ours = cfg.*theirs;
	return t;
}

// libnvme 1.3 drops some keys of a port when it reads the file (json.c):
// ctrl_loss_tmo and tos are taken only when already non-default (inverted
// tests), so never. Read the tuning keys of each port again, as written.
void overlay_tuning(const std::string &path, std::vector<FabricTarget> &targets)
{
	static const std::pair<const char *, std::optional<int> FabricTuning::*> keys[] = {
		{"ctrl_loss_tmo", &FabricTuning::ctrl_loss_tmo},
		{"fast_io_fail_tmo", &FabricTuning::fast_io_fail_tmo},
		{"reconnect_delay", &FabricTuning::reconnect_delay},
		{"nr_io_queues", &FabricTuning::nr_io_queues},
		{"nr_poll_queues", &FabricTuning::nr_poll_queues},
		{"keep_alive_tmo", &FabricTuning::keep_alive_tmo},
		{"tos", &FabricTuning::tos},
	};
	std::ifstream in(path);
	auto doc = nlohmann::json::parse(in, nullptr, false);
	if (!doc.is_array())
		return;
	auto text = [](const nlohmann::json &o, const char *k) {
		return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
	};
	for (const auto &host : doc)
		for (const auto &sub : host.value("subsystems", nlohmann::json::array()))
			for (const auto &port : sub.value("ports", nlohmann::json::array()))
				for (auto &t : targets) {
					if (t.hostnqn != text(host, "hostnqn") ||
					    t.subsysnqn != text(sub, "nqn") ||
					    t.transport != text(port, "transport") ||
					    t.traddr != text(port, "traddr") ||
					    t.trsvcid != text(port, "trsvcid") ||
					    t.host_traddr != text(port, "host_traddr") ||
					    t.host_iface != text(port, "host_iface"))
						continue;
					for (auto [key, field] : keys)
						if (port.contains(key) && port[key].is_number_integer())
							t.tuning.*field = port[key].get<int>();
				}
}

bool same(const char *a, const std::string &b)
{
	return str(a) == b;
}

// Empty on either side matches, as libnvme's own __nvme_lookup_ctrl.
bool same_or_unset(const char *a, const std::string &b)
{
	return !a || !*a || b.empty() || b == a;
}

root_ptr new_root(bool verbose)
{
	// libnvme's own messages ("Failed to write to /dev/nvme-fabrics:
	// Invalid argument") say less than fxctl does: only with -v.
	root_ptr r(nvme_create_root(stderr, verbose ? LOG_INFO : LOG_EMERG));
	if (!r)
		throw Error("cannot initialise libnvme", errno_error(ENOMEM));
	return r;
}

void read_config_into(nvme_root_t r, const std::string &path)
{
	if (::access(path.c_str(), R_OK) < 0)
		throw Error(fmt::format("cannot read {}: {}", path, std::strerror(errno)),
			    errno_error(errno));
	if (nvme_read_config(r, path.c_str()) < 0)
		throw Error(fmt::format("cannot parse {} as libnvme's JSON configuration "
					"(see nvme-cli's config-schema.json)", path),
			    errno_error(EINVAL));
}

// A host of the configuration read into @r with @t's host NQN other than
// @self (the one libnvme made for @t's host ID), or none.
nvme_host_t config_host(nvme_root_t r, const FabricTarget &t, nvme_host_t self)
{
	nvme_host_t h;
	nvme_for_each_host(r, h)
		if (h != self && same(nvme_host_get_hostnqn(h), t.hostnqn))
			return h;
	return nullptr;
}

// @t's port in the configuration read into @r, and its host: the host
// with @t's NQN first, then any (--hostnqn may name another); none when
// the file has no such port.
std::pair<nvme_host_t, nvme_ctrl_t> config_entry(nvme_root_t r, const FabricTarget &t)
{
	for (bool any : {false, true}) {
		nvme_host_t h;
		nvme_subsystem_t s;
		nvme_ctrl_t c;
		nvme_for_each_host(r, h) {
			if (!any && !same(nvme_host_get_hostnqn(h), t.hostnqn))
				continue;
			nvme_for_each_subsystem(h, s) {
				if (!same(nvme_subsystem_get_nqn(s), t.subsysnqn))
					continue;
				nvme_subsystem_for_each_ctrl(s, c)
					if (same(nvme_ctrl_get_transport(c), t.transport) &&
					    same_or_unset(nvme_ctrl_get_traddr(c), t.traddr) &&
					    same_or_unset(nvme_ctrl_get_trsvcid(c), t.trsvcid) &&
					    same_or_unset(nvme_ctrl_get_host_traddr(c), t.host_traddr) &&
					    same_or_unset(nvme_ctrl_get_host_iface(c), t.host_iface))
						return {h, c};
			}
		}
	}
	return {nullptr, nullptr};
}

// What a new controller @c of @h takes from the configuration read into
// @r for @t: the host's key on @h when @h is not the file's host (another
// host ID than the file's: libnvme then made a host of its own), the
// port's keys on @c, and the port's libnvme settings, returned for
// nvmf_add_ctrl to merge under @c's own (those set from @t.tuning); none
// when the file has no such port (a subsystem a discovery controller
// listed: the host's key only). Handing the file's own nvme_ctrl_t to
// nvmf_add_ctrl instead would link it a second time into its subsystem's
// list (nvme_init_ctrl), which it is already in: nvme-cli, too, connects
// a new controller and lets nvmf_add_ctrl merge the file's settings.
const nvme_fabrics_config *take_config(nvme_root_t r, const FabricTarget &t, nvme_host_t h,
				       nvme_ctrl_t c)
{
	auto [fh, fc] = config_entry(r, t);
	if (!fh)
		fh = config_host(r, t, h);
	if (fh && h != fh && !nvme_host_get_dhchap_key(h) && nvme_host_get_dhchap_key(fh))
		nvme_host_set_dhchap_key(h, nvme_host_get_dhchap_key(fh));
	if (!fc)
		return nullptr;
	if (const char *k = nvme_ctrl_get_dhchap_host_key(fc))
		nvme_ctrl_set_dhchap_host_key(c, k);
	if (const char *k = nvme_ctrl_get_dhchap_key(fc))
		nvme_ctrl_set_dhchap_key(c, k);
	return nvme_ctrl_get_config(fc);
}

class LibnvmeFabric final : public Fabric {
public:
	explicit LibnvmeFabric(bool verbose) : verbose_(verbose) {}

	std::vector<Controller> controllers() override
	{
		std::vector<Controller> out;
		std::error_code ec;
		for (const auto &d : std::filesystem::directory_iterator("/sys/class/nvme", ec)) {
			Controller c;
			c.name = d.path().filename();
			c.transport = read_line(d.path() / "transport");
			auto addr = parse_address(read_line(d.path() / "address"));
			c.traddr = addr["traddr"];
			c.trsvcid = addr["trsvcid"];
			c.host_traddr = addr["host_traddr"];
			c.host_iface = addr["host_iface"];
			c.subsysnqn = read_line(d.path() / "subsysnqn");
			c.hostnqn = read_line(d.path() / "hostnqn");
			c.state = read_line(d.path() / "state");
			c.ctrl_loss_tmo = parse_tmo(read_line(d.path() / "ctrl_loss_tmo"));
			c.fast_io_fail_tmo = parse_tmo(read_line(d.path() / "fast_io_fail_tmo"));
			c.reconnect_delay = parse_tmo(read_line(d.path() / "reconnect_delay"));
			out.push_back(std::move(c));
		}
		std::sort(out.begin(), out.end(), [](const Controller &a, const Controller &b) {
			return a.name.size() != b.name.size() ? a.name.size() < b.name.size()
							      : a.name < b.name;
		});
		return out;
	}

	std::string connect(const FabricTarget &t) override
	{
		root_ptr r = root();
		nvme_ctrl_t c = add(r.get(), t);
		return str(nvme_ctrl_get_name(c));
	}

	std::vector<DiscoveryEntry> discover(const FabricTarget &t) override
	{
		root_ptr r = root();
		nvme_ctrl_t c = add(r.get(), t);
		nvmf_discovery_log *log = nullptr;
		int ret = nvmf_get_discovery_log(c, &log, 4);
		int err = errno;
		nvme_disconnect_ctrl(c);
		if (ret)
			throw Error(fmt::format("cannot read the discovery log of {}: {}", t.display(),
						ret < 0 ? std::strerror(err)
							: "the controller returned an NVMe error"),
				    errno_error(ret < 0 ? err : EIO));
		std::unique_ptr<nvmf_discovery_log, decltype(&::free)> own(log, ::free);
		std::vector<DiscoveryEntry> out;
		std::uint64_t n = le64toh(log->numrec);
		for (std::uint64_t i = 0; i < n; ++i) {
			const nvmf_disc_log_entry &e = log->entries[i];
			DiscoveryEntry d;
			d.transport = str(nvmf_trtype_str(e.trtype));
			d.traddr = field(e.traddr, sizeof(e.traddr));
			d.trsvcid = field(e.trsvcid, sizeof(e.trsvcid));
			d.subsysnqn = field(e.subnqn, sizeof(e.subnqn));
			d.subtype = e.subtype == NVME_NQN_NVME ? "nvme" : "discovery";
			d.portid = le16toh(e.portid);
			out.push_back(std::move(d));
		}
		return out;
	}

	void disconnect(const std::string &name) override
	{
		root_ptr r = root();
		nvme_ctrl_t c = nvme_scan_ctrl(r.get(), name.c_str());
		if (!c)
			throw Error(fmt::format("no NVMe controller {}; see 'nvme list-subsys'", name),
				    errno_error(ENOENT));
		if (nvme_disconnect_ctrl(c) < 0)
			throw Error(fmt::format("cannot disconnect {}: {}", name, std::strerror(errno)),
				    errno_error(errno));
	}

	std::vector<FabricTarget> read_config(const std::string &path) override
	{
		root_ptr r = root();
		read_config_into(r.get(), path);
		std::vector<FabricTarget> out;
		nvme_host_t h;
		nvme_subsystem_t s;
		nvme_ctrl_t c;
		nvme_for_each_host(r.get(), h) {
			nvme_for_each_subsystem(h, s) {
				nvme_subsystem_for_each_ctrl(s, c) {
					FabricTarget t;
					t.hostnqn = str(nvme_host_get_hostnqn(h));
					t.hostid = str(nvme_host_get_hostid(h));
					t.subsysnqn = str(nvme_subsystem_get_nqn(s));
					t.transport = str(nvme_ctrl_get_transport(c));
					t.traddr = str(nvme_ctrl_get_traddr(c));
					t.trsvcid = str(nvme_ctrl_get_trsvcid(c));
					t.host_traddr = str(nvme_ctrl_get_host_traddr(c));
					t.host_iface = str(nvme_ctrl_get_host_iface(c));
					t.config = path;
					if (const nvme_fabrics_config *cfg = nvme_ctrl_get_config(c))
						t.tuning = tuning_of(*cfg);
					out.push_back(std::move(t));
				}
			}
		}
		overlay_tuning(path, out);
		return out;
	}

	bool module_loaded(const std::string &name) override
	{
		return ::access(("/sys/module/" + name).c_str(), F_OK) == 0;
	}

	int route_error(const std::string &traddr) override
	{
		sockaddr_storage ss{};
		socklen_t len = 0;
		auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
		auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		if (inet_pton(AF_INET, traddr.c_str(), &v4->sin_addr) == 1) {
			v4->sin_family = AF_INET;
			v4->sin_port = htons(4420);
			len = sizeof(*v4);
		} else if (inet_pton(AF_INET6, traddr.c_str(), &v6->sin6_addr) == 1) {
			v6->sin6_family = AF_INET6;
			v6->sin6_port = htons(4420);
			len = sizeof(*v6);
		} else {
			return 0;
		}
		// A UDP connect() only looks the route up; nothing is sent.
		int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return 0;
		int err = ::connect(fd, reinterpret_cast<sockaddr *>(&ss), len) < 0 ? errno : 0;
		::close(fd);
		return err;
	}

	std::string default_hostnqn() override { return read_line(default_hostnqn_path); }
	std::string default_hostid() override { return read_line(default_hostid_path); }

	void record_connected(const Controller &c) override
	{
		// A record that cannot be written costs only 'disconnect
		// --config' this controller: say so, do not fail the connect.
		std::error_code ec;
		std::filesystem::create_directories(record_dir, ec);
		std::ofstream out(record_dir + "/" + c.name, std::ios::trunc);
		out << controller_identity(c) << '\n';
		if (!out.flush())
			std::fprintf(stderr, "fxctl: cannot record %s in %s: %s\n", c.name.c_str(),
				     record_dir.c_str(), std::strerror(errno));
	}

	bool connected_by_fxctl(const Controller &c) override
	{
		return read_line(record_dir + "/" + c.name) == controller_identity(c);
	}

	void forget_connected(const std::string &ctrl) override
	{
		::unlink((record_dir + "/" + ctrl).c_str());
	}

	std::vector<std::string> namespace_disks(const std::string &ctrl) override
	{
		std::vector<std::string> out;
		std::error_code ec;
		for (const auto &d : std::filesystem::directory_iterator("/sys/class/nvme/" + ctrl, ec)) {
			// nvme0n1, or a path nvme0c1n1 (hidden: no dev, so match names)
			static const std::regex ns("nvme[0-9]+(c[0-9]+)?n[0-9]+");
			std::string n = d.path().filename();
			if (!std::regex_match(n, ns))
				continue;
			std::string head = namespace_head(n);
			if (std::find(out.begin(), out.end(), head) == out.end())
				out.push_back(head);
		}
		std::sort(out.begin(), out.end());
		return out;
	}

	std::vector<std::string> namespace_users(const std::string &ctrl) override
	{
		std::vector<std::string> out;
		std::map<std::string, std::string> mounts = mounted();
		for (const auto &disk : namespace_disks(ctrl)) {
			// the disk and its partitions
			std::vector<std::filesystem::path> devs = {"/sys/block/" + disk};
			std::error_code ec;
			for (const auto &d :
			     std::filesystem::directory_iterator("/sys/block/" + disk, ec))
				if (d.path().filename().string().rfind(disk, 0) == 0)
					devs.push_back(d.path());
			for (const auto &dev : devs) {
				std::string name = dev.filename();
				for (const auto &h : std::filesystem::directory_iterator(dev / "holders", ec))
					out.push_back(fmt::format("{} held by {}", name,
								  h.path().filename().string()));
				auto m = mounts.find(read_line(dev / "dev"));
				if (m != mounts.end())
					out.push_back(fmt::format("{} mounted on {}", name, m->second));
			}
		}
		return out;
	}

private:
	static inline const std::string record_dir = "/run/fxblk/connected";

	// "major:minor" -> mount point, from /proc/self/mountinfo
	static std::map<std::string, std::string> mounted()
	{
		std::map<std::string, std::string> out;
		std::ifstream in("/proc/self/mountinfo");
		std::string line;
		while (std::getline(in, line)) {
			std::istringstream f(line);
			std::string id, parent, majmin, root, point;
			if (f >> id >> parent >> majmin >> root >> point)
				out.emplace(majmin, point);
		}
		return out;
	}

	bool verbose_;

	root_ptr root() { return new_root(verbose_); }

	// Creates and connects a controller in @r; throws ConnectFailed. @t's
	// host NQN and ID are what the caller defaulted (take_host: the one
	// rule); without a host NQN (no /etc/nvme/hostnqn), libnvme's default.
	// A target of a config file gets that file's settings for its port.
	nvme_ctrl_t add(nvme_root_t r, const FabricTarget &t)
	{
		if (!t.config.empty())
			read_config_into(r, t.config);
		nvme_host_t h = t.hostnqn.empty()
					? nvme_default_host(r)
					: nvme_lookup_host(r, t.hostnqn.c_str(), opt(t.hostid));
		if (!h)
			throw Error("no host NQN: create /etc/nvme/hostnqn (nvme gen-hostnqn > "
				    "/etc/nvme/hostnqn) or pass --hostnqn",
				    errno_error(EINVAL));
		std::string svc = t.trsvcid.empty() ? default_trsvcid(t) : t.trsvcid;
		nvme_ctrl_t c = nvme_create_ctrl(r, t.subsysnqn.c_str(), t.transport.c_str(),
						 t.traddr.c_str(), opt(t.host_traddr),
						 opt(t.host_iface), opt(svc));
		if (!c)
			throw Error(fmt::format("cannot describe controller for {}: {}", t.display(),
						std::strerror(errno)),
				    errno_error(errno ? errno : EINVAL));
		// @t.tuning on @c itself: it wins over the file's settings,
		// which nvmf_add_ctrl merges only into what is still unset.
		apply_tuning(*nvme_ctrl_get_config(c), t.tuning);
		nvme_fabrics_config none;
		nvmf_default_config(&none);
		const nvme_fabrics_config *cfg = &none;
		if (!t.config.empty())
			if (const nvme_fabrics_config *file = take_config(r, t, h, c))
				cfg = file;
		KmsgCursor kmsg;
		if (nvmf_add_ctrl(h, c, cfg) < 0) {
			int err = errno;
			auto lines = kmsg.nvme_lines();
			// c stays with the root: libnvme may have linked it into the
			// tree, which nvme_free_tree() frees.
			throw ConnectFailed(err, std::move(lines),
					    fmt::format("cannot connect to {}", t.display()));
		}
		return c;
	}
};

}  // namespace

ConfigPort config_port(const FabricTarget &t)
{
	root_ptr r = new_root(false);
	read_config_into(r.get(), t.config);
	// what add() does up to nvmf_add_ctrl
	nvme_host_t h = t.hostnqn.empty() ? nvme_default_host(r.get())
					  : nvme_lookup_host(r.get(), t.hostnqn.c_str(), opt(t.hostid));
	nvme_ctrl_t c = h ? nvme_create_ctrl(r.get(), t.subsysnqn.c_str(), t.transport.c_str(),
					     t.traddr.c_str(), opt(t.host_traddr),
					     opt(t.host_iface), nullptr)
			  : nullptr;
	ConfigPort p;
	if (!c)
		return p;
	std::unique_ptr<nvme_ctrl, decltype(&::nvme_free_ctrl)> own(c, ::nvme_free_ctrl);
	nvme_fabrics_config *mine = nvme_ctrl_get_config(c);
	apply_tuning(*mine, t.tuning);
	const nvme_fabrics_config *file = take_config(r.get(), t, h, c);
	p.found = file != nullptr;
	p.host_key = str(nvme_host_get_dhchap_key(h));
	p.port_host_key = str(nvme_ctrl_get_dhchap_host_key(c));
	p.ctrl_key = str(nvme_ctrl_get_dhchap_key(c));
	nvme_fabrics_config def;
	nvmf_default_config(&def);
	// nvmf_add_ctrl's merge: the controller's own value, unless default
	auto pick = [&](int nvme_fabrics_config::*f) {
		return mine->*f != def.*f || !file ? mine->*f : file->*f;
	};
	auto flag = [&](bool nvme_fabrics_config::*f) { return mine->*f || (file && file->*f); };
	p.host_traddr = str(mine->host_traddr ? mine->host_traddr
					      : file ? file->host_traddr : nullptr);
	p.host_iface = str(mine->host_iface ? mine->host_iface : file ? file->host_iface : nullptr);
	p.nr_io_queues = pick(&nvme_fabrics_config::nr_io_queues);
	p.nr_write_queues = pick(&nvme_fabrics_config::nr_write_queues);
	p.nr_poll_queues = pick(&nvme_fabrics_config::nr_poll_queues);
	p.queue_size = pick(&nvme_fabrics_config::queue_size);
	p.keep_alive_tmo = pick(&nvme_fabrics_config::keep_alive_tmo);
	p.reconnect_delay = pick(&nvme_fabrics_config::reconnect_delay);
	p.ctrl_loss_tmo = pick(&nvme_fabrics_config::ctrl_loss_tmo);
	p.fast_io_fail_tmo = pick(&nvme_fabrics_config::fast_io_fail_tmo);
	p.tos = pick(&nvme_fabrics_config::tos);
	p.hdr_digest = flag(&nvme_fabrics_config::hdr_digest);
	p.data_digest = flag(&nvme_fabrics_config::data_digest);
	p.tls = flag(&nvme_fabrics_config::tls);
	p.disable_sqflow = flag(&nvme_fabrics_config::disable_sqflow);
	return p;
}

std::unique_ptr<Fabric> make_libnvme_fabric(bool verbose)
{
	return std::make_unique<LibnvmeFabric>(verbose);
}

}  // namespace fxctl
