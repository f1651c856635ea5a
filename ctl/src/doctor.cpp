#include "doctor.hpp"
#include "assembly_plan.hpp"
#include "ownership.hpp"
#include "scan.hpp"
#include "sysfs.hpp"

#include "cli.hpp"
#include "command.hpp"
#include "error.hpp"
#include "render.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <regex>
#include <unistd.h>

namespace fxctl {
namespace {

Finding error(std::string check, std::string msg, std::string fix)
{
	return {"error", std::move(check), std::move(msg), std::move(fix)};
}

Finding warning(std::string check, std::string msg, std::string fix)
{
	return {"warning", std::move(check), std::move(msg), std::move(fix)};
}

Finding info(std::string check, std::string msg, std::string fix = "")
{
	return {"info", std::move(check), std::move(msg), std::move(fix)};
}

bool loaded(const DoctorFacts &f, const std::string &m)
{
	auto it = f.modules.find(m);
	return it != f.modules.end() && it->second;
}

bool uses_transport(const DoctorFacts &f, const std::string &tr)
{
	return std::any_of(f.controllers.begin(), f.controllers.end(),
			   [&](const Controller &c) { return c.transport == tr; });
}

bool fabric_transport(const std::string &tr)
{
	return !transport_module(tr).empty();
}

std::string lower(std::string s)
{
	for (auto &c : s)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return s;
}

}  // namespace

bool shared_default_hostnqn(const std::string &nqn)
{
	// Zero/all-ones UUIDs, and the placeholder DMI UUID many boards ship
	// with: gen-hostnqn derives the host NQN from it, so all such hosts get
	// the same one.
	static const char *const shared[] = {
		"00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"03000200-0400-0500-0006-000700080009",
	};
	std::string n = lower(nqn);
	return std::any_of(std::begin(shared), std::end(shared), [&](const char *u) {
		return n.size() >= 36 && n.compare(n.size() - 36, 36, u) == 0;
	});
}

std::vector<Finding> check_rdma(const DoctorFacts &f)
{
	std::vector<Finding> out;
	if (!f.rdma_error.empty())
		out.push_back(warning("rdma", "cannot list RDMA devices: " + f.rdma_error,
				      "install ibverbs-providers and load the RDMA driver"));
	if (f.rdma.empty()) {
		bool need = loaded(f, "nvme_rdma") || uses_transport(f, "rdma");
		out.push_back(Finding{need ? "error" : "warning", "rdma",
				      "no RDMA device: NVMe/RDMA cannot connect",
				      "load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re), or "
				      "Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe "
				      "netdev IFACE"});
		return out;
	}
	for (const auto &d : f.rdma)
		for (const auto &p : d.ports) {
			std::string where = fmt::format("{} port {}", d.name, p.port);
			if (p.state != "active")
				out.push_back(warning("rdma", fmt::format("{} is {}", where, p.state),
						      "bring its link (and netdev) up: ip link set "
						      "IFACE up"));
			if (p.link_layer != "Ethernet")
				continue;
			auto v2 = std::find_if(p.gids.begin(), p.gids.end(),
					       [](const RdmaGid &g) { return g.type == "RoCEv2"; });
			if (v2 == p.gids.end()) {
				out.push_back(error("rdma",
						    fmt::format("{} has no RoCEv2 GID: its netdev has "
								"no IP address", where),
						    "ip addr add ADDR/PREFIX dev NETDEV"));
				continue;
			}
			if (v2->netdev_mtu && *v2->netdev_mtu < 4200)
				out.push_back(warning(
					"rdma",
					fmt::format("{}: netdev {} has MTU {}, so RoCE runs with {}-byte "
						    "packets (active MTU {})", where, v2->netdev,
						    *v2->netdev_mtu, p.active_mtu, p.active_mtu),
					fmt::format("use jumbo frames on both ends: ip link set {} mtu "
						    "9000 (before creating a Soft-RoCE link)",
						    v2->netdev)));
		}
	return out;
}

std::vector<Finding> check_modules(const DoctorFacts &f)
{
	std::vector<Finding> out;
	// Neither stops anything: fxblk loads itself when fxctl first asks
	// for its generic netlink family (MODULE_ALIAS_GENL_FAMILY), and
	// nvme_fabrics is loaded by fxblk-connect.service, or by hand, before
	// the first connect.
	if (!loaded(f, "fxblk"))
		out.push_back(info("modules", "fxblk is not loaded (no volume runs): the first "
					      "fxctl command that needs it loads it"));
	if (!loaded(f, "nvme_fabrics"))
		out.push_back(info("modules", "nvme_fabrics is not loaded (nothing is connected "
					      "over NVMe-oF): fxblk-connect.service loads it at boot",
				   "before connecting by hand: modprobe nvme-fabrics"));
	if (!loaded(f, "nvme_rdma")) {
		bool need = !f.rdma.empty();
		out.push_back(Finding{need ? "error" : "info", "modules",
				      "nvme_rdma is not loaded" +
					      std::string(need ? " although RDMA devices exist" : ""),
				      "modprobe nvme-rdma"});
	}
	return out;
}

std::vector<Finding> check_hostnqn(const DoctorFacts &f)
{
	std::vector<Finding> out;
	const char *gen = "nvme gen-hostnqn > /etc/nvme/hostnqn; uuidgen > /etc/nvme/hostid "
			  "(then reconnect; update allowed hosts on the targets)";
	if (!f.hostnqn_file || f.hostnqn.empty()) {
		out.push_back(error("hostnqn",
				    "/etc/nvme/hostnqn is missing or empty: each connect uses the "
				    "kernel's default host NQN, which is random per boot, so targets "
				    "that restrict hosts reject this host after a reboot", gen));
		return out;
	}
	if (f.hostnqn.rfind("nqn.", 0) != 0 || f.hostnqn.size() > 223)
		out.push_back(error("hostnqn",
				    fmt::format("host NQN '{}' is not a valid NQN (nqn.YYYY-MM.domain:"
						"..., at most 223 bytes)", f.hostnqn), gen));
	else if (shared_default_hostnqn(f.hostnqn))
		out.push_back(error("hostnqn",
				    fmt::format("host NQN {} is a shared default (zero or placeholder "
						"UUID): every such host has the same one", f.hostnqn),
				    gen));
	else if (!f.machine_hostnqn.empty() && lower(f.machine_hostnqn) != lower(f.hostnqn) &&
		 !shared_default_hostnqn(f.machine_hostnqn))
		out.push_back(warning("hostnqn",
				      fmt::format("host NQN {} does not derive from this machine's "
						  "DMI UUID ({}): if it came with a cloned disk image, "
						  "every clone has the same host NQN", f.hostnqn,
						  f.machine_hostnqn),
				      "if this host is a clone: " + std::string(gen)));
	if (f.hostid.empty())
		out.push_back(warning("hostnqn", "/etc/nvme/hostid is missing: connects use the "
						 "host ID of the kernel's default host, random and "
						 "new each time nvme-fabrics loads (each boot)",
				      "uuidgen > /etc/nvme/hostid (then reconnect)"));
	return out;
}

std::vector<Finding> check_controllers(const DoctorFacts &f)
{
	std::vector<Finding> out;
	std::map<std::string, int> per_subsys;
	for (const auto &c : f.controllers) {
		if (!fabric_transport(c.transport))
			continue;
		++per_subsys[c.subsysnqn + " " + c.hostnqn];
		std::string who = fmt::format("{} ({} via {} {}:{})", c.name, c.subsysnqn,
					      c.transport, c.traddr, c.trsvcid);
		if (c.state != "live" && c.state.rfind("deleting", 0) != 0)
			out.push_back(warning("controller",
					      fmt::format("{} is {}: I/O waits until it reconnects "
							  "or ctrl_loss_tmo expires", who, c.state),
					      "check the target and the path to it"));
		if (!c.ctrl_loss_tmo)
			out.push_back(info("controller",
					   fmt::format("{}: the kernel does not show ctrl_loss_tmo", who)));
		else if (*c.ctrl_loss_tmo < 0)
			out.push_back(warning(
				"controller",
				fmt::format("{}: ctrl_loss_tmo is off (never give up): I/O to a lost "
					    "target hangs for ever, and so can shutdown", who),
				fmt::format("echo 600 > /sys/class/nvme/{}/ctrl_loss_tmo, and set "
					    "ctrl_loss_tmo in /etc/nvme/config.json or pass "
					    "--ctrl-loss-tmo", c.name)));
		if (c.fast_io_fail_tmo && *c.fast_io_fail_tmo < 0 && c.ctrl_loss_tmo &&
		    *c.ctrl_loss_tmo != 0)
			out.push_back(info(
				"controller",
				fmt::format("{}: fast_io_fail_tmo is off: while it reconnects, I/O "
					    "waits up to ctrl_loss_tmo ({}) before failing", who,
					    *c.ctrl_loss_tmo < 0 ? std::string("for ever")
								 : std::to_string(*c.ctrl_loss_tmo) +
									   " s"),
				fmt::format("to fail I/O sooner: echo 5 > /sys/class/nvme/{}/"
					    "fast_io_fail_tmo or --fast-io-fail-tmo 5", c.name)));
	}
	if (f.multipath && !*f.multipath)
		for (const auto &[key, n] : per_subsys)
			if (n > 1)
				out.push_back(warning("multipath",
						      fmt::format("{} controllers reach subsystem {} but "
								  "nvme_core multipath is off: each path "
								  "is a separate disk", n,
								  key.substr(0, key.find(' '))),
						      "boot with nvme_core.multipath=Y"));
	return out;
}

std::vector<Finding> check_volumes(const DoctorFacts &f)
{
	std::vector<Finding> out;
	if (!f.volumes) {
		if (!f.volumes_error.empty())
			out.push_back(warning("volume", "cannot list volumes: " + f.volumes_error,
					      "run fxctl doctor as root"));
		return out;
	}
	for (const auto &v : *f.volumes) {
		std::string vol = fmt::format("{} ({})", v.name, v.disk);
		unsigned gone = 0;
		for (const auto &m : v.members) {
			std::string mem = fmt::format("member {} ({})", m.index, m.disk);
			if (m.state == FXBLK_STATE_GONE) {
				++gone;
				out.push_back(error("volume",
						    fmt::format("{}: {} is gone", vol, mem),
						    fmt::format("once the target is back: umount, 'fxctl "
								"stop {0}', 'fxctl connect-all', 'fxctl "
								"assemble {0}' (labels keep the volume; see "
								"the admin guide)", v.name)));
			} else if (m.state == FXBLK_STATE_FAILING) {
				out.push_back(warning("volume",
						      fmt::format("{}: {} is failing ({} failed I/Os)",
								  vol, mem, m.errors.value_or(0)),
						      fmt::format("see 'fxctl show {}' and the path "
								  "state of its controller", v.name)));
			}
			if (m.nvme)
				for (const auto &p : m.nvme->paths)
					if (p.state != "live")
						out.push_back(warning(
							"volume",
							fmt::format("{}: {} path {} is {}", vol, mem,
								    p.controller, p.state),
							"check the target and the path to it"));
		}
		if (gone)
			out.push_back(error("volume",
					    fmt::format("{} is incomplete: {} of {} members gone", vol,
							gone, v.members.size()),
					    fmt::format("'fxctl stop {0}', reconnect the missing "
							"members, 'fxctl assemble {0}'", v.name)));
	}
	return out;
}

// Labelled members that did not assemble, with the reason (review: a
// volume an admin expects after a boot and does not get). A volume the
// policy keeps from starting by itself is as configured: info.
std::vector<Finding> check_labels(const DoctorFacts &f)
{
	std::vector<Finding> out;
	if (!f.labels_error.empty())
		out.push_back(warning("labels",
				      "cannot read the block devices for fxblk labels: " +
					      f.labels_error,
				      "run fxctl doctor as root"));
	for (const auto &v : f.idle) {
		std::string why;
		for (const auto &p : v.problems)
			why += (why.empty() ? "" : "; ") + p;
		if (!v.problems.empty() && !v.only_missing)
			out.push_back(error("labels",
					    fmt::format("{}, not running, and cannot be assembled: {}",
							v.summary, why),
					    fmt::format("fix what is named ('fxctl examine DEV' shows a "
							"member's label; a reused disk: 'fxctl assemble "
							"--force {}' or 'fxctl wipe DEV'), then 'fxctl "
							"assemble {}'", v.name, v.name)));
		else if (v.only_missing)
			out.push_back(warning("labels",
					      fmt::format("{}, not running: {}", v.summary, why),
					      "connect the missing members' subsystems ('fxctl "
					      "connect-all'); the volume starts when the last appears"));
		else if (!v.not_auto.empty())
			out.push_back(info("labels",
					   fmt::format("{}: every member present, not started by "
						       "itself on this host ({}); 'fxctl assemble "
						       "--import {}' takes it over",
						       v.summary, v.not_auto, v.name)));
		else
			out.push_back(warning("labels",
					      fmt::format("{}: every member present, but the volume "
							  "is not running (stopped by an administrator, "
							  "or its assembly failed: 'journalctl -u "
							  "fxblk-assemble@{}' or udev's log says why)",
							  v.summary, v.uuid),
					      fmt::format("'fxctl assemble {}' starts it", v.name)));
	}
	return out;
}

// Labels without an owner (H3: written with --no-owner, or where this host
// had no host NQN): the default AUTO line (+unowned) starts such a volume on
// every host that sees its members.
std::vector<Finding> check_owners(const DoctorFacts &f)
{
	std::vector<Finding> out;
	for (const auto &name : f.unowned)
		out.push_back(warning("labels",
				      fmt::format("volume {}: its labels record no owner host, so "
						  "every host that sees its members starts it by "
						  "itself", name),
				      fmt::format("on the host that should own it: 'fxctl stop {0}', "
						  "'fxctl assemble --import {0}' (records that host's "
						  "NQN in the labels)", name)));
	return out;
}

// fxblk's udev rules: without them no /dev/fx/NAME links and no volume
// starts when its members appear; rules that run an fxctl that is not
// there fail on every NVMe event, silently but for udev's log.
std::vector<Finding> check_udev(const DoctorFacts &f)
{
	std::vector<Finding> out;
	for (const auto &r : f.udev_rules) {
		if (r.masked) {
			out.push_back(info("udev", fmt::format("{} is masked ({} links to /dev/null)",
							       r.name, r.path)));
			continue;
		}
		if (r.path.empty()) {
			out.push_back(warning(
				"udev",
				fmt::format("{} is not installed: {}", r.name,
					    r.name.find("assembly") != std::string::npos
						    ? "no volume starts when its members appear "
						      "(boot, connect)"
						    : "no /dev/fx/NAME links, no by-uuid links to "
						      "file systems on fxN"),
				"install fxblk's packages (or make install) and run 'udevadm "
				"control --reload'"));
			continue;
		}
		for (const auto &[prog, ok] : r.fxctl)
			if (!ok)
				out.push_back(error("udev",
						    fmt::format("{} runs {}, which is not an executable "
								"file: every member event fails", r.path,
								prog),
						    "install fxctl there, or reinstall the rules that "
						    "name the installed fxctl"));
	}
	return out;
}

// fxblk-connect.service connects /etc/nvme/config.json at boot, before
// remote file systems; nvme-cli's nvmf-autoconnect.service connects the
// same targets as well when enabled.
std::vector<Finding> check_systemd(const DoctorFacts &f)
{
	std::vector<Finding> out;
	if (!f.systemd)
		return out;
	auto state = [&](const char *unit) {
		auto it = f.units.find(unit);
		return it == f.units.end() ? std::string() : it->second;
	};
	auto enabled = [](const std::string &s) {
		return s == "enabled" || s == "enabled-runtime";
	};
	std::string connect = state("fxblk-connect.service");
	bool ours = enabled(connect);
	if (!ours && f.nvme_config)
		out.push_back(warning("systemd",
				      fmt::format("fxblk-connect.service is not enabled ({}): the "
						  "targets of /etc/nvme/config.json are not connected "
						  "at boot, so their volumes do not start",
						  connect.empty() ? "unknown" : connect),
				      connect == "not-found"
					      ? "install fxblk's packages, then systemctl enable "
						"fxblk-connect.service"
					      : "systemctl enable fxblk-connect.service"));
	if (ours && enabled(state("nvmf-autoconnect.service")))
		out.push_back(warning("systemd",
				      "fxblk-connect.service and nvme-cli's nvmf-autoconnect.service "
				      "are both enabled: two connectors race for the same targets, "
				      "and at shutdown fxctl disconnects only what it connected",
				      "systemctl disable nvmf-autoconnect.service"));
	return out;
}

namespace {

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> out;
	std::string part;
	std::istringstream in(s);
	while (std::getline(in, part, sep))
		out.push_back(part);
	return out;
}

// The fxN an fstab spec names, "" when it is not on one.
std::string fx_device(const DoctorFacts &f, const std::string &spec)
{
	if (spec.rfind("/dev/fx", 0) == 0 || spec.rfind("/dev/disk/by-id/fxblk-uuid-", 0) == 0)
		return spec;
	std::string key = spec;
	if (spec.rfind("/dev/disk/by-uuid/", 0) == 0)
		key = "UUID=" + spec.substr(18);
	else if (spec.rfind("/dev/disk/by-label/", 0) == 0)
		key = "LABEL=" + spec.substr(19);
	auto it = f.fx_filesystems.find(key);
	return it == f.fx_filesystems.end() ? "" : it->second;
}

}  // namespace

