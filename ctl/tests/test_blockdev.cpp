// Member discovery from sysfs, on a fake /sys tree in a temporary directory.
#include <doctest/doctest.h>

#include "blockdev.hpp"
#include "error.hpp"
#include "nvme_info.hpp"
#include "sysfs.hpp"

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
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
		write(dir / "ro", "0");
		write(dir / "queue/logical_block_size", lbs);
		write(dir / "queue/zoned", "none");
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
	CHECK(!d.partition);
	CHECK(d.disk.empty());
}

TEST_CASE("sysfs readers: first line without trailing space, numbers, whole files")
{
	FakeSysfs sys;
	FakeSysfs::write(sys.root / "state", "live \t");
	FakeSysfs::write(sys.root / "two", "first\nsecond");
	FakeSysfs::write(sys.root / "vendor", "0x1002");
	FakeSysfs::write(sys.root / "size", "2097152");
	FakeSysfs::write(sys.root / "junk", "n/a");
	CHECK(read_attr(sys.root / "state") == "live");
	CHECK(read_line(sys.root / "two") == "first");
	CHECK(!read_attr(sys.root / "absent"));
	CHECK(read_line(sys.root / "absent").empty());
	CHECK(read_number(sys.root / "size") == 2097152u);
	CHECK(read_number(sys.root / "vendor", 0) == 0x1002u);
	CHECK(read_number(sys.root / "vendor") == 0u);  // base 10: "0", then x
	CHECK(!read_number(sys.root / "junk"));
	CHECK(!read_number(sys.root / "absent"));
	CHECK(read_file(sys.root / "two") == "first\nsecond\n");
	CHECK(!read_file(sys.root / "absent"));
}

TEST_CASE("partition: queue limits come from the parent disk")
{
	FakeSysfs sys;
	fs::path disk = sys.disk("nvme0n1", "259:0", "2097152", "512");
	fs::path part = disk / "nvme0n1p1";
	FakeSysfs::write(part / "size", "1024000");
	FakeSysfs::write(part / "ro", "0");
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
	CHECK(d.partition);
	CHECK(d.disk == "nvme0n1");
}

TEST_CASE("read-only and zoned: the device's own, or a partition's disk's")
{
	FakeSysfs sys;
	fs::path disk = sys.disk("nvme0n1", "259:0", "2097152", "512");
	fs::path part = disk / "nvme0n1p1";
	FakeSysfs::write(part / "size", "1024000");
	FakeSysfs::write(part / "ro", "0");
	FakeSysfs::write(part / "partition", "1");
	fs::create_symlink(fs::relative(part, sys.root / "dev/block"), sys.root / "dev/block/259:1");
	auto read = [&](std::uint32_t minor) {
		BlockDevice d;
		d.path = minor ? "/dev/nvme0n1p1" : "/dev/nvme0n1";
		d.major = 259;
		d.minor = minor;
		read_sysfs_block(sys.root, d);
		return d;
	};
	CHECK_FALSE(read(0).read_only);
	CHECK(read(0).zoned == "none");
	CHECK_FALSE(read(1).read_only);

	FakeSysfs::write(disk / "ro", "1");  // blockdev --setro on the disk
	CHECK(read(0).read_only);
	CHECK(read(1).read_only);  // 5.10 shows 0 in the partition's own ro
	FakeSysfs::write(disk / "ro", "0");
	FakeSysfs::write(part / "ro", "1");
	CHECK_FALSE(read(0).read_only);
	CHECK(read(1).read_only);

	FakeSysfs::write(disk / "queue/zoned", "host-managed");
	CHECK(read(0).zoned == "host-managed");
	CHECK(read(1).zoned == "host-managed");  // the disk's queue
	fs::remove(disk / "queue/zoned");        // a kernel without zoned support
	CHECK(read(0).zoned == "none");
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
	CHECK_THROWS_WITH_AS(devs.probe("/dev/null"),
			     "/dev/null is not a block device (it is a character device); give a "
			     "block device, e.g. /dev/nvme0n1", Error);
	CHECK_THROWS_WITH_AS(devs.probe("/"), doctest::Contains("/ is not a block device (it is a "
								 "directory)"), Error);
	CHECK_THROWS_WITH_AS(devs.probe("/nonexistent/nvme9n9"),
			     "cannot access /nonexistent/nvme9n9: No such file or directory; check "
			     "the device path", Error);
	// the real stat(2) the shared check reads (the fakes mirror it)
	CHECK(devs.stat("/dev/null").type == S_IFCHR);
	CHECK(devs.stat("/").type == S_IFDIR);
	CHECK(devs.stat("/nonexistent/nvme9n9").error == ENOENT);
}

