// Member device discovery: path -> dev_t, size, logical block size and who
// holds it; the disks present (libudev). Behind an interface so unit tests
// run without block devices.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fxctl {

struct BlockDevice {
	std::string path;             // as given, "/dev/nvme0n1"
	std::string name;             // kernel name, "nvme0n1"
	std::uint32_t major = 0, minor = 0;
	std::uint64_t size_sectors = 0;
	std::uint32_t logical_block_size = 512;
	std::vector<std::string> holders;  // /sys/.../holders, e.g. "fx0"
	// /sys/.../ro (a partition's or its disk's): writes are refused
	bool read_only = false;
	// queue/zoned (the disk's for a partition): "none", "host-aware",
	// "host-managed"
	std::string zoned = "none";
	bool busy = false;            // exclusive open refused (mounted, md, ...)
	// A partition (/sys/.../partition exists): @disk is its whole disk
	// ("nvme0n1" for "nvme0n1p1"), "" for a whole disk.
	bool partition = false;
	std::string disk;
};

// What stat(2) says of a path: its file type (S_IFMT bits) and device
// number, or the errno when it cannot be reached.
struct PathStat {
	int error = 0;
	unsigned type = 0;
	std::uint32_t major = 0, minor = 0;  // of a device node
};

class BlockDevices {
public:
	virtual ~BlockDevices() = default;
	// Throws Error naming the path and the fix if it is not a usable
	// block device (the check of require_block_device first).
	virtual BlockDevice probe(const std::string &path) = 0;
	// stat(2) of @path, following links (/dev/disk/by-id/...).
	virtual PathStat stat(const std::string &path) = 0;
	// @path with every link resolved ("/dev/disk/by-id/nvme-..." ->
	// "/dev/nvme0n1"). Throws Error "cannot access PATH: ..." (ENOENT).
	virtual std::string canonical(const std::string &path) = 0;
	// Kernel names ("nvme0n1") of the whole disks present, fxblk volumes
	// (fxN) and disks of size 0 left out, in udev's order: where assemble
	// looks for members.
	virtual std::vector<std::string> present_disks() = 0;
};

// The one check of every command that takes a member device (create,
// examine, incremental): @path must be a block device. Throws Error naming
// @path, what it is instead and the fix ("... is not a block device (it is
// a character device); give a block device, e.g. /dev/nvme0n1"; ENOTBLK),
// or "cannot access PATH: ...; check the device path" (its errno). Reads
// nothing from the device: udev runs examine on every namespace.
PathStat require_block_device(BlockDevices &devs, const std::string &path);

// /sys/dev/block/MAJ:MIN under @sysfs: fills name, size, logical block
// size, holders, read-only and zoned. Throws Error if the directory is
// absent or malformed.
void read_sysfs_block(const std::filesystem::path &sysfs, BlockDevice &dev);

class SystemBlockDevices final : public BlockDevices {
public:
	explicit SystemBlockDevices(std::filesystem::path sysfs = "/sys")
		: sysfs_(std::move(sysfs)) {}
	BlockDevice probe(const std::string &path) override;
	PathStat stat(const std::string &path) override;
	std::string canonical(const std::string &path) override;
	std::vector<std::string> present_disks() override;

private:
	std::filesystem::path sysfs_;
};

}  // namespace fxctl