std::vector<std::string> rules_fxctl_paths(const std::string &text)
{
	static const std::regex path(R"((/[^\s"']*/fxctl)[\s"'])");
	std::vector<std::string> out;
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		auto first = line.find_first_not_of(" \t");
		if (first == std::string::npos || line[first] == '#')
			continue;
		for (std::sregex_iterator it(line.begin(), line.end(), path), end; it != end;
		     ++it)
			if (std::find(out.begin(), out.end(), (*it)[1]) == out.end())
				out.push_back((*it)[1]);
	}
	return out;
}

std::vector<FstabEntry> parse_fstab(const std::string &text)
{
	std::vector<FstabEntry> out;
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream words(line);
		FstabEntry e;
		if (!(words >> e.spec) || e.spec[0] == '#' || !(words >> e.file >> e.type))
			continue;
		if (!(words >> e.options))
			e.options = "defaults";
		out.push_back(std::move(e));
	}
	return out;
}

// M-5: a mount of a file system on fxN without _netdev is a local mount,
// ordered before fxblk-connect.service (which runs after the network): boot
// waits the device timeout for a volume that cannot exist yet, then fails
// local-fs.target (nofail: it only skips the mount), and at shutdown it is
// not unmounted before the volumes stop and the targets go.
std::vector<Finding> check_fstab(const DoctorFacts &f)
{
	std::vector<Finding> out;
	for (const auto &e : f.fstab) {
		std::string dev = fx_device(f, e.spec);
		auto opts = split(e.options, ',');
		auto has = [&](const char *o) {
			return std::find(opts.begin(), opts.end(), o) != opts.end();
		};
		if (dev.empty() || has("_netdev") || has("noauto"))
			continue;
		std::string on = dev == e.spec ? "" : fmt::format(" (on {})", dev);
		out.push_back(Finding{
			has("nofail") ? "warning" : "error", "fstab",
			fmt::format("/etc/fstab mounts {}{} on {} without _netdev: it is ordered "
				    "before fxblk-connect.service, so {}", e.spec, on, e.file,
				    has("nofail") ? "it may not mount at boot, and is not unmounted "
						    "before the volume stops at shutdown"
						  : "boot waits for the volume and then fails"),
			fmt::format("add _netdev (and nofail) to the options of {}", e.file)});
	}
	return out;
}

