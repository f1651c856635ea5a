// Decoded module data: what the netlink replies carry, in the uapi's units
// (sectors). Rendering converts to bytes.
#pragma once

#include <linux/fxblk.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

struct ModuleStatus {
	std::string version;
	std::uint32_t api_version = 0;
	std::uint64_t features = 0;  // FXBLK_FEAT_*
	std::optional<std::uint32_t> live_volumes;  // absent from older modules
};

struct StatCounters {
	std::uint64_t ios = 0, sectors = 0, errors = 0;
	std::uint32_t inflight = 0;
	std::array<std::uint64_t, FXBLK_LAT_BUCKETS> lat_hist{};  // log2 us
	std::optional<std::uint64_t> fua;  // WRITE only
	bool operator==(const StatCounters &) const = default;
};

struct MemberStats {
	StatCounters read, write, discard, flush;
	bool operator==(const MemberStats &) const = default;
};

// One controller (path) through which an NVMe namespace is reached, with
// the controller's state as the nvme driver reports it in sysfs: "live",
// "connecting" (reconnecting after a path loss), "resetting", "deleting", ...
struct NvmePath {
	std::string controller;  // "nvme1"
	std::string state;
	std::string transport, traddr, trsvcid, host_traddr;
	bool operator==(const NvmePath &) const = default;
};

// Optional NVMe-oF identity of a member, resolved through libnvme: every
// controller of the namespace's subsystem that reaches it, not only the first.
struct NvmeIdentity {
	std::string subsys_nqn;
	std::vector<NvmePath> paths;
	bool operator==(const NvmeIdentity &) const = default;
};

struct Member {
	std::uint32_t index = 0, major = 0, minor = 0;
	std::string disk;                    // "nvme0n1"
	std::uint64_t data_offset = 0;       // sectors
	std::uint64_t data_sectors = 0;
	// Health (FXBLK_FEAT_HEALTH); absent when an older module sent none.
	std::optional<std::uint32_t> state;  // enum fxblk_state
	std::optional<std::uint64_t> errors;  // failed I/Os, all directions
	std::optional<MemberStats> stats;    // STATS replies only
	// Its queue takes PCI P2PDMA pages; absent from older modules.
	std::optional<bool> pci_p2pdma;
	// fxblk's own NVMe-oF/RDMA queues to it (enum fxblk_peerq_state) and
	// the RDMA device they use ("": none); absent from older modules.
	std::optional<std::uint32_t> peerq_state;
	std::string peerq_nic;
	std::optional<NvmeIdentity> nvme;    // filled in by fxctl, not the kernel
	bool operator==(const Member &) const = default;
};

// The direct path (FXBLK_ATTR_DIRECT, STATS only): bios with PCI P2PDMA
// pages that members completed, one per chunk piece, and their bytes;
// refused: such bios failed with EREMOTEIO.
struct DirectCounters {
	std::uint64_t read_ios = 0, read_bytes = 0, write_ios = 0, write_bytes = 0;
	std::uint64_t refused = 0;
	bool operator==(const DirectCounters &) const = default;
};

struct Volume {
	std::uint32_t index = 0;
	std::string name, disk;              // "vol1", "fx0"
	std::uint32_t chunk_sectors = 0;
	std::uint64_t capacity = 0;          // sectors
	std::uint32_t logical_block_size = 0;  // bytes
	std::uint32_t open_count = 0;
	std::optional<std::uint32_t> state;  // enum fxblk_state, worst member
	std::optional<std::uint64_t> flags;  // FXBLK_VOL_*
	std::optional<std::uint32_t> p2pdma;  // enum fxblk_p2pdma
	std::optional<DirectCounters> direct;  // STATS replies only
	// Its labels' volume UUID, as CREATE gave it (FXBLK_FEAT_UUID); absent
	// from older modules and from volumes created without one.
	std::optional<std::array<std::uint8_t, FXBLK_UUID_LEN>> uuid;
	std::vector<Member> members;
	bool operator==(const Volume &) const = default;
};

// A multicast message of the "events" group. Which fields are set depends
// on the event: MEMBER_ERROR carries errno and a member, MEMBER_STATE a
// member with its new state.
struct Event {
	std::uint32_t type = FXBLK_EVENT_UNSPEC;  // enum fxblk_event
	std::optional<std::uint32_t> index;       // volume
	std::string name, disk;
	std::optional<std::int32_t> err;          // negative errno
	std::optional<Member> member;
	bool operator==(const Event &) const = default;
};

struct MemberSpec {
	std::uint32_t major = 0, minor = 0;
	std::uint64_t data_offset = 0, data_sectors = 0;  // sectors
	bool operator==(const MemberSpec &) const = default;
};

struct CreateRequest {
	std::string name;
	std::uint32_t chunk_sectors = FXBLK_CHUNK_DEF_SECTORS;
	std::vector<MemberSpec> members;
	// FXBLK_ATTR_UUID: sent only if set, which take_uuid() does only for a
	// module with FXBLK_FEAT_UUID (an older one refuses the attribute).
	std::optional<std::array<std::uint8_t, FXBLK_UUID_LEN>> uuid;
	bool operator==(const CreateRequest &) const = default;
};

// How the user named a volume: "fx3" and "/dev/fx3" select by index,
// "/dev/fx/NAME" and anything else by name. With both set (remove), the
// kernel checks that they name the same volume.
struct VolumeRef {
	std::optional<std::uint32_t> index;
	std::string name;
	std::string display() const;
	static VolumeRef parse(const std::string &arg);
};

}  // namespace fxctl
