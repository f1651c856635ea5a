#include "units.hpp"

#include "error.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <limits>

namespace fxctl {

std::uint64_t parse_size(std::string_view text, std::string_view what)
{
	auto bad = [&](std::string_view why) {
		return UsageError(fmt::format("invalid {} '{}': {}; use bytes or a "
					      "K/M/G/T suffix, e.g. 512K",
					      what, text, why));
	};
	std::uint64_t value = 0;
	const char *first = text.data(), *last = text.data() + text.size();
	auto [p, ec] = std::from_chars(first, last, value);
	if (p == first)
		throw bad("not a number");
	if (ec == std::errc::result_out_of_range)
		throw bad("too large");

	std::string suffix(p, last);
	for (auto &c : suffix)
		c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
	unsigned shift;
	if (suffix.empty() || suffix == "B")
		shift = 0;
	else if (suffix.size() <= 3 &&
		 (suffix.size() == 1 || suffix.substr(1) == "B" || suffix.substr(1) == "IB")) {
		switch (suffix[0]) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: throw bad("unknown suffix");
		}
	} else {
		throw bad("unknown suffix");
	}
	if (value > (std::numeric_limits<std::uint64_t>::max() >> shift))
		throw bad("too large");
	return value << shift;
}

std::string format_size(std::uint64_t bytes)
{
	static constexpr std::array<const char *, 5> units = {"KiB", "MiB", "GiB",
							      "TiB", "PiB"};
	if (bytes < KiB)
		return fmt::format("{} B", bytes);
	std::size_t u = 0;
	std::uint64_t div = KiB;
	while (u + 1 < units.size() && bytes / div >= 1024) {
		div *= 1024;
		++u;
	}
	if (bytes % div == 0)
		return fmt::format("{} {}", bytes / div, units[u]);
	// Two decimals, truncated so a size is never rounded up to one the
	// device does not have (4 GiB - 1 byte prints 3.99 GiB, not 4.00).
	std::uint64_t hundredths = static_cast<std::uint64_t>(
		static_cast<unsigned __int128>(bytes) * 100 / div);
	return fmt::format("{}.{:02} {}", hundredths / 100, hundredths % 100, units[u]);
}

}  // namespace fxctl
