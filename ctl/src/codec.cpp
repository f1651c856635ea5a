#include "codec.hpp"

#include "error.hpp"

#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>

namespace fxctl {
namespace {

[[noreturn]] void malformed(const std::string &what)
{
	throw Error(fmt::format("malformed reply from the fxblk module: {}; "
				"fxctl and fxblk.ko may be from different releases "
				"(compare 'fxctl version')",
				what));
}

void check(int rc, const char *what)
{
	if (rc < 0)
		throw Error(fmt::format("cannot build netlink message ({}): {}", what,
					nl_geterror(rc)),
			    nl_error(rc));
}

// Userspace policies: types and minimum sizes only, so a newer module's
// extra attributes are ignored rather than rejected.
nla_policy attr_policy[FXBLK_ATTR_MAX + 1] = {};
nla_policy member_policy[FXBLK_MEMBER_ATTR_MAX + 1] = {};
nla_policy stat_policy[FXBLK_STAT_ATTR_MAX + 1] = {};
nla_policy direct_policy[FXBLK_DIRECT_ATTR_MAX + 1] = {};

struct policy_init {
	policy_init()
	{
		attr_policy[FXBLK_ATTR_MOD_VERSION] = {NLA_STRING, 0, 0};
		attr_policy[FXBLK_ATTR_API_VERSION] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_FEATURES] = {NLA_U64, 0, 0};
		attr_policy[FXBLK_ATTR_INDEX] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_NAME] = {NLA_STRING, 0, FXBLK_NAME_MAX};
		attr_policy[FXBLK_ATTR_DISK_NAME] = {NLA_STRING, 0, FXBLK_DISK_NAME_MAX};
		attr_policy[FXBLK_ATTR_CHUNK_SECTORS] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_CAPACITY] = {NLA_U64, 0, 0};
		attr_policy[FXBLK_ATTR_LOGICAL_BLOCK_SIZE] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_OPEN_COUNT] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_MEMBERS] = {NLA_NESTED, 0, 0};
		attr_policy[FXBLK_ATTR_MEMBER] = {NLA_NESTED, 0, 0};
		attr_policy[FXBLK_ATTR_EVENT] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_ERRNO] = {NLA_U32, 0, 0};  // s32 on the wire
		attr_policy[FXBLK_ATTR_STATE] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_FLAGS] = {NLA_U64, 0, 0};
		attr_policy[FXBLK_ATTR_FORCE] = {NLA_FLAG, 0, 0};
		attr_policy[FXBLK_ATTR_LIVE_VOLUMES] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_P2PDMA] = {NLA_U32, 0, 0};
		attr_policy[FXBLK_ATTR_DIRECT] = {NLA_NESTED, 0, 0};
		attr_policy[FXBLK_ATTR_UUID] = {NLA_UNSPEC, FXBLK_UUID_LEN, 0};
		member_policy[FXBLK_MEMBER_ATTR_PCI_P2PDMA] = {NLA_U8, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_PEERQ_STATE] = {NLA_U32, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_PEERQ_NIC] = {NLA_STRING, 0, 64};
		for (int a : {FXBLK_DIRECT_ATTR_READ_IOS, FXBLK_DIRECT_ATTR_READ_BYTES,
			      FXBLK_DIRECT_ATTR_WRITE_IOS, FXBLK_DIRECT_ATTR_WRITE_BYTES,
			      FXBLK_DIRECT_ATTR_REFUSED})
			direct_policy[a] = {NLA_U64, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_INDEX] = {NLA_U32, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_MAJOR] = {NLA_U32, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_MINOR] = {NLA_U32, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_DISK_NAME] = {NLA_STRING, 0, FXBLK_DISK_NAME_MAX};
		member_policy[FXBLK_MEMBER_ATTR_DATA_OFFSET] = {NLA_U64, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_DATA_SECTORS] = {NLA_U64, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_STATS_READ] = {NLA_NESTED, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_STATS_WRITE] = {NLA_NESTED, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_STATS_DISCARD] = {NLA_NESTED, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_STATS_FLUSH] = {NLA_NESTED, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_STATE] = {NLA_U32, 0, 0};
		member_policy[FXBLK_MEMBER_ATTR_ERRORS] = {NLA_U64, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_IOS] = {NLA_U64, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_SECTORS] = {NLA_U64, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_ERRORS] = {NLA_U64, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_INFLIGHT] = {NLA_U32, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_LAT_HIST] = {NLA_UNSPEC, 0, 0};
		stat_policy[FXBLK_STAT_ATTR_FUA] = {NLA_U64, 0, 0};
	}
} const policy_init_once;

