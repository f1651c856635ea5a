// fxblk-fuzz: send random and mutated generic netlink messages to family
// "fxblk" over a raw AF_NETLINK socket and check that every answer the kernel
// gives is well formed. Run inside the lab VM, as root.
//
// What it sends, per iteration (one datagram, sometimes several messages):
// well-formed requests for every command (STATUS, CREATE, DESTROY, GET doit
// and dump, STATS, the multicast-only EVENT, UNSPEC and unknown commands),
// then mutated: wrong attribute types and lengths, truncated and overlong
// attributes, huge member counts, u64-max and near-max offsets and sizes,
// unknown and duplicated attributes, NLA_F_NESTED missing or misplaced, deep
// nesting, bad genl versions, bad nlmsg lengths, odd dump flags, batches,
// random bit flips, abandoned dumps. nlctrl's GETFAMILY/GETPOLICY for the
// family are mixed in (they walk our policy).
//
// Safety, since it runs as root next to real block devices:
//  - nlmsg_type is only ever fxblk's family id, nlctrl's id or a control type
//    (< NLMSG_MIN_TYPE): no other netlink family sees a fuzzed message;
//  - a CREATE whose members (as the kernel would parse them) include an
//    existing block device is not sent, unless that device was given with
//    --member (controlled mode: the lab's scratch members);
//  - a DESTROY that names (by NAME or INDEX) a volume that existed when the
//    fuzzer started is not sent;
//  - a volume a CREATE did make is destroyed at once, and any volume that
//    appeared during the run is destroyed at the end.
//
// Checks: sendmsg/recvmsg never fail (no ENOBUFS overrun, no broken socket);
// every NLMSG_ERROR is well formed (length, errno range, echoed header and
// payload, extack TLVs: NUL-terminated message, offset inside the request);
// every reply parses (genl header, attribute lengths, nests); every request
// that asked for an ack (and every dump) gets its ack (or NLMSG_DONE); STATUS
// and a dump still work at the end, on the same socket and on a new one.
//
// --threads N: N fuzzers at once, each with its own socket and seed (SEED,
// SEED+1, ...), so the family's handlers run concurrently on several CPUs.
// Then a fuzzer may find its own volume destroyed by another's DESTROY (by
// index): ENOENT there is no failure; and only once all have stopped are the
// volumes that appeared during the run destroyed. The messages of each thread
// follow from its seed, their interleaving does not: a failure there may not
// replay exactly.
//
// Exit status: 0 if all checks held, 1 otherwise, 2 on a usage error.
#include <linux/fxblk.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <iterator>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {
namespace po = boost::program_options;
using Bytes = std::vector<std::uint8_t>;
using Rng = std::mt19937_64;

constexpr std::uint16_t nla_type_mask = static_cast<std::uint16_t>(NLA_TYPE_MASK);
constexpr std::size_t max_datagram = 60000;  // below the default sndbuf

std::string errname(int err)
{
	if (err == 0)
		return "OK";
	const char *n = strerrorname_np(err);
	return n ? n : fmt::format("errno{}", err);
}

// ---- raw netlink socket ---------------------------------------------------

