// fxctl peer status: can a member's RDMA NIC reach an accelerator's memory?
// Read from sysfs (the PCI tree, the IOMMU groups, config space for ACS)
// and judged as the kernel's pci_p2pdma_distance() judges a pair and as
// the vendors' guides ask: the NIC and the GPU/NPU under one PCIe switch,
// ACS not redirecting peer traffic on that switch's downstream ports, or a
// root complex that forwards peer-to-peer; a BAR that covers the device
// memory. A verdict per (accelerator, RDMA device): ok, maybe, no.
#pragma once

#include "render.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

struct PciFunc {
	std::string bdf;  // "0000:03:00.0"
	// From the host bridge down to this function: {"pci0000:00",
	// "0000:00:01.0", "0000:01:00.0", ..., bdf}
	std::vector<std::string> chain;
	std::uint64_t bar_bytes = 0;               // largest memory BAR
	std::optional<std::uint64_t> vram_bytes;   // amdgpu's mem_info_vram_total
	std::string iommu;  // its IOMMU group's type ("identity", "DMA", "DMA-FQ"), "" if none
	// ACS P2P Request or Completion Redirect enabled (the ACS Control
	// register); nullopt: no ACS capability, or config space unreadable
	std::optional<bool> acs_redirect;
	bool acs_readable = false;  // extended config space could be read (root)
};

struct Accelerator {
	std::string kind;  // "rocm" (AMD), "ascend" (Huawei)
	PciFunc pci;
};

struct RdmaNic {
	std::string name;            // "mlx5_0", "rxe0"
	std::optional<PciFunc> pci;  // none: a software device (rxe, siw)
};

struct Topology {
	bool iommu = false;  // an IOMMU is registered (/sys/class/iommu)
	std::vector<Accelerator> accelerators;
	std::vector<RdmaNic> nics;
	std::vector<PciFunc> bridges;  // the functions on the accelerators' and NICs' chains
};

// Everything under @sysfs ("/sys", or a test's tree).
Topology read_topology(const std::string &sysfs);

// {iommu, accelerators [{pci, kind, bar_bytes, vram_bytes, iommu}], nics
// [{name, pci (null: software)}], pairs [{accelerator, nic, distance
// (switch, host_bridge, cross_host_bridge, none), via, verdict (ok, maybe,
// no), reasons [..]}]}
json topology_doc(const Topology &t);
std::string text_topology(const json &doc);

}  // namespace fxctl