template <std::size_t N>
void parse_genl(nlmsghdr *nlh, nlattr *(&tb)[N], nla_policy *policy)
{
	int rc = genlmsg_parse(nlh, 0, tb, N - 1, policy);
	if (rc < 0)
		malformed(fmt::format("cannot parse attributes: {}", nl_geterror(rc)));
}

template <std::size_t N>
void parse_nested(nlattr *nest, nlattr *(&tb)[N], nla_policy *policy, const char *what)
{
	int rc = nla_parse_nested(tb, N - 1, nest, policy);
	if (rc < 0)
		malformed(fmt::format("cannot parse {}: {}", what, nl_geterror(rc)));
}

nlattr *need(nlattr *a, const char *what)
{
	if (!a)
		malformed(fmt::format("attribute {} missing", what));
	return a;
}

std::string get_str(nlattr *a)
{
	// nla_get_string() trusts the NUL; bound the copy by the payload.
	const char *p = static_cast<const char *>(nla_data(a));
	return std::string(p, strnlen(p, static_cast<std::size_t>(nla_len(a))));
}

std::uint32_t opt_u32(nlattr *a, std::uint32_t def = 0)
{
	return a ? nla_get_u32(a) : def;
}

std::uint64_t opt_u64(nlattr *a, std::uint64_t def = 0)
{
	return a ? nla_get_u64(a) : def;
}

// Attributes an older module does not send stay unset, never 0: "unknown"
// is not "live" or "no errors".
std::optional<std::uint32_t> maybe_u32(nlattr *a)
{
	return a ? std::optional(nla_get_u32(a)) : std::nullopt;
}

std::optional<std::uint64_t> maybe_u64(nlattr *a)
{
	return a ? std::optional(nla_get_u64(a)) : std::nullopt;
}

// FXBLK_ATTR_UUID: exactly FXBLK_UUID_LEN bytes (the policy checks the
// minimum only).
std::optional<std::array<std::uint8_t, FXBLK_UUID_LEN>> maybe_uuid(nlattr *a)
{
	if (!a)
		return std::nullopt;
	if (nla_len(a) != FXBLK_UUID_LEN)
		malformed(fmt::format("attribute UUID is {} bytes, not {}", nla_len(a),
				      FXBLK_UUID_LEN));
	std::array<std::uint8_t, FXBLK_UUID_LEN> u{};
	std::memcpy(u.data(), nla_data(a), u.size());
	return u;
}

StatCounters decode_stat(nlattr *nest)
{
	nlattr *tb[FXBLK_STAT_ATTR_MAX + 1];
	parse_nested(nest, tb, stat_policy, "member statistics");
	StatCounters s;
	s.ios = opt_u64(tb[FXBLK_STAT_ATTR_IOS]);
	s.sectors = opt_u64(tb[FXBLK_STAT_ATTR_SECTORS]);
	s.errors = opt_u64(tb[FXBLK_STAT_ATTR_ERRORS]);
	s.inflight = opt_u32(tb[FXBLK_STAT_ATTR_INFLIGHT]);
	if (nlattr *h = tb[FXBLK_STAT_ATTR_LAT_HIST]) {
		if (nla_len(h) % static_cast<int>(sizeof(std::uint64_t)))
			malformed("latency histogram length is not a multiple of 8");
		nla_memcpy(s.lat_hist.data(), h, sizeof(s.lat_hist));
	}
	if (tb[FXBLK_STAT_ATTR_FUA])
		s.fua = nla_get_u64(tb[FXBLK_STAT_ATTR_FUA]);
	return s;
}

