#include "label.hpp"

#include "device_fd.hpp"
#include "error.hpp"
#include "sysfs.hpp"

#include <linux/fxblk.h>

#include <boost/crc.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <linux/fs.h>
#include <memory>
#include <stdexcept>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace fxctl::label {

static_assert(kHeadReserveBytes == FXBLK_RESERVED_HEAD_SECTORS * 512ULL);
static_assert(kTailReserveBytes == FXBLK_RESERVED_TAIL_SECTORS * 512ULL);
static_assert(kPrimaryOffset % kAlign == 0 && kLabelBytes % kAlign == 0);
static_assert(kPrimaryOffset + kLabelBytes <= kHeadReserveBytes);
static_assert(kLabelBytes <= kTailReserveBytes);
static_assert(kHeaderBytes + FXBLK_MAX_MEMBERS * kMemberEntryBytes <= kLabelBytes);

namespace {

// Version 1 layout, little-endian (docs/on-disk-format.md).
namespace off {
constexpr std::size_t magic = 0;            // u8[8]  "FXBLKLBL"
constexpr std::size_t version = 8;          // u32
constexpr std::size_t header_bytes = 12;    // u32    512
constexpr std::size_t label_bytes = 16;     // u32    16384
constexpr std::size_t crc = 20;             // u32    crc32c, computed with 0 here
constexpr std::size_t volume_uuid = 24;     // u8[16]
constexpr std::size_t volume_name = 40;     // char[32], NUL-terminated
constexpr std::size_t member_index = 72;    // u32
constexpr std::size_t member_count = 76;    // u32
constexpr std::size_t chunk_sectors = 80;   // u32
constexpr std::size_t entry_bytes = 84;     // u32    272
constexpr std::size_t data_offset = 88;     // u64    sectors
constexpr std::size_t data_sectors = 96;    // u64    sectors per member
constexpr std::size_t generation = 104;     // u64
constexpr std::size_t created = 112;        // u64    unix seconds
constexpr std::size_t members_offset = 120; // u32    512
constexpr std::size_t flags = 124;          // u32    0 in versions 1 and 2
constexpr std::size_t owner = 128;          // char[224] owner host NQN (version 2;
                                            // version 1: reserved, zero)
constexpr std::size_t reserved = 128;       // version 1: ..511 zero
constexpr std::size_t reserved_v2 = 352;    // version 2: ..511 zero
// Member entry i at members_offset + i * entry_bytes:
constexpr std::size_t e_nguid = 0;          // u8[16]
constexpr std::size_t e_uuid = 16;          // u8[16]
constexpr std::size_t e_eui64 = 32;         // u8[8]
constexpr std::size_t e_nsid = 40;          // u32
constexpr std::size_t e_reserved = 44;      // u32    0
constexpr std::size_t e_nqn = 48;           // char[224], NUL-terminated
}  // namespace off

static_assert(off::e_nqn + kNqnBytes == kMemberEntryBytes);
static_assert(off::owner + kNqnBytes == off::reserved_v2 && off::reserved_v2 < kHeaderBytes);

void put32(std::uint8_t *p, std::uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put64(std::uint8_t *p, std::uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint32_t get32(const std::uint8_t *p)
{
	std::uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

std::uint64_t get64(const std::uint8_t *p)
{
	std::uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

// CRC-32C (Castagnoli, as iSCSI, ext4 and btrfs use) over the whole label
// with the crc field taken as zero.
std::uint32_t label_crc(const std::uint8_t *p)
{
	boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
	static constexpr std::uint8_t zero[4] = {};
	crc.process_bytes(p, off::crc);
	crc.process_bytes(zero, 4);
	crc.process_bytes(p + off::crc + 4, kLabelBytes - off::crc - 4);
	return crc.checksum();
}

template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N> &a)
{
	std::string s;
	for (auto b : a)
		s += fmt::format("{:02x}", b);
	return s;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N> &a)
{
	return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

// A NUL-terminated string in field [p, p+n), zero-padded: "" in @why
// unless it has no NUL or bytes after the NUL are not zero.
std::string cstr(const std::uint8_t *p, std::size_t n, std::string &why)
{
	const void *nul = std::memchr(p, 0, n);
	if (!nul) {
		why = "not NUL-terminated";
		return {};
	}
	std::size_t len = static_cast<std::size_t>(static_cast<const std::uint8_t *>(nul) - p);
	for (std::size_t i = len; i < n; i++)
		if (p[i]) {
			why = "not zero-padded after its NUL";
			return {};
		}
	return std::string(reinterpret_cast<const char *>(p), len);
}

// The first nonzero byte in [from, to), if any.
std::optional<std::size_t> nonzero(const std::uint8_t *p, std::size_t from, std::size_t to)
{
	for (std::size_t i = from; i < to; i++)
		if (p[i])
			return i;
	return std::nullopt;
}

bool is_pow2(std::uint64_t v)
{
	return v && !(v & (v - 1));
}

// Aligned, zeroed buffer for O_DIRECT.
struct AlignedBuf {
	explicit AlignedBuf(std::size_t n)
		: p(static_cast<std::uint8_t *>(std::aligned_alloc(kAlign, n)))
		, size(n)
	{
		if (!p)
			throw std::bad_alloc();
		std::memset(p, 0, n);
	}
	~AlignedBuf() { std::free(p); }
	AlignedBuf(const AlignedBuf &) = delete;
	AlignedBuf &operator=(const AlignedBuf &) = delete;
	std::uint8_t *p;
	std::size_t size;
};

std::uint64_t dev_bytes(int fd, const std::string &dev)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		throw Error(fmt::format("cannot stat {}: {}", dev, std::strerror(errno)),
			    errno_error(errno));
	if (S_ISREG(st.st_mode))
		return static_cast<std::uint64_t>(st.st_size);
	std::uint64_t bytes = 0;
	if (ioctl(fd, BLKGETSIZE64, &bytes) < 0)
		throw Error(fmt::format("cannot get the size of {}: {}", dev,
					std::strerror(errno)),
			    errno_error(errno));
	return bytes;
}

void pread_all(int fd, std::uint8_t *p, std::size_t n, std::uint64_t at, const std::string &dev)
{
	std::size_t done = 0;
	while (done < n) {
		ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(at + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			throw Error(fmt::format("cannot read the label of {} at byte {}: {}",
						dev, at, std::strerror(errno)),
				    errno_error(errno));
		if (r == 0) {  // short file: the rest reads as zeros
			std::memset(p + done, 0, n - done);
			return;
		}
		done += static_cast<std::size_t>(r);
	}
}

void pwrite_all(int fd, const std::uint8_t *p, std::size_t n, std::uint64_t at,
		const std::string &dev)
{
	std::size_t done = 0;
	while (done < n) {
		ssize_t r = ::pwrite(fd, p + done, n - done, static_cast<off_t>(at + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			throw Error(fmt::format("cannot write the label of {} at byte {}: {}",
						dev, at, r < 0 ? std::strerror(errno) : "short write"),
				    errno_error(r < 0 ? errno : EIO));
		done += static_cast<std::size_t>(r);
	}
}

// Writes @data (kLabelBytes) to both copies of @dev.
void write_both(const std::string &dev, const std::uint8_t *data)
{
	DeviceFd f(dev, O_RDWR, DeviceFd::Direct::if_supported);
	std::uint64_t bytes = dev_bytes(f.get(), dev);
	std::uint64_t backup = backup_offset(bytes);
	if (!backup)
		throw Error(fmt::format("{} is too small for an fxblk member ({} bytes; at least "
					"5 MiB of reserved areas plus data)", dev, bytes),
			    errno_error(ENOSPC));
	AlignedBuf buf(kLabelBytes);
	std::memcpy(buf.p, data, kLabelBytes);
	pwrite_all(f.get(), buf.p, kLabelBytes, kPrimaryOffset, dev);
	pwrite_all(f.get(), buf.p, kLabelBytes, backup, dev);
	if (::fsync(f.get()) < 0)
		throw Error(fmt::format("cannot flush the label of {}: {}", dev,
					std::strerror(errno)),
			    errno_error(errno));
}

// Hex digits of @s (separators ' ', '-', ':' skipped) into @out; false if
// the count does not match or a character is not hex.
template <std::size_t N>
bool parse_hex(std::string_view s, std::array<std::uint8_t, N> &out)
{
	std::size_t n = 0;
	int half = -1;
	for (char c : s) {
		if (c == ' ' || c == '-' || c == ':')
			continue;
		int v;
		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return false;
		if (half < 0) {
			half = v;
			continue;
		}
		if (n == N)
			return false;
		out[n++] = static_cast<std::uint8_t>(half << 4 | v);
		half = -1;
	}
	return n == N && half < 0;
}

}  // namespace

std::uint64_t backup_offset(std::uint64_t member_bytes)
{
	if (member_bytes < kHeadReserveBytes + kTailReserveBytes)
		return 0;
	return (member_bytes - kLabelBytes) / kAlign * kAlign;
}

std::string MemberId::describe() const
{
	std::string s;
	if (!subsys_nqn.empty() || nsid)
		s = fmt::format("nsid {} of {}", nsid, subsys_nqn.empty() ? "?" : subsys_nqn);
	std::string id;
	if (!all_zero(nguid))
		id = "nguid " + hex(nguid);
	else if (!all_zero(uuid))
		id = "uuid " + uuid_to_string(uuid);
	else if (!all_zero(eui64))
		id = "eui64 " + hex(eui64);
	if (s.empty() && id.empty())
		return "unknown device (no NVMe identity)";
	if (s.empty())
		return id;
	return id.empty() ? s : s + " (" + id + ")";
}

std::string same_namespace(const MemberId &a, const MemberId &b)
{
	if (!all_zero(a.nguid) && a.nguid == b.nguid)
		return "the same NGUID " + hex(a.nguid);
	if (!all_zero(a.uuid) && a.uuid == b.uuid)
		return "the same UUID " + uuid_to_string(a.uuid);
	if (!all_zero(a.eui64) && a.eui64 == b.eui64)
		return "the same EUI-64 " + hex(a.eui64);
	if (!a.empty() && a == b)
		return "the same identity (" + a.describe() + ")";
	return "";
}

std::string name_problem(std::string_view name)
{
	if (name.empty())
		return "volume name is empty";
	if (name.size() > FXBLK_NAME_MAX - 1)
		return fmt::format("volume name is {} characters, at most {}", name.size(),
				   FXBLK_NAME_MAX - 1);
	if (name.find_first_not_of(FXBLK_NAME_CHARS) != std::string_view::npos)
		return "volume name may contain only [A-Za-z0-9._-]";
	if (name == "." || name == "..")
		return fmt::format("volume name \"{}\" is not allowed", name);
	return "";
}

std::string validate(const Label &l)
{
	if (auto p = name_problem(l.volume_name); !p.empty())
		return p;
	if (l.member_count == 0 || l.member_count > FXBLK_MAX_MEMBERS)
		return fmt::format("member count {} out of range 1..{}", l.member_count,
				   FXBLK_MAX_MEMBERS);
	if (l.member_index >= l.member_count)
		return fmt::format("member index {} not below member count {}", l.member_index,
				   l.member_count);
	if (l.members.size() != l.member_count)
		return fmt::format("{} member identities for member count {}", l.members.size(),
				   l.member_count);
	if (!is_pow2(l.chunk_sectors) || l.chunk_sectors < FXBLK_CHUNK_MIN_SECTORS ||
	    l.chunk_sectors > FXBLK_CHUNK_MAX_SECTORS)
		return fmt::format("chunk size {} sectors is not a power of two in {}..{}",
				   l.chunk_sectors, FXBLK_CHUNK_MIN_SECTORS,
				   FXBLK_CHUNK_MAX_SECTORS);
	if (l.data_offset_sectors < FXBLK_RESERVED_HEAD_SECTORS)
		return fmt::format("data offset {} sectors inside the reserved head ({} sectors)",
				   l.data_offset_sectors, FXBLK_RESERVED_HEAD_SECTORS);
	if (l.data_sectors == 0 || l.data_sectors % l.chunk_sectors)
		return fmt::format("data size {} sectors is not a positive multiple of the chunk "
				   "size {}", l.data_sectors, l.chunk_sectors);
	// Data end in bytes must not overflow (the member size is checked
	// against it by whoever knows the member).
	if (l.data_offset_sectors > (UINT64_MAX >> 9) - FXBLK_RESERVED_TAIL_SECTORS ||
	    l.data_sectors > (UINT64_MAX >> 9) - FXBLK_RESERVED_TAIL_SECTORS -
				     l.data_offset_sectors)
		return fmt::format("data area {}+{} sectors overflows", l.data_offset_sectors,
				   l.data_sectors);
	if (all_zero(l.volume_uuid))
		return "volume UUID is all zeros";
	if (l.owner_nqn.size() >= kNqnBytes || l.owner_nqn.find('\0') != std::string::npos)
		return fmt::format("owner host NQN longer than {} characters", kNqnBytes - 1);
	for (std::size_t i = 0; i < l.members.size(); i++)
		if (l.members[i].subsys_nqn.size() >= kNqnBytes ||
		    l.members[i].subsys_nqn.find('\0') != std::string::npos)
			return fmt::format("member {}: subsystem NQN longer than {} characters", i,
					   kNqnBytes - 1);
	// A volume striped over one namespace twice overwrites itself.
	for (std::size_t i = 0; i < l.members.size(); i++)
		for (std::size_t j = i + 1; j < l.members.size(); j++)
			if (auto why = same_namespace(l.members[i], l.members[j]); !why.empty())
				return fmt::format("members {} and {} are two paths to one namespace: "
						   "{} (member {}: {}; member {}: {}); re-create the volume over "
						   "distinct namespaces", i, j, why, i,
						   l.members[i].describe(), j, l.members[j].describe());
	return "";
}

std::vector<std::uint8_t> encode(const Label &l)
{
	if (auto why = validate(l); !why.empty())
		throw std::invalid_argument("invalid fxblk label: " + why);
	std::vector<std::uint8_t> b(kLabelBytes, 0);
	std::uint8_t *p = b.data();
	std::copy(kMagic.begin(), kMagic.end(), p + off::magic);
	put32(p + off::version, l.format_version());
	put32(p + off::header_bytes, kHeaderBytes);
	put32(p + off::label_bytes, kLabelBytes);
	std::copy(l.volume_uuid.begin(), l.volume_uuid.end(), p + off::volume_uuid);
	std::memcpy(p + off::volume_name, l.volume_name.data(), l.volume_name.size());
	put32(p + off::member_index, l.member_index);
	put32(p + off::member_count, l.member_count);
	put32(p + off::chunk_sectors, l.chunk_sectors);
	put32(p + off::entry_bytes, kMemberEntryBytes);
	put64(p + off::data_offset, l.data_offset_sectors);
	put64(p + off::data_sectors, l.data_sectors);
	put64(p + off::generation, l.generation);
	put64(p + off::created, l.created_unix);
	put32(p + off::members_offset, kHeaderBytes);
	put32(p + off::flags, 0);
	std::memcpy(p + off::owner, l.owner_nqn.data(), l.owner_nqn.size());
	for (std::size_t i = 0; i < l.members.size(); i++) {
		const MemberId &m = l.members[i];
		std::uint8_t *e = p + kHeaderBytes + i * kMemberEntryBytes;
		std::copy(m.nguid.begin(), m.nguid.end(), e + off::e_nguid);
		std::copy(m.uuid.begin(), m.uuid.end(), e + off::e_uuid);
		std::copy(m.eui64.begin(), m.eui64.end(), e + off::e_eui64);
		put32(e + off::e_nsid, m.nsid);
		std::memcpy(e + off::e_nqn, m.subsys_nqn.data(), m.subsys_nqn.size());
	}
	put32(p + off::crc, label_crc(p));
	return b;
}

Decoded decode(std::span<const std::uint8_t> bytes)
{
	Decoded d;
	auto fail = [&d](std::string why) {
		d.reason = std::move(why);
		return d;
	};
	if (bytes.size() < kMagic.size() ||
	    !std::equal(kMagic.begin(), kMagic.end(), bytes.begin())) {
		d.blank = true;
		return fail("no fxblk label (magic not found)");
	}
	if (bytes.size() < kLabelBytes)
		return fail(fmt::format("truncated label: {} bytes, need {}", bytes.size(),
					kLabelBytes));
	const std::uint8_t *p = bytes.data();
	std::uint32_t version = get32(p + off::version);
	if (version != kFormatVersion && version != kFormatVersionNoOwner)
		return fail(fmt::format("label format version {} not supported (this fxctl "
					"reads versions {} and {}); upgrade fxctl",
					version, kFormatVersionNoOwner, kFormatVersion));
	if (get32(p + off::header_bytes) != kHeaderBytes)
		return fail(fmt::format("header length {} is not {} for version 1",
					get32(p + off::header_bytes), kHeaderBytes));
	if (get32(p + off::label_bytes) != kLabelBytes)
		return fail(fmt::format("label length {} is not {} for version 1",
					get32(p + off::label_bytes), kLabelBytes));
	std::uint32_t want = label_crc(p), have = get32(p + off::crc);
	if (want != have)
		return fail(fmt::format("bad crc32c: stored {:08x}, computed {:08x}", have, want));
	if (get32(p + off::entry_bytes) != kMemberEntryBytes)
		return fail(fmt::format("member entry length {} is not {} for version 1",
					get32(p + off::entry_bytes), kMemberEntryBytes));
	if (get32(p + off::members_offset) != kHeaderBytes)
		return fail(fmt::format("member table at byte {}, not {} for version 1",
					get32(p + off::members_offset), kHeaderBytes));
	if (std::uint32_t f = get32(p + off::flags); f)
		return fail(fmt::format("unknown flags {:#x}", f));
	// Reserved space is zero (a later use means a new version).
	if (auto nz = nonzero(p, version == 1 ? off::reserved : off::reserved_v2, kHeaderBytes))
		return fail(fmt::format("reserved header byte {} not zero", *nz));

	Label l;
	std::string why;
	if (version == kFormatVersion) {
		l.owner_nqn = cstr(p + off::owner, kNqnBytes, why);
		if (!why.empty())
			return fail("owner host NQN " + why);
		// encode writes version 1 for a label without an owner
		if (l.owner_nqn.empty())
			return fail("version 2 label without an owner host NQN");
	}
	std::copy_n(p + off::volume_uuid, 16, l.volume_uuid.begin());
	l.volume_name = cstr(p + off::volume_name, FXBLK_NAME_MAX, why);
	if (!why.empty())
		return fail("volume name " + why);
	l.member_index = get32(p + off::member_index);
	l.member_count = get32(p + off::member_count);
	l.chunk_sectors = get32(p + off::chunk_sectors);
	l.data_offset_sectors = get64(p + off::data_offset);
	l.data_sectors = get64(p + off::data_sectors);
	l.generation = get64(p + off::generation);
	l.created_unix = get64(p + off::created);
	// Count first: it bounds the member table read below.
	if (l.member_count == 0 || l.member_count > FXBLK_MAX_MEMBERS)
		return fail(fmt::format("member count {} out of range 1..{}", l.member_count,
					FXBLK_MAX_MEMBERS));
	for (std::uint32_t i = 0; i < l.member_count; i++) {
		const std::uint8_t *e = p + kHeaderBytes + std::size_t(i) * kMemberEntryBytes;
		MemberId m;
		std::copy_n(e + off::e_nguid, 16, m.nguid.begin());
		std::copy_n(e + off::e_uuid, 16, m.uuid.begin());
		std::copy_n(e + off::e_eui64, 8, m.eui64.begin());
		m.nsid = get32(e + off::e_nsid);
		if (get32(e + off::e_reserved))
			return fail(fmt::format("member {}: reserved field not zero", i));
		m.subsys_nqn = cstr(e + off::e_nqn, kNqnBytes, why);
		if (!why.empty())
			return fail(fmt::format("member {}: subsystem NQN {}", i, why));
		l.members.push_back(std::move(m));
	}
	if (auto nz = nonzero(p, kHeaderBytes + std::size_t(l.member_count) * kMemberEntryBytes,
			      kLabelBytes))
		return fail(fmt::format("byte {} after the member table not zero", *nz));
	if (auto why = validate(l); !why.empty())
		return fail(why);
	d.label = std::move(l);
	return d;
}

MemberLabel read_member(const std::string &devnode)
{
	DeviceFd f(devnode, O_RDONLY, DeviceFd::Direct::if_supported);
	std::uint64_t bytes = dev_bytes(f.get(), devnode);
	AlignedBuf buf(kLabelBytes);
	MemberLabel ml;

	// One copy at byte @at (0: the device is too small to hold it).
	auto read_copy = [&](std::uint64_t at, const char *what, std::string &reason,
			     bool &blank) -> std::optional<Label> {
		if (!at || at + kLabelBytes > bytes) {
			reason = fmt::format("device too small ({} bytes) for a {} label", bytes,
					     what);
			blank = true;
			return std::nullopt;
		}
		pread_all(f.get(), buf.p, kLabelBytes, at, devnode);
		Decoded d = decode({buf.p, kLabelBytes});
		reason = std::move(d.reason);
		blank = d.blank;
		return std::move(d.label);
	};
	std::optional<Label> primary =
		read_copy(kPrimaryOffset, "primary", ml.primary_reason, ml.primary_blank);
	std::optional<Label> backup =
		read_copy(backup_offset(bytes), "backup", ml.backup_reason, ml.backup_blank);
	if (primary && backup && backup->generation > primary->generation) {
		ml.label = std::move(backup);
		ml.from_backup = true;
	} else if (primary) {
		ml.label = std::move(primary);
	} else if (backup) {
		ml.label = std::move(backup);
		ml.from_backup = true;
	}
	return ml;
}

void write_member(const std::string &devnode, const Label &l)
{
	std::vector<std::uint8_t> b;
	try {
		b = encode(l);
	} catch (const std::invalid_argument &e) {
		throw Error(fmt::format("{}: {}", devnode, e.what()), errno_error(EINVAL));
	}
	write_both(devnode, b.data());
}

void wipe_member(const std::string &devnode)
{
	DeviceFd f(devnode, O_RDWR, DeviceFd::Direct::if_supported);
	std::uint64_t bytes = dev_bytes(f.get(), devnode);
	AlignedBuf buf(kLabelBytes);
	bool wrote = false;
	for (std::uint64_t at : {kPrimaryOffset, backup_offset(bytes)}) {
		if (!at || at + kLabelBytes > bytes)
			continue;
		pread_all(f.get(), buf.p, kLabelBytes, at, devnode);
		if (!std::equal(kMagic.begin(), kMagic.end(), buf.p))
			continue;
		std::memset(buf.p, 0, kLabelBytes);
		pwrite_all(f.get(), buf.p, kLabelBytes, at, devnode);
		wrote = true;
	}
	if (wrote && ::fsync(f.get()) < 0)
		throw Error(fmt::format("cannot flush {} after wiping its label: {}", devnode,
					std::strerror(errno)),
			    errno_error(errno));
}

MemberId identity_of(const std::string &devname, const std::string &sysfs)
{
	std::string name = devname;
	struct stat st;
	if (name.find('/') != std::string::npos) {
		// A path: the kernel name through its dev_t (follows
		// /dev/disk/by-* links too).
		if (stat(name.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
			std::error_code ec;
			auto real = std::filesystem::canonical(
				fmt::format("{}/dev/block/{}:{}", sysfs, major(st.st_rdev),
					    minor(st.st_rdev)),
				ec);
			name = ec ? name.substr(name.rfind('/') + 1) : real.filename().string();
		} else {
			name = name.substr(name.rfind('/') + 1);
		}
	}
	std::string dir = sysfs + "/block/" + name;
	MemberId id;
	if (auto s = read_attr(dir + "/nguid"))
		parse_hex(*s, id.nguid) || (id.nguid = {}, true);
	if (auto s = read_attr(dir + "/uuid"))
		parse_hex(*s, id.uuid) || (id.uuid = {}, true);
	if (auto s = read_attr(dir + "/eui"))
		parse_hex(*s, id.eui64) || (id.eui64 = {}, true);
	if (auto s = read_attr(dir + "/nsid")) {
		char *end = nullptr;
		unsigned long v = std::strtoul(s->c_str(), &end, 10);
		if (end && !*end && v <= UINT32_MAX)
			id.nsid = static_cast<std::uint32_t>(v);
	}
	if (auto s = read_attr(dir + "/device/subsysnqn"); s && s->size() < kNqnBytes)
		id.subsys_nqn = *s;
	return id;
}

std::string uuid_to_string(const std::array<std::uint8_t, 16> &u)
{
	std::string h = hex(u);
	return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" +
	       h.substr(16, 4) + "-" + h.substr(20);
}

std::optional<std::array<std::uint8_t, 16>> uuid_from_string(std::string_view s)
{
	std::array<std::uint8_t, 16> u{};
	if (s.size() == 36) {
		for (std::size_t i : {8, 13, 18, 23})
			if (s[i] != '-')
				return std::nullopt;
	} else if (s.size() != 32) {
		return std::nullopt;
	}
	if (s.find_first_of(" :") != std::string_view::npos || !parse_hex(s, u))
		return std::nullopt;
	return u;
}

// A volume UUID needs to be unique, not secret. getrandom() without flags
// blocks until the kernel's CRNG is seeded, which took 6-12 s in the lab's
// VMs and can take longer in an initramfs at boot; when it is not seeded
// yet, the kernel's own /proc/sys/kernel/random/uuid answers at once.
std::array<std::uint8_t, 16> random_uuid()
{
	std::array<std::uint8_t, 16> u{};
	std::size_t got = 0;
	while (got < u.size()) {
		ssize_t r = getrandom(u.data() + got, u.size() - got, GRND_NONBLOCK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			if (auto k = uuid_from_string(read_line("/proc/sys/kernel/random/uuid")))
				return *k;
			throw Error("cannot generate a volume UUID: the kernel's random pool is not "
				    "ready and /proc/sys/kernel/random/uuid is unreadable; retry "
				    "in a few seconds",
				    errno_error(EAGAIN));
		}
		if (r < 0)
			throw Error(fmt::format("getrandom: {}", std::strerror(errno)),
				    errno_error(errno));
		got += static_cast<std::size_t>(r);
	}
	u[6] = static_cast<std::uint8_t>((u[6] & 0x0f) | 0x40);  // version 4
	u[8] = static_cast<std::uint8_t>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
	return u;
}

}  // namespace fxctl::label
