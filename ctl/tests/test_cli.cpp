// Command-line parsing, create-time layout and error messages, with fake
// netlink client and member devices.
#include <doctest/doctest.h>

#include "fakes.hpp"
#include "units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace fxtest;
using doctest::Contains;

TEST_CASE("sizes: suffixes and bad values")
{
	CHECK(parse_size("4096", "x") == 4096);
	CHECK(parse_size("512K", "x") == 512 * KiB);
	CHECK(parse_size("512k", "x") == 512 * KiB);
	CHECK(parse_size("512KiB", "x") == 512 * KiB);
	CHECK(parse_size("512KB", "x") == 512 * KiB);
	CHECK(parse_size("4M", "x") == 4 * MiB);
	CHECK(parse_size("1G", "x") == GiB);
	CHECK(parse_size("2T", "x") == 2 * TiB);
	CHECK(parse_size("100B", "x") == 100);
	CHECK(parse_size("16777215T", "x") == 16777215 * TiB);
	for (const char *bad : {"", "K", "abc", "-1", "1.5M", "12X", "4 M", "4MM", "4Mi",
				"16777216T", "99999999999999999999"})
		CHECK_THROWS_AS(parse_size(bad, "chunk size"), UsageError);
	CHECK_THROWS_WITH(parse_size("12X", "chunk size"), Contains("invalid chunk size '12X'"));
}

TEST_CASE("human-readable sizes")
{
	CHECK(format_size(0) == "0 B");
	CHECK(format_size(512) == "512 B");
	CHECK(format_size(512 * KiB) == "512 KiB");
	CHECK(format_size(4 * MiB) == "4 MiB");
	CHECK(format_size(1536 * KiB) == "1.50 MiB");
	CHECK(format_size(4 * 2086912ULL * 512) == "3.98 GiB");
	CHECK(format_size(4 * GiB - 1) == "3.99 GiB");  // truncated, never rounded up
	CHECK(format_size(3 * TiB) == "3 TiB");
}

TEST_CASE("help, unknown commands and options, exit codes")
{
	Harness h;
	CHECK(h.run({}) == 2);
	CHECK(h.err.str().find("no command") != std::string::npos);

	CHECK(h.run({"--help"}) == 0);
	for (const char *c : {"version", "create", "remove", "list", "show", "stats"})
		CHECK(h.out.str().find(std::string("  ") + c + " ") != std::string::npos);
	CHECK(h.run({"-h"}) == 0);

	CHECK(h.run({"create", "--help"}) == 0);
	CHECK(h.out.str().find("Usage: fxctl create NAME") != std::string::npos);
	CHECK(h.out.str().find("--chunk") != std::string::npos);
	CHECK(h.out.str().find("--output") != std::string::npos);
	CHECK(h.run({"stats", "-h"}) == 0);
	CHECK(h.out.str().find("--watch") != std::string::npos);
	CHECK(h.connects == 0);  // help never talks to the module

	CHECK(h.run({"frobnicate"}) == 2);
	CHECK(h.err.str().find("unknown command 'frobnicate'") != std::string::npos);
	CHECK(h.run({"list", "--frobnicate"}) == 2);
	CHECK(h.run({"list", "extra"}) == 2);
	CHECK(h.run({"show"}) == 2);
	CHECK(h.run({"show", "a", "b"}) == 2);
	CHECK(h.run({"-o", "yaml", "list"}) == 2);
	CHECK(h.run({"list", "--output"}) == 2);
	CHECK(h.run({"list", "--chunk", "1M"}) == 2);  // create's option elsewhere
	CHECK(h.run({"create", "--chun", "1M", "v", "/dev/nvme0n1"}) == 2);  // no guessing
	CHECK(h.connects == 0);
}

