// Sizes on the command line and in text output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fxctl {

constexpr std::uint64_t sector_size = 512;
constexpr std::uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024,
			TiB = GiB * 1024;

// "4096", "512K", "512KiB", "4m", "1G" -> bytes (binary units). Throws
// UsageError naming @what on a bad value or on overflow.
std::uint64_t parse_size(std::string_view text, std::string_view what);

// 524288 -> "512 KiB", 4273995776 -> "3.98 GiB", 100 -> "100 B".
std::string format_size(std::uint64_t bytes);

}  // namespace fxctl
