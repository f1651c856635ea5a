// Small files of sysfs, /proc and /etc read as text: the one reader fxctl
// has for them (block devices, NVMe identities and controllers, PCI
// functions, doctor's facts, the host NQN and the config files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace fxctl {

// The whole of @path (binary safe: PCI config space); nullopt when it
// cannot be opened, errno saying why.
std::optional<std::string> read_file(const std::filesystem::path &path);
// The first line of @path without trailing white space ("nvme0n1\n" ->
// "nvme0n1"); nullopt when it cannot be opened.
std::optional<std::string> read_attr(const std::filesystem::path &path);
// read_attr(@path), "" when it cannot be opened.
std::string read_line(const std::filesystem::path &path);
// The number that starts the first line of @path in @base (0: C's prefixes,
// "0x1002"); nullopt when it cannot be opened or holds no number.
std::optional<std::uint64_t> read_number(const std::filesystem::path &path, int base = 10);

}  // namespace fxctl