TEST_CASE("global options anywhere")
{
	Harness h;
	CHECK(h.run({"-o", "json", "list"}) == 0);
	CHECK(h.out.str().find("\"schema_version\"") != std::string::npos);
	CHECK(h.run({"list", "-o", "json"}) == 0);
	CHECK(h.out.str().find("\"schema_version\"") != std::string::npos);
	CHECK(h.run({"--output=json", "-v", "list"}) == 0);
	CHECK(h.out.str().find("\"volumes\"") != std::string::npos);
	CHECK(h.run({"list"}) == 0);
	CHECK(h.out.str().find("vol1") != std::string::npos);
	CHECK(h.out.str().find("\"") == std::string::npos);
}

TEST_CASE("create: bad values are usage errors and reach no device")
{
	Harness h;
	const std::vector<std::vector<std::string>> bad = {
		{"create", "v", "--chunk", "3K", "/dev/nvme0n1"},
		{"create", "v", "--chunk", "2K", "/dev/nvme0n1"},
		{"create", "v", "--chunk", "32M", "/dev/nvme0n1"},
		{"create", "v", "--chunk", "768K", "/dev/nvme0n1"},
		{"create", "v", "--chunk", "lots", "/dev/nvme0n1"},
		{"create", "v", "--data-offset", "1000", "/dev/nvme0n1"},
		{"create", "v"},
		{"create"},
		{"create", "bad/name", "/dev/nvme0n1"},
		{"create", "", "/dev/nvme0n1"},
		{"create", std::string(32, 'a'), "/dev/nvme0n1"},
		{"create", "fx3", "/dev/nvme0n1"},
	};
	for (const auto &args : bad) {
		std::string what = args.size() > 1 ? args[1] : "";
		INFO(what);
		CHECK(h.run(args) == 2);
	}
	CHECK(h.state.creates.empty());
	CHECK(h.connects == 0);
	CHECK(h.run({"create", "v", "--chunk", "3K", "/dev/nvme0n1"}) == 2);
	CHECK(h.err.str().find("power of two from 4 KiB to 16 MiB") != std::string::npos);
	std::vector<std::string> many = {"create", "v"};
	for (unsigned i = 0; i < FXBLK_MAX_MEMBERS + 1; ++i)
		many.push_back("/dev/nvme0n1");
	CHECK(h.run(many) == 2);
	CHECK(h.err.str().find(fmt::format("at most {}", FXBLK_MAX_MEMBERS)) != std::string::npos);
}

TEST_CASE("create: member layout sent to the module")
{
	Harness h;
	REQUIRE(h.run({"create", "vol1", "/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1",
		       "/dev/nvme3n1"}) == 0);
	REQUIRE(h.state.creates.size() == 1);
	const auto &req = h.state.creates[0];
	CHECK(req.name == "vol1");
	CHECK(req.chunk_sectors == 1024);  // 512 KiB default
	REQUIRE(req.members.size() == 4);
	for (unsigned i = 0; i < 4; ++i) {
		CHECK(req.members[i].major == 259);
		CHECK(req.members[i].minor == i);  // order kept
		CHECK(req.members[i].data_offset == 8192);  // 4 MiB
		CHECK(req.members[i].data_sectors == 2097152 - 8192 - 2048);  // 1 MiB tail
	}
	CHECK(h.out.str() == "created fx0 \"vol1\": 4 members, chunk 512 KiB, 3.98 GiB\n");

	// Chunk above 4 MiB: the data offset grows to one chunk.
	REQUIRE(h.run({"create", "big", "--chunk", "16M", "/dev/nvme0n1"}) == 0);
	CHECK(h.state.creates.back().chunk_sectors == 32768);
	CHECK(h.state.creates.back().members[0].data_offset == 32768);
	CHECK(h.state.creates.back().members[0].data_sectors == 2097152 - 32768 - 2048);

	REQUIRE(h.run({"create", "off", "-c", "64K", "--data-offset", "1M", "/dev/nvme1n1"}) == 0);
	CHECK(h.state.creates.back().chunk_sectors == 128);
	CHECK(h.state.creates.back().members[0].data_offset == 2048);

	CHECK(default_data_offset(512 * KiB) == 4 * MiB);
	CHECK(default_data_offset(8 * MiB) == 8 * MiB);
}