Member decode_member(nlattr *nest, std::uint32_t position)
{
	nlattr *tb[FXBLK_MEMBER_ATTR_MAX + 1];
	parse_nested(nest, tb, member_policy, "member");
	Member m;
	m.index = opt_u32(tb[FXBLK_MEMBER_ATTR_INDEX], position);
	m.major = nla_get_u32(need(tb[FXBLK_MEMBER_ATTR_MAJOR], "MEMBER_ATTR_MAJOR"));
	m.minor = nla_get_u32(need(tb[FXBLK_MEMBER_ATTR_MINOR], "MEMBER_ATTR_MINOR"));
	if (tb[FXBLK_MEMBER_ATTR_DISK_NAME])
		m.disk = get_str(tb[FXBLK_MEMBER_ATTR_DISK_NAME]);
	m.data_offset = opt_u64(tb[FXBLK_MEMBER_ATTR_DATA_OFFSET]);
	m.data_sectors = opt_u64(tb[FXBLK_MEMBER_ATTR_DATA_SECTORS]);
	m.state = maybe_u32(tb[FXBLK_MEMBER_ATTR_STATE]);
	m.errors = maybe_u64(tb[FXBLK_MEMBER_ATTR_ERRORS]);
	if (tb[FXBLK_MEMBER_ATTR_PCI_P2PDMA])
		m.pci_p2pdma = nla_get_u8(tb[FXBLK_MEMBER_ATTR_PCI_P2PDMA]) != 0;
	m.peerq_state = maybe_u32(tb[FXBLK_MEMBER_ATTR_PEERQ_STATE]);
	if (tb[FXBLK_MEMBER_ATTR_PEERQ_NIC])
		m.peerq_nic = get_str(tb[FXBLK_MEMBER_ATTR_PEERQ_NIC]);
	if (tb[FXBLK_MEMBER_ATTR_STATS_READ] || tb[FXBLK_MEMBER_ATTR_STATS_WRITE] ||
	    tb[FXBLK_MEMBER_ATTR_STATS_DISCARD] || tb[FXBLK_MEMBER_ATTR_STATS_FLUSH]) {
		MemberStats st;
		if (tb[FXBLK_MEMBER_ATTR_STATS_READ])
			st.read = decode_stat(tb[FXBLK_MEMBER_ATTR_STATS_READ]);
		if (tb[FXBLK_MEMBER_ATTR_STATS_WRITE])
			st.write = decode_stat(tb[FXBLK_MEMBER_ATTR_STATS_WRITE]);
		if (tb[FXBLK_MEMBER_ATTR_STATS_DISCARD])
			st.discard = decode_stat(tb[FXBLK_MEMBER_ATTR_STATS_DISCARD]);
		if (tb[FXBLK_MEMBER_ATTR_STATS_FLUSH])
			st.flush = decode_stat(tb[FXBLK_MEMBER_ATTR_STATS_FLUSH]);
		m.stats = st;
	}
	return m;
}

DirectCounters decode_direct(nlattr *nest)
{
	nlattr *tb[FXBLK_DIRECT_ATTR_MAX + 1];
	parse_nested(nest, tb, direct_policy, "direct-path counters");
	DirectCounters d;
	d.read_ios = opt_u64(tb[FXBLK_DIRECT_ATTR_READ_IOS]);
	d.read_bytes = opt_u64(tb[FXBLK_DIRECT_ATTR_READ_BYTES]);
	d.write_ios = opt_u64(tb[FXBLK_DIRECT_ATTR_WRITE_IOS]);
	d.write_bytes = opt_u64(tb[FXBLK_DIRECT_ATTR_WRITE_BYTES]);
	d.refused = opt_u64(tb[FXBLK_DIRECT_ATTR_REFUSED]);
	return d;
}

