// Member discovery from sysfs, on a fake /sys tree in a temporary directory.
#include <doctest/doctest.h>

#include "blockdev.hpp"
#include "error.hpp"

#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace fxctl;
namespace fs = std::filesystem;

namespace {

struct FakeSysfs {
	fs::path root;
	FakeSysfs()
	{
		std::string tmpl = (fs::temp_directory_path() / "fxctl-sysfs-XXXXXX").string();
		REQUIRE(mkdtemp(tmpl.data()));
		root = tmpl;
		fs::create_directories(root / "dev/block");
	}
	~FakeSysfs() { fs::remove_all(root); }

	static void write(const fs::path &p, const std::string &text)
	{
		fs::create_directories(p.parent_path());
		std::ofstream(p) << text << '\n';
	}

	// /sys/devices/.../NAME with /sys/dev/block/MAJ:MIN -> it, as the
	// kernel lays it out.
	fs::path disk(const std::string &name, const std::string &devno, const std::string &size,
		      const std::string &lbs, std::vector<std::string> holders = {})
	{
		fs::path dir = root / "devices/virtual/nvme-fabrics/ctl/nvme0" / name;
		write(dir / "size", size);
		write(dir / "queue/logical_block_size", lbs);
		fs::create_directories(dir / "holders");
		for (const auto &h : holders)
			fs::create_directories(dir / "holders" / h);  // symlinks in real sysfs
		fs::create_symlink(fs::relative(dir, root / "dev/block"), root / "dev/block" / devno);
		return dir;
	}
};

}  // namespace

TEST_CASE("whole disk: size, logical block size, holders")
{
	FakeSysfs sys;
	sys.disk("nvme2n1", "259:4", "2097152", "4096", {"fx1", "fx0"});
	BlockDevice d;
	d.path = "/dev/nvme2n1";
	d.major = 259;
	d.minor = 4;
	read_sysfs_block(sys.root, d);
	CHECK(d.name == "nvme2n1");
	CHECK(d.size_sectors == 2097152);
	CHECK(d.logical_block_size == 4096);
	CHECK(d.holders == std::vector<std::string>{"fx0", "fx1"});
}

TEST_CASE("partition: queue limits come from the parent disk")
{
	FakeSysfs sys;
	fs::path disk = sys.disk("nvme0n1", "259:0", "2097152", "512");
	fs::path part = disk / "nvme0n1p1";
	FakeSysfs::write(part / "size", "1024000");
	FakeSysfs::write(part / "partition", "1");
	fs::create_directories(part / "holders");
	fs::create_symlink(fs::relative(part, sys.root / "dev/block"), sys.root / "dev/block/259:1");
	BlockDevice d;
	d.path = "/dev/nvme0n1p1";
	d.major = 259;
	d.minor = 1;
	read_sysfs_block(sys.root, d);
	CHECK(d.name == "nvme0n1p1");
	CHECK(d.size_sectors == 1024000);
	CHECK(d.logical_block_size == 512);
	CHECK(d.holders.empty());
}

TEST_CASE("missing or garbled sysfs entries are errors naming the device")
{
	FakeSysfs sys;
	BlockDevice d;
	d.path = "/dev/gone";
	d.major = 8;
	d.minor = 16;
	CHECK_THROWS_WITH_AS(read_sysfs_block(sys.root, d),
			     doctest::Contains("/dev/gone (8:16) is not known to the kernel"), Error);
	sys.disk("sdb", "8:16", "lots", "512");
	CHECK_THROWS_WITH_AS(read_sysfs_block(sys.root, d), doctest::Contains("for /dev/gone"),
			     Error);
}

TEST_CASE("probe refuses paths that are not block devices")
{
	SystemBlockDevices devs;
	CHECK_THROWS_WITH_AS(devs.probe("/dev/null"), "/dev/null is not a block device", Error);
	CHECK_THROWS_WITH_AS(devs.probe("/"), "/ is not a block device", Error);
	CHECK_THROWS_WITH_AS(devs.probe("/nonexistent/nvme9n9"),
			     doctest::Contains("cannot access /nonexistent/nvme9n9"), Error);
}
