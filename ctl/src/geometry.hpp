// Where a volume's data lives on its members, as create lays it out: the
// label reserves at the start and the end of each member, the chunk and
// data offset rules, each member's data area and what every member
// contributes (assemble takes all of it from the labels). Pure functions
// (tests/test_cli.cpp).
#pragma once

#include "blockdev.hpp"
#include "model.hpp"
#include "units.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace fxctl {

inline constexpr std::uint64_t reserved_tail_bytes = 1 * MiB;  // labels at the end
inline constexpr std::uint64_t min_data_offset_bytes = 4 * MiB;  // labels at the start

// --chunk: a power of two from FXBLK_CHUNK_MIN_SECTORS to _MAX_SECTORS, in
// bytes. Throws UsageError naming @text and the rule.
std::uint64_t parse_chunk(const std::string &text);
// --data-offset: a multiple of 4 KiB, at least min_data_offset_bytes.
// Throws UsageError naming @text and the rule.
std::uint64_t parse_data_offset(const std::string &text);
// Without --data-offset: max(4 MiB, chunk).
std::uint64_t default_data_offset(std::uint64_t chunk_bytes);

// One member's data area, in sectors: from the data offset to
// reserved_tail_bytes before its end.
struct MemberLayout {
	std::uint64_t data_offset, data_sectors;
};
// Throws Error naming the device and the fix when the offset is not a
// multiple of its logical block size (EINVAL) or the device is too small
// for the offset, one chunk and the tail (ENOSPC).
MemberLayout member_layout(const BlockDevice &dev, std::uint64_t data_offset_bytes,
			   std::uint64_t chunk_bytes);
// What every member contributes (the labels' data_sectors): the smallest
// member's data area in whole chunks of @chunk_sectors.
std::uint64_t common_data_sectors(const std::vector<MemberSpec> &members,
				  std::uint64_t chunk_sectors);

}  // namespace fxctl