nlattr *nest_start(nl_msg *msg, int type)
{
	// Strict kernel validation wants NLA_F_NESTED on every nest.
	nlattr *n = nla_nest_start(msg, type | NLA_F_NESTED);
	if (!n)
		check(-NLE_NOMEM, "nest");
	return n;
}

void put_stat(nl_msg *msg, int type, const StatCounters &s)
{
	nlattr *n = nest_start(msg, type);
	check(nla_put_u64(msg, FXBLK_STAT_ATTR_IOS, s.ios), "ios");
	check(nla_put_u64(msg, FXBLK_STAT_ATTR_SECTORS, s.sectors), "sectors");
	check(nla_put_u64(msg, FXBLK_STAT_ATTR_ERRORS, s.errors), "errors");
	check(nla_put_u32(msg, FXBLK_STAT_ATTR_INFLIGHT, s.inflight), "inflight");
	check(nla_put(msg, FXBLK_STAT_ATTR_LAT_HIST, sizeof(s.lat_hist), s.lat_hist.data()),
	      "lat_hist");
	if (s.fua)
		check(nla_put_u64(msg, FXBLK_STAT_ATTR_FUA, *s.fua), "fua");
	nla_nest_end(msg, n);
}

void put_member(nl_msg *msg, const Member &m)
{
	nlattr *n = nest_start(msg, FXBLK_ATTR_MEMBER);
	check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_INDEX, m.index), "index");
	check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_MAJOR, m.major), "major");
	check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_MINOR, m.minor), "minor");
	check(nla_put_string(msg, FXBLK_MEMBER_ATTR_DISK_NAME, m.disk.c_str()), "disk");
	check(nla_put_u64(msg, FXBLK_MEMBER_ATTR_DATA_OFFSET, m.data_offset), "offset");
	check(nla_put_u64(msg, FXBLK_MEMBER_ATTR_DATA_SECTORS, m.data_sectors), "sectors");
	if (m.state)
		check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_STATE, *m.state), "state");
	if (m.errors)
		check(nla_put_u64(msg, FXBLK_MEMBER_ATTR_ERRORS, *m.errors), "errors");
	if (m.pci_p2pdma)
		check(nla_put_u8(msg, FXBLK_MEMBER_ATTR_PCI_P2PDMA, *m.pci_p2pdma), "pci_p2pdma");
	if (m.peerq_state)
		check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_PEERQ_STATE, *m.peerq_state), "peerq");
	if (!m.peerq_nic.empty())
		check(nla_put_string(msg, FXBLK_MEMBER_ATTR_PEERQ_NIC, m.peerq_nic.c_str()), "nic");
	if (m.stats) {
		put_stat(msg, FXBLK_MEMBER_ATTR_STATS_READ, m.stats->read);
		put_stat(msg, FXBLK_MEMBER_ATTR_STATS_WRITE, m.stats->write);
		put_stat(msg, FXBLK_MEMBER_ATTR_STATS_DISCARD, m.stats->discard);
		put_stat(msg, FXBLK_MEMBER_ATTR_STATS_FLUSH, m.stats->flush);
	}
	nla_nest_end(msg, n);
}

}  // namespace

std::string VolumeRef::display() const
{
	return index ? fmt::format("fx{}", *index) : name;
}

VolumeRef VolumeRef::parse(const std::string &arg)
{
	std::string_view s = arg;
	if (s.starts_with("/dev/fx/"))
		return {std::nullopt, std::string(s.substr(8))};
	std::string_view t = s.starts_with("/dev/") ? s.substr(5) : s;
	if (t.starts_with("fx") && t.size() > 2) {
		std::uint32_t idx = 0;
		auto digits = t.substr(2);
		auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), idx);
		if (ec == std::errc() && p == digits.data() + digits.size())
			return {idx, {}};
	}
	return {std::nullopt, arg};
}