std::vector<Finding> run_checks(const DoctorFacts &f)
{
	std::vector<Finding> out;
	for (auto check : {check_rdma, check_modules, check_hostnqn, check_controllers,
			   check_volumes, check_labels, check_owners, check_udev, check_systemd,
			   check_fstab}) {
		auto part = check(f);
		out.insert(out.end(), part.begin(), part.end());
	}
	return out;
}

// ---- collecting the facts -----------------------------------------------

namespace {

struct verbs_devices_deleter {
	void operator()(ibv_device **l) const noexcept { ibv_free_device_list(l); }
};
struct verbs_context_deleter {
	void operator()(ibv_context *c) const noexcept { ibv_close_device(c); }
};

const char *gid_type(std::uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCEv2";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCEv1";
	default:
		return "IB";
	}
}

std::string gid_text(const ibv_gid &g)
{
	char buf[INET6_ADDRSTRLEN] = "";
	inet_ntop(AF_INET6, g.raw, buf, sizeof(buf));
	return buf;
}

RdmaPort port_facts(ibv_context *ctx, unsigned num, const ibv_port_attr &attr)
{
	RdmaPort p;
	p.port = num;
	p.state = ibv_port_state_str(attr.state);
	p.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
	p.active_mtu = 128u << attr.active_mtu;  // IBV_MTU_256 = 1
	std::vector<ibv_gid_entry> gids(static_cast<std::size_t>(std::max(attr.gid_tbl_len, 1)));
	ssize_t n = ibv_query_gid_table(ctx, gids.data(), gids.size(), 0);
	for (ssize_t i = 0; i < n; ++i) {
		const ibv_gid_entry &e = gids[static_cast<std::size_t>(i)];
		if (e.port_num != num)
			continue;
		RdmaGid g;
		g.index = e.gid_index;
		g.gid = gid_text(e.gid);
		g.type = gid_type(e.gid_type);
		char ifname[IF_NAMESIZE] = "";
		if (e.ndev_ifindex && if_indextoname(e.ndev_ifindex, ifname)) {
			g.netdev = ifname;
			std::string mtu = read_line(std::filesystem::path("/sys/class/net") / ifname /
						    "mtu");
			if (!mtu.empty())
				g.netdev_mtu = static_cast<unsigned>(std::stoul(mtu));
		}
		p.gids.push_back(std::move(g));
	}
	return p;
}

