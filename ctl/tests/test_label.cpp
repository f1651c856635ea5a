// On-disk label: round trips, every corruption refused with its reason,
// member I/O on a regular file, sysfs identity parsing.
#include "error.hpp"
#include "label.hpp"

#include <linux/fxblk.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <unistd.h>

using namespace fxctl::label;
namespace fs = std::filesystem;

namespace {

MemberId member(std::uint32_t i)
{
	MemberId m;
	m.nsid = i + 1;
	m.subsys_nqn = "nqn.2026-12.org.example:fxlab" + std::to_string(i);
	for (std::size_t b = 0; b < 16; b++) {
		m.nguid[b] = static_cast<std::uint8_t>(0x10 + i + b);
		m.uuid[b] = static_cast<std::uint8_t>(0x80 + i + b);
	}
	for (std::size_t b = 0; b < 8; b++)
		m.eui64[b] = static_cast<std::uint8_t>(0xe0 + i + b);
	return m;
}

Label sample(std::uint32_t count = 4, std::uint32_t index = 1)
{
	Label l;
	l.volume_uuid = *uuid_from_string("0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0");
	l.volume_name = "vol-A_1.x";
	l.member_index = index;
	l.member_count = count;
	l.chunk_sectors = 1024;
	l.data_offset_sectors = 8192;
	l.data_sectors = 1024 * 100;
	l.generation = 7;
	l.created_unix = 1796083200;
	for (std::uint32_t i = 0; i < count; i++)
		l.members.push_back(member(i));
	return l;
}

void put32(std::vector<std::uint8_t> &b, std::size_t at, std::uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put64(std::vector<std::uint8_t> &b, std::size_t at, std::uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Re-seals a label after a deliberate change, so the check under test is
// the field rule, not the crc.
void reseal(std::vector<std::uint8_t> &b)
{
	put32(b, 20, 0);
	std::uint32_t crc = 0xFFFFFFFFu;
	for (auto byte : b) {
		crc ^= byte;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	put32(b, 20, ~crc);
}

std::string refusal(const std::vector<std::uint8_t> &b)
{
	Decoded d = decode(b);
	REQUIRE_FALSE(d.label);
	return d.reason;
}

bool contains(const std::string &s, const std::string &what)
{
	return s.find(what) != std::string::npos;
}

struct TempFile {
	explicit TempFile(std::uint64_t bytes)
	{
		char tmpl[] = "/tmp/fxlabel-XXXXXX";
		int fd = mkstemp(tmpl);
		REQUIRE(fd >= 0);
		REQUIRE(ftruncate(fd, static_cast<off_t>(bytes)) == 0);
		close(fd);
		path = tmpl;
	}
	~TempFile() { fs::remove(path); }
	std::string path;
};

void zero_at(const std::string &path, std::uint64_t at, std::size_t n, char fill = 0)
{
	std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
	f.seekp(static_cast<std::streamoff>(at));
	std::vector<char> z(n, fill);
	f.write(z.data(), static_cast<std::streamsize>(n));
}

}  // namespace

TEST_CASE("encode/decode round trip")
{
	for (std::uint32_t count : {1u, 4u, 32u}) {
		Label l = sample(count, count - 1);
		auto b = encode(l);
		CHECK(b.size() == kLabelBytes);
		Decoded d = decode(b);
		REQUIRE_MESSAGE(d.label, d.reason);
		CHECK(*d.label == l);
		CHECK(d.reason.empty());
		CHECK_FALSE(d.blank);
	}
	// Longest name and NQN, empty identities.
	Label l = sample(2, 0);
	l.volume_name = std::string(FXBLK_NAME_MAX - 1, 'n');
	l.members[0].subsys_nqn = std::string(kNqnBytes - 1, 'q');
	l.members[1] = MemberId{};
	l.chunk_sectors = FXBLK_CHUNK_MAX_SECTORS;
	l.data_sectors = FXBLK_CHUNK_MAX_SECTORS;
	Decoded d = decode(encode(l));
	REQUIRE_MESSAGE(d.label, d.reason);
	CHECK(*d.label == l);
}

TEST_CASE("fixed layout: magic, version, lengths, little-endian fields")
{
	auto b = encode(sample());
	CHECK(std::string(b.begin(), b.begin() + 8) == "FXBLKLBL");
	CHECK(b[8] == 1);          // version
	CHECK(b[12] == 0);  // header length 512
	CHECK(b[13] == 2);
	CHECK(b[17] == 0x40);      // label length 16384
	CHECK(b[72] == 1);         // member index
	CHECK(b[76] == 4);         // member count
	CHECK(b[80] == 0x00);  // chunk 1024
	CHECK(b[81] == 0x04);
	CHECK(b[89] == 0x20);      // data offset 8192
	CHECK(b[104] == 7);        // generation
	CHECK(std::string(reinterpret_cast<const char *>(&b[512 + 48])) ==
	      "nqn.2026-12.org.example:fxlab0");
	CHECK(b[512 + 272 + 40] == 2);  // member 1's nsid
	// The test's own bitwise crc32c agrees with Boost.CRC's.
	auto c = b;
	reseal(c);
	CHECK(c == b);
}

TEST_CASE("blank and truncated")
{
	std::vector<std::uint8_t> zero(kLabelBytes, 0);
	Decoded d = decode(zero);
	CHECK(d.blank);
	CHECK_FALSE(d.label);
	CHECK(contains(d.reason, "magic"));
	d = decode(std::span<const std::uint8_t>{});
	CHECK(d.blank);

	auto b = encode(sample());
	d = decode(std::span<const std::uint8_t>(b.data(), kLabelBytes - 1));
	CHECK_FALSE(d.blank);
	CHECK_FALSE(d.label);
	CHECK(contains(d.reason, "truncated"));
	d = decode(std::span<const std::uint8_t>(b.data(), 100));
	CHECK(contains(d.reason, "truncated"));
}

TEST_CASE("bad crc: any flipped bit")
{
	auto good = encode(sample());
	for (std::size_t at : {std::size_t(24), std::size_t(100), std::size_t(600),
			       std::size_t(9000), kLabelBytes - 1}) {
		auto b = good;
		b[at] ^= 0x01;
		CHECK_MESSAGE(contains(refusal(b), "bad crc32c"), at);
	}
	auto b = good;
	b[20] ^= 0x80;  // the crc itself
	CHECK(contains(refusal(b), "bad crc32c"));
}

TEST_CASE("every field rule has its reason")
{
	auto good = encode(sample());
	struct Case {
		const char *what;
		std::function<void(std::vector<std::uint8_t> &)> change;
		const char *reason;
		bool seal;
	};
	std::vector<Case> cases = {
		{"version 3", [](auto &b) { put32(b, 8, 3); }, "format version 3 not supported", true},
		{"version 2 without owner", [](auto &b) { put32(b, 8, 2); }, "version 2 label without an owner", true},
		{"version 0", [](auto &b) { put32(b, 8, 0); }, "format version 0", true},
		{"version unsealed", [](auto &b) { put32(b, 8, 9); }, "version 9", false},
		{"header length", [](auto &b) { put32(b, 12, 1024); }, "header length 1024", true},
		{"label length", [](auto &b) { put32(b, 16, 8192); }, "label length 8192", true},
		{"entry length", [](auto &b) { put32(b, 84, 300); }, "member entry length 300", true},
		{"table offset", [](auto &b) { put32(b, 120, 4096); }, "member table at byte 4096", true},
		{"flags", [](auto &b) { put32(b, 124, 1); }, "unknown flags", true},
		{"count 0", [](auto &b) { put32(b, 76, 0); }, "member count 0 out of range", true},
		{"count 33", [](auto &b) { put32(b, 76, 33); }, "member count 33 out of range", true},
		{"count huge", [](auto &b) { put32(b, 76, 0xffffffff); }, "member count 4294967295", true},
		{"index = count", [](auto &b) { put32(b, 72, 4); }, "member index 4 not below member count 4", true},
		{"index huge", [](auto &b) { put32(b, 72, 0x80000000); }, "member index 2147483648", true},
		{"chunk not pow2", [](auto &b) { put32(b, 80, 1000); }, "chunk size 1000", true},
		{"chunk 0", [](auto &b) { put32(b, 80, 0); }, "chunk size 0", true},
		{"chunk too small", [](auto &b) { put32(b, 80, 4); }, "chunk size 4", true},
		{"chunk too big", [](auto &b) { put32(b, 80, 65536); }, "chunk size 65536", true},
		{"offset in head", [](auto &b) { put64(b, 88, 8191); }, "inside the reserved head", true},
		{"offset 0", [](auto &b) { put64(b, 88, 0); }, "data offset 0 sectors inside", true},
		{"data 0", [](auto &b) { put64(b, 96, 0); }, "data size 0", true},
		{"data partial chunk", [](auto &b) { put64(b, 96, 1024 * 100 + 8); }, "not a positive multiple", true},
		{"data overflow", [](auto &b) { put64(b, 96, ~0ULL / 1024 * 1024); }, "overflows", true},
		{"offset overflow", [](auto &b) { put64(b, 88, ~0ULL - 5); }, "overflows", true},
		{"uuid zero", [](auto &b) { std::fill(b.begin() + 24, b.begin() + 40, 0); }, "UUID is all zeros", true},
		{"name empty", [](auto &b) { std::fill(b.begin() + 40, b.begin() + 72, 0); }, "volume name is empty", true},
		{"name bad char", [](auto &b) { b[41] = '/'; }, "only [A-Za-z0-9._-]", true},
		{"name control", [](auto &b) { b[41] = '\n'; }, "only [A-Za-z0-9._-]", true},
		{"name dotdot", [](auto &b) { std::fill(b.begin() + 40, b.begin() + 72, 0); b[40] = '.'; b[41] = '.'; }, "\"..\" is not allowed", true},
		{"name no NUL", [](auto &b) { std::fill(b.begin() + 40, b.begin() + 72, 'a'); }, "not NUL-terminated", true},
		{"nqn no NUL", [](auto &b) { std::fill(b.begin() + 512 + 272 * 3 + 48, b.begin() + 512 + 272 * 4, 'q'); }, "member 3: subsystem NQN not NUL-terminated", true},
		{"header reserved", [](auto &b) { b[300] = 1; }, "reserved header byte 300 not zero", true},
		{"after table", [](auto &b) { b[512 + 272 * 4] = 1; }, "byte 1600 after the member table", true},
		{"padding end", [](auto &b) { b[kLabelBytes - 1] = 0xff; }, "byte 16383 after", true},
		{"name padding", [](auto &b) { b[60] = 'x'; }, "volume name not zero-padded", true},
		{"nqn padding", [](auto &b) { b[512 + 272 + 250] = 'x'; }, "member 1: subsystem NQN not zero-padded", true},
		{"entry reserved", [](auto &b) { b[512 + 272 + 44] = 1; }, "member 1: reserved field", true},
	};
	for (const auto &c : cases) {
		auto b = good;
		c.change(b);
		if (c.seal)
			reseal(b);
		std::string why = refusal(b);
		std::string msg = std::string(c.what) + ": " + why;
		CHECK_MESSAGE(contains(why, c.reason), msg);
	}
}

TEST_CASE("owner: format 2 carries the host NQN; without one the label stays format 1")
{
	// no owner: byte 8 says version 1 and the owner's bytes are zero, as
	// fxctl before owners wrote (and still reads)
	auto v1 = encode(sample());
	CHECK(v1[8] == 1);
	CHECK(std::all_of(v1.begin() + 128, v1.begin() + 512, [](auto b) { return b == 0; }));
	Label l = sample();
	l.owner_nqn = "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0035-4410-8051-b4c04f4b4e32";
	auto v2 = encode(l);
	CHECK(v2[8] == 2);
	CHECK(std::string(reinterpret_cast<const char *>(&v2[128])) == l.owner_nqn);
	CHECK(l.format_version() == 2);
	Decoded d = decode(v2);
	REQUIRE_MESSAGE(d.label, d.reason);
	CHECK(d.label->owner_nqn == l.owner_nqn);
	CHECK(*d.label == l);
	// everything else where format 1 has it: only the owner bytes differ
	for (std::size_t i = 0; i < kLabelBytes; i++)
		if (i != 8 && (i < 20 || i >= 24) && (i < 128 || i >= 128 + 224))
			REQUIRE_MESSAGE(v1[i] == v2[i], i);
	// longest owner
	l.owner_nqn = std::string(kNqnBytes - 1, 'o');
	d = decode(encode(l));
	REQUIRE_MESSAGE(d.label, d.reason);
	CHECK(d.label->owner_nqn == l.owner_nqn);
	l.owner_nqn += 'o';
	CHECK_THROWS_WITH(encode(l), doctest::Contains("owner host NQN longer than 223"));
	// format 1 with bytes in the owner's place: reserved, refused
	auto b = v1;
	b[200] = 'x';
	reseal(b);
	CHECK(contains(refusal(b), "reserved header byte 200 not zero"));
	// format 2: the owner is NUL-terminated and zero-padded, the rest reserved
	b = v2;
	std::fill(b.begin() + 128, b.begin() + 352, 'q');
	reseal(b);
	CHECK(contains(refusal(b), "owner host NQN not NUL-terminated"));
	b = v2;
	b[400] = 1;
	reseal(b);
	CHECK(contains(refusal(b), "reserved header byte 400 not zero"));
}

TEST_CASE("wipe zeroes only copies carrying the fxblk magic")
{
	TempFile f(64ULL << 20);
	Label l = sample();
	write_member(f.path, l);
	// the primary's place reused (mkfs wrote there), the backup left
	zero_at(f.path, kPrimaryOffset, kLabelBytes, 0x5a);
	MemberLabel ml = read_member(f.path);
	REQUIRE(ml.label);
	CHECK(ml.from_backup);
	wipe_member(f.path);
	ml = read_member(f.path);
	CHECK_FALSE(ml.label);
	CHECK(ml.backup_blank);
	// the new owner's bytes where the primary was: untouched
	std::ifstream in(f.path, std::ios::binary);
	in.seekg(kPrimaryOffset);
	std::vector<char> got(kLabelBytes);
	in.read(got.data(), static_cast<std::streamsize>(got.size()));
	CHECK(std::all_of(got.begin(), got.end(), [](char c) { return c == 0x5a; }));
}

TEST_CASE("encode refuses what decode would refuse")
{
	Label l = sample();
	l.member_index = 4;
	CHECK_THROWS_AS(encode(l), std::invalid_argument);
	l = sample();
	l.members.pop_back();
	CHECK_THROWS_WITH(encode(l), doctest::Contains("3 member identities for member count 4"));
	l = sample();
	l.volume_name = "a b";
	CHECK_THROWS_AS(encode(l), std::invalid_argument);
	l = sample();
	l.members[0].subsys_nqn = std::string(kNqnBytes, 'q');
	CHECK_THROWS_WITH(encode(l), doctest::Contains("NQN longer"));
	CHECK(validate(sample()).empty());
}

TEST_CASE("two paths to one namespace: equal NGUID, UUID, EUI-64 or identity refused")
{
	// Without native NVMe multipath, each controller of a subsystem gives
	// its own disk of a shared namespace, and every one shows the same
	// ids: the sysfs attributes read the namespace head's
	// (torvalds/linux drivers/nvme/host/sysfs.c, nguid_show/uuid_show/
	// eui_show: dev_to_ns_head(dev)->ids).
	auto no_ids = [](MemberId m) {
		m.nguid = {};
		m.uuid = {};
		m.eui64 = {};
		return m;
	};
	struct Case {
		const char *what;
		std::function<void(Label &)> same;  // member 3 made member 1's
		const char *reason;
	};
	std::vector<Case> cases = {
		{"nguid", [](Label &l) { l.members[3].nguid = l.members[1].nguid; },
		 "the same NGUID 11121314"},
		{"uuid", [](Label &l) { l.members[3].uuid = l.members[1].uuid; },
		 "the same UUID 81828384-"},
		{"eui64", [](Label &l) { l.members[3].eui64 = l.members[1].eui64; },
		 "the same EUI-64 e1e2e3e4"},
		{"identity", [&](Label &l) { l.members[1] = l.members[3] = no_ids(member(1)); },
		 "the same identity (nsid 2 of nqn.2026-12.org.example:fxlab1)"},
	};
	for (const auto &c : cases) {
		Label l = sample();
		c.same(l);
		std::string why = validate(l);
		INFO(c.what, ": ", why);
		CHECK(contains(why, "members 1 and 3"));
		CHECK(contains(why, c.reason));
		CHECK(contains(why, "two paths to one namespace"));
		CHECK_THROWS_AS(encode(l), std::invalid_argument);
	}
	// decode refuses such a label on disk: member 1's entry copied to 3
	auto b = encode(sample());
	std::size_t e3 = 512 + 272 * 3, e1 = 512 + 272;
	std::copy(b.begin() + e1, b.begin() + e1 + 272, b.begin() + e3);
	reseal(b);
	CHECK(contains(refusal(b), "members 1 and 3"));
	// Zero designators and empty identities are no evidence (non-NVMe
	// members, namespaces without NGUID/EUI-64): several may be equal.
	Label l = sample();
	l.members[0] = l.members[2] = MemberId{};
	l.members[1].eui64 = {};
	l.members[3].eui64 = {};
	CHECK(validate(l).empty());
}

TEST_CASE("name rule (uapi FXBLK_NAME_CHARS)")
{
	CHECK(name_problem("data").empty());
	CHECK(name_problem("A.b_c-9").empty());
	CHECK(name_problem(std::string(31, 'x')).empty());
	CHECK(contains(name_problem(std::string(32, 'x')), "at most 31"));
	CHECK(contains(name_problem(""), "empty"));
	CHECK_FALSE(name_problem(".").empty());
	CHECK_FALSE(name_problem("..").empty());
	CHECK(name_problem("...").empty());
	for (const char *bad : {"a/b", "a b", "ü", "a\tb", "a:b"})
		CHECK_MESSAGE(!name_problem(bad).empty(), bad);
}

TEST_CASE("uuid strings")
{
	auto u = uuid_from_string("0F1E2D3C-4B5A-4978-8796-A5B4C3D2E1F0");
	REQUIRE(u);
	CHECK(uuid_to_string(*u) == "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0");
	CHECK(uuid_from_string("0f1e2d3c4b5a49788796a5b4c3d2e1f0") == u);
	CHECK_FALSE(uuid_from_string("0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f"));
	CHECK_FALSE(uuid_from_string("0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1fg"));
	CHECK_FALSE(uuid_from_string("0f1e2d3c4-b5a-4978-8796-a5b4c3d2e1f0"));
	CHECK_FALSE(uuid_from_string(""));
	auto r1 = random_uuid(), r2 = random_uuid();
	CHECK(r1 != r2);
	CHECK((r1[6] >> 4) == 4);
	CHECK((r1[8] & 0xc0) == 0x80);
}

TEST_CASE("backup offset: last aligned 16 KiB, inside the end reserve")
{
	CHECK(backup_offset(0) == 0);
	CHECK(backup_offset((5ULL << 20) - 1) == 0);
	CHECK(backup_offset(5ULL << 20) == (5ULL << 20) - kLabelBytes);
	std::uint64_t odd = (1ULL << 30) + 512 * 3;  // not 4 KiB aligned
	std::uint64_t at = backup_offset(odd);
	CHECK(at % 4096 == 0);
	CHECK(at + kLabelBytes <= odd);
	CHECK(at >= odd - kTailReserveBytes);
}

TEST_CASE("member I/O: write, read, primary lost, both lost, generations")
{
	TempFile f(64ULL << 20);
	MemberLabel ml = read_member(f.path);
	CHECK_FALSE(ml.label);
	CHECK(ml.primary_blank);
	CHECK(ml.backup_blank);

	Label l = sample();
	write_member(f.path, l);
	ml = read_member(f.path);
	REQUIRE(ml.label);
	CHECK(*ml.label == l);
	CHECK_FALSE(ml.from_backup);
	CHECK(std::string(ml.source()) == "primary");

	zero_at(f.path, kPrimaryOffset, 512);
	ml = read_member(f.path);
	REQUIRE(ml.label);
	CHECK(ml.from_backup);
	CHECK(ml.primary_blank);
	CHECK(*ml.label == l);

	// Corrupt (not blank) primary: reason kept, backup used.
	write_member(f.path, l);
	zero_at(f.path, kPrimaryOffset + 1000, 4, 0x55);
	ml = read_member(f.path);
	REQUIRE(ml.label);
	CHECK(ml.from_backup);
	CHECK(contains(ml.primary_reason, "bad crc32c"));
	CHECK_FALSE(ml.primary_blank);

	// Both valid, backup newer (an interrupted rewrite): the newer wins.
	Label newer = l;
	newer.generation = 8;
	write_member(f.path, newer);
	{
		auto old = encode(l);
		std::fstream s(f.path, std::ios::in | std::ios::out | std::ios::binary);
		s.seekp(kPrimaryOffset);
		s.write(reinterpret_cast<const char *>(old.data()), kLabelBytes);
	}
	ml = read_member(f.path);
	REQUIRE(ml.label);
	CHECK(ml.label->generation == 8);
	CHECK(ml.from_backup);

	wipe_member(f.path);
	ml = read_member(f.path);
	CHECK_FALSE(ml.label);
	CHECK(ml.primary_blank);
	CHECK(ml.backup_blank);
}

TEST_CASE("member I/O errors name the device")
{
	CHECK_THROWS_WITH_AS(read_member("/nonexistent/fxdev"), doctest::Contains("/nonexistent/fxdev"),
			     fxctl::Error);
	TempFile small(1ULL << 20);
	CHECK_THROWS_WITH_AS(write_member(small.path, sample()),
			     doctest::Contains(small.path.c_str()), fxctl::Error);
	MemberLabel ml = read_member(small.path);
	CHECK_FALSE(ml.label);
	CHECK(contains(ml.backup_reason, "too small"));
}

TEST_CASE("identity_of reads the NVMe sysfs attributes")
{
	char tmpl[] = "/tmp/fxsysfs-XXXXXX";
	REQUIRE(mkdtemp(tmpl));
	fs::path root = tmpl;
	fs::create_directories(root / "block/nvme1n2/device");
	auto put = [&](const char *f, const char *v) { std::ofstream(root / "block/nvme1n2" / f) << v; };
	put("nguid", "01234567-89ab-cdef-0123-456789abcdef\n");
	put("uuid", "fedcba98-7654-3210-fedc-ba9876543210\n");
	put("eui", "00 11 22 33 44 55 66 77\n");
	put("nsid", "2\n");
	put("device/subsysnqn", "nqn.2026-12.org.example:t1\n");
	MemberId id = identity_of("nvme1n2", root.string());
	CHECK(id.nsid == 2);
	CHECK(id.subsys_nqn == "nqn.2026-12.org.example:t1");
	CHECK(id.nguid[0] == 0x01);
	CHECK(id.nguid[15] == 0xef);
	CHECK(id.uuid[0] == 0xfe);
	CHECK(id.eui64[7] == 0x77);
	CHECK(id.describe() ==
	      "nsid 2 of nqn.2026-12.org.example:t1 (nguid 0123456789abcdef0123456789abcdef)");
	// Absent or garbled attributes stay empty.
	put("nguid", "garbage\n");
	fs::remove(root / "block/nvme1n2/eui");
	id = identity_of("/dev/nvme1n2", root.string());
	CHECK(id.nguid == std::array<std::uint8_t, 16>{});
	CHECK(id.eui64 == std::array<std::uint8_t, 8>{});
	CHECK(identity_of("sda", root.string()).empty());
	CHECK(identity_of("sda", root.string()).describe() == "unknown device (no NVMe identity)");
	fs::remove_all(root);
}