msg_ptr new_genl_msg(int family, std::uint8_t cmd, int flags, std::size_t size)
{
	msg_ptr msg(size ? nlmsg_alloc_size(size) : nlmsg_alloc());
	if (!msg)
		throw Error("out of memory allocating a netlink message", nl_error(NLE_NOMEM));
	if (!genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
			 FXBLK_GENL_VERSION))
		check(-NLE_NOMEM, "genl header");
	return msg;
}

void put_volume_ref(nl_msg *msg, const VolumeRef &ref)
{
	if (ref.index)
		check(nla_put_u32(msg, FXBLK_ATTR_INDEX, *ref.index), "index");
	if (!ref.index || !ref.name.empty())
		check(nla_put_string(msg, FXBLK_ATTR_NAME, ref.name.c_str()), "name");
}

void put_destroy(nl_msg *msg, const VolumeRef &ref, bool force)
{
	put_volume_ref(msg, ref);
	if (force)
		check(nla_put_flag(msg, FXBLK_ATTR_FORCE), "force");
}

void put_create(nl_msg *msg, const CreateRequest &req)
{
	check(nla_put_string(msg, FXBLK_ATTR_NAME, req.name.c_str()), "name");
	check(nla_put_u32(msg, FXBLK_ATTR_CHUNK_SECTORS, req.chunk_sectors), "chunk");
	nlattr *members = nest_start(msg, FXBLK_ATTR_MEMBERS);
	for (const auto &m : req.members) {
		nlattr *n = nest_start(msg, FXBLK_ATTR_MEMBER);
		check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_MAJOR, m.major), "major");
		check(nla_put_u32(msg, FXBLK_MEMBER_ATTR_MINOR, m.minor), "minor");
		check(nla_put_u64(msg, FXBLK_MEMBER_ATTR_DATA_OFFSET, m.data_offset), "offset");
		if (m.data_sectors)
			check(nla_put_u64(msg, FXBLK_MEMBER_ATTR_DATA_SECTORS, m.data_sectors),
			      "data sectors");
		nla_nest_end(msg, n);
	}
	nla_nest_end(msg, members);
	if (req.uuid)
		check(nla_put(msg, FXBLK_ATTR_UUID, FXBLK_UUID_LEN, req.uuid->data()), "uuid");
}

ModuleStatus decode_status(nlmsghdr *nlh)
{
	nlattr *tb[FXBLK_ATTR_MAX + 1];
	parse_genl(nlh, tb, attr_policy);
	ModuleStatus st;
	st.version = get_str(need(tb[FXBLK_ATTR_MOD_VERSION], "MOD_VERSION"));
	st.api_version = nla_get_u32(need(tb[FXBLK_ATTR_API_VERSION], "API_VERSION"));
	st.features = opt_u64(tb[FXBLK_ATTR_FEATURES]);
	st.live_volumes = maybe_u32(tb[FXBLK_ATTR_LIVE_VOLUMES]);
	return st;
}

