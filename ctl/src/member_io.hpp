// What create and examine do to member devices besides netlink: foreign
// signatures (libblkid), fxblk labels (label.hpp), identities, udev. Behind
// an interface so unit tests run without block devices.
#pragma once

#include "label.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fxctl {

// A signature libblkid found: "xfs" (filesystem), "gpt" (partition table),
// "linux_raid_member" (raid)...
struct Signature {
	std::string type;    // TYPE or PTTYPE
	std::string usage;   // "filesystem", "raid", "partition table", "other"...
	std::uint64_t offset = 0;  // byte offset of its magic, if known
};

// "xfs filesystem signature at byte 0"
std::string describe(const Signature &s);

class MemberIO {
public:
	virtual ~MemberIO() = default;
	// Every signature libblkid knows on @path (file systems, raid, crypto,
	// partition tables), as wipefs lists them. Throws Error naming @path.
	virtual std::vector<Signature> signatures(const std::string &path) = 0;
	// Erases them (wipefs -a). Throws Error naming @path.
	virtual void erase_signatures(const std::string &path) = 0;
	virtual label::MemberLabel read_label(const std::string &path) = 0;
	virtual void write_label(const std::string &path, const label::Label &l) = 0;
	virtual void wipe_label(const std::string &path) = 0;
	// @name: kernel name, "nvme0n1".
	virtual label::MemberId identity(const std::string &name) = 0;
	virtual std::array<std::uint8_t, 16> new_uuid() = 0;
	// A udev daemon runs (/run/udev/control exists): /dev/fx/<name> links
	// will appear.
	virtual bool udev_running() = 0;
	virtual bool exists(const std::string &path) = 0;
	// Takes an exclusive BSD lock on block device @path (udev's protocol
	// for tools changing a device), held until the handle is dropped: two
	// creates over a shared member run one after the other. Blocks.
	// nullptr if @path cannot be opened (the member checks report that).
	virtual std::shared_ptr<void> lock(const std::string &path) = 0;
};

class SystemMemberIO final : public MemberIO {
public:
	std::vector<Signature> signatures(const std::string &path) override;
	void erase_signatures(const std::string &path) override;
	label::MemberLabel read_label(const std::string &path) override
	{
		return label::read_member(path);
	}
	void write_label(const std::string &path, const label::Label &l) override
	{
		label::write_member(path, l);
	}
	void wipe_label(const std::string &path) override { label::wipe_member(path); }
	label::MemberId identity(const std::string &name) override
	{
		return label::identity_of(name);
	}
	std::array<std::uint8_t, 16> new_uuid() override { return label::random_uuid(); }
	bool udev_running() override;
	bool exists(const std::string &path) override;
	std::shared_ptr<void> lock(const std::string &path) override;
};

}  // namespace fxctl
