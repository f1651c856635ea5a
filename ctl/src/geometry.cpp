#include "geometry.hpp"

#include "error.hpp"

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>
#include <linux/fxblk.h>

namespace fxctl {

std::uint64_t parse_chunk(const std::string &text)
{
	std::uint64_t b = parse_size(text, "chunk size");
	std::uint64_t lo = FXBLK_CHUNK_MIN_SECTORS * sector_size,
		      hi = FXBLK_CHUNK_MAX_SECTORS * sector_size;
	if (b < lo || b > hi || (b & (b - 1)))
		throw UsageError(fmt::format("invalid chunk size '{}': must be a power of two "
					     "from {} to {}", text, format_size(lo),
					     format_size(hi)));
	return b;
}

std::uint64_t parse_data_offset(const std::string &text)
{
	std::uint64_t offset = parse_size(text, "data offset");
	if (offset % 4096)
		throw UsageError(fmt::format("invalid data offset '{}': must be a multiple of "
					     "4 KiB", text));
	if (offset < min_data_offset_bytes)
		throw UsageError(fmt::format("invalid data offset '{}': the first {} of each "
					     "member are reserved for labels; use at least 4M",
					     text, format_size(min_data_offset_bytes)));
	return offset;
}

std::uint64_t default_data_offset(std::uint64_t chunk_bytes)
{
	return std::max(min_data_offset_bytes, chunk_bytes);
}

MemberLayout member_layout(const BlockDevice &dev, std::uint64_t offset_bytes,
			   std::uint64_t chunk_bytes)
{
	if (offset_bytes % dev.logical_block_size)
		throw Error(fmt::format("data offset {} is not a multiple of {}'s logical block "
					"size ({} bytes); choose an aligned --data-offset",
					offset_bytes, dev.path, dev.logical_block_size),
			    errno_error(EINVAL));
	std::uint64_t size = dev.size_sectors * sector_size;
	if (offset_bytes >= size)
		throw Error(fmt::format("data offset {} is beyond the end of {} ({}); choose a "
					"smaller --data-offset",
					format_size(offset_bytes), dev.path, format_size(size)),
			    errno_error(ENOSPC));
	// No sum can wrap: offset < size, and chunk and tail are small.
	std::uint64_t need = offset_bytes + chunk_bytes + reserved_tail_bytes;
	if (need < offset_bytes || size < need)
		throw Error(fmt::format("{} is too small ({}): needs at least {} (data offset {} "
					"+ one chunk {} + {} reserved at the end); use a larger "
					"device or a smaller chunk/data offset",
					dev.path, format_size(size), format_size(need),
					format_size(offset_bytes), format_size(chunk_bytes),
					format_size(reserved_tail_bytes)),
			    errno_error(ENOSPC));
	return {offset_bytes / sector_size,
		(size - offset_bytes - reserved_tail_bytes) / sector_size};
}

std::uint64_t common_data_sectors(const std::vector<MemberSpec> &members,
				  std::uint64_t chunk_sectors)
{
	std::uint64_t common = ~0ULL;
	for (const auto &m : members)
		common = std::min(common, m.data_sectors / chunk_sectors * chunk_sectors);
	return common;
}

}  // namespace fxctl