Volume decode_volume(nlmsghdr *nlh)
{
	nlattr *tb[FXBLK_ATTR_MAX + 1];
	parse_genl(nlh, tb, attr_policy);
	Volume v;
	v.index = nla_get_u32(need(tb[FXBLK_ATTR_INDEX], "INDEX"));
	v.name = get_str(need(tb[FXBLK_ATTR_NAME], "NAME"));
	v.disk = tb[FXBLK_ATTR_DISK_NAME] ? get_str(tb[FXBLK_ATTR_DISK_NAME])
					  : fmt::format("fx{}", v.index);
	v.chunk_sectors = nla_get_u32(need(tb[FXBLK_ATTR_CHUNK_SECTORS], "CHUNK_SECTORS"));
	v.capacity = nla_get_u64(need(tb[FXBLK_ATTR_CAPACITY], "CAPACITY"));
	v.logical_block_size = opt_u32(tb[FXBLK_ATTR_LOGICAL_BLOCK_SIZE], 512);
	v.open_count = opt_u32(tb[FXBLK_ATTR_OPEN_COUNT]);
	v.state = maybe_u32(tb[FXBLK_ATTR_STATE]);
	v.flags = maybe_u64(tb[FXBLK_ATTR_FLAGS]);
	v.p2pdma = maybe_u32(tb[FXBLK_ATTR_P2PDMA]);
	if (tb[FXBLK_ATTR_DIRECT])
		v.direct = decode_direct(tb[FXBLK_ATTR_DIRECT]);
	v.uuid = maybe_uuid(tb[FXBLK_ATTR_UUID]);
	if (nlattr *ms = tb[FXBLK_ATTR_MEMBERS]) {
		nlattr *pos;
		int rem;
		nla_for_each_nested(pos, ms, rem)
			v.members.push_back(decode_member(pos, static_cast<std::uint32_t>(v.members.size())));
		// Every member contributes DATA_SECTORS to the capacity. A
		// mismatch means a lost member, e.g. a nest longer than
		// nla_len's 16 bits can describe.
		std::uint64_t per = v.members.empty() ? 0 : v.members.front().data_sectors;
		if (per && per * v.members.size() != v.capacity)
			malformed(fmt::format("{} members of {} sectors do not add up to the "
					      "capacity of {} sectors",
					      v.members.size(), per, v.capacity));
	}
	return v;
}

void put_status(nl_msg *msg, const ModuleStatus &st)
{
	check(nla_put_string(msg, FXBLK_ATTR_MOD_VERSION, st.version.c_str()), "version");
	check(nla_put_u32(msg, FXBLK_ATTR_API_VERSION, st.api_version), "api");
	check(nla_put_u64(msg, FXBLK_ATTR_FEATURES, st.features), "features");
	if (st.live_volumes)
		check(nla_put_u32(msg, FXBLK_ATTR_LIVE_VOLUMES, *st.live_volumes), "live");
}

void put_volume(nl_msg *msg, const Volume &v)
{
	check(nla_put_u32(msg, FXBLK_ATTR_INDEX, v.index), "index");
	check(nla_put_string(msg, FXBLK_ATTR_NAME, v.name.c_str()), "name");
	check(nla_put_string(msg, FXBLK_ATTR_DISK_NAME, v.disk.c_str()), "disk");
	check(nla_put_u32(msg, FXBLK_ATTR_CHUNK_SECTORS, v.chunk_sectors), "chunk");
	check(nla_put_u64(msg, FXBLK_ATTR_CAPACITY, v.capacity), "capacity");
	check(nla_put_u32(msg, FXBLK_ATTR_LOGICAL_BLOCK_SIZE, v.logical_block_size), "lbs");
	check(nla_put_u32(msg, FXBLK_ATTR_OPEN_COUNT, v.open_count), "open");
	if (v.state)
		check(nla_put_u32(msg, FXBLK_ATTR_STATE, *v.state), "state");
	if (v.flags)
		check(nla_put_u64(msg, FXBLK_ATTR_FLAGS, *v.flags), "flags");
	if (v.p2pdma)
		check(nla_put_u32(msg, FXBLK_ATTR_P2PDMA, *v.p2pdma), "p2pdma");
	if (v.direct) {
		nlattr *d = nest_start(msg, FXBLK_ATTR_DIRECT);
		check(nla_put_u64(msg, FXBLK_DIRECT_ATTR_READ_IOS, v.direct->read_ios), "direct");
		check(nla_put_u64(msg, FXBLK_DIRECT_ATTR_READ_BYTES, v.direct->read_bytes), "direct");
		check(nla_put_u64(msg, FXBLK_DIRECT_ATTR_WRITE_IOS, v.direct->write_ios), "direct");
		check(nla_put_u64(msg, FXBLK_DIRECT_ATTR_WRITE_BYTES, v.direct->write_bytes),
		      "direct");
		check(nla_put_u64(msg, FXBLK_DIRECT_ATTR_REFUSED, v.direct->refused), "direct");
		nla_nest_end(msg, d);
	}
	if (v.uuid)
		check(nla_put(msg, FXBLK_ATTR_UUID, FXBLK_UUID_LEN, v.uuid->data()), "uuid");
	nlattr *members = nest_start(msg, FXBLK_ATTR_MEMBERS);
	for (const auto &m : v.members)
		put_member(msg, m);
	nla_nest_end(msg, members);
}

