#include "topology.hpp"

#include "sysfs.hpp"
#include "units.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace fxctl {
namespace {

constexpr unsigned vendor_amd = 0x1002, vendor_huawei = 0x19e5;
constexpr unsigned pci_ext_cap_acs = 0x000d;    // PCI_EXT_CAP_ID_ACS
constexpr unsigned acs_ctrl = 6;                // PCI_ACS_CTRL
constexpr unsigned acs_rr = 0x4, acs_cr = 0x8;  // P2P Request/Completion Redirect
constexpr unsigned ioresource_mem = 0x200;      // IORESOURCE_MEM in "resource"

bool is_bdf(const std::string &s)
{
	static const std::regex re("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
	return std::regex_match(s, re);
}

// Largest memory BAR, from "start end flags" lines (the first 6 are BARs).
std::uint64_t largest_bar(const fs::path &resource)
{
	std::ifstream in(resource);
	std::uint64_t best = 0, start, end, flags;
	for (int i = 0; i < 6 && in >> std::hex >> start >> end >> flags; ++i)
		if ((flags & ioresource_mem) && end > start)
			best = std::max(best, end - start + 1);
	return best;
}

// ACS Control of the function's ACS extended capability: whether it
// redirects peer-to-peer requests or completions upstream. sysfs gives
// only the first 64 bytes of config space to a reader without
// CAP_SYS_ADMIN: then unknown.
void read_acs(const fs::path &config, PciFunc &f)
{
	std::string c = read_file(config).value_or("");
	f.acs_readable = c.size() > 0x100;
	if (!f.acs_readable)
		return;
	auto u32 = [&](std::size_t o) -> std::uint32_t {
		if (o + 4 > c.size())
			return 0;
		return static_cast<std::uint8_t>(c[o]) | static_cast<std::uint8_t>(c[o + 1]) << 8 |
		       static_cast<std::uint8_t>(c[o + 2]) << 16 |
		       static_cast<std::uint32_t>(static_cast<std::uint8_t>(c[o + 3])) << 24;
	};
	std::size_t off = 0x100;
	for (int n = 0; off >= 0x100 && n < 64; ++n) {
		std::uint32_t h = u32(off);
		if (!h || h == 0xffffffffu)
			return;
		if ((h & 0xffff) == pci_ext_cap_acs) {
			unsigned ctrl = u32(off + acs_ctrl - 2) >> 16;  // 16 bits at +6
			f.acs_redirect = (ctrl & (acs_rr | acs_cr)) != 0;
			return;
		}
		off = h >> 20;
	}
}

std::optional<PciFunc> read_func(const fs::path &sysfs, const std::string &bdf)
{
	std::error_code ec;
	fs::path dev = fs::canonical(sysfs / "bus/pci/devices" / bdf, ec);
	fs::path devices = fs::canonical(sysfs / "devices", ec);
	if (dev.empty() || devices.empty())
		return std::nullopt;
	PciFunc f;
	f.bdf = bdf;
	for (const auto &part : dev.lexically_relative(devices))
		f.chain.push_back(part.string());
	if (f.chain.empty() || f.chain.back() != bdf)
		return std::nullopt;
	f.bar_bytes = largest_bar(dev / "resource");
	f.vram_bytes = read_number(dev / "mem_info_vram_total", 0);
	fs::path group = fs::canonical(dev / "iommu_group", ec);
	if (!group.empty()) {
		f.iommu = read_line(group / "type");
		if (f.iommu.empty())
			f.iommu = "unknown";
	}
	read_acs(dev / "config", f);
	return f;
}

// From the function's vendor and class files only: the full read (config
// space, BARs, IOMMU group) is for the few functions that matter.
std::optional<std::string> accelerator_kind(const fs::path &dev)
{
	auto vendor = read_number(dev / "vendor", 0).value_or(0);
	auto base = read_number(dev / "class", 0).value_or(0) >> 16;  // 0x03 display, 0x12 accelerator
	if (vendor == vendor_amd && (base == 0x03 || base == 0x12))
		return "rocm";
	if (vendor == vendor_huawei && base == 0x12)
		return "ascend";
	return std::nullopt;
}

// The bridges above @f (not @f itself) into @on.
void chain_above(const PciFunc &f, std::set<std::string> &on)
{
	on.insert(f.chain.begin(), f.chain.end() - 1);
}

const PciFunc *find(const std::vector<PciFunc> &v, const std::string &bdf)
{
	for (const auto &f : v)
		if (f.bdf == bdf)
			return &f;
	return nullptr;
}

bool translated(const std::string &iommu)
{
	return iommu.rfind("DMA", 0) == 0;  // "DMA", "DMA-FQ": not "identity"
}

json judge(const Topology &t, const Accelerator &a, const RdmaNic &n)
{
	json p = {{"accelerator", a.pci.bdf}, {"nic", n.name}};
	std::vector<std::string> why;
	std::string verdict = "ok", distance, via;
	if (!n.pci) {
		p["distance"] = "none";
		p["via"] = "";
		p["verdict"] = "no";
		p["reasons"] = {fmt::format("{} is a software RDMA device: it moves data with the "
					    "CPU and cannot reach device memory",
					    n.name)};
		return p;
	}
	const auto &x = a.pci.chain, &y = n.pci->chain;
	std::size_t c = 0;
	while (c < x.size() && c < y.size() && x[c] == y[c])
		++c;
	if (c == 0) {
		distance = "cross_host_bridge";
		verdict = "no";
		why.push_back(fmt::format("under different host bridges ({}, {}): the kernel does not "
					  "map peer-to-peer between them (pci_p2pdma_distance)",
					  x.empty() ? "?" : x[0], y.empty() ? "?" : y[0]));
	} else if (c == 1) {
		distance = "host_bridge";
		via = x[0];
		verdict = "maybe";
		why.push_back(fmt::format("only through the root complex ({}): works where the host "
					  "bridge forwards peer-to-peer (the kernel's list in "
					  "pci_p2pdma_distance); a PCIe switch shared by both is better",
					  x[0]));
	} else {
		distance = "switch";
		via = x[c - 1];
		// the switch's downstream ports on the way down to each device
		for (const auto *chain : {&x, &y}) {
			if (chain->size() <= c + 1)
				continue;  // the device itself hangs off the common bridge
			const PciFunc *port = find(t.bridges, (*chain)[c]);
			if (!port)
				continue;
			if (!port->acs_readable) {
				verdict = "maybe";
				why.push_back(fmt::format("ACS of {} unknown: its config space is "
							  "readable by root only",
							  port->bdf));
			} else if (port->acs_redirect.value_or(false)) {
				verdict = "maybe";
				why.push_back(fmt::format(
					"ACS on {} redirects peer-to-peer up to the root complex: "
					"traffic leaves the switch (turn P2P redirect off on it, "
					"e.g. pci=disable_acs_redir={}, with the IOMMU in passthrough)",
					port->bdf, port->bdf));
			}
		}
	}
	for (const PciFunc *f : {&a.pci, &*n.pci})
		if (translated(f->iommu) && verdict == "ok") {
			verdict = "maybe";
			why.push_back(fmt::format("the IOMMU translates for {} ({}): the vendors ask "
						  "for passthrough (iommu=pt) for peer-to-peer RDMA",
						  f->bdf, f->iommu));
		}
	if (a.pci.vram_bytes && a.pci.bar_bytes < *a.pci.vram_bytes) {
		if (verdict == "ok")
			verdict = "maybe";
		why.push_back(fmt::format("its BAR ({}) is smaller than its memory ({}): only that "
					  "much can be reached (Resizable BAR, above-4G decoding)",
					  format_size(a.pci.bar_bytes), format_size(*a.pci.vram_bytes)));
	}
	p["distance"] = distance;
	p["via"] = via;
	p["verdict"] = verdict;
	p["reasons"] = why;
	return p;
}

}  // namespace

Topology read_topology(const std::string &sysfs_root)
{
	fs::path sysfs(sysfs_root);
	Topology t;
	std::error_code ec;
	fs::directory_iterator iommus(sysfs / "class/iommu", ec);
	t.iommu = !ec && iommus != fs::directory_iterator();
	std::set<std::string> on_chains;
	for (const auto &e : fs::directory_iterator(sysfs / "bus/pci/devices", ec)) {
		auto kind = accelerator_kind(e.path());
		if (!kind)
			continue;
		if (auto f = read_func(sysfs, e.path().filename().string())) {
			chain_above(*f, on_chains);
			t.accelerators.push_back({*kind, *f});
		}
	}
	for (const auto &e : fs::directory_iterator(sysfs / "class/infiniband", ec)) {
		RdmaNic n{e.path().filename().string(), std::nullopt};
		fs::path dev = fs::canonical(e.path() / "device", ec);
		if (!dev.empty() && is_bdf(dev.filename().string()))
			n.pci = read_func(sysfs, dev.filename().string());
		if (n.pci)
			chain_above(*n.pci, on_chains);
		t.nics.push_back(std::move(n));
	}
	for (const auto &b : on_chains)
		if (is_bdf(b))
			if (auto f = read_func(sysfs, b))
				t.bridges.push_back(*f);
	std::sort(t.accelerators.begin(), t.accelerators.end(),
		  [](const auto &a, const auto &b) { return a.pci.bdf < b.pci.bdf; });
	std::sort(t.nics.begin(), t.nics.end(),
		  [](const auto &a, const auto &b) { return a.name < b.name; });
	return t;
}

json topology_doc(const Topology &t)
{
	json doc = {{"iommu", t.iommu}};
	json accs = json::array();
	for (const auto &a : t.accelerators)
		accs.push_back({{"pci", a.pci.bdf},
				{"kind", a.kind},
				{"bar_bytes", a.pci.bar_bytes},
				{"vram_bytes", a.pci.vram_bytes ? json(*a.pci.vram_bytes) : json()},
				{"iommu", a.pci.iommu}});
	doc["accelerators"] = accs;
	json nics = json::array();
	for (const auto &n : t.nics)
		nics.push_back({{"name", n.name}, {"pci", n.pci ? json(n.pci->bdf) : json()}});
	doc["nics"] = nics;
	json pairs = json::array();
	for (const auto &a : t.accelerators)
		for (const auto &n : t.nics)
			pairs.push_back(judge(t, a, n));
	doc["pairs"] = pairs;
	return doc;
}

std::string text_topology(const json &doc)
{
	std::string s = fmt::format("topology: IOMMU {}\n", doc["iommu"].get<bool>() ? "on" : "off");
	for (const auto &n : doc["nics"])
		s += fmt::format("  RDMA {}: {}\n", n["name"].get<std::string>(),
				 n["pci"].is_null() ? "software device (no PCI function): cannot "
						      "reach device memory"
						    : "PCI " + n["pci"].get<std::string>());
	if (doc["accelerators"].empty())
		s += "  no AMD or Huawei accelerator on the PCI bus\n";
	for (const auto &a : doc["accelerators"])
		s += fmt::format("  {} {}: BAR {}{}{}\n", a["kind"].get<std::string>(),
				 a["pci"].get<std::string>(),
				 format_size(a["bar_bytes"].get<std::uint64_t>()),
				 a["vram_bytes"].is_null()
					 ? ""
					 : ", memory " + format_size(a["vram_bytes"].get<std::uint64_t>()),
				 a["iommu"].get<std::string>().empty()
					 ? ""
					 : ", IOMMU " + a["iommu"].get<std::string>());
	for (const auto &p : doc["pairs"]) {
		std::string where = p["distance"].get<std::string>();
		if (!p["via"].get<std::string>().empty())
			where += " " + p["via"].get<std::string>();
		s += fmt::format("  {} <-> {}: {} ({})\n", p["accelerator"].get<std::string>(),
				 p["nic"].get<std::string>(), p["verdict"].get<std::string>(), where);
		for (const auto &r : p["reasons"])
			s += "    " + r.get<std::string>() + "\n";
	}
	return s;
}

}  // namespace fxctl
