// Assembly policy, without devices: which labelled block devices make up
// which volume, and whether a volume's set is complete and consistent enough
// to create it. Pure functions over already-read labels, so the unit tests
// cover every refusal (tests/test_assembly_plan.cpp); scan.hpp reads the
// labels, assemble.cpp acts on a plan.
//
// Never a partial volume: a set is assembled only when every index
// 0..count-1 is claimed by exactly one device whose identity matches what the
// labels record for that index, every label has the set's newest
// generation and agrees on the geometry, and no member was reused (another
// signature on it, or its primary label gone): --force overrides the last
// two. A device carrying a member's label
// without its identity is foreign: refused (named) when it is all there is
// for that index, ignored with a warning beside the real member (a copy: the
// target's backing device seen locally, a dd clone).
#pragma once

#include "label.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

// One block device and what its label says.
struct Candidate {
	std::string devname;  // "nvme0n1"
	std::string devnode;  // "/dev/nvme0n1"
	label::MemberLabel ml;  // ml.label set: an fxblk member
	// The device's own identity (label::identity_of); none if it could not
	// be read (then the plan refuses it).
	std::optional<label::MemberId> identity;
	// Signatures libblkid finds on the device, described ("ext4
	// filesystem signature at byte 1080"): written over the member.
	std::vector<std::string> signatures;
};

// Why @c is a reused disk rather than a member, or "": libblkid finds
// another signature on it (mkfs, a partition table), or its primary label
// is gone (no fxblk magic at byte 4096: overwritten or zeroed) and only the
// backup copy at the end is left. A damaged primary (magic there, bad
// crc32c) is not reuse: the backup serves. Review M2.
std::string reuse_reason(const Candidate &c);

using VolumeUuid = std::array<std::uint8_t, 16>;

// Candidates with a label, grouped by volume UUID (in order of appearance
// within each group).
std::map<VolumeUuid, std::vector<Candidate>> group_by_volume(std::vector<Candidate> cands);

struct Plan {
	// The label of the set's newest generation: name, geometry, identities.
	label::Label reference;
	// Complete and consistent: the devices in stripe order (index 0 first).
	std::vector<Candidate> ordered;
	// Why not, one sentence each naming the device or the missing member.
	std::vector<std::string> problems;
	// Not in the way, but worth saying: a foreign copy of a member's label
	// beside the member itself (ignored).
	std::vector<std::string> warnings;
	// Indices without a usable device (also described in problems).
	std::vector<std::uint32_t> missing;
	bool ok() const { return problems.empty(); }
	// Only members missing (more may come): the set is incomplete, not wrong.
	bool only_missing() const { return !missing.empty() && problems.size() == missing.size(); }
	// "volume kv (uuid): 3 of 4 members present"
	std::string summary() const;
};

struct PlanOptions {
	// assemble --force: a reused member (reuse_reason) or one with a
	// stale label is taken as the member its label names (a warning
	// instead of a problem); the caller rewrites the labels.
	bool force = false;
};

// @group: the candidates of one volume UUID (non-empty, all with labels).
Plan plan_volume(const std::vector<Candidate> &group, PlanOptions opts = {});

}  // namespace fxctl