// NVMe-oF paths of a member, laid out as the kernel does: a controller under
// /sys/devices/virtual/nvme-fabrics/ctl/, /sys/class/nvme/nvmeN -> it, and
// /sys/block/DISK -> the disk under its parent (controller, or nvme-subsysN
// for a native-multipath head, whose paths are the hidden disks nvmeScCnH).
namespace {

fs::path nvme_ctrl(const FakeSysfs &sys, const std::string &name, const std::string &state,
		   const std::string &addr)
{
	fs::path c = sys.root / "devices/virtual/nvme-fabrics/ctl" / name;
	FakeSysfs::write(c / "state", state);
	FakeSysfs::write(c / "transport", "rdma");
	FakeSysfs::write(c / "address", addr);
	FakeSysfs::write(c / "subsysnqn", "nqn.2026-12.io.fxblk:m1");
	return c;
}

void block_link(const FakeSysfs &sys, const fs::path &disk_dir, const fs::path &parent)
{
	fs::create_directories(disk_dir);
	fs::create_symlink(fs::relative(parent, disk_dir), disk_dir / "device");
	fs::create_directories(sys.root / "block");
	fs::create_symlink(fs::relative(disk_dir, sys.root / "block"),
			   sys.root / "block" / disk_dir.filename());
}

}  // namespace

TEST_CASE("nvme paths: multipath head lists every path with its live state")
{
	FakeSysfs sys;
	fs::path c0 = nvme_ctrl(sys, "nvme0", "live", "traddr=10.0.0.1,trsvcid=4420");
	fs::path c3 = nvme_ctrl(sys, "nvme3", "connecting",
				"traddr=10.0.0.2,trsvcid=4421,host_traddr=10.0.0.9");
	fs::path subsys = sys.root / "devices/virtual/nvme-subsystem/nvme-subsys0";
	FakeSysfs::write(subsys / "subsysnqn", "nqn.2026-12.io.fxblk:m1");
	fs::path head = subsys / "nvme0n1";
	block_link(sys, head, subsys);
	block_link(sys, c3 / "nvme0c3n1", c3);
	block_link(sys, c0 / "nvme0c0n1", c0);
	// another head of the same subsystem and a look-alike name: not paths
	block_link(sys, c0 / "nvme0c0n12", c0);
	block_link(sys, c0 / "nvme0c0n1x", c0);
	block_link(sys, c0 / "nvme10c0n1", c0);
	auto id = make_sysfs_nvme_lookup(sys.root)->identify("nvme0n1");
	REQUIRE(id);
	CHECK(id->subsys_nqn == "nqn.2026-12.io.fxblk:m1");
	REQUIRE(id->paths.size() == 2);
	CHECK(id->paths[0] == NvmePath{"nvme0", "live", "rdma", "10.0.0.1", "4420", ""});
	// A reconnecting controller keeps its path, with its current state.
	CHECK(id->paths[1] ==
	      NvmePath{"nvme3", "connecting", "rdma", "10.0.0.2", "4421", "10.0.0.9"});

	// The state is read on every call, not cached from the first.
	FakeSysfs::write(c3 / "state", "live");
	CHECK(make_sysfs_nvme_lookup(sys.root)->identify("nvme0n1")->paths[1].state == "live");
}

TEST_CASE("nvme paths: without multipath the disk hangs off one controller")
{
	FakeSysfs sys;
	fs::path c1 = nvme_ctrl(sys, "nvme1", "resetting", "traddr=10.0.0.3,trsvcid=4420,src_addr=10.0.0.8");
	block_link(sys, c1 / "nvme1n1", c1);
	auto look = make_sysfs_nvme_lookup(sys.root);
	auto id = look->identify("nvme1n1");
	REQUIRE(id);
	CHECK(id->paths ==
	      std::vector<NvmePath>{{"nvme1", "resetting", "rdma", "10.0.0.3", "4420", "10.0.0.8"}});
	// Not NVMe, absent, or a path-traversal attempt: no identity.
	CHECK_FALSE(look->identify("sda"));
	CHECK_FALSE(look->identify("nvme9n9"));
	CHECK_FALSE(look->identify("nvme1n1/../../x"));
}

TEST_CASE("nvme paths: a head whose controllers are all gone has no path")
{
	FakeSysfs sys;
	fs::path subsys = sys.root / "devices/virtual/nvme-subsystem/nvme-subsys2";
	FakeSysfs::write(subsys / "subsysnqn", "nqn.2026-12.io.fxblk:m2");
	block_link(sys, subsys / "nvme2n1", subsys);
	auto id = make_sysfs_nvme_lookup(sys.root)->identify("nvme2n1");
	REQUIRE(id);
	CHECK(id->subsys_nqn == "nqn.2026-12.io.fxblk:m2");
	CHECK(id->paths.empty());
}