void collect_rdma(DoctorFacts &f)
{
	int n = 0;
	std::unique_ptr<ibv_device *, verbs_devices_deleter> list(ibv_get_device_list(&n));
	if (!list) {
		// ENOSYS: no RDMA support in the kernel at all, i.e. no devices.
		if (errno != ENOSYS)
			f.rdma_error = std::strerror(errno);
		return;
	}
	for (int i = 0; i < n; ++i) {
		RdmaDevice d;
		d.name = ibv_get_device_name(list.get()[i]);
		std::unique_ptr<ibv_context, verbs_context_deleter> ctx(
			ibv_open_device(list.get()[i]));
		if (!ctx) {
			f.rdma_error = fmt::format("cannot open {}: {}", d.name, std::strerror(errno));
			continue;
		}
		ibv_device_attr da{};
		if (ibv_query_device(ctx.get(), &da) == 0)
			for (unsigned p = 1; p <= da.phys_port_cnt; ++p) {
				ibv_port_attr pa{};
				if (ibv_query_port(ctx.get(), static_cast<std::uint8_t>(p), &pa) == 0)
					d.ports.push_back(port_facts(ctx.get(), p, pa));
			}
		f.rdma.push_back(std::move(d));
	}
}

// The labelled volumes on the block devices present: those without an
// owner, and those that do not run (by name: the kernel does not know a
// volume's UUID), each with its plan.
void collect_idle(Env &env, DoctorFacts &f, bool verbose)
{
	try {
		std::ostringstream quiet;
		std::ostream &log = verbose ? env.err : quiet;
		HostPolicy pol = env.host_policy();
		for (const auto &[uuid, group] : group_by_volume(scan_members(env.blockdevs(), env.members(), log))) {
			Plan p = plan_volume(group);
			const label::Label &ref = p.reference;
			if (ref.owner_nqn.empty())
				f.unowned.push_back(ref.volume_name);
			bool running = f.volumes && std::any_of(f.volumes->begin(), f.volumes->end(),
								[&](const Volume &v) {
									return v.name == ref.volume_name;
								});
			if (running)
				continue;
			IdleVolume iv;
			iv.name = ref.volume_name;
			iv.uuid = label::uuid_to_string(ref.volume_uuid);
			iv.summary = p.summary();
			iv.problems = p.problems;
			iv.only_missing = p.only_missing();
			if (AutoDecision d = auto_assembly(pol, ref); !d.allowed)
				iv.not_auto = d.why;
			f.idle.push_back(std::move(iv));
		}
	} catch (const std::exception &e) {
		f.labels_error = e.what();
	}
}