TEST_CASE("create: member pre-checks name the device and the fix")
{
	Harness h;
	h.devices.devs["/dev/nvme2n1"].holders = {"fx0"};
	CHECK(h.run({"create", "v", "/dev/nvme0n1", "/dev/nvme2n1"}) == 1);
	CHECK(h.err.str() == "fxctl: /dev/nvme2n1 is in use by fx0; remove fx0 first\n");

	h.devices.devs["/dev/nvme2n1"].holders.clear();
	h.devices.devs["/dev/nvme2n1"].busy = true;
	CHECK(h.run({"create", "v", "/dev/nvme2n1"}) == 1);
	CHECK(h.err.str().find("/dev/nvme2n1 is in use (mounted") != std::string::npos);

	CHECK(h.run({"create", "v", "/etc/passwd"}) == 1);
	CHECK(h.err.str() == "fxctl: /etc/passwd is not a block device\n");

	h.devices.add("/dev/disk/by-id/same", 0);
	CHECK(h.run({"create", "v", "/dev/nvme0n1", "/dev/disk/by-id/same"}) == 1);
	CHECK(h.err.str().find("are the same device (259:0); list each member once") !=
	      std::string::npos);

	h.devices.add("/dev/big4k", 9, 2097152, 4096);
	CHECK(h.run({"create", "v", "/dev/nvme0n1", "/dev/big4k"}) == 1);
	CHECK(h.err.str().find("same logical block size") != std::string::npos);

	h.devices.add("/dev/tiny", 10, 8192 + 1024 + 2047);  // one sector short
	CHECK(h.run({"create", "v", "/dev/tiny"}) == 1);
	CHECK(h.err.str().find("/dev/tiny is too small") != std::string::npos);
	h.devices.add("/dev/tiny", 10, 8192 + 1024 + 2048);  // exactly one chunk
	CHECK(h.run({"create", "v", "/dev/tiny"}) == 0);
	CHECK(h.state.creates.back().members[0].data_sectors == 1024);

	h.devices.add("/dev/lbs4k", 11, 2097152, 4096);
	CHECK(h.run({"create", "v", "--data-offset", "6K", "/dev/lbs4k"}) == 2);  // not 4K-aligned
	CHECK(h.state.creates.size() == 1);
}

TEST_CASE("create: kernel errors become messages with a fix")
{
	Harness h;
	auto attempt = [&](int err, const char *extack) {
		h.state.fail_create = KernelError(err, extack, "x");
		int rc = h.run({"create", "vol1", "/dev/nvme0n1", "/dev/nvme1n1"});
		CHECK(rc == 1);
		return h.err.str();
	};
	CHECK(attempt(EEXIST, "") ==
	      "fxctl: a volume named \"vol1\" already exists; choose another name or remove it "
	      "first\n");
	CHECK(attempt(EBUSY, "member 1 is in use").find(
		      "a member is in use (kernel: member 1 is in use)") != std::string::npos);
	CHECK(attempt(EPERM, "").find("run fxctl as root") != std::string::npos);
	CHECK(attempt(EINVAL, "member 1 duplicates member 0") ==
	      "fxctl: cannot create \"vol1\": member 1 duplicates member 0; check the arguments "
	      "against 'fxctl create --help'\n");
	CHECK(attempt(EIO, "").find("Input/output error") != std::string::npos);
}