class Fd {
public:
	explicit Fd(int fd = -1) noexcept : fd_(fd) {}
	Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
	Fd &operator=(Fd &&o) noexcept
	{
		if (this != &o) {
			reset();
			fd_ = std::exchange(o.fd_, -1);
		}
		return *this;
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd() { reset(); }
	int get() const noexcept { return fd_; }
	void reset() noexcept
	{
		if (fd_ >= 0)
			::close(fd_);
		fd_ = -1;
	}

private:
	int fd_;
};

struct SysError : std::runtime_error {
	SysError(const std::string &what, int err)
		: std::runtime_error(fmt::format("{}: {}", what, std::strerror(err))) {}
};

class NlSock {
public:
	NlSock()
		: fd_(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC))
	{
		if (fd_.get() < 0)
			throw SysError("socket(AF_NETLINK)", errno);
		int one = 1, rcvbuf = 1 << 20;
		// extack TLVs on; no NETLINK_CAP_ACK: errors echo the request.
		setsockopt(fd_.get(), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
		setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		timeval tv{5, 0};
		setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		sockaddr_nl sa{};
		sa.nl_family = AF_NETLINK;
		if (::bind(fd_.get(), reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) < 0)
			throw SysError("bind(AF_NETLINK)", errno);
		socklen_t len = sizeof(sa);
		if (::getsockname(fd_.get(), reinterpret_cast<sockaddr *>(&sa), &len) < 0)
			throw SysError("getsockname", errno);
		portid_ = sa.nl_pid;
	}

	std::uint32_t portid() const noexcept { return portid_; }

	// 0 or a positive errno.
	int send(const Bytes &b)
	{
		sockaddr_nl to{};
		to.nl_family = AF_NETLINK;
		ssize_t n = ::sendto(fd_.get(), b.data(), b.size(), 0,
				     reinterpret_cast<sockaddr *>(&to), sizeof(to));
		if (n < 0)
			return errno;
		return n == static_cast<ssize_t>(b.size()) ? 0 : EIO;
	}

	// One datagram into @out, waiting up to the 5 s receive timeout; 0,
	// EAGAIN on timeout, another errno on a socket error.
	int recv(Bytes &out)
	{
		std::vector<Bytes> v;
		int e = recv_many(v, true);
		if (!e)
			out = std::move(v.front());
		for (std::size_t i = 1; i < v.size(); i++)
			backlog_.push_back(std::move(v[i]));
		return e;
	}

	// Every datagram queued now (@wait: at least one, up to the receive
	// timeout), in one recvmmsg(); 0, EAGAIN if none, another errno on a
	// socket error. Under TCG syscalls dominate: a batch's acks come in one.
	int recv_many(std::vector<Bytes> &out, bool wait)
	{
		out.clear();
		if (!backlog_.empty()) {
			out.swap(backlog_);
			return 0;
		}
		constexpr std::size_t vlen = 32, bufsize = 1 << 16;  // dumps: <= 32 KiB
		bufs_.resize(vlen * bufsize);
		std::vector<mmsghdr> mm(vlen);
		std::vector<iovec> iov(vlen);
		for (std::size_t i = 0; i < vlen; i++) {
			iov[i] = {bufs_.data() + i * bufsize, bufsize};
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		int n = ::recvmmsg(fd_.get(), mm.data(), vlen, wait ? MSG_WAITFORONE : MSG_DONTWAIT,
				   nullptr);
		if (n < 0)
			return errno == EWOULDBLOCK ? EAGAIN : errno;
		for (int i = 0; i < n; i++) {
			if (mm[i].msg_hdr.msg_flags & MSG_TRUNC)
				return EMSGSIZE;  // our buffer is the limit: report, don't hide
			auto *b = bufs_.data() + static_cast<std::size_t>(i) * bufsize;
			out.emplace_back(b, b + mm[i].msg_len);
		}
		return 0;
	}

private:
	Fd fd_;
	std::uint32_t portid_ = 0;
	Bytes bufs_;
	std::vector<Bytes> backlog_;
};

// ---- message building -------------------------------------------------------

void put(Bytes &b, const void *p, std::size_t n)
{
	auto c = static_cast<const std::uint8_t *>(p);
	b.insert(b.end(), c, c + n);
}
template <typename T> Bytes le(T v)
{
	Bytes b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}
Bytes str0(const std::string &s)
{
	Bytes b(s.begin(), s.end());
	b.push_back(0);
	return b;
}

// An attribute tree node: a leaf with data, or a nest with children.
struct Attr {
	std::uint16_t type = 0;  // including NLA_F_* bits
	Bytes data;
	std::vector<Attr> kids;
	bool nest = false;
	std::optional<std::uint16_t> len;  // nla_len override

	static Attr leaf(std::uint16_t t, Bytes d) { return {t, std::move(d), {}, false, {}}; }
	static Attr nested(std::uint16_t t, std::vector<Attr> k = {})
	{
		return {static_cast<std::uint16_t>(t | NLA_F_NESTED), {}, std::move(k), true, {}};
	}
};

// Appends @a to @out; the header is filled in once the payload is there.
void serialize(const Attr &a, Bytes &out)
{
	std::size_t start = out.size();
	out.resize(start + NLA_HDRLEN);
	if (a.nest)
		for (const auto &k : a.kids)
			serialize(k, out);
	else
		put(out, a.data.data(), a.data.size());
	std::size_t full = out.size() - start;
	nlattr h{static_cast<std::uint16_t>(a.len ? *a.len : std::min<std::size_t>(full, 0xffff)),
		 a.type};
	std::memcpy(out.data() + start, &h, sizeof(h));
	out.resize(start + NLA_ALIGN(full), 0);
}

struct Msg {
	std::uint16_t type = 0;
	std::uint16_t flags = NLM_F_REQUEST | NLM_F_ACK;
	std::uint32_t seq = 0;
	std::uint8_t cmd = 0;
	std::uint8_t version = FXBLK_GENL_VERSION;
	std::uint16_t reserved = 0;
	std::vector<Attr> attrs;
	std::optional<std::uint32_t> len;  // nlmsg_len override

	Bytes bytes() const
	{
		Bytes body;
		genlmsghdr g{cmd, version, reserved};
		put(body, &g, sizeof(g));
		for (const auto &a : attrs)
			serialize(a, body);
		nlmsghdr h{static_cast<std::uint32_t>(NLMSG_HDRLEN + body.size()), type, flags, seq, 0};
		if (len)
			h.nlmsg_len = *len;
		Bytes b;
		put(b, &h, sizeof(h));
		put(b, body.data(), body.size());
		return b;
	}
};

// ---- lenient parsing: what the kernel would see ------------------------------

struct Span {
	const std::uint8_t *p;
	std::size_t n;
};

// Attributes of @s, as nla_for_each_attr walks them (stops at a bad header).
std::vector<std::pair<std::uint16_t, Span>> attrs_of(Span s)
{
	std::vector<std::pair<std::uint16_t, Span>> v;
	std::size_t off = 0;
	while (s.n - off >= NLA_HDRLEN) {
		nlattr h;
		std::memcpy(&h, s.p + off, sizeof(h));
		if (h.nla_len < NLA_HDRLEN || h.nla_len > s.n - off)
			break;
		v.push_back({h.nla_type, {s.p + off + NLA_HDRLEN, std::size_t{h.nla_len} - NLA_HDRLEN}});
		off += NLA_ALIGN(h.nla_len);
		if (off > s.n)
			break;
	}
	return v;
}

std::optional<std::uint32_t> u32_of(Span s)
{
	if (s.n < 4)
		return std::nullopt;
	std::uint32_t v;
	std::memcpy(&v, s.p, 4);
	return v;
}

// The messages of a datagram as netlink_rcv_skb() walks them: it stops
// (silently) at the first header whose length is out of range.
struct Part {
	std::size_t off;
	nlmsghdr h;
};
std::vector<Part> parts_of(const Bytes &b)
{
	std::vector<Part> v;
	std::size_t off = 0;
	while (b.size() - off >= NLMSG_HDRLEN) {
		nlmsghdr h;
		std::memcpy(&h, b.data() + off, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > b.size() - off)
			break;
		v.push_back({off, h});
		std::size_t next = NLMSG_ALIGN(h.nlmsg_len);
		if (next > b.size() - off)
			break;
		off += next;
	}
	return v;
}

// ---- the fuzzer ------------------------------------------------------------------

struct Member {
	dev_t dev;
	std::uint64_t sectors;  // size in 512-byte sectors
};

struct Stats {
	std::uint64_t datagrams = 0, messages = 0, no_reply = 0, replies = 0, dumps_done = 0,
		      dump_parts = 0, created = 0, destroyed = 0, abandoned_dumps = 0,
		      unsafe_skipped = 0, ctrl = 0, extack_ctrl = 0, parsed = 0;
	double kernel_secs = 0;
	std::map<std::string, std::pair<std::uint64_t, double>> cost;  // datagrams, seconds
	std::map<std::string, std::uint64_t> by_errno;
	std::map<std::string, std::uint64_t> by_cmd;
	std::vector<std::string> failures;
	std::uint64_t failures_total = 0;

	void fail(std::string why)
	{
		if (failures.size() < 20)
			failures.push_back(std::move(why));
		failures_total++;
	}

	// Another thread's figures into these (--threads).
	void add(const Stats &o)
	{
		datagrams += o.datagrams;
		messages += o.messages;
		no_reply += o.no_reply;
		replies += o.replies;
		dumps_done += o.dumps_done;
		dump_parts += o.dump_parts;
		created += o.created;
		destroyed += o.destroyed;
		abandoned_dumps += o.abandoned_dumps;
		unsafe_skipped += o.unsafe_skipped;
		ctrl += o.ctrl;
		extack_ctrl += o.extack_ctrl;
		parsed += o.parsed;
		kernel_secs += o.kernel_secs;
		for (const auto &[k, v] : o.cost) {
			cost[k].first += v.first;
			cost[k].second += v.second;
		}
		for (const auto &[k, v] : o.by_errno)
			by_errno[k] += v;
		for (const auto &[k, v] : o.by_cmd)
			by_cmd[k] += v;
		for (const auto &f : o.failures)
			if (failures.size() < 20)
				failures.push_back(f);
		failures_total += o.failures_total;
	}
};

class Fuzzer {
public:
	Fuzzer(std::uint64_t seed, std::vector<Member> members, bool verbose, bool break_ack,
	       bool dry_run)
		: rng_(seed), members_(std::move(members)), verbose_(verbose), break_ack_(break_ack),
		  dry_run_(dry_run)
	{
		// --dry-run: generate only (for profiling the generator on the host)
		family_ = dry_run ? 0x7ff0 : resolve_family(sock_);
		for (const auto &m : members_)
			allowed_.insert(m.dev);
		scan_devs();
		if (!dry_run)
			snapshot_existing();
	}

	Stats &stats() { return st_; }

	// Other fuzzers run beside this one (--threads): see the top of the file.
	void set_shared(bool shared) { shared_ = shared; }

	// Destroy every volume that appeared since this fuzzer was made.
	void cleanup()
	{
		if (!dry_run_)
			cleanup_created();
	}

	void run(std::uint64_t count)
	{
		exchange({});  // an empty datagram: refused by sendto (ENODATA)
		while (st_.parsed < count) {
			if (pick(200) == 0) {
				abandon_dump();
				continue;
			}
			if (st_.datagrams % 256 == 0)
				scan_devs();
			std::vector<Msg> msgs = generate();
			Bytes dgram;
			for (auto &m : msgs) {
				m.seq = ++seq_;
				Bytes b = m.bytes();
				dgram.insert(dgram.end(), b.begin(), b.end());
			}
			mutate_bytes(dgram);
			if (dgram.size() > max_datagram)
				dgram.resize(max_datagram);
			if (!make_safe(dgram)) {
				st_.unsafe_skipped++;
				continue;
			}
			exchange(dgram);
			st_.messages += msgs.size();
			st_.datagrams++;
		}
		if (!shared_)
			cleanup();
	}

	// STATUS and a dump still work on this socket and on a new one.
	void final_check()
	{
		for (int round = 0; round < 2; round++) {
			NlSock fresh;
			NlSock &s = round ? fresh : sock_;
			Msg st;
			st.type = family_;
			st.cmd = FXBLK_CMD_STATUS;
			st.seq = ++seq_;
			Reply r = transact(s, st.bytes());
			if (!r.acked.count(st.seq) || r.errors.count(st.seq))
				st_.fail(fmt::format("final STATUS on {} socket failed", round ? "a new" : "the fuzzed"));
			if (!r.got_status)
				st_.fail("final STATUS: no STATUS reply");
			Msg d;
			d.type = family_;
			d.cmd = FXBLK_CMD_GET;
			d.flags = NLM_F_REQUEST | NLM_F_DUMP;
			d.seq = ++seq_;
			r = transact(s, d.bytes());
			if (!r.done.count(d.seq))
				st_.fail(fmt::format("final GET dump on {} socket: no NLMSG_DONE",
						     round ? "a new" : "the fuzzed"));
		}
	}

private:
	Rng rng_;
	NlSock sock_;
	std::uint16_t family_ = 0;
	std::uint32_t seq_ = 1000;
	std::vector<Member> members_;
	std::set<dev_t> allowed_;
	std::set<dev_t> devs_;
	std::set<std::string> existing_names_;
	std::set<std::uint32_t> existing_index_;
	bool verbose_;
	bool break_ack_;
	bool dry_run_;
	bool cap_ack_ = false;  // NETLINK_CAP_ACK is never set
	bool shared_ = false;
	Stats st_;

	// Modulo bias is irrelevant here; uniform_int_distribution costs more.
	std::uint64_t pick(std::uint64_t n) { return rng_() % n; }
	bool chance(unsigned percent) { return pick(100) < percent; }
	template <typename T> const T &one_of(const std::vector<T> &v) { return v[pick(v.size())]; }

	// -- family, existing volumes ----------------------------------------------

	static std::uint16_t resolve_family(NlSock &s)
	{
		Msg m;
		m.type = GENL_ID_CTRL;
		m.cmd = CTRL_CMD_GETFAMILY;
		m.version = 1;
		m.flags = NLM_F_REQUEST | NLM_F_ACK;
		m.seq = 1;
		m.attrs.push_back(Attr::leaf(CTRL_ATTR_FAMILY_NAME, str0(FXBLK_GENL_NAME)));
		if (int e = s.send(m.bytes()))
			throw SysError("send GETFAMILY", e);
		std::optional<std::uint16_t> id;
		for (bool acked = false; !acked;) {
			Bytes in;
			if (int e = s.recv(in))
				throw SysError("recv GETFAMILY", e);
			for (const auto &p : parts_of(in)) {
				if (p.h.nlmsg_type == NLMSG_ERROR) {
					nlmsgerr e;
					if (p.h.nlmsg_len >= NLMSG_HDRLEN + sizeof(e))
						std::memcpy(&e, in.data() + p.off + NLMSG_HDRLEN, sizeof(e));
					else
						e.error = -EIO;
					if (e.error)
						throw std::runtime_error(
							fmt::format("family \"{}\" not found ({}): is fxblk loaded?",
								    FXBLK_GENL_NAME, errname(-e.error)));
					acked = true;
					continue;
				}
				if (p.h.nlmsg_type != GENL_ID_CTRL || p.h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
					continue;
				Span body{in.data() + p.off + NLMSG_HDRLEN + GENL_HDRLEN,
					  p.h.nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN};
				for (auto &[t, v] : attrs_of(body))
					if ((t & nla_type_mask) == CTRL_ATTR_FAMILY_ID && v.n >= 2) {
						std::uint16_t x;
						std::memcpy(&x, v.p, 2);
						id = x;
					}
			}
		}
		if (!id)
			throw std::runtime_error("GETFAMILY reply without a family id");
		return *id;
	}

	struct Vol {
		std::uint32_t index;
		std::string name;
	};

	std::vector<Vol> list_volumes()
	{
		Msg d;
		d.type = family_;
		d.cmd = FXBLK_CMD_GET;
		d.flags = NLM_F_REQUEST | NLM_F_DUMP;
		d.seq = ++seq_;
		Reply r = transact(sock_, d.bytes());
		if (!r.done.count(d.seq))
			throw std::runtime_error("GET dump of the volumes did not complete");
		return r.volumes;
	}

	void snapshot_existing()
	{
		for (const auto &v : list_volumes()) {
			existing_names_.insert(v.name);
			existing_index_.insert(v.index);
		}
	}

	// -- values --------------------------------------------------------------------

	std::uint64_t u64_value()
	{
		static const std::vector<std::uint64_t> edge = {
			0, 1, 7, 8, 4096, 8191, 8192, 8193, 0x7fffffff, 0x80000000, 0xffffffff,
			0x100000000ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
			~0ULL, ~0ULL - 1, ~0ULL - 7, ~0ULL - 8191, ~0ULL >> 9, (~0ULL >> 9) + 1};
		if (!members_.empty() && chance(40)) {
			std::uint64_t s = one_of(members_).sectors;
			std::uint64_t d = pick(4) * 4096;
			return one_of(std::vector<std::uint64_t>{s - 1 - d, s, s + 1, s - 8, s - 8192,
								 s / 2, s + d, ~0ULL - s + 1});
		}
		return chance(80) ? one_of(edge) : rng_();
	}

	std::uint32_t u32_value()
	{
		static const std::vector<std::uint32_t> edge = {
			0, 1, 2, 3, 4, 7, 8, 9, 16, 64, 1000, 1023, 1024, 4095, 4096, 32767, 32768,
			32769, 65536, (1u << 20) - 1, 1u << 20, 0x7fffffff, 0x80000000, 0xfffffff8,
			0xffffffff, FXBLK_MAX_VOLUMES, FXBLK_MAX_VOLUMES - 1};
		return chance(85) ? one_of(edge) : static_cast<std::uint32_t>(rng_());
	}

	std::string name_value()
	{
		static const std::vector<std::string> names = {
			"", "a", "fz", ".", "..", "...", "a/b", "a b", "-", "_x", "fz.fuzz-1",
			"\xc3\xa4", "fz\n", std::string(31, 'z'), std::string(32, 'z'),
			std::string(33, 'z'), std::string(300, 'q')};
		if (chance(70))
			return one_of(names);
		std::string s(pick(40), 'x');
		for (auto &c : s)
			c = static_cast<char>(pick(256));
		return s;
	}

	Bytes random_bytes(std::size_t n)
	{
		Bytes b(n);
		for (auto &c : b)
			c = static_cast<std::uint8_t>(pick(256));
		return b;
	}

	// A string payload, usually NUL-terminated, sometimes not or with junk.
	Bytes string_payload()
	{
		std::string s = name_value();
		Bytes b(s.begin(), s.end());
		unsigned how = static_cast<unsigned>(pick(10));
		if (how < 7)
			b.push_back(0);
		else if (how == 7) {
			b.push_back(0);
			b.push_back('j');  // bytes after the NUL
		}
		return b;  // else: no NUL at all
	}

	// Payload of the wrong size for an integer of @size bytes.
	Bytes wrong_size(std::size_t size)
	{
		std::size_t n;
		do
			n = one_of(std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 64, 300});
		while (n == size);
		return random_bytes(n);
	}

	// -- attributes -----------------------------------------------------------------

	// A non-existent block device (random mode). Mostly outside dev_t's
	// range (12-bit major, 20-bit minor), which the module refuses itself:
	// opening a dev_t in range that has no disk makes the kernel run
	// modprobe for "block-major-N-M" (BLOCK_LEGACY_AUTOLOAD), ~40 ms a time
	// under TCG; 1 in 100 members still takes that path.
	std::pair<std::uint32_t, std::uint32_t> ghost_dev()
	{
		for (;;) {
			std::uint32_t maj = static_cast<std::uint32_t>(pick(4096));
			std::uint32_t min = static_cast<std::uint32_t>(pick(256));
			if (!chance(1)) {
				if (chance(50))
					maj = one_of(std::vector<std::uint32_t>{4096, 4097, 0x10000, 0x7fffffff,
										0xffffffff});
				else
					min = one_of(std::vector<std::uint32_t>{1u << 20, (1u << 20) + 1,
										0x7fffffff, 0xffffffff});
			}
			// Majors whose probe makes a device on open (loop, brd) are
			// never used: an "in range" guess must stay a ghost.
			if (maj == 1 || maj == 7)
				continue;
			if (!dev_exists(maj, min))
				return {maj, min};
		}
	}

	// The block devices that exist (/sys/dev/block), re-read after every
	// CREATE that succeeded and every 256 datagrams: a stat() per member
	// would cost more than the fuzzing under TCG.
	void scan_devs()
	{
		devs_.clear();
		for (const auto &e : std::filesystem::directory_iterator("/sys/dev/block")) {
			unsigned maj, min;
			if (std::sscanf(e.path().filename().c_str(), "%u:%u", &maj, &min) == 2)
				devs_.insert(makedev(maj, min));
		}
	}

	bool dev_exists(std::uint32_t maj, std::uint32_t min) const
	{
		// dev_t as the kernel builds it (12-bit major, 20-bit minor); out of
		// that range the kernel refuses the member before opening anything.
		if (maj >= (1u << 12) || min >= (1u << 20))
			return false;
		return devs_.count(makedev(maj, min)) > 0;
	}

	Attr member_attr(bool controlled)
	{
		std::vector<Attr> k;
		std::uint32_t maj, min;
		if (controlled) {
			dev_t d = one_of(members_).dev;
			maj = major(d);
			min = minor(d);
		} else {
			std::tie(maj, min) = ghost_dev();
		}
		if (!chance(3))
			k.push_back(Attr::leaf(FXBLK_MEMBER_ATTR_MAJOR, le(maj)));
		if (!chance(3))
			k.push_back(Attr::leaf(FXBLK_MEMBER_ATTR_MINOR, le(min)));
		if (chance(80))
			k.push_back(Attr::leaf(FXBLK_MEMBER_ATTR_DATA_OFFSET,
					       le<std::uint64_t>(chance(50) ? 8192 : u64_value())));
		if (chance(40))
			k.push_back(Attr::leaf(FXBLK_MEMBER_ATTR_DATA_SECTORS, le(u64_value())));
		if (chance(5))  // output-only member attributes
			k.push_back(Attr::leaf(static_cast<std::uint16_t>(
						       one_of(std::vector<int>{FXBLK_MEMBER_ATTR_INDEX,
									       FXBLK_MEMBER_ATTR_DISK_NAME,
									       FXBLK_MEMBER_ATTR_STATE,
									       FXBLK_MEMBER_ATTR_ERRORS})),
					       le<std::uint32_t>(0)));
		return Attr::nested(FXBLK_ATTR_MEMBER, std::move(k));
	}

	Attr members_attr(bool controlled)
	{
		std::size_t n;
		unsigned how = static_cast<unsigned>(pick(100));
		if (how < 75)
			n = 1 + pick(4);
		else if (how < 85)
			n = 0;
		else if (how < 97)
			n = FXBLK_MAX_MEMBERS - 1 + pick(3);  // 31, 32, 33
		else  // huge (1500 is about the most a 64 KiB nest holds)
			n = one_of(std::vector<std::size_t>{64, 100, 255, 256, 1000, 1500});
		if (n > FXBLK_MAX_MEMBERS + 1) {
			// Huge: 8 random members, tiled as bytes (cheap to build).
			Bytes one[8], all;
			for (auto &b : one)
				serialize(member_attr(controlled), b);
			for (std::size_t i = 0; i < n; i++)
				all.insert(all.end(), one[i % 8].begin(), one[i % 8].end());
			return Attr::leaf(FXBLK_ATTR_MEMBERS | NLA_F_NESTED, std::move(all));
		}
		std::vector<Attr> k;
		for (std::size_t i = 0; i < n; i++)
			k.push_back(member_attr(controlled));
		return Attr::nested(FXBLK_ATTR_MEMBERS, std::move(k));
	}

	std::string fz_name()
	{
		return fmt::format("fz{}", pick(1000));
	}

	// The well-formed request of @cmd that mutations start from.
	Msg base(std::uint8_t cmd, bool controlled)
	{
		Msg m;
		m.type = family_;
		m.cmd = cmd;
		auto ident = [&] {
			unsigned how = static_cast<unsigned>(pick(10));
			if (how < 4 || how == 9)
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_NAME, str0(fz_name())));
			if (how >= 4)
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_INDEX, le(u32_value())));
		};
		switch (cmd) {
		case FXBLK_CMD_CREATE:
			m.attrs.push_back(Attr::leaf(FXBLK_ATTR_NAME, str0(fz_name())));
			if (chance(80))
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_CHUNK_SECTORS,
							     le<std::uint32_t>(chance(50) ? 128 : u32_value())));
			m.attrs.push_back(members_attr(controlled));
			// the volume's UUID: usually 16 bytes, sometimes another length
			if (chance(50))
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_UUID,
							     random_bytes(chance(80) ? FXBLK_UUID_LEN
										   : pick(40))));
			break;
		case FXBLK_CMD_DESTROY:
			ident();
			if (chance(30))
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_FORCE, {}));
			break;
		case FXBLK_CMD_GET:
			if (chance(30)) {
				m.flags = NLM_F_REQUEST | NLM_F_DUMP;
				if (chance(30))
					m.flags |= NLM_F_ACK;
				break;
			}
			[[fallthrough]];
		case FXBLK_CMD_STATS:
			// Existing volumes too: GET/STATS are read-only, and their
			// replies are the big ones worth checking.
			if (!existing_names_.empty() && chance(30)) {
				auto it = existing_names_.begin();
				std::advance(it, pick(existing_names_.size()));
				m.attrs.push_back(Attr::leaf(FXBLK_ATTR_NAME, str0(*it)));
			} else {
				ident();
			}
			break;
		default:  // STATUS, EVENT, UNSPEC, unknown: no attributes needed
			break;
		}
		return m;
	}

	// A random attribute for the top level, any type.
	Attr random_attr(int depth)
	{
		std::uint16_t t;
		unsigned how = static_cast<unsigned>(pick(10));
		if (how < 7)
			t = static_cast<std::uint16_t>(pick(FXBLK_ATTR_MAX + 1));
		else if (how < 9)
			t = static_cast<std::uint16_t>(FXBLK_ATTR_MAX + 1 + pick(8));
		else
			t = static_cast<std::uint16_t>(pick(0x4000));
		if (depth < 4 && chance(20)) {
			std::vector<Attr> k;
			for (std::size_t i = pick(4); i > 0; i--)
				k.push_back(random_attr(depth + 1));
			return Attr::nested(t, std::move(k));
		}
		switch (pick(5)) {
		case 0: return Attr::leaf(t, le(u32_value()));
		case 1: return Attr::leaf(t, le(u64_value()));
		case 2: return Attr::leaf(t, string_payload());
		case 3: return Attr::leaf(t, {});
		default: return Attr::leaf(t, random_bytes(pick(40)));
		}
	}

	// -- structured mutations ----------------------------------------------------------

	// Every attribute in the tree (for picking one to mutate).
	static void collect(std::vector<Attr> &v, std::vector<std::vector<Attr> *> &lists,
			    std::vector<Attr *> &all)
	{
		lists.push_back(&v);
		for (auto &a : v) {
			all.push_back(&a);
			if (a.nest)
				collect(a.kids, lists, all);
		}
	}

	void mutate_tree(Msg &m)
	{
		std::vector<std::vector<Attr> *> lists;
		std::vector<Attr *> all;
		collect(m.attrs, lists, all);
		auto any_list = [&]() -> std::vector<Attr> & { return *lists[pick(lists.size())]; };
		switch (pick(16)) {
		case 0:  // drop one
			if (auto &l = any_list(); !l.empty())
				l.erase(l.begin() + static_cast<long>(pick(l.size())));
			break;
		case 1:  // duplicate one
			if (auto &l = any_list(); !l.empty()) {
				Attr copy = l[pick(l.size())];
				l.push_back(std::move(copy));
			}
			break;
		case 2:  // unknown / unexpected attribute somewhere
			any_list().push_back(random_attr(2));
			break;
		case 3:  // wrong payload size
			if (!all.empty()) {
				Attr &a = *all[pick(all.size())];
				a.nest = false;
				a.kids.clear();
				a.data = wrong_size(a.data.size());
			}
			break;
		case 4:  // NLA_F_NESTED off a nest, or onto a leaf
			if (!all.empty())
				all[pick(all.size())]->type ^= NLA_F_NESTED;
			break;
		case 5:  // NLA_F_NET_BYTEORDER
			if (!all.empty())
				all[pick(all.size())]->type ^= NLA_F_NET_BYTEORDER;
			break;
		case 6: {  // deep nesting: wrap an attribute in up to 200 nests
			if (auto &l = any_list(); !l.empty()) {
				Attr &a = l[pick(l.size())];
				std::size_t depth = one_of(std::vector<std::size_t>{2, 3, 9, 10, 11, 32, 200});
				std::uint16_t t = a.type & nla_type_mask;
				for (std::size_t i = 0; i < depth; i++) {
					std::vector<Attr> k;
					k.push_back(std::move(a));
					a = Attr::nested(chance(50) ? t : std::uint16_t{FXBLK_ATTR_MEMBERS}, std::move(k));
				}
			}
			break;
		}
		case 7:  // huge member list
			m.attrs.push_back(members_attr(false));
			m.attrs.back().kids.resize(std::min<std::size_t>(m.attrs.back().kids.size(), 1500));
			break;
		case 8:  // offsets/sizes at the edges
			for (auto *a : all)
				if (!a->nest && a->data.size() == 8)
					a->data = le(u64_value());
			break;
		case 9:  // u32 values at the edges (chunk, index, major/minor)
			for (auto *a : all)
				if (!a->nest && a->data.size() == 4 && chance(50))
					a->data = le(u32_value());
			break;
		case 10:  // name rules
			for (auto *a : all)
				if ((a->type & nla_type_mask) == FXBLK_ATTR_NAME && !a->nest)
					a->data = string_payload();
			break;
		case 11:  // nla_len lies
			if (!all.empty()) {
				Attr &a = *all[pick(all.size())];
				a.len = one_of(std::vector<std::uint16_t>{0, 1, 3, 4, 5, 7, 0xfff, 0xffff});
				if (chance(50))
					a.len = static_cast<std::uint16_t>(NLA_HDRLEN + a.data.size() +
									   1 + pick(64));
			}
			break;
		case 12:  // reorder
			if (auto &l = any_list(); l.size() > 1)
				std::shuffle(l.begin(), l.end(), rng_);
			break;
		case 13:  // replace a nest by garbage
			if (!all.empty()) {
				Attr &a = *all[pick(all.size())];
				a.nest = chance(50);
				a.kids.clear();
				if (a.nest)
					for (std::size_t i = pick(6); i > 0; i--)
						a.kids.push_back(random_attr(3));
				else
					a.data = random_bytes(pick(80));
			}
			break;
		case 14:  // output-only or unknown top-level attribute
			m.attrs.push_back(random_attr(0));
			break;
		default:  // several at once
			for (std::size_t i = 1 + pick(3); i > 0; i--)
				mutate_tree(m);
			break;
		}
	}

	// -- envelope ------------------------------------------------------------------------

	void mutate_envelope(Msg &m)
	{
		switch (pick(8)) {
		case 0:  // genl version / reserved
			m.version = static_cast<std::uint8_t>(one_of(std::vector<int>{0, 2, 3, 255}));
			if (chance(50))
				m.reserved = static_cast<std::uint16_t>(pick(0x10000));
			break;
		case 1: {  // odd flags, dumps on anything
			static const std::vector<std::uint16_t> f = {
				NLM_F_REQUEST,
				NLM_F_REQUEST | NLM_F_DUMP,
				NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ACK,
				NLM_F_REQUEST | NLM_F_ROOT,
				NLM_F_REQUEST | NLM_F_MATCH | NLM_F_ACK,
				NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ATOMIC,
				NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ECHO,
				NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO | NLM_F_MULTI,
				NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP_INTR | NLM_F_DUMP_FILTERED,
				NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE | NLM_F_APPEND,
				NLM_F_ACK,  // not a request: ignored (acked with 0)
				0};
			m.flags = chance(80) ? one_of(f)
					     : static_cast<std::uint16_t>(pick(0x10000) | NLM_F_REQUEST);
			break;
		}
		case 2:  // nlmsg_len lies (computed later from the real size)
			m.len = one_of(std::vector<std::uint32_t>{0, 1, 15, 16, 17, 19, 20, 23,
								  0xffffffff, 0x10000});
			break;
		case 3:  // another command byte
			m.cmd = static_cast<std::uint8_t>(pick(256));
			break;
		case 4:  // control message types and nlctrl
			m.type = one_of(std::vector<std::uint16_t>{NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE,
								   NLMSG_OVERRUN, 0, 5, 15});
			break;
		default:
			break;
		}
	}

	Msg nlctrl_request()
	{
		Msg m;
		m.type = GENL_ID_CTRL;
		m.version = 1;
		st_.ctrl++;
		if (chance(50)) {
			m.cmd = CTRL_CMD_GETPOLICY;
			m.flags = NLM_F_REQUEST | NLM_F_DUMP;
			if (chance(50))
				m.attrs.push_back(Attr::leaf(CTRL_ATTR_FAMILY_ID, le(family_)));
			else
				m.attrs.push_back(Attr::leaf(CTRL_ATTR_FAMILY_NAME, str0(FXBLK_GENL_NAME)));
			if (chance(50))
				m.attrs.push_back(Attr::leaf(CTRL_ATTR_OP, le<std::uint32_t>(
									   static_cast<std::uint32_t>(pick(8)))));
		} else {
			m.cmd = CTRL_CMD_GETFAMILY;
			m.attrs.push_back(Attr::leaf(CTRL_ATTR_FAMILY_NAME, str0(FXBLK_GENL_NAME)));
		}
		if (chance(30))
			mutate_tree(m);
		return m;
	}

	Msg one_message()
	{
		if (chance(2))
			return nlctrl_request();
		static const std::vector<std::uint8_t> cmds = {
			FXBLK_CMD_STATUS, FXBLK_CMD_CREATE, FXBLK_CMD_CREATE, FXBLK_CMD_DESTROY,
			FXBLK_CMD_GET,    FXBLK_CMD_GET,    FXBLK_CMD_STATS,  FXBLK_CMD_EVENT,
			FXBLK_CMD_UNSPEC, FXBLK_CMD_MAX + 1};
		std::uint8_t cmd = one_of(cmds);
		if (cmd == FXBLK_CMD_MAX + 1)
			cmd = static_cast<std::uint8_t>(FXBLK_CMD_MAX + 1 + pick(255 - FXBLK_CMD_MAX));
		// Real members (controlled mode) in a few CREATEs only: a create
		// that succeeds costs a disk add and remove.
		bool controlled = cmd == FXBLK_CMD_CREATE && !members_.empty() && chance(8);
		Msg m = base(cmd, controlled);
		static const char *const names[] = {"UNSPEC", "STATUS", "CREATE", "DESTROY",
						    "GET",    "STATS",  "EVENT"};
		static_assert(std::size(names) == FXBLK_CMD_MAX + 1);
		st_.by_cmd[cmd <= FXBLK_CMD_MAX ? names[cmd] : "unknown"]++;
		unsigned how = static_cast<unsigned>(pick(100));
		if (how < 10) {  // entirely random attributes
			m.attrs.clear();
			for (std::size_t i = pick(8); i > 0; i--)
				m.attrs.push_back(random_attr(0));
		} else if (how < 85) {
			mutate_tree(m);
		}  // else: as built (valid apart from non-existent names/devices)
		if (chance(25))
			mutate_envelope(m);
		return m;
	}

	std::vector<Msg> generate()
	{
		std::vector<Msg> v{one_message()};
		// Several messages in one datagram, most of the time: each is
		// dispatched and answered on its own, and under TCG the syscalls
		// per datagram cost more than the kernel's work per message.
		if (chance(60))
			for (std::size_t i = 1 + pick(12); i > 0; i--)
				v.push_back(one_message());
		return v;
	}

	// Bit flips, truncation, trailing junk.
	void mutate_bytes(Bytes &b)
	{
		unsigned how = static_cast<unsigned>(pick(100));
		if (how < 8) {  // flip bits past the netlink header
			for (std::size_t i = 1 + pick(4); i > 0 && b.size() > NLMSG_HDRLEN; i--)
				b[NLMSG_HDRLEN + pick(b.size() - NLMSG_HDRLEN)] ^=
					static_cast<std::uint8_t>(1u << pick(8));
		} else if (how < 11) {  // overwrite a byte with an edge value
			if (!b.empty())
				b[pick(b.size())] = one_of(std::vector<std::uint8_t>{0, 0x7f, 0x80, 0xff});
		} else if (how < 14) {  // truncate (nlmsg_len then runs past the end)
			if (b.size() > 1)
				b.resize(1 + pick(b.size() - 1));
		} else if (how < 16) {  // trailing junk
			Bytes junk = random_bytes(pick(40));
			b.insert(b.end(), junk.begin(), junk.end());
		}
	}

	// What the first message of @b is, for the time-by-category summary.
	std::string category(const Bytes &b) const
	{
		static const char *const names[] = {"UNSPEC", "STATUS", "CREATE", "DESTROY",
						    "GET",    "STATS",  "EVENT"};
		auto parts = parts_of(b);
		if (parts.empty())
			return "bad-header";
		const nlmsghdr &h = parts[0].h;
		if (h.nlmsg_type == GENL_ID_CTRL)
			return "nlctrl";
		if (h.nlmsg_type != family_)
			return "control";
		if (h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
			return "short";
		std::uint8_t cmd = b[parts[0].off + NLMSG_HDRLEN];
		std::string n = cmd <= FXBLK_CMD_MAX ? names[cmd] : "unknown";
		if ((h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP)
			n += "-dump";
		if (cmd == FXBLK_CMD_CREATE && !create_safe_ghost(b, parts[0]))
			n += "-real";
		return n;
	}

	// The CREATE names none of the controlled members (cheap re-check).
	bool create_safe_ghost(const Bytes &b, const Part &p) const
	{
		auto saved = allowed_;
		auto *self = const_cast<Fuzzer *>(this);
		self->allowed_.clear();
		Span body{b.data() + p.off + NLMSG_HDRLEN + GENL_HDRLEN,
			  p.h.nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN};
		bool ok = self->create_safe(body);
		self->allowed_ = saved;
		return ok;
	}

	// -- safety ---------------------------------------------------------------------------

	// Make every message netlink would dispatch go only to fxblk, nlctrl or
	// the control types; refuse a datagram that would CREATE over a foreign
	// device or DESTROY a volume that existed before the run.
	bool make_safe(Bytes &b)
	{
		for (const auto &p : parts_of(b)) {
			nlmsghdr h = p.h;
			if (h.nlmsg_type != family_ && h.nlmsg_type != GENL_ID_CTRL &&
			    h.nlmsg_type >= NLMSG_MIN_TYPE) {
				h.nlmsg_type = family_;
				std::memcpy(b.data() + p.off, &h, sizeof(h));
			}
			if (h.nlmsg_type != family_ || h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
				continue;
			std::uint8_t cmd = b[p.off + NLMSG_HDRLEN];
			Span body{b.data() + p.off + NLMSG_HDRLEN + GENL_HDRLEN,
				  h.nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN};
			if (cmd == FXBLK_CMD_CREATE && !create_safe(body))
				return false;
			if (cmd == FXBLK_CMD_DESTROY && !destroy_safe(body))
				return false;
		}
		return true;
	}

	bool create_safe(Span body)
	{
		for (auto &[t, ms] : attrs_of(body)) {
			if ((t & nla_type_mask) != FXBLK_ATTR_MEMBERS)
				continue;
			for (auto &[mt, m] : attrs_of(ms)) {
				(void)mt;  // the kernel refuses other types, but be safe
				std::vector<std::uint32_t> majs, mins;
				for (auto &[at, v] : attrs_of(m)) {
					auto x = u32_of(v);
					if (!x)
						continue;
					if ((at & nla_type_mask) == FXBLK_MEMBER_ATTR_MAJOR)
						majs.push_back(*x);
					if ((at & nla_type_mask) == FXBLK_MEMBER_ATTR_MINOR)
						mins.push_back(*x);
				}
				for (auto ma : majs)
					for (auto mi : mins)
						if (dev_exists(ma, mi) && !allowed_.count(makedev(ma, mi)))
							return false;
			}
		}
		return true;
	}

	bool destroy_safe(Span body)
	{
		for (auto &[t, v] : attrs_of(body)) {
			std::uint16_t type = t & nla_type_mask;
			if (type == FXBLK_ATTR_INDEX) {
				auto x = u32_of(v);
				if (x && existing_index_.count(*x))
					return false;
			}
			if (type == FXBLK_ATTR_NAME) {
				std::string s(reinterpret_cast<const char *>(v.p),
					      strnlen(reinterpret_cast<const char *>(v.p), v.n));
				if (existing_names_.count(s))
					return false;
			}
		}
		return true;
	}

	// -- answers ---------------------------------------------------------------------------

	struct Reply {
		std::set<std::uint32_t> acked;        // seq of every NLMSG_ERROR
		std::map<std::uint32_t, int> errors;  // seq -> errno, nonzero only
		std::set<std::uint32_t> done;         // seq of every NLMSG_DONE
		std::vector<std::string> created;     // names in CREATE replies
		std::vector<Vol> volumes;             // from GET replies
		bool got_status = false;
		std::size_t messages = 0;
	};

	// Checks an attribute stream: every header in range, nests recursively.
	bool attrs_ok(Span s, int depth, std::string &why)
	{
		std::size_t off = 0;
		while (off < s.n) {
			if (s.n - off < NLA_HDRLEN) {
				why = "trailing bytes shorter than an attribute header";
				return false;
			}
			nlattr h;
			std::memcpy(&h, s.p + off, sizeof(h));
			if (h.nla_len < NLA_HDRLEN || h.nla_len > s.n - off) {
				why = fmt::format("attribute {} length {} out of range ({} left)",
						  h.nla_type & nla_type_mask, h.nla_len, s.n - off);
				return false;
			}
			if ((h.nla_type & NLA_F_NESTED) && depth < 8 &&
			    !attrs_ok({s.p + off + NLA_HDRLEN, std::size_t{h.nla_len} - NLA_HDRLEN}, depth + 1, why))
				return false;
			off += NLA_ALIGN(h.nla_len);
		}
		return true;
	}

	// One NLMSG_ERROR: @sent is the datagram it answers.
	void check_error(const std::uint8_t *p, const nlmsghdr &h, const std::set<std::uint32_t> &seqs,
			 Reply &r)
	{
		nlmsgerr e;
		if (h.nlmsg_len < NLMSG_HDRLEN + sizeof(e)) {
			st_.fail(fmt::format("NLMSG_ERROR of {} bytes, shorter than nlmsgerr", h.nlmsg_len));
			return;
		}
		std::memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
		if (break_ack_) {  // --break-ack: prove the checks below can fail
			e.error = 1;
			break_ack_ = false;
		}
		std::string where = fmt::format("ack seq {}", e.msg.nlmsg_seq);
		if (e.error > 0 || e.error < -4095) {
			st_.fail(fmt::format("{}: error {} out of range", where, e.error));
			return;
		}
		if (!seqs.count(e.msg.nlmsg_seq) || h.nlmsg_seq != e.msg.nlmsg_seq)
			st_.fail(fmt::format("{}: answers no request of this datagram (header seq {})",
					     where, h.nlmsg_seq));
		// nlmsgerr, then (unless CAPPED) the request's payload, then
		// (with ACK_TLVS) the extack attributes at the next aligned offset.
		if (e.msg.nlmsg_len < NLMSG_HDRLEN) {
			st_.fail(fmt::format("{}: echoed nlmsg_len {}", where, e.msg.nlmsg_len));
			return;
		}
		std::size_t need = NLMSG_HDRLEN + sizeof(e);
		if (!(h.nlmsg_flags & NLM_F_CAPPED))
			need += e.msg.nlmsg_len - NLMSG_HDRLEN;
		else if (e.error && !cap_ack_)
			st_.fail(fmt::format("{}: error ack CAPPED although NETLINK_CAP_ACK is off", where));
		if (h.nlmsg_len < need) {
			st_.fail(fmt::format("{}: {} bytes, echoed request needs {}", where, h.nlmsg_len, need));
			return;
		}
		std::size_t off = NLMSG_ALIGN(need);
		if (!(h.nlmsg_flags & NLM_F_ACK_TLVS) && h.nlmsg_len != need && h.nlmsg_len != off)
			st_.fail(fmt::format("{}: {} bytes without ACK_TLVS, expected {}", where,
					     h.nlmsg_len, need));
		if (h.nlmsg_flags & NLM_F_ACK_TLVS) {
			Span tlv{p + off, h.nlmsg_len > off ? h.nlmsg_len - off : 0};
			std::string why;
			if (!attrs_ok(tlv, 8, why))
				st_.fail(fmt::format("{}: extack TLVs: {}", where, why));
			for (auto &[t, v] : attrs_of(tlv)) {
				switch (t & nla_type_mask) {
				case NLMSGERR_ATTR_MSG: {
					const char *s = reinterpret_cast<const char *>(v.p);
					std::size_t len = strnlen(s, v.n);
					if (len == v.n)
						st_.fail(fmt::format("{}: extack message not NUL-terminated", where));
					else if (len == 0)
						st_.fail(fmt::format("{}: empty extack message", where));
					// Not a failure: names the request gave are echoed as sent.
					for (std::size_t i = 0; i < len; i++)
						if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) {
							st_.extack_ctrl++;
							break;
						}
					if (verbose_)
						std::cout << fmt::format("  {} {} \"{}\"\n", where,
									 errname(-e.error), std::string(s, len));
					break;
				}
				case NLMSGERR_ATTR_OFFS: {
					auto o = u32_of(v);
					if (!o || v.n != 4)
						st_.fail(fmt::format("{}: OFFS attribute of {} bytes", where, v.n));
					else if (*o >= e.msg.nlmsg_len)
						st_.fail(fmt::format("{}: extack offset {} outside the {}-byte request",
								     where, *o, e.msg.nlmsg_len));
					break;
				}
				case NLMSGERR_ATTR_MISS_TYPE:
				case NLMSGERR_ATTR_MISS_NEST:
					if (v.n != 4)
						st_.fail(fmt::format("{}: MISS attribute of {} bytes", where, v.n));
					break;
				default:
					break;
				}
			}
		}
		r.acked.insert(e.msg.nlmsg_seq);
		if (e.error)
			r.errors[e.msg.nlmsg_seq] = -e.error;
		st_.by_errno[errname(-e.error)]++;
	}

	void check_reply(const std::uint8_t *p, const nlmsghdr &h, Reply &r)
	{
		if (h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
			st_.fail(fmt::format("reply type {} of {} bytes: no genl header", h.nlmsg_type,
					     h.nlmsg_len));
			return;
		}
		genlmsghdr g;
		std::memcpy(&g, p + NLMSG_HDRLEN, sizeof(g));
		Span body{p + NLMSG_HDRLEN + GENL_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN};
		std::string why;
		if (!attrs_ok(body, 0, why)) {
			st_.fail(fmt::format("reply cmd {}: {}", g.cmd, why));
			return;
		}
		st_.replies++;
		if (h.nlmsg_flags & NLM_F_MULTI)
			st_.dump_parts++;
		if (h.nlmsg_type != family_)
			return;  // nlctrl: well formed is all we ask
		if (g.cmd == FXBLK_CMD_STATUS)
			r.got_status = true;
		Vol v{~0u, {}};
		for (auto &[t, a] : attrs_of(body)) {
			if ((t & nla_type_mask) == FXBLK_ATTR_NAME && a.n)
				v.name.assign(reinterpret_cast<const char *>(a.p),
					      strnlen(reinterpret_cast<const char *>(a.p), a.n));
			if ((t & nla_type_mask) == FXBLK_ATTR_INDEX && u32_of(a))
				v.index = *u32_of(a);
		}
		if (g.cmd == FXBLK_CMD_CREATE)
			r.created.push_back(v.name);
		if (g.cmd == FXBLK_CMD_GET && !v.name.empty())
			r.volumes.push_back(v);
	}

	void parse_datagram(const Bytes &in, const std::set<std::uint32_t> &seqs, std::uint32_t portid,
			    Reply &r)
	{
		std::size_t off = 0;
		while (off < in.size()) {
			nlmsghdr h;
			if (in.size() - off < NLMSG_HDRLEN) {
				st_.fail(fmt::format("{} trailing bytes after the last reply", in.size() - off));
				return;
			}
			std::memcpy(&h, in.data() + off, sizeof(h));
			if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > in.size() - off) {
				st_.fail(fmt::format("reply nlmsg_len {} out of range ({} bytes left)",
						     h.nlmsg_len, in.size() - off));
				return;
			}
			if (h.nlmsg_pid != portid)
				st_.fail(fmt::format("reply for port {}, we are {}", h.nlmsg_pid, portid));
			const std::uint8_t *p = in.data() + off;
			r.messages++;
			if (h.nlmsg_type == NLMSG_ERROR) {
				check_error(p, h, seqs, r);
			} else if (h.nlmsg_type == NLMSG_DONE) {
				if (h.nlmsg_len < NLMSG_HDRLEN + sizeof(int)) {
					st_.fail("NLMSG_DONE without its error field");
				} else {
					int err;
					std::memcpy(&err, p + NLMSG_HDRLEN, sizeof(err));
					if (err > 0 || err < -4095)
						st_.fail(fmt::format("NLMSG_DONE error {}", err));
					else if (err)
						r.errors[h.nlmsg_seq] = -err;
				}
				if (!seqs.count(h.nlmsg_seq))
					st_.fail(fmt::format("NLMSG_DONE seq {} answers no request", h.nlmsg_seq));
				r.done.insert(h.nlmsg_seq);
				st_.dumps_done++;
			} else if (h.nlmsg_type == family_ || h.nlmsg_type == GENL_ID_CTRL) {
				if (!seqs.count(h.nlmsg_seq))
					st_.fail(fmt::format("reply seq {} answers no request", h.nlmsg_seq));
				check_reply(p, h, r);
			} else {
				st_.fail(fmt::format("reply of unexpected type {}", h.nlmsg_type));
			}
			off += NLMSG_ALIGN(h.nlmsg_len);
		}
	}

	// What the datagram must get back: an ack for each request that asked
	// for one, NLMSG_DONE or an error for each dump.
	std::set<std::uint32_t> expected(const Bytes &b, std::set<std::uint32_t> &dumps)
	{
		std::set<std::uint32_t> want;
		for (const auto &p : parts_of(b)) {
			const nlmsghdr &h = p.h;
			if (!(h.nlmsg_flags & NLM_F_REQUEST) || h.nlmsg_type < NLMSG_MIN_TYPE)
				continue;
			bool dump = (h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
			if (dump)
				dumps.insert(h.nlmsg_seq);
			if (dump || (h.nlmsg_flags & NLM_F_ACK))
				want.insert(h.nlmsg_seq);
		}
		return want;
	}

	Reply transact(NlSock &s, const Bytes &dgram)
	{
		std::set<std::uint32_t> seqs, dumps;
		for (const auto &p : parts_of(dgram))
			seqs.insert(p.h.nlmsg_seq);
		std::set<std::uint32_t> want = expected(dgram, dumps);
		Reply r;
		if (int e = s.send(dgram)) {
			// netlink refuses an empty datagram (with a log line, once)
			if (dgram.empty() && e == ENODATA)
				return r;
			throw SysError(fmt::format("sendto ({} bytes)", dgram.size()), e);
		}
		// A doit runs inside sendto, and so does a dump's first part: what
		// is not queued now never comes, unless a dump is still running.
		for (;;) {
			bool dump_open = false;
			for (auto d : dumps)
				if (!r.done.count(d) && !r.errors.count(d) && !r.acked.count(d))
					dump_open = true;
			std::vector<Bytes> in;
			int e = s.recv_many(in, dump_open);
			if (e == EAGAIN)
				break;
			if (e)
				throw SysError("recvmmsg", e);
			for (const auto &d : in)
				parse_datagram(d, seqs, s.portid(), r);
		}
		for (auto w : want)
			if (!r.acked.count(w) && !r.done.count(w))
				st_.fail(fmt::format("request seq {} got neither an ack nor NLMSG_DONE", w));
		return r;
	}

	void exchange(const Bytes &dgram)
	{
		if (dry_run_) {
			st_.parsed += parts_of(dgram).size();
			return;
		}
		auto t0 = std::chrono::steady_clock::now();
		Reply r = transact(sock_, dgram);
		double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		st_.kernel_secs += dt;
		auto &c = st_.cost[category(dgram)];
		c.first++;
		c.second += dt;
		st_.parsed += parts_of(dgram).size();
		if (!r.messages)
			st_.no_reply++;
		// A DESTROY later in the same datagram may have removed what a
		// CREATE made (the kernel's log shows both): gone is what counts.
		bool destroyed_here = false;
		for (const auto &p : parts_of(dgram))
			if (p.h.nlmsg_type == family_ && p.h.nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN &&
			    dgram[p.off + NLMSG_HDRLEN] == FXBLK_CMD_DESTROY &&
			    r.acked.count(p.h.nlmsg_seq) && !r.errors.count(p.h.nlmsg_seq))
				destroyed_here = true;
		for (const auto &name : r.created) {
			st_.created++;
			if (destroyed_here && !listed(name)) {
				st_.destroyed++;
				continue;
			}
			destroy(name);
		}
		if (!r.created.empty())
			scan_devs();
	}

	void destroy(const std::string &name)
	{
		if (existing_names_.count(name))
			return;
		Msg d;
		d.type = family_;
		d.cmd = FXBLK_CMD_DESTROY;
		d.attrs.push_back(Attr::leaf(FXBLK_ATTR_NAME, str0(name)));
		Reply r;
		// udev (outside the lab) may hold a new fxN open for a moment: EBUSY
		for (int tries = 0; tries < 50; tries++) {
			d.seq = ++seq_;
			r = transact(sock_, d.bytes());
			if (!r.errors.count(d.seq) || r.errors[d.seq] != EBUSY)
				break;
			::usleep(100000);
		}
		// another fuzzer's DESTROY (by index) got there first
		if (shared_ && r.errors.count(d.seq) && r.errors[d.seq] == ENOENT && !listed(name))
			st_.destroyed++;
		else if (!r.acked.count(d.seq) || r.errors.count(d.seq))
			st_.fail(fmt::format("could not destroy volume \"{}\" the fuzzer created: {}", name,
					     errname(r.errors.count(d.seq) ? r.errors[d.seq] : 0)));
		else
			st_.destroyed++;
	}

	bool listed(const std::string &name)
	{
		for (const auto &v : list_volumes())
			if (v.name == name)
				return true;
		return false;
	}

	void cleanup_created()
	{
		for (const auto &v : list_volumes())
			if (!existing_names_.count(v.name)) {
				std::cout << fmt::format("fxblk-fuzz: removing left-over volume \"{}\"\n", v.name);
				destroy(v.name);
			}
	}

	// A dump started on a socket that is closed without reading it.
	void abandon_dump()
	{
		NlSock s;
		Msg d;
		d.type = chance(80) ? family_ : GENL_ID_CTRL;
		d.cmd = d.type == family_ ? std::uint8_t{FXBLK_CMD_GET} : std::uint8_t{CTRL_CMD_GETPOLICY};
		d.version = 1;
		if (d.type == GENL_ID_CTRL)
			d.attrs.push_back(Attr::leaf(CTRL_ATTR_FAMILY_ID, le(family_)));
		d.flags = NLM_F_REQUEST | NLM_F_DUMP;
		d.seq = ++seq_;
		if (int e = s.send(d.bytes()))
			throw SysError("sendto (abandoned dump)", e);
		st_.abandoned_dumps++;
	}
};

std::optional<Member> member_of(const std::string &arg)
{
	struct stat sb;
	unsigned maj, min;
	dev_t dev;
	if (std::sscanf(arg.c_str(), "%u:%u", &maj, &min) == 2) {
		dev = makedev(maj, min);
	} else if (::stat(arg.c_str(), &sb) == 0 && S_ISBLK(sb.st_mode)) {
		dev = sb.st_rdev;
	} else {
		return std::nullopt;
	}
	std::string p = fmt::format("/sys/dev/block/{}:{}/size", major(dev), minor(dev));
	FILE *f = std::fopen(p.c_str(), "r");
	if (!f)
		return std::nullopt;
	unsigned long long sectors = 0;
	int n = std::fscanf(f, "%llu", &sectors);
	std::fclose(f);
	if (n != 1)
		return std::nullopt;
	return Member{dev, sectors};
}

}  // namespace