// Where udev reads each of fxblk's rules files from (udev(7): a file in
// /etc hides one of the same name in /run, and both those in /usr, /lib),
// and the fxctl paths the file runs.
void collect_udev(DoctorFacts &f)
{
	namespace fs = std::filesystem;
	for (const char *name : {"60-fxblk.rules", "61-fxblk-assembly.rules"}) {
		RulesFile r;
		r.name = name;
		for (const char *dir : {"/etc/udev/rules.d", "/run/udev/rules.d",
					"/usr/local/lib/udev/rules.d", "/usr/lib/udev/rules.d",
					"/lib/udev/rules.d"}) {
			fs::path p = fs::path(dir) / name;
			std::error_code ec;
			if (!fs::exists(fs::symlink_status(p, ec)))
				continue;
			r.path = p.string();
			r.masked = fs::weakly_canonical(p, ec) == "/dev/null";
			for (const auto &prog : rules_fxctl_paths(read_file(p).value_or("")))
				r.fxctl[prog] = fs::is_regular_file(prog, ec) &&
						::access(prog.c_str(), X_OK) == 0;
			break;
		}
		f.udev_rules.push_back(std::move(r));
	}
}

// What 'systemctl is-enabled UNIT' prints; "" when it prints nothing.
std::string unit_enabled(const std::string &unit)
{
	std::string cmd = "systemctl is-enabled " + unit + " 2>/dev/null";
	std::unique_ptr<FILE, int (*)(FILE *)> p(::popen(cmd.c_str(), "r"), ::pclose);
	char line[128] = "";
	if (!p || !std::fgets(line, sizeof(line), p.get()))
		return "";
	std::string s = line;
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

void collect_systemd(DoctorFacts &f)
{
	f.systemd = std::filesystem::exists("/run/systemd/system");
	if (!f.systemd)
		return;
	for (const char *u : {"fxblk-connect.service", "nvmf-autoconnect.service"})
		f.units[u] = unit_enabled(u);
}

// /etc/fstab, and the file systems on fxN by UUID and label (the links
// 60-fxblk.rules makes).
void collect_fstab(DoctorFacts &f)
{
	namespace fs = std::filesystem;
	f.fstab = parse_fstab(read_file("/etc/fstab").value_or(""));
	for (auto [dir, key] : {std::pair{"/dev/disk/by-uuid", "UUID="},
				std::pair{"/dev/disk/by-label", "LABEL="}}) {
		std::error_code ec;
		for (const auto &e : fs::directory_iterator(dir, ec)) {
			std::string dev = fs::weakly_canonical(e.path(), ec).filename().string();
			if (dev.rfind("fx", 0) == 0)
				f.fx_filesystems[key + e.path().filename().string()] = dev;
		}
	}
}

}  // namespace