TEST_CASE("remove, show, stats: names, errors and exit codes")
{
	Harness h;
	CHECK(h.run({"remove", "/dev/fx0"}) == 0);
	REQUIRE(h.state.gets.size() == 1);
	CHECK(h.state.gets[0].index == 0u);
	REQUIRE(h.state.destroys.size() == 1);
	CHECK(h.state.destroys[0].index == 0u);
	CHECK(h.out.str() == "removed fx0 \"vol1\"\n");

	h.state.fail_destroy = KernelError(EBUSY, "volume is open", "x");
	CHECK(h.run({"remove", "vol1"}) == 1);
	CHECK(h.err.str() == "fxctl: fx0 (vol1) is open (mounted or in use); unmount it first\n");

	CHECK(h.run({"remove", "nosuch"}) == 1);
	CHECK(h.err.str().find("no volume \"nosuch\"") != std::string::npos);
	CHECK(h.err.str().find("fxctl list") != std::string::npos);

	CHECK(h.run({"show", "fx/vol1"}) == 1);  // neither a name nor fxN
	CHECK(h.run({"show", "/dev/fx/vol1"}) == 0);
	CHECK(h.state.gets.back().name == "vol1");
	CHECK(h.out.str().find("/dev/nvme3n1") != std::string::npos);
	CHECK(h.run({"show", "fx9"}) == 1);
	CHECK(h.err.str().find("no volume fx9") != std::string::npos);
}

TEST_CASE("stats --watch")
{
	Harness h;
	CHECK(h.run({"stats", "vol1"}) == 0);
	CHECK(h.state.stats.size() == 1);
	CHECK(h.sleeps.empty());
	CHECK(h.out.str().find("p99") != std::string::npos);
	CHECK(h.out.str().find("<128us") != std::string::npos);  // p50 bucket 6

	CHECK(h.run({"stats", "vol1", "--watch", "2", "--count", "3"}) == 0);
	CHECK(h.state.stats.size() == 4);
	CHECK(h.sleeps == std::vector<double>{2.0, 2.0});
	// Second sample shows rates: 1000 ios and 1000 MiB per 2 s per member.
	CHECK(h.out.str().find("ios/s") != std::string::npos);
	CHECK(h.out.str().find("500 MiB/s") != std::string::npos);

	h.sleeps.clear();
	CHECK(h.run({"stats", "--watch", "--count", "2", "vol1", "-o", "json"}) == 0);
	CHECK(h.sleeps == std::vector<double>{1.0});
	std::istringstream lines(h.out.str());
	std::string line;
	int docs = 0;
	while (std::getline(lines, line)) {
		auto j = nlohmann::json::parse(line);  // one document per line
		CHECK(j.at("schema_version") == 1);
		++docs;
	}
	CHECK(docs == 2);

	CHECK(h.run({"stats", "vol1", "--watch=0.5", "--count", "1"}) == 0);
	CHECK(h.run({"stats", "vol1", "--count", "2"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "0"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "-3"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch=abc"}) == 2);
	CHECK(h.run({"stats", "vol1", "--count", "many", "--watch"}) == 2);
}

TEST_CASE("version: module missing is a runtime error with the fix")
{
	Harness h;
	h.module_loaded = false;
	CHECK(h.run({"version"}) == 1);
	CHECK(h.err.str() == "fxctl: fxblk module not loaded (netlink family 'fxblk' not "
			     "found); run 'modprobe fxblk'\n");
	CHECK(h.out.str().empty());
	CHECK(h.run({"list"}) == 1);
	h.module_loaded = true;
	CHECK(h.run({"version"}) == 0);
	CHECK(h.out.str() == "fxctl " FXCTL_VERSION "\nfxblk module 0.1.0 (API 1)\n"
			     "features: stripe stats events nowait\n");
}

TEST_CASE("version: API mismatch warns but still reports")
{
	Harness h;
	h.state.module = {"0.0.9", 2, 0};
	CHECK(h.run({"version"}) == 0);
	CHECK(h.err.str().find("module speaks API 2, fxctl API 1") != std::string::npos);
	CHECK(h.out.str().find("features: none") != std::string::npos);
}
