#include "sysfs.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace fxctl {

std::optional<std::string> read_file(const std::filesystem::path &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		return std::nullopt;
	std::ostringstream s;
	s << in.rdbuf();
	return s.str();
}

std::optional<std::string> read_attr(const std::filesystem::path &path)
{
	std::ifstream in(path);
	if (!in)
		return std::nullopt;
	std::string s;
	std::getline(in, s);
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

std::string read_line(const std::filesystem::path &path)
{
	return read_attr(path).value_or("");
}

std::optional<std::uint64_t> read_number(const std::filesystem::path &path, int base)
{
	std::ifstream in(path);
	std::string s;
	if (!(in >> s))
		return std::nullopt;
	try {
		return std::stoull(s, nullptr, base);
	} catch (const std::exception &) {
		return std::nullopt;
	}
}

}  // namespace fxctl
