// Command-line parsing, create-time layout and error messages, with fake
// netlink client and member devices.
#include <doctest/doctest.h>

#include "fakes.hpp"
#include "geometry.hpp"
#include "render.hpp"
#include "units.hpp"

#include <algorithm>
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
	for (const char *c : {"version", "create", "remove", "list", "show", "stats", "monitor"})
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
	// Combined short options and options after the command (issue 7).
	for (std::vector<std::string> args :
	     {std::vector<std::string>{"-vo", "json", "list"}, {"list", "-vo", "json"},
	      {"list", "-ojson"}, {"-v", "list", "--output", "json"}, {"list", "-v", "-o", "json"}}) {
		INFO(fmt::format("{}", fmt::join(args, " ")));
		CHECK(h.run(args) == 0);
		CHECK(h.out.str().find("\"volumes\"") != std::string::npos);
	}
	// Global options between a command's own options and arguments.
	CHECK(h.run({"create", "-c", "64K", "-o", "json", "v", "-v", "/dev/nvme0n1"}) == 0);
	CHECK(h.state.creates.back().chunk_sectors == 128);
	CHECK(h.out.str().find("\"volume\"") != std::string::npos);
	CHECK(h.err.str().find("data at") != std::string::npos);  // -v took effect
	CHECK(h.run({"create", "-c64K", "v2", "/dev/nvme1n1"}) == 0);  // sticky value
	CHECK(h.state.creates.back().chunk_sectors == 128);
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
		{"create", "v", "--data-offset", "0", "/dev/nvme0n1"},   // label area
		{"create", "v", "--data-offset", "1M", "/dev/nvme0n1"},
		{"create", "v", "--data-offset", "4092K", "/dev/nvme0n1"},
		{"create", "v", "--data-offset", "16777216T", "/dev/nvme0n1"},  // > 2^64
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

	REQUIRE(h.run({"create", "off", "-c", "64K", "--data-offset", "8M", "/dev/nvme1n1"}) == 0);
	CHECK(h.state.creates.back().chunk_sectors == 128);
	CHECK(h.state.creates.back().members[0].data_offset == 16384);
	REQUIRE(h.run({"create", "off", "--data-offset", "4M", "/dev/nvme1n1"}) == 0);
	CHECK(h.state.creates.back().members[0].data_offset == 8192);

	CHECK(default_data_offset(512 * KiB) == 4 * MiB);
	CHECK(default_data_offset(8 * MiB) == 8 * MiB);
}

