// libFuzzer target for the label decoder (ctl/src/label.cpp). Built with
// clang -fsanitize=fuzzer,address,undefined by tests/fuzz-label.sh.
//
// Each input is decoded twice: as given (mostly refused with "bad crc32c",
// which exercises the magic/version/length/crc checks), and with a correct
// crc32c patched in, so the fuzzer reaches every field rule. Whatever
// decodes must re-encode to the same bytes and decode to the same label.
#include "label.hpp"

#include <boost/crc.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace fxctl::label;

namespace {

void check(std::span<const std::uint8_t> in)
{
	Decoded d = decode(in);
	if (!d.label) {
		if (d.reason.empty())
			std::abort();  // every refusal has a reason
		return;
	}
	if (!validate(*d.label).empty())
		std::abort();
	std::vector<std::uint8_t> again = encode(*d.label);
	if (again.size() != kLabelBytes || std::memcmp(again.data(), in.data(), kLabelBytes))
		std::abort();  // decode accepted bytes encode would not produce
	Decoded d2 = decode(again);
	if (!d2.label || !(*d2.label == *d.label))
		std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
	check({data, size});
	if (size < kLabelBytes)
		return 0;
	std::vector<std::uint8_t> b(data, data + kLabelBytes);
	std::memset(b.data() + 20, 0, 4);
	boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
	crc.process_bytes(b.data(), b.size());
	std::uint32_t c = crc.checksum();
	for (int i = 0; i < 4; i++)
		b[20 + i] = static_cast<std::uint8_t>(c >> (8 * i));
	check(b);
	return 0;
}