int main(int argc, char **argv)
{
	po::options_description opts(
		"Usage: fxblk-fuzz [--seed N] [--count N] [--threads N] [--member DEV]...\n"
		"Sends random and mutated messages to netlink family \"fxblk\" and checks\n"
		"every answer. Without --member, CREATE names only devices that do not exist.\n"
		"Options");
	opts.add_options()
		("seed", po::value<std::uint64_t>()->default_value(1), "random seed")
		("count", po::value<std::uint64_t>()->default_value(10000),
		 "messages to send: this many with a valid nlmsg header (dispatched by "
		 "netlink), plus those behind a broken header in their datagram")
		("member", po::value<std::vector<std::string>>(),
		 "controlled mode: a scratch block device (path or MAJ:MIN) that CREATEs may "
		 "use; volumes made over it are destroyed at once")
		("verbose,v", "print every extack message")
		("threads", po::value<unsigned>()->default_value(1),
		 "fuzzers at once, each with its own socket and seed (SEED, SEED+1, ...); "
		 "--count is shared among them")
		("break-ack", "self-test: corrupt the first ack received (the run must fail)")
		("dry-run", "generate the messages but send nothing (profiling)")
		("help,h", "show this help");
	po::variables_map vm;
	std::vector<Member> members;
	try {
		po::store(po::parse_command_line(argc, argv, opts), vm);
		po::notify(vm);
		if (vm.count("member"))
			for (const auto &a : vm["member"].as<std::vector<std::string>>()) {
				auto m = member_of(a);
				if (!m)
					throw po::error("--member " + a + ": not a block device");
				members.push_back(*m);
			}
		if (vm["threads"].as<unsigned>() < 1 || vm["threads"].as<unsigned>() > 64)
			throw po::error("--threads must be 1..64");
	} catch (const po::error &e) {
		std::cerr << "fxblk-fuzz: " << e.what() << '\n';
		return 2;
	}
	if (vm.count("help")) {
		std::cout << opts;
		return 0;
	}
	std::uint64_t seed = vm["seed"].as<std::uint64_t>();
	std::uint64_t count = vm["count"].as<std::uint64_t>();
	try {
		unsigned threads = vm["threads"].as<unsigned>();
		bool dry = vm.count("dry-run") > 0;
		auto t0 = std::chrono::steady_clock::now();
		// All made (each takes its snapshot of the volumes) before any runs.
		std::vector<std::unique_ptr<Fuzzer>> fz;
		for (unsigned i = 0; i < threads; i++) {
			fz.push_back(std::make_unique<Fuzzer>(seed + i, members, vm.count("verbose") > 0,
							      vm.count("break-ack") > 0 && i == 0, dry));
			fz.back()->set_shared(threads > 1);
		}
		std::vector<std::exception_ptr> errors(threads);
		{
			std::vector<std::jthread> run;
			for (unsigned i = 0; i < threads; i++)
				run.emplace_back([&, i] {
					try {
						fz[i]->run((count + threads - 1) / threads);
					} catch (...) {
						errors[i] = std::current_exception();
					}
				});
		}
		for (const auto &e : errors)
			if (e)
				std::rethrow_exception(e);
		if (threads > 1) {
			fz[0]->set_shared(false);
			fz[0]->cleanup();
		}
		if (!dry)
			for (auto &f : fz)
				f->final_check();
		double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		Stats st;
		for (auto &f : fz)
			st.add(f->stats());
		std::cout << fmt::format(
			"fxblk-fuzz: seed {}, {} messages in {} datagrams, {:.1f} s ({:.0f}/s, {:.1f} s "
			"in send/receive), {} controlled members, {} thread(s)\n",
			seed, st.messages, st.datagrams, secs, static_cast<double>(st.messages) / secs,
			st.kernel_secs, members.size(), threads);
		std::cout << fmt::format("fxblk-fuzz: {} messages had a valid nlmsg header and "
					 "were dispatched by netlink\n",
					 st.parsed);
		std::string errs;
		for (const auto &[name, n] : st.by_errno)
			errs += fmt::format(" {} {},", name, n);
		if (!errs.empty())
			errs.pop_back();
		std::cout << fmt::format("fxblk-fuzz: acks by errno:{}\n", errs);
		std::string cmds;
		for (const auto &[name, n] : st.by_cmd)
			cmds += fmt::format(" {}:{}", name, n);
		std::cout << fmt::format(
			"fxblk-fuzz: replies {} (dump parts {}, dumps done {}), datagrams without "
			"any answer {}, nlctrl requests {}, abandoned dumps {}, commands{}\n",
			st.replies, st.dump_parts, st.dumps_done, st.no_reply, st.ctrl,
			st.abandoned_dumps, cmds);
		std::cout << fmt::format(
			"fxblk-fuzz: volumes created {} (destroyed {}), unsafe datagrams not sent {}, "
			"extack messages echoing control characters {}\n",
			st.created, st.destroyed, st.unsafe_skipped, st.extack_ctrl);
		std::string cost;
		for (const auto &[name, c] : st.cost)
			cost += fmt::format(" {} {}/{:.1f}s", name, c.first, c.second);
		std::cout << fmt::format("fxblk-fuzz: datagrams/time by first message:{}\n", cost);
		for (const auto &f : st.failures)
			std::cout << "fxblk-fuzz: FAIL: " << f << '\n';
		if (st.failures_total) {
			std::cout << fmt::format("fxblk-fuzz: {} failed checks\n", st.failures_total);
			return 1;
		}
		std::cout << "fxblk-fuzz: all answers well formed\n";
		return 0;
	} catch (const std::exception &e) {
		std::cerr << "fxblk-fuzz: " << e.what() << '\n';
		return 1;
	}
}
