// fxblk on-disk member label: the versioned format of docs/on-disk-format.md
// ("Label format v1"). One piece of code encodes and decodes it; decode
// bounds-checks every field and says why it refuses a label.
//
// Every member carries two copies: the primary at kPrimaryOffset, inside the
// 4 MiB head reserve (FXBLK_RESERVED_HEAD_SECTORS), and the backup at
// backup_offset(member size), inside the 1 MiB end reserve
// (FXBLK_RESERVED_TAIL_SECTORS). The data area lies between the two.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fxctl::label {

// The newest format version: 2 adds the owning host's NQN (a v1 header's
// reserved bytes 128..351). encode writes version 1 for a label without an
// owner (byte for byte what fxctl before owners wrote) and version 2 for one
// with an owner; decode reads both and refuses any other version.
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::uint32_t kFormatVersionNoOwner = 1;
// Size of one label copy on disk (both copies), covered by the crc32c.
inline constexpr std::size_t kLabelBytes = 16384;
// Byte offset of the primary copy on every member (mdadm 1.2 uses 4 KiB too:
// sector 0 and the GPT header stay untouched).
inline constexpr std::uint64_t kPrimaryOffset = 4096;
// Both copies are 4096-byte aligned, so O_DIRECT works for any logical block
// size up to 4096.
inline constexpr std::uint64_t kAlign = 4096;
// Magic at byte 0 of a label: "FXBLKLBL".
inline constexpr std::array<std::uint8_t, 8> kMagic = {'F', 'X', 'B', 'L', 'K', 'L', 'B', 'L'};
// Reserves at both ends of a member, in bytes (the uapi sector constants).
inline constexpr std::uint64_t kHeadReserveBytes = 4ULL << 20;
inline constexpr std::uint64_t kTailReserveBytes = 1ULL << 20;
// Length of the fixed header and of one member entry in format version 1.
inline constexpr std::uint32_t kHeaderBytes = 512;
inline constexpr std::uint32_t kMemberEntryBytes = 272;
inline constexpr std::size_t kNqnBytes = 224;  // NVMF_NQN_SIZE (223) + NUL

// Byte offset of the backup copy on a member of @member_bytes bytes: the last
// 4096-aligned kLabelBytes of the member, inside the 1 MiB end reserve.
// Returns 0 (no backup) for a member smaller than head + end reserve.
std::uint64_t backup_offset(std::uint64_t member_bytes);

// Identity of one member namespace, as the kernel's NVMe driver reports it
// in sysfs. Absent identifiers are all zeros / empty.
struct MemberId {
	std::array<std::uint8_t, 16> nguid{};
	std::array<std::uint8_t, 16> uuid{};
	std::array<std::uint8_t, 8> eui64{};
	std::string subsys_nqn;  // at most kNqnBytes - 1 characters
	std::uint32_t nsid = 0;
	bool operator==(const MemberId &) const = default;
	// "nsid 3 of nqn.2014-08.org.example:t1 (nguid 0123...)"; "unknown
	// device (no NVMe identity)" when every field is empty.
	std::string describe() const;
	bool empty() const { return *this == MemberId{}; }
};

// Why @a and @b are one namespace seen twice (two paths to it, native NVMe
// multipath off), or "" if nothing says so: "the same NGUID ...", "the same
// UUID ...", "the same EUI-64 ..." (each when not zero), or "the same
// identity (...)" for equal non-empty identities. Two disks of one
// namespace show its head's ids (drivers/nvme/host/sysfs.c).
std::string same_namespace(const MemberId &a, const MemberId &b);

struct Label {
	std::array<std::uint8_t, 16> volume_uuid{};
	std::string volume_name;  // the kernel's name rule (FXBLK_NAME_CHARS)
	std::uint32_t member_index = 0;  // this member's position in the stripe
	std::uint32_t member_count = 0;  // 1..FXBLK_MAX_MEMBERS
	std::uint32_t chunk_sectors = 0; // power of two, FXBLK_CHUNK_{MIN,MAX}
	std::uint64_t data_offset_sectors = 0;  // >= FXBLK_RESERVED_HEAD_SECTORS
	std::uint64_t data_sectors = 0;  // per member, whole chunks, > 0
	std::uint64_t generation = 0;    // bumped on every rewrite of the set
	std::uint64_t created_unix = 0;  // seconds since the epoch
	std::vector<MemberId> members;   // member_count entries, stripe order
	// Host NQN of the host that owns the volume (auto-assembles it), at
	// most kNqnBytes - 1 characters; "" for a label without an owner
	// (format version 1).
	std::string owner_nqn;
	std::uint32_t format_version() const
	{
		return owner_nqn.empty() ? kFormatVersionNoOwner : kFormatVersion;
	}
	bool operator==(const Label &) const = default;
};

// The label as kLabelBytes bytes with the crc32c filled in. Throws
// std::invalid_argument if @l would not decode (name, counts, sizes...):
// encode never writes a label decode refuses.
std::vector<std::uint8_t> encode(const Label &l);

struct Decoded {
	std::optional<Label> label;
	std::string reason;  // why not, when !label ("bad crc32c ...")
	bool blank = false;  // no magic at all: not an fxblk label
};
// Never throws (except std::bad_alloc); every field is checked.
Decoded decode(std::span<const std::uint8_t> bytes);
// The reason decode would refuse @l, or "" if it is valid.
std::string validate(const Label &l);

struct MemberLabel {
	std::optional<Label> label;
	bool from_backup = false;  // label came from the backup copy
	std::string primary_reason, backup_reason;  // empty when that copy is valid
	bool primary_blank = false, backup_blank = false;
	// A valid label; "primary" or "backup" for messages and --export.
	const char *source() const { return from_backup ? "backup" : "primary"; }
};
// Reads both copies (aligned buffers, O_DIRECT where supported) of a block
// device or regular file. Prefers a valid primary, else a valid backup; if
// both are valid but differ, the higher generation (the primary on a tie).
// Throws Error naming the device if it cannot be opened or read.
MemberLabel read_member(const std::string &devnode);
// Writes @l to both copies and flushes (O_DIRECT + fsync). Throws Error
// naming the device on failure.
void write_member(const std::string &devnode, const Label &l);
// Zeroes each copy that carries the fxblk magic (a valid or damaged
// label), and flushes; a copy without it is left alone (on a reused disk
// the primary's place holds the new owner's data). Throws Error naming the
// device.
void wipe_member(const std::string &devnode);

// Identity of block device @devname ("nvme0n1" or "/dev/nvme0n1") from
// sysfs: /sys/block/NAME/{nguid,uuid,eui,nsid} and device/subsysnqn. Missing
// attributes stay empty (non-NVMe disks have none). @sysfs for tests.
MemberId identity_of(const std::string &devname, const std::string &sysfs = "/sys");

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case.
std::string uuid_to_string(const std::array<std::uint8_t, 16> &u);
// Accepts that form (either case), also without dashes (32 hex digits).
std::optional<std::array<std::uint8_t, 16>> uuid_from_string(std::string_view s);
// A new random (version 4) UUID from getrandom(2).
std::array<std::uint8_t, 16> random_uuid();

// The shared name rule (uapi FXBLK_NAME_CHARS, FXBLK_NAME_MAX): "" if @name
// is acceptable, else why not.
std::string name_problem(std::string_view name);

}  // namespace fxctl::label