TEST_CASE("create: member pre-checks name the device and the fix")
{
	Harness h;
	h.devices.devs["/dev/nvme2n1"].holders = {"fx0"};
	CHECK(h.run({"create", "v", "/dev/nvme0n1", "/dev/nvme2n1"}) == 4);  // busy
	CHECK(h.err.str() == "fxctl: /dev/nvme2n1 is in use by fx0; remove fx0 first\n");

	h.devices.devs["/dev/nvme2n1"].holders.clear();
	h.devices.devs["/dev/nvme2n1"].busy = true;
	CHECK(h.run({"create", "v", "/dev/nvme2n1"}) == 4);
	CHECK(h.err.str().find("/dev/nvme2n1 is in use (mounted") != std::string::npos);

	h.devices.others["/etc/passwd"] = S_IFREG;
	CHECK(h.run({"create", "v", "/etc/passwd"}) == 1);
	CHECK(h.err.str() == "fxctl: /etc/passwd is not a block device (it is a regular file); "
			     "give a block device, e.g. /dev/nvme0n1\n");

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
	auto attempt = [&](int err, const char *extack, int want_rc = 1) {
		h.state.fail_create = KernelError(err, extack, "x");
		int rc = h.run({"create", "vol1", "/dev/nvme0n1", "/dev/nvme1n1"});
		CHECK(rc == want_rc);
		return h.err.str();
	};
	CHECK(attempt(EEXIST, "") ==
	      "fxctl: a volume named \"vol1\" already exists; choose another name or remove it "
	      "first\n");
	CHECK(attempt(EBUSY, "member 1 is in use", 4).find(
		      "a member is in use (kernel: member 1 is in use)") != std::string::npos);
	CHECK(attempt(EPERM, "", 6).find("run fxctl as root") != std::string::npos);
	CHECK(attempt(EACCES, "", 6).find("run fxctl as root") != std::string::npos);
	CHECK(attempt(ENODEV, "", 3).find("disappeared") != std::string::npos);
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
	// Both the index and the name: the kernel checks they still agree.
	CHECK(h.state.destroys[0].index == 0u);
	CHECK(h.state.destroys[0].name == "vol1");
	CHECK(h.state.forces == std::vector<bool>{false});
	CHECK(h.out.str() == "removed fx0 \"vol1\"\n");

	h.state.fail_destroy = KernelError(EBUSY, "volume is open", "x");
	CHECK(h.run({"remove", "vol1"}) == 4);
	CHECK(h.err.str() == "fxctl: fx0 (vol1) is open (mounted or in use); unmount it first, "
			     "or use 'fxctl remove --force' to fail its I/O and remove it now\n");

	// Removed and re-created by someone else between GET and DESTROY.
	h.state.fail_destroy = KernelError(ENOENT, "NAME and INDEX name different volumes", "x");
	CHECK(h.run({"remove", "vol1"}) == 3);
	CHECK(h.err.str().find("removed or replaced while fxctl was removing it; nothing was "
			       "removed") != std::string::npos);
	h.state.fail_destroy.reset();

	CHECK(h.run({"remove", "nosuch"}) == 3);
	CHECK(h.err.str().find("no volume \"nosuch\"") != std::string::npos);
	CHECK(h.err.str().find("fxctl list") != std::string::npos);

	CHECK(h.run({"show", "fx/vol1"}) == 3);  // neither a name nor fxN
	CHECK(h.run({"show", "/dev/fx/vol1"}) == 0);
	CHECK(h.state.gets.back().name == "vol1");
	CHECK(h.out.str().find("/dev/nvme3n1") != std::string::npos);
	CHECK(h.run({"show", "fx9"}) == 3);
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
		CHECK(j.at("schema_version") == 2);
		++docs;
	}
	CHECK(docs == 2);

	CHECK(h.run({"stats", "vol1", "--watch=0.5", "--count", "1"}) == 0);
	CHECK(h.run({"stats", "vol1", "--count", "2"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "0"}) == 2);
	CHECK(h.err.str().find("from 0.1 to 86400 seconds") != std::string::npos);
	CHECK(h.run({"stats", "vol1", "--watch", "1e-9"}) == 2);  // would busy-loop
	CHECK(h.run({"stats", "vol1", "--watch", "nan"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "2", "--count", "0"}) == 2);
	CHECK(h.run({"stats", "vol1", "extra"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "2", "extra"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch", "vol2"}) == 2);
	CHECK(h.run({"stats", "--watch", "--count", "2", "vol1"}) == 0);
	CHECK(h.run({"stats", "--watch", "vol1", "--count", "2"}) == 0);  // NAME, not SECONDS
	CHECK(h.state.stats.back().name == "vol1");
	CHECK(h.run({"stats", "vol1", "--watch", "-3"}) == 2);
	CHECK(h.run({"stats", "vol1", "--watch=abc"}) == 2);
	CHECK(h.run({"stats", "vol1", "--count", "many", "--watch"}) == 2);
}

TEST_CASE("version: works without the module, says so, exits 0")
{
	// A version query is no failure: scripts and package checks run it
	// before the module is loaded (issue 23).
	Harness h;
	h.module_loaded = false;
	for (std::vector<std::string> args : {std::vector<std::string>{"version"},
					      {"--version"}, {"-V"}}) {
		INFO(args.front());
		CHECK(h.run(args) == 0);
		CHECK(h.out.str() == "fxctl " FXCTL_VERSION "\nfxblk module not loaded\n");
		CHECK(h.err.str().empty());
	}
	for (std::vector<std::string> args :
	     {std::vector<std::string>{"-o", "json", "--version"}, {"version", "-o", "json"},
	      {"-o", "json", "version"}}) {
		INFO(args.back());
		CHECK(h.run(args) == 0);
		auto j = nlohmann::json::parse(h.out.str());
		CHECK(j.at("schema_version") == 2);
		CHECK(j.at("fxctl").at("version") == FXCTL_VERSION);
		CHECK(j.at("module").is_null());  // null: not loaded
		CHECK_FALSE(j.contains("error"));
		CHECK(h.err.str().empty());
	}
	// other commands still need the module
	CHECK(h.run({"list"}) == 5);
	CHECK(h.run({"remove", "vol1"}) == 5);
	h.module_loaded = true;
	CHECK(h.run({"version"}) == 0);
	CHECK(h.out.str() == "fxctl " FXCTL_VERSION "\nfxblk module 0.1.0 (API 1)\n"
			     "features: stripe stats events nowait\n");
	CHECK(h.run({"version", "-o", "json"}) == 0);
	auto j = nlohmann::json::parse(h.out.str());
	CHECK(j.at("module").at("version") == "0.1.0");
}

TEST_CASE("version: API mismatch warns but still reports")
{
	Harness h;
	h.state.module = {"0.0.9", 2, 0, {}};
	CHECK(h.run({"version"}) == 0);
	CHECK(h.err.str().find("module speaks API 2, fxctl API 1") != std::string::npos);
	CHECK(h.out.str().find("features: none") != std::string::npos);
}

TEST_CASE("remove --force")
{
	Harness h;
	h.state.module.features |= FXBLK_FEAT_HEALTH;
	h.state.volumes[0].open_count = 1;
	CHECK(h.run({"remove", "--force", "vol1"}) == 0);
	CHECK(h.state.forces == std::vector<bool>{true});
	CHECK(h.state.destroys.back().name == "vol1");
	CHECK(h.out.str() == "removed fx0 \"vol1\"\nfx0 was open: its I/O now fails with EIO; "
			     "/dev/fx0 goes away at its last close\n");
	CHECK(h.run({"remove", "-f", "fx0"}) == 0);
	CHECK(h.state.forces.back());

	// A module without the health feature would reject FORCE as invalid:
	// refuse before sending anything.
	h.state.module.features &= ~FXBLK_FEAT_HEALTH;
	CHECK(h.run({"remove", "--force", "vol1"}) == 1);
	CHECK(h.err.str().find("cannot remove an open volume (no 'health' feature)") !=
	      std::string::npos);
	CHECK(h.state.forces.size() == 2);

	CHECK(h.run({"remove", "--help"}) == 0);
	CHECK(h.out.str().find("EIO") != std::string::npos);
}

TEST_CASE("error hints name the command, not the verb")
{
	Harness h;
	h.state.fail_stats = KernelError(EINVAL, "bad index", "x");
	CHECK(h.run({"stats", "vol1"}) == 1);
	CHECK(h.err.str() == "fxctl: cannot show statistics of \"vol1\": bad index; check the "
			     "arguments against 'fxctl stats --help'\n");
	h.state.fail_get = KernelError(EINVAL, "", "x");
	CHECK(h.run({"remove", "vol1"}) == 1);
	CHECK(h.err.str().find("'fxctl remove --help'") != std::string::npos);
}

TEST_CASE("-o json: errors are JSON objects on stdout")
{
	Harness h;
	auto error_of = [&](std::vector<std::string> args, int rc) {
		CHECK(h.run(args) == rc);
		auto j = nlohmann::ordered_json::parse(h.out.str());
		CHECK(j.at("schema_version") == 2);
		return j.at("error");
	};
	auto e = error_of({"-o", "json", "show", "nosuch"}, 3);
	CHECK(e.dump() == "{\"message\":\"no volume \\\"nosuch\\\"; see 'fxctl list'\",\"code\":3,"
			  "\"errno\":2,\"errno_name\":\"ENOENT\"}");
	CHECK(h.err.str().find("no volume") != std::string::npos);  // and for humans

	e = error_of({"list", "--bogus", "-o", "json"}, 2);
	CHECK(e.at("code") == 2);
	CHECK(e.at("errno").is_null());

	h.state.fail_destroy = KernelError(EBUSY, "", "x");
	e = error_of({"remove", "vol1", "-o", "json"}, 4);
	CHECK(e.at("errno_name") == "EBUSY");

	h.state.fail_create = KernelError(EPERM, "", "x");
	e = error_of({"create", "-o", "json", "v", "/dev/nvme0n1"}, 6);
	CHECK(e.at("errno") == EPERM);

	h.module_loaded = false;
	e = error_of({"-o", "json", "list"}, 5);
	CHECK(e.at("message").get<std::string>().find("modprobe fxblk") != std::string::npos);

	// Text mode keeps stdout clean.
	CHECK(h.run({"list"}) == 5);
	CHECK(h.out.str().empty());
}

TEST_CASE("overflowing sizes are refused, never wrapped")
{
	Harness h;
	// 18014398509481980 KiB is 2^64 - 4 KiB: it parses, is 4K-aligned, and
	// offset + chunk + tail wraps around 2^64 to a small number.
	CHECK(h.run({"create", "v", "--data-offset", "18014398509481980K", "/dev/nvme0n1"}) == 1);
	CHECK(h.err.str().find("is beyond the end of /dev/nvme0n1") != std::string::npos);
	CHECK(h.state.creates.empty());
	BlockDevice d;
	d.path = "/dev/x";
	d.size_sectors = 2097152;
	CHECK_THROWS_WITH(member_layout(d, ~0ULL - 4095, 512 * KiB), Contains("beyond the end"));
	CHECK_THROWS_WITH(member_layout(d, d.size_sectors * 512 - 4096, 512 * KiB),
			  Contains("too small"));
	CHECK_THROWS_AS(parse_size("18014398509481984K", "x"), UsageError);  // 2^64
}

TEST_CASE("stats --watch: interval or NAME after a bare --watch, volume named like a number")
{
	Harness h;
	h.state.volumes[0].name = "5";
	CHECK(h.run({"stats", "--watch", "5", "--count", "2"}) == 0);  // volume "5"
	CHECK(h.state.stats.back().name == "5");
	CHECK(h.sleeps == std::vector<double>{1.0});
	h.sleeps.clear();
	CHECK(h.run({"stats", "--watch", "3", "5", "--count", "2"}) == 0);
	CHECK(h.state.stats.back().name == "5");
	CHECK(h.sleeps == std::vector<double>{3.0});
	h.sleeps.clear();
	CHECK(h.run({"stats", "5", "-w", "2", "--count", "2"}) == 0);
	CHECK(h.sleeps == std::vector<double>{2.0});
	h.sleeps.clear();
	CHECK(h.run({"stats", "5", "-w2", "--count", "2"}) == 0);
	CHECK(h.sleeps == std::vector<double>{2.0});
	CHECK(h.run({"stats", "5", "--watch", "abc"}) == 2);
	CHECK(h.err.str().find("invalid --watch interval 'abc'") != std::string::npos);
}

TEST_CASE("stats: rates over the measured interval, interval latency, bytes, timestamp")
{
	Harness h;
	// Each STATS takes 0.5 s: samples are 2.5 s apart, not the nominal 2.
	h.state.on_stats = [&h] { h.now += 0.5; };
	CHECK(h.run({"-o", "json", "stats", "vol1", "--watch", "2", "--count", "2"}) == 0);
	std::istringstream lines(h.out.str());
	std::string l1, l2;
	std::getline(lines, l1);
	std::getline(lines, l2);
	auto a = nlohmann::json::parse(l1), b = nlohmann::json::parse(l2);
	CHECK(a.at("timestamp") == doctest::Approx(1764585000.0 + 1000.5));
	CHECK(b.at("timestamp") == doctest::Approx(1764585000.0 + 1003.0));
	CHECK_FALSE(a.contains("interval_seconds"));
	CHECK(b.at("interval_seconds") == doctest::Approx(2.5));
	const auto &r = b.at("volume").at("members")[0].at("read");
	CHECK(r.at("bytes") == (800 + 2048 * 1000) * 512ULL);  // bytes, not sectors
	CHECK_FALSE(r.contains("sectors"));
	CHECK(r.at("interval").at("ios_per_sec") == doctest::Approx(1000 / 2.5));
	CHECK(r.at("interval").at("bytes_per_sec") == doctest::Approx(2048 * 1000 * 512 / 2.5));
	CHECK(r.at("interval").at("errors") == 0);
	// Totals: 90 I/Os at 64..127 us, 10 at 1..2 ms: p99 in the 1 ms bucket.
	CHECK(r.at("p50_us") == nlohmann::json{{"ge", 64}, {"lt", 128}});
	CHECK(r.at("p99_us") == nlohmann::json{{"ge", 1024}, {"lt", 2048}});
	// The fake adds no latency samples between the two: no interval quantile.
	CHECK(r.at("interval").at("p50_us").is_null());

	h.run({"stats", "vol1", "--watch", "2", "--count", "2"});
	CHECK(h.out.str().find("(last 2.50 s)") != std::string::npos);
	CHECK(h.out.str().find("400 ") != std::string::npos);  // ios/s
}

TEST_CASE("stats --watch survives a volume re-created with fewer members")
{
	Harness h;
	h.state.on_stats = [&h] {
		if (h.state.stats_tick == 1)
			h.state.volumes[0] = fixed_volume(2);
	};
	CHECK(h.run({"stats", "vol1", "--watch", "1", "--count", "3"}) == 0);
	CHECK(h.out.str().find("volume changed since the last sample") != std::string::npos);
	CHECK(h.out.str().find("(last 1.00 s)") != std::string::npos);  // third sample: rates again
}

TEST_CASE("latency quantiles: nearest rank")
{
	// 50 samples in bucket 0 and 50 in bucket 1: p50 is the 50th, bucket 0.
	CHECK(quantile_bucket({50, 50}, 500) == 0u);
	CHECK(quantile_bucket({49, 51}, 500) == 1u);
	CHECK(quantile_bucket({99, 1}, 990) == 0u);
	CHECK(quantile_bucket({98, 2}, 990) == 1u);
	CHECK(quantile_bucket({0, 0, 1}, 500) == 2u);
	CHECK(quantile_bucket({0, 0}, 500) == std::nullopt);
	CHECK(quantile_bucket({1}, 0) == 0u);
	std::vector<std::uint64_t> big(FXBLK_LAT_BUCKETS, ~0ULL);  // no overflow
	CHECK(quantile_bucket(big, 990) == 31u);
	// Text: 2^14 us is 16.384 ms, not "16ms".
	Volume v = fixed_volume(1, true);
	v.members[0].stats->read.lat_hist = {};
	v.members[0].stats->read.lat_hist[13] = 1;
	v.members[0].stats->read.lat_hist[31] = 1;
	std::string t = text_stats(stats_doc(v, 0));
	CHECK(t.find("<16.384ms") != std::string::npos);
	CHECK(t.find(">=2147483648us") != std::string::npos);
}

TEST_CASE("column widths fit 31-character names")
{
	Harness h;
	std::string longname(31, 'n');
	h.state.volumes.push_back(fixed_volume(2));
	h.state.volumes[1].name = longname;
	h.state.volumes[1].index = 255;
	h.state.volumes[1].disk = "fx255";
	REQUIRE(h.run({"list"}) == 0);
	std::istringstream lines(h.out.str());
	std::string head, r1, r2;
	std::getline(lines, head);
	std::getline(lines, r1);
	std::getline(lines, r2);
	auto col = head.find("STATE");
	CHECK(r1.rfind("unknown") == head.find("FLAGS"));  // flags column aligned
	CHECK(r2.rfind("unknown") == head.find("FLAGS"));
	CHECK(r2.substr(0, col).find(longname + " ") != std::string::npos);
	CHECK(r1.substr(col, 7) == "unknown");  // the fake sends no state
	CHECK(r2.substr(col, 7) == "unknown");
}

namespace {

struct FakeNvme final : NvmeLookup {
	std::optional<NvmeIdentity> identify(const std::string &disk) override
	{
		if (disk != "nvme1n1")
			return std::nullopt;
		return NvmeIdentity{"nqn.2026-12.io.fxblk:m1",
				    {{"nvme1", "live", "rdma", "10.0.0.1", "4420", ""},
				     {"nvme5", "connecting", "rdma", "10.0.0.2", "4420", ""}}};
	}
};

}  // namespace

TEST_CASE("show: state, errors and every path of each member")
{
	Harness h;
	h.nvme = [] { return std::make_unique<FakeNvme>(); };
	Volume &v = h.state.volumes[0];
	v.state = FXBLK_STATE_FAILING;
	v.flags = FXBLK_VOL_READ_ONLY;
	for (auto &m : v.members) {
		m.state = FXBLK_STATE_LIVE;
		m.errors = 0;
	}
	v.members[2].state = FXBLK_STATE_FAILING;
	v.members[2].errors = 42;
	REQUIRE(h.run({"show", "vol1"}) == 0);
	std::string t = h.out.str();
	CHECK(t.find("state failing, flags read-only") != std::string::npos);
	CHECK(t.find("/dev/nvme2n1     259:2  failing        42") != std::string::npos);
	CHECK(t.find("path nvme1 rdma 10.0.0.1:4420 live") != std::string::npos);
	// Both controllers, not only the first; a reconnecting path is visible.
	CHECK(t.find("path nvme5 rdma 10.0.0.2:4420 reconnecting") != std::string::npos);

	REQUIRE(h.run({"-o", "json", "show", "vol1"}) == 0);
	auto j = nlohmann::ordered_json::parse(h.out.str());
	const auto &m1 = j.at("volume").at("members")[1];
	CHECK(j.at("volume").at("state") == "failing");
	CHECK(j.at("volume").at("flags") == nlohmann::json::array({"read-only"}));
	CHECK(m1.at("state") == "live");
	CHECK(m1.at("errors") == 0);
	CHECK(m1.at("subsys_nqn") == "nqn.2026-12.io.fxblk:m1");
	REQUIRE(m1.at("paths").size() == 2);
	CHECK(m1.at("paths")[1].dump() ==
	      "{\"controller\":\"nvme5\",\"state\":\"connecting\",\"transport\":\"rdma\","
	      "\"traddr\":\"10.0.0.2\",\"trsvcid\":\"4420\",\"host_traddr\":\"\"}");
	CHECK(j.at("volume").at("members")[2].at("errors") == 42);
	CHECK_FALSE(j.at("volume").at("members")[0].contains("paths"));  // not NVMe-oF
}

TEST_CASE("help: per-command summaries, 'help CMD', exit codes documented")
{
	Harness h;
	CHECK(h.run({"help"}) == 0);
	CHECK(h.out.str().find("3 not found, 4 busy") != std::string::npos);
	CHECK(h.out.str().find("  stats        Show per-member I/O counters and latency.\n") !=
	      std::string::npos);
	CHECK(h.out.str().find("  incremental  Add one member as it appears (for udev).\n") !=
	      std::string::npos);
	CHECK(h.run({"help", "create"}) == 0);
	CHECK(h.out.str().find("Usage: fxctl create NAME") != std::string::npos);
	CHECK(h.out.str().find("Example: fxctl create") != std::string::npos);
	CHECK(h.run({"help", "nope"}) == 2);
	for (std::size_t pos = 0, next; (next = h.out.str().find('\n', pos)) != std::string::npos;
	     pos = next + 1)
		CHECK(next - pos <= 80);  // wrapped
}

namespace {

Event member_event(std::uint32_t type, int err, std::uint32_t state)
{
	Event ev{type, 0u, "vol1", "fx0", err, std::nullopt};
	Member m = fixed_volume().members[1];
	m.state = state;
	m.errors = 3;
	ev.member = m;
	return ev;
}

}  // namespace

TEST_CASE("monitor: one line per event, text and JSON Lines, --count")
{
	Harness h;
	CHECK(h.run({"help", "monitor"}) == 0);
	CHECK(h.out.str().find("Usage: fxctl monitor [--count N] [--timeout SECONDS]") !=
	      std::string::npos);
	CHECK(h.out.str().find("--timeout") != std::string::npos);
	CHECK(h.run({"monitor", "--help"}) == 0);
	CHECK(h.connects == 0);

	auto queue = [&h] {
		h.state.events = {Event{FXBLK_EVENT_CREATED, 0u, "vol1", "fx0", std::nullopt,
					std::nullopt},
				  member_event(FXBLK_EVENT_MEMBER_ERROR, -EIO, FXBLK_STATE_FAILING),
				  member_event(FXBLK_EVENT_MEMBER_STATE, 0, FXBLK_STATE_GONE),
				  Event{FXBLK_EVENT_DESTROYED, 0u, "vol1", "fx0", std::nullopt,
					std::nullopt}};
	};
	queue();
	CHECK(h.run({"monitor", "--count", "4"}) == 0);
	std::string t = h.out.str();
	CHECK(std::count(t.begin(), t.end(), '\n') == 4);
	CHECK(t.find("Z created vol1 (fx0)\n") != std::string::npos);
	CHECK(t.find("Z member-error vol1 (fx0) member 1 nvme1n1: error -5 (EIO), failing\n") !=
	      std::string::npos);
	CHECK(t.find("Z member-state vol1 (fx0) member 1 nvme1n1: gone\n") != std::string::npos);
	CHECK(t.find("Z destroyed vol1 (fx0)\n") != std::string::npos);
	CHECK(t.rfind("2025-12-01T", 0) == 0);  // fake wall clock 1764586000 s
	CHECK(h.state.subscribes == 1);
	CHECK(h.err.str().empty());
	queue();
	CHECK(h.run({"monitor", "-v", "--count", "1"}) == 0);
	CHECK(h.err.str() == "fxctl: subscribed to the fxblk events; waiting\n");

	queue();
	CHECK(h.run({"-o", "json", "monitor", "--count", "2"}) == 0);
	CHECK(h.state.events.size() == 2);  // stopped after two
	std::istringstream lines(h.out.str());
	std::vector<nlohmann::json> docs;
	for (std::string line; std::getline(lines, line);)
		docs.push_back(nlohmann::json::parse(line));
	REQUIRE(docs.size() == 2);
	CHECK(docs[0].at("schema_version") == schema_version);
	CHECK(docs[0].at("timestamp").is_number());
	CHECK(docs[0].at("event") == "created");
	CHECK(docs[0].at("volume") == nlohmann::json{{"name", "vol1"}, {"index", 0}, {"disk", "fx0"}});
	CHECK_FALSE(docs[0].contains("member"));
	CHECK(docs[1].at("event") == "member_error");
	CHECK(docs[1].at("member").at("index") == 1);
	CHECK(docs[1].at("member").at("errno") == EIO);
	CHECK(docs[1].at("member").at("errno_name") == "EIO");
	CHECK(docs[1].at("member").at("state") == "failing");
}

TEST_CASE("monitor: --timeout, unload, lost events, older modules, bad options")
{
	Harness h;
	// Nothing happens: exit 0 once the time is up.
	double t0 = h.now;
	CHECK(h.run({"monitor", "--timeout", "2.5"}) == 0);
	CHECK(h.out.str().empty());
	CHECK(h.now - t0 == doctest::Approx(2.5));

	// Events before the timeout are printed, then exit 0.
	h.state.events = {Event{FXBLK_EVENT_CREATED, 0u, "vol1", "fx0", std::nullopt, std::nullopt}};
	CHECK(h.run({"monitor", "--timeout", "10", "--count", "5"}) == 0);
	CHECK(h.out.str().find("created vol1 (fx0)") != std::string::npos);

	// The module goes away while monitoring (the fake's empty queue).
	CHECK(h.run({"monitor"}) == 5);
	CHECK(h.err.str().find("unloaded") != std::string::npos);

	// Overflow: a warning on stderr, the stream goes on.
	h.state.events = {Event{FXBLK_EVENT_DESTROYED, 0u, "vol1", "fx0", std::nullopt,
				std::nullopt}};
	h.state.events_lost = {true};
	CHECK(h.run({"monitor", "--count", "1"}) == 0);
	CHECK(h.err.str().find("events were lost") != std::string::npos);
	CHECK(h.out.str().find("destroyed vol1") != std::string::npos);

	h.module_loaded = false;
	CHECK(h.run({"-o", "json", "monitor"}) == 5);
	CHECK(nlohmann::json::parse(h.out.str()).at("error").at("code") == 5);
	h.module_loaded = true;

	h.state.no_event_group = true;
	CHECK(h.run({"monitor", "--count", "1"}) == 1);
	CHECK(h.err.str().find("no 'events' multicast group") != std::string::npos);
	h.state.no_event_group = false;

	int subs = h.state.subscribes;
	CHECK(h.run({"monitor", "--count", "0"}) == 2);
	CHECK(h.run({"monitor", "--timeout", "0"}) == 2);
	CHECK(h.run({"monitor", "--timeout", "x"}) == 2);
	CHECK(h.err.str().find("invalid --timeout 'x'") != std::string::npos);
	CHECK(h.run({"monitor", "vol1"}) == 2);
	CHECK(h.state.subscribes == subs);
}

TEST_CASE("every JSON document carries schema_version (stop --all, stop NAME)")
{
	Harness h;
	REQUIRE(h.run({"-o", "json", "stop", "--all"}) == 0);
	auto all = nlohmann::json::parse(h.out.str());
	CHECK(all.at("schema_version") == schema_version);
	REQUIRE(all.at("stopped").is_array());
	CHECK(all.at("stopped").size() >= 1);
	CHECK(h.state.destroys.size() == all.at("stopped").size());
	// nothing running: still a document with its version
	h.state.volumes.clear();
	REQUIRE(h.run({"-o", "json", "stop", "--all"}) == 0);
	all = nlohmann::json::parse(h.out.str());
	CHECK(all.at("schema_version") == schema_version);
	CHECK(all.at("stopped").empty());
}