Event decode_event(nlmsghdr *nlh)
{
	nlattr *tb[FXBLK_ATTR_MAX + 1];
	parse_genl(nlh, tb, attr_policy);
	Event ev;
	ev.type = nla_get_u32(need(tb[FXBLK_ATTR_EVENT], "EVENT"));
	ev.index = maybe_u32(tb[FXBLK_ATTR_INDEX]);
	if (tb[FXBLK_ATTR_NAME])
		ev.name = get_str(tb[FXBLK_ATTR_NAME]);
	if (tb[FXBLK_ATTR_DISK_NAME])
		ev.disk = get_str(tb[FXBLK_ATTR_DISK_NAME]);
	if (tb[FXBLK_ATTR_ERRNO])
		ev.err = static_cast<std::int32_t>(nla_get_u32(tb[FXBLK_ATTR_ERRNO]));
	if (nlattr *ms = tb[FXBLK_ATTR_MEMBERS]) {
		nlattr *pos;
		int rem;
		nla_for_each_nested(pos, ms, rem) {
			if (ev.member)
				malformed("event names more than one member");
			ev.member = decode_member(pos, 0);
		}
	}
	return ev;
}

void put_event(nl_msg *msg, const Event &ev)
{
	check(nla_put_u32(msg, FXBLK_ATTR_EVENT, ev.type), "event");
	if (ev.index)
		check(nla_put_u32(msg, FXBLK_ATTR_INDEX, *ev.index), "index");
	check(nla_put_string(msg, FXBLK_ATTR_NAME, ev.name.c_str()), "name");
	check(nla_put_string(msg, FXBLK_ATTR_DISK_NAME, ev.disk.c_str()), "disk");
	if (ev.err)
		check(nla_put_s32(msg, FXBLK_ATTR_ERRNO, *ev.err), "errno");
	if (ev.member) {
		nlattr *members = nest_start(msg, FXBLK_ATTR_MEMBERS);
		put_member(msg, *ev.member);
		nla_nest_end(msg, members);
	}
}

CreateRequest decode_create(nlmsghdr *nlh)
{
	nlattr *tb[FXBLK_ATTR_MAX + 1];
	parse_genl(nlh, tb, attr_policy);
	CreateRequest req;
	req.name = get_str(need(tb[FXBLK_ATTR_NAME], "NAME"));
	req.chunk_sectors = nla_get_u32(need(tb[FXBLK_ATTR_CHUNK_SECTORS], "CHUNK_SECTORS"));
	nlattr *pos;
	int rem;
	nla_for_each_nested(pos, need(tb[FXBLK_ATTR_MEMBERS], "MEMBERS"), rem) {
		if (nla_type(pos) != FXBLK_ATTR_MEMBER)
			malformed("MEMBERS holds something other than MEMBER");
		nlattr *mt[FXBLK_MEMBER_ATTR_MAX + 1];
		parse_nested(pos, mt, member_policy, "member");
		MemberSpec m;
		m.major = nla_get_u32(need(mt[FXBLK_MEMBER_ATTR_MAJOR], "MAJOR"));
		m.minor = nla_get_u32(need(mt[FXBLK_MEMBER_ATTR_MINOR], "MINOR"));
		m.data_offset = nla_get_u64(need(mt[FXBLK_MEMBER_ATTR_DATA_OFFSET], "DATA_OFFSET"));
		m.data_sectors = opt_u64(mt[FXBLK_MEMBER_ATTR_DATA_SECTORS]);
		req.members.push_back(m);
	}
	req.uuid = maybe_uuid(tb[FXBLK_ATTR_UUID]);
	return req;
}

}  // namespace fxctl