DoctorFacts collect_doctor_facts(Env &env, bool verbose)
{
	DoctorFacts f;
	collect_rdma(f);
	for (const char *m : {"fxblk", "nvme_core", "nvme_fabrics", "nvme_rdma", "nvme_tcp",
			      "rdma_rxe", "mlx5_ib", "ib_core", "rdma_cm"})
		f.modules[m] = std::filesystem::exists(std::string("/sys/module/") + m);
	f.hostnqn_file = std::filesystem::exists(default_hostnqn_path);
	f.hostnqn = read_line(default_hostnqn_path);
	f.hostid = read_line(default_hostid_path);
	std::string uuid = lower(read_line("/sys/class/dmi/id/product_uuid"));
	if (uuid.size() == 36)
		f.machine_hostnqn = "nqn.2014-08.org.nvmexpress:uuid:" + uuid;
	std::string mp = read_line("/sys/module/nvme_core/parameters/multipath");
	if (!mp.empty())
		f.multipath = mp == "Y";
	f.controllers = env.fabric(verbose)->controllers();
	if (f.modules["fxblk"]) {
		try {
			auto c = env.connect();
			std::vector<Volume> vols;
			for (const auto &v : c->list())
				vols.push_back(c->get(VolumeRef{v.index, v.name}));
			if (env.nvme) {
				auto lookup = env.nvme();
				for (auto &v : vols)
					for (auto &m : v.members)
						m.nvme = lookup->identify(m.disk);
			}
			f.volumes = std::move(vols);
		} catch (const std::exception &e) {
			f.volumes_error = e.what();
		}
	}
	collect_idle(env, f, verbose);
	collect_udev(f);
	collect_systemd(f);
	f.nvme_config = std::filesystem::exists("/etc/nvme/config.json");
	collect_fstab(f);
	return f;
}

void doctor_options(po::options_description &, po::options_description &,
		    po::positional_options_description &)
{
}

int cmd_doctor(Ctx &ctx)
{
	DoctorFacts facts = ctx.env.doctor_facts(ctx.env, ctx.verbose);
	std::vector<Finding> findings = run_checks(facts);
	json doc = doctor_doc(facts, findings);
	ctx.print(doc, text_doctor(doc));
	bool errors = std::any_of(findings.begin(), findings.end(),
				  [](const Finding &x) { return x.severity == "error"; });
	return errors ? exit_runtime : exit_ok;
}

}  // namespace fxctl
