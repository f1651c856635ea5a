// fxblk-nltest: send deliberately malformed requests to netlink family
// "fxblk" and check that each is refused with the expected errno and an
// extack message. Run inside the lab VM, as root; with --expect-eperm it
// drops to an unprivileged user first and checks that state-changing
// commands are refused with EPERM while queries still work. With
// --live-volumes it only prints the module's FXBLK_ATTR_LIVE_VOLUMES from
// STATUS (volumes allocated and not yet freed), for the lab's leak test.
//
// Expect mode (--cmd): send ONE request built from the command line and
// check the kernel's answer: errno (--expect) and extack text (--extack, an
// ECMAScript regex). Used by lab tests to reach the module's own refusals
// (duplicate member, block-size mismatch, offsets, max_volumes, ...):
//   fxblk-nltest --cmd create --name v --member /dev/nvme0n1
//       --member /dev/nvme0n1 --expect EINVAL --extack 'duplicates member'
// A volume a CREATE made is destroyed again unless --keep. --skip-if-ok
// REASON turns an unexpected success into "SKIP: REASON" (exit 77), for
// checks the module may not implement yet; --require-feature NAME skips
// (exit 77) when STATUS lacks that FXBLK_FEAT_* bit.
//
// Exit status: 0 if every case got the expected result, 1 otherwise,
// 2 on a usage error, 77 for a skip in expect mode; --live-volumes: 0, 1 on
// error, 3 (and "absent") if the module does not report the attribute.
#include "error.hpp"
#include "genl_socket.hpp"
#include "label.hpp"

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <grp.h>
#include <iostream>
#include <linux/genetlink.h>
#include <map>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <optional>
#include <regex>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

namespace {
using namespace fxctl;
namespace po = boost::program_options;

struct Case {
	std::string name;
	std::uint8_t cmd;
	int expect;  // errno, 0 = must succeed
	std::function<void(nl_msg *)> fill;
	int flags = 0;
};

void put_member(nl_msg *msg, std::uint32_t major, std::uint32_t minor)
{
	nlattr *members = nla_nest_start(msg, FXBLK_ATTR_MEMBERS | NLA_F_NESTED);
	nlattr *m = nla_nest_start(msg, FXBLK_ATTR_MEMBER | NLA_F_NESTED);
	nla_put_u32(msg, FXBLK_MEMBER_ATTR_MAJOR, major);
	nla_put_u32(msg, FXBLK_MEMBER_ATTR_MINOR, minor);
	nla_put_u64(msg, FXBLK_MEMBER_ATTR_DATA_OFFSET, 8192);
	nla_nest_end(msg, m);
	nla_nest_end(msg, members);
}

// A CREATE that is well-formed apart from what @tweak changes. The member
// is 0:0 (no such device), so even a module that skipped a check would
// refuse it later; the test then sees ENODEV/ENXIO instead of EINVAL.
std::function<void(nl_msg *)> create_with(std::string name, std::uint32_t chunk)
{
	return [=](nl_msg *msg) {
		nla_put_string(msg, FXBLK_ATTR_NAME, name.c_str());
		nla_put_u32(msg, FXBLK_ATTR_CHUNK_SECTORS, chunk);
		put_member(msg, 0, 0);
	};
}

std::vector<Case> malformed_cases()
{
	const std::string too_long(FXBLK_NAME_MAX + 8, 'n');
	return {
		{"GET: INDEX is a u16, policy says u32", FXBLK_CMD_GET, EINVAL,
		 [](nl_msg *m) { nla_put_u16(m, FXBLK_ATTR_INDEX, 0); }},
		{"GET: CAPACITY is a u32, policy says u64", FXBLK_CMD_GET, EINVAL,
		 [](nl_msg *m) {
			 nla_put_u32(m, FXBLK_ATTR_INDEX, 0);
			 nla_put_u32(m, FXBLK_ATTR_CAPACITY, 1);
		 }},
		{"GET: unknown attribute type FXBLK_ATTR_MAX+1 (strict)", FXBLK_CMD_GET, EINVAL,
		 [](nl_msg *m) {
			 nla_put_u32(m, FXBLK_ATTR_INDEX, 0);
			 nla_put_u32(m, FXBLK_ATTR_MAX + 1, 0);
		 }},
		{"GET: NAME longer than FXBLK_NAME_MAX", FXBLK_CMD_GET, EINVAL,
		 [=](nl_msg *m) { nla_put_string(m, FXBLK_ATTR_NAME, too_long.c_str()); }},
		{"GET: neither NAME nor INDEX", FXBLK_CMD_GET, EINVAL, [](nl_msg *) {}},
		{"STATS: neither NAME nor INDEX", FXBLK_CMD_STATS, EINVAL, [](nl_msg *) {}},
		{"DESTROY: neither NAME nor INDEX", FXBLK_CMD_DESTROY, EINVAL, [](nl_msg *) {}},
		{"STATUS: attribute length runs past the message", FXBLK_CMD_STATUS, EINVAL,
		 [](nl_msg *m) {
			 // Header claims 64 bytes of payload, only 4 follow.
			 struct { nlattr hdr; std::uint32_t val; } bogus{
				 {64 + NLA_HDRLEN, FXBLK_ATTR_INDEX}, 0};
			 nlmsg_append(m, &bogus, sizeof(bogus), NLMSG_ALIGNTO);
		 }},
		{"CREATE: NAME longer than FXBLK_NAME_MAX", FXBLK_CMD_CREATE, EINVAL,
		 create_with(too_long, FXBLK_CHUNK_DEF_SECTORS)},
		{"CREATE: chunk 4 sectors, below 4 KiB", FXBLK_CMD_CREATE, EINVAL,
		 create_with("nltest", 4)},
		{"CREATE: chunk 65536 sectors, above 16 MiB", FXBLK_CMD_CREATE, EINVAL,
		 create_with("nltest", 65536)},
		{"CREATE: chunk 1000 sectors, not a power of two", FXBLK_CMD_CREATE, EINVAL,
		 create_with("nltest", 1000)},
		{"CREATE: CHUNK_SECTORS is a u64", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 nla_put_string(m, FXBLK_ATTR_NAME, "nltest");
			 nla_put_u64(m, FXBLK_ATTR_CHUNK_SECTORS, FXBLK_CHUNK_DEF_SECTORS);
			 put_member(m, 0, 0);
		 }},
		{"CREATE: UUID of 15 bytes", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 create_with("nltest", FXBLK_CHUNK_DEF_SECTORS)(m);
			 std::uint8_t u[FXBLK_UUID_LEN - 1] = {1};
			 nla_put(m, FXBLK_ATTR_UUID, sizeof(u), u);
		 }},
		{"CREATE: UUID of 17 bytes", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 create_with("nltest", FXBLK_CHUNK_DEF_SECTORS)(m);
			 std::uint8_t u[FXBLK_UUID_LEN + 1] = {1};
			 nla_put(m, FXBLK_ATTR_UUID, sizeof(u), u);
		 }},
		{"CREATE: UUID all zeroes", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 create_with("nltest", FXBLK_CHUNK_DEF_SECTORS)(m);
			 std::uint8_t u[FXBLK_UUID_LEN] = {};
			 nla_put(m, FXBLK_ATTR_UUID, sizeof(u), u);
		 }},
		{"CREATE: missing NAME", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 nla_put_u32(m, FXBLK_ATTR_CHUNK_SECTORS, FXBLK_CHUNK_DEF_SECTORS);
			 put_member(m, 0, 0);
		 }},
		{"CREATE: missing MEMBERS", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 nla_put_string(m, FXBLK_ATTR_NAME, "nltest");
			 nla_put_u32(m, FXBLK_ATTR_CHUNK_SECTORS, FXBLK_CHUNK_DEF_SECTORS);
		 }},
		{"CREATE: member MAJOR is a u64", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 nla_put_string(m, FXBLK_ATTR_NAME, "nltest");
			 nla_put_u32(m, FXBLK_ATTR_CHUNK_SECTORS, FXBLK_CHUNK_DEF_SECTORS);
			 nlattr *ms = nla_nest_start(m, FXBLK_ATTR_MEMBERS | NLA_F_NESTED);
			 nlattr *one = nla_nest_start(m, FXBLK_ATTR_MEMBER | NLA_F_NESTED);
			 nla_put_u64(m, FXBLK_MEMBER_ATTR_MAJOR, 0);
			 nla_put_u32(m, FXBLK_MEMBER_ATTR_MINOR, 0);
			 nla_put_u64(m, FXBLK_MEMBER_ATTR_DATA_OFFSET, 8192);
			 nla_nest_end(m, one);
			 nla_nest_end(m, ms);
		 }},
		{"CREATE: MEMBERS nest without NLA_F_NESTED (strict)", FXBLK_CMD_CREATE, EINVAL,
		 [](nl_msg *m) {
			 nla_put_string(m, FXBLK_ATTR_NAME, "nltest");
			 nla_put_u32(m, FXBLK_ATTR_CHUNK_SECTORS, FXBLK_CHUNK_DEF_SECTORS);
			 nlattr *ms = nla_nest_start(m, FXBLK_ATTR_MEMBERS);
			 nlattr *one = nla_nest_start(m, FXBLK_ATTR_MEMBER);
			 nla_put_u32(m, FXBLK_MEMBER_ATTR_MAJOR, 0);
			 nla_put_u32(m, FXBLK_MEMBER_ATTR_MINOR, 0);
			 nla_put_u64(m, FXBLK_MEMBER_ATTR_DATA_OFFSET, 8192);
			 nla_nest_end(m, one);
			 nla_nest_end(m, ms);
			 // libnl >= 3.5 sets the flag itself: take it off again.
			 ms->nla_type &= static_cast<std::uint16_t>(~NLA_F_NESTED);
			 one->nla_type &= static_cast<std::uint16_t>(~NLA_F_NESTED);
		 }},
	};
}

std::vector<Case> eperm_cases()
{
	return {
		{"STATUS unprivileged (must work)", FXBLK_CMD_STATUS, 0, [](nl_msg *) {}},
		{"GET dump unprivileged (must work)", FXBLK_CMD_GET, 0, [](nl_msg *) {},
		 NLM_F_DUMP},
		{"CREATE unprivileged", FXBLK_CMD_CREATE, EPERM,
		 create_with("nltest", FXBLK_CHUNK_DEF_SECTORS)},
		{"DESTROY unprivileged", FXBLK_CMD_DESTROY, EPERM,
		 [](nl_msg *m) { nla_put_string(m, FXBLK_ATTR_NAME, "nltest"); }},
	};
}

void drop_privileges(uid_t uid)
{
	if (geteuid() != 0)
		return;  // already unprivileged
	gid_t gid = static_cast<gid_t>(uid);
	if (setgroups(0, nullptr) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		throw Error(fmt::format("cannot drop privileges to uid {}: {}", uid,
					std::strerror(errno)));
	if (setuid(0) == 0)
		throw Error("still able to regain root after dropping privileges");
}

// Prints FXBLK_ATTR_LIVE_VOLUMES of a STATUS reply, or "absent".
int live_volumes()
{
	GenlSocket sock;
	msg_ptr msg = new_genl_msg(sock.family(), FXBLK_CMD_STATUS, 0);
	long live = -1;
	auto r = sock.transact(msg.get(), [&](nlmsghdr *nlh) {
		nlattr *tb[FXBLK_ATTR_MAX + 1];
		if (genlmsg_parse(nlh, 0, tb, FXBLK_ATTR_MAX, nullptr) == 0 &&
		    tb[FXBLK_ATTR_LIVE_VOLUMES] &&
		    nla_len(tb[FXBLK_ATTR_LIVE_VOLUMES]) >= static_cast<int>(sizeof(std::uint32_t)))
			live = nla_get_u32(tb[FXBLK_ATTR_LIVE_VOLUMES]);
	});
	if (r.err) {
		std::cerr << fmt::format("fxblk-nltest: STATUS failed: {}{}\n", errno_name(r.err),
					 r.extack.empty() ? "" : " \"" + r.extack + "\"");
		return 1;
	}
	if (live < 0) {
		std::cout << "absent\n";
		return 3;
	}
	std::cout << live << '\n';
	return 0;
}

// ---- expect mode ---------------------------------------------------------

int parse_errno(const std::string &s)
{
	if (s == "0" || s == "OK")
		return 0;
	for (int e = 1; e < 200; e++)
		if (const char *n = strerrorname_np(e); n && s == n)
			return e;
	try {
		return std::stoi(s);
	} catch (const std::exception &) {
		throw po::error("--expect " + s + ": not an errno name or number");
	}
}

std::uint64_t parse_u64(const std::string &s)
{
	if (s == "max")
		return ~0ULL;
	std::size_t end = 0;
	std::uint64_t v = std::stoull(s, &end, 0);
	if (end != s.size())
		throw po::error("bad number " + s);
	return v;
}

// DEV[,off=SECTORS][,sectors=SECTORS]; DEV is a block device path or MAJ:MIN
// (which need not exist). "max" is 2^64-1.
struct MemberArg {
	std::uint32_t major = 0, minor = 0;
	std::optional<std::uint64_t> off, sectors;
};

MemberArg parse_member(const std::string &arg)
{
	MemberArg m;
	std::string dev = arg.substr(0, arg.find(','));
	unsigned maj, min;
	char tail;
	struct stat sb;
	if (std::sscanf(dev.c_str(), "%u:%u%c", &maj, &min, &tail) == 2) {
		m.major = maj;
		m.minor = min;
	} else if (::stat(dev.c_str(), &sb) == 0 && S_ISBLK(sb.st_mode)) {
		m.major = major(sb.st_rdev);
		m.minor = minor(sb.st_rdev);
	} else {
		throw po::error("--member " + arg + ": " + dev + " is not a block device or MAJ:MIN");
	}
	for (std::size_t pos = arg.find(','); pos != std::string::npos;) {
		std::size_t next = arg.find(',', pos + 1);
		std::string kv = arg.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
		if (kv.rfind("off=", 0) == 0)
			m.off = parse_u64(kv.substr(4));
		else if (kv.rfind("sectors=", 0) == 0)
			m.sectors = parse_u64(kv.substr(8));
		else
			throw po::error("--member " + arg + ": unknown " + kv);
		pos = next;
	}
	return m;
}

std::uint8_t parse_cmd(const std::string &s)
{
	static const std::map<std::string, std::uint8_t> cmds = {
		{"status", FXBLK_CMD_STATUS}, {"create", FXBLK_CMD_CREATE},
		{"destroy", FXBLK_CMD_DESTROY}, {"get", FXBLK_CMD_GET},
		{"stats", FXBLK_CMD_STATS},   {"event", FXBLK_CMD_EVENT}};
	auto it = cmds.find(s);
	if (it == cmds.end())
		throw po::error("--cmd " + s + ": one of status create destroy get stats event");
	return it->second;
}

std::uint64_t features(GenlSocket &sock)
{
	std::uint64_t f = 0;
	msg_ptr msg = new_genl_msg(sock.family(), FXBLK_CMD_STATUS);
	auto r = sock.transact(msg.get(), [&](nlmsghdr *nlh) {
		auto *g = static_cast<genlmsghdr *>(nlmsg_data(nlh));
		int len = nlmsg_datalen(nlh) - GENL_HDRLEN;
		auto *head = reinterpret_cast<nlattr *>(reinterpret_cast<char *>(g) + GENL_HDRLEN);
		if (nlattr *a = nla_find(head, len, FXBLK_ATTR_FEATURES); a && nla_len(a) == 8)
			f = nla_get_u64(a);
	});
	if (r.err)
		throw Error("STATUS failed: " + errno_name(r.err));
	return f;
}

void destroy_by_name(GenlSocket &sock, const std::string &name)
{
	msg_ptr msg = new_genl_msg(sock.family(), FXBLK_CMD_DESTROY);
	nla_put_string(msg.get(), FXBLK_ATTR_NAME, name.c_str());
	auto r = sock.transact(msg.get(), [](nlmsghdr *) {});
	std::cout << fmt::format("  (destroyed volume \"{}\" again: {})\n", name, errno_name(r.err));
}

int run_expect(const po::variables_map &vm)
{
	std::uint8_t cmd = parse_cmd(vm["cmd"].as<std::string>());
	int want = parse_errno(vm["expect"].as<std::string>());
	std::string label = vm.count("label") ? vm["label"].as<std::string>()
					      : vm["cmd"].as<std::string>();
	std::vector<MemberArg> members;
	if (vm.count("member"))
		for (const auto &a : vm["member"].as<std::vector<std::string>>())
			members.push_back(parse_member(a));
	std::optional<std::regex> re;
	if (vm.count("extack"))
		re.emplace(vm["extack"].as<std::string>(), std::regex::ECMAScript);

	GenlSocket sock;
	if (vm.count("require-feature")) {
		static const std::map<std::string, std::uint64_t> bits = {
			{"stripe", FXBLK_FEAT_STRIPE}, {"stats", FXBLK_FEAT_STATS},
			{"events", FXBLK_FEAT_EVENTS}, {"nowait", FXBLK_FEAT_NOWAIT},
			{"health", FXBLK_FEAT_HEALTH}};
		std::string f = vm["require-feature"].as<std::string>();
		auto it = bits.find(f);
		if (it == bits.end())
			throw po::error("--require-feature " + f + ": unknown");
		if (!(features(sock) & it->second)) {
			std::cout << fmt::format("SKIP: {}: the module does not report feature {}\n", label, f);
			return 77;
		}
	}

	msg_ptr msg = new_genl_msg(sock.family(), cmd);
	nl_msg *m = msg.get();
	std::string name = vm.count("name") ? vm["name"].as<std::string>() : "";
	if (vm.count("name"))
		nla_put_string(m, FXBLK_ATTR_NAME, name.c_str());
	if (vm.count("index"))
		nla_put_u32(m, FXBLK_ATTR_INDEX, vm["index"].as<std::uint32_t>());
	if (vm.count("chunk"))
		nla_put_u32(m, FXBLK_ATTR_CHUNK_SECTORS, vm["chunk"].as<std::uint32_t>());
	if (vm.count("force"))
		nla_put_flag(m, FXBLK_ATTR_FORCE);
	if (vm.count("uuid")) {
		auto u = label::uuid_from_string(vm["uuid"].as<std::string>());
		if (!u)
			throw po::error("--uuid " + vm["uuid"].as<std::string>() +
					": not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
		nla_put(m, FXBLK_ATTR_UUID, FXBLK_UUID_LEN, u->data());
	}
	if (!members.empty()) {
		nlattr *ms = nla_nest_start(m, FXBLK_ATTR_MEMBERS | NLA_F_NESTED);
		for (const auto &a : members) {
			nlattr *one = nla_nest_start(m, FXBLK_ATTR_MEMBER | NLA_F_NESTED);
			nla_put_u32(m, FXBLK_MEMBER_ATTR_MAJOR, a.major);
			nla_put_u32(m, FXBLK_MEMBER_ATTR_MINOR, a.minor);
			nla_put_u64(m, FXBLK_MEMBER_ATTR_DATA_OFFSET, a.off.value_or(8192));
			if (a.sectors)
				nla_put_u64(m, FXBLK_MEMBER_ATTR_DATA_SECTORS, *a.sectors);
			nla_nest_end(m, one);
		}
		nla_nest_end(m, ms);
	}
	if (vm.count("extra-attr")) {
		std::string t = vm["extra-attr"].as<std::string>();
		nla_put_u32(m, t == "unknown" ? FXBLK_ATTR_MAX + 1 : static_cast<int>(parse_u64(t)), 0);
	}

	auto r = sock.transact(m, [](nlmsghdr *) {});
	std::string got = errno_name(r.err) + (r.extack.empty() ? "" : " \"" + r.extack + "\"");
	bool created = cmd == FXBLK_CMD_CREATE && r.err == 0;
	int rc;
	if (r.err == 0 && want != 0 && vm.count("skip-if-ok")) {
		std::cout << fmt::format("SKIP: {}: {} (the module answered OK)\n", label,
					 vm["skip-if-ok"].as<std::string>());
		rc = 77;
	} else if (r.err != want) {
		std::cout << fmt::format("FAIL {}: {}, expected {}\n", label, got, errno_name(want));
		rc = 1;
	} else if (re && !std::regex_search(r.extack, *re)) {
		std::cout << fmt::format("FAIL {}: {}, extack does not match /{}/\n", label, got,
					 vm["extack"].as<std::string>());
		rc = 1;
	} else {
		std::cout << fmt::format("PASS {}: {}\n", label, got);
		rc = 0;
	}
	if (created && !vm.count("keep"))
		destroy_by_name(sock, name);
	return rc;
}

}  // namespace

int main(int argc, char **argv)
{
	po::options_description opts(
		"Usage: fxblk-nltest [--expect-eperm] [--as-uid UID] | --live-volumes\n"
		"       fxblk-nltest --cmd CMD [request options] --expect ERRNO [--extack REGEX]\n"
		"Options");
	opts.add_options()
		("expect-eperm", "drop root first; CREATE/DESTROY must get EPERM")
		("as-uid", po::value<unsigned>()->default_value(65534),
		 "unprivileged uid (and gid) for --expect-eperm")
		("no-extack", "do not require an extack message with every error "
			      "(EPERM from the genetlink core never has one)")
		("live-volumes", "only print STATUS's live volume count (\"absent\", "
				 "exit 3, if the module lacks FXBLK_ATTR_LIVE_VOLUMES)")
		("help,h", "show this help");
	po::options_description expect_opts("Expect mode: one request, checked");
	expect_opts.add_options()
		("cmd", po::value<std::string>(), "status|create|destroy|get|stats|event")
		("expect", po::value<std::string>()->default_value("0"),
		 "errno name (EINVAL) or number the kernel must answer; 0/OK: success")
		("extack", po::value<std::string>(), "regex the extack message must match")
		("label", po::value<std::string>(), "name of the case in the output")
		("name", po::value<std::string>(), "FXBLK_ATTR_NAME")
		("index", po::value<std::uint32_t>(), "FXBLK_ATTR_INDEX")
		("chunk", po::value<std::uint32_t>(), "FXBLK_ATTR_CHUNK_SECTORS")
		("uuid", po::value<std::string>(), "FXBLK_ATTR_UUID, in its text form")
		("member", po::value<std::vector<std::string>>(),
		 "DEV[,off=N][,sectors=N] (sectors; N may be 'max'); DEV a path or MAJ:MIN; "
		 "off defaults to 8192")
		("force", "FXBLK_ATTR_FORCE (DESTROY)")
		("extra-attr", po::value<std::string>(),
		 "add a u32 attribute of this type ('unknown': FXBLK_ATTR_MAX + 1)")
		("keep", "keep a volume the request created")
		("skip-if-ok", po::value<std::string>(),
		 "if the kernel accepts what should be refused: print SKIP with this reason, exit 77")
		("require-feature", po::value<std::string>(),
		 "skip (exit 77) unless STATUS reports this feature (stripe stats events nowait health)");
	opts.add(expect_opts);
	po::variables_map vm;
	try {
		po::store(po::parse_command_line(argc, argv, opts), vm);
		po::notify(vm);
	} catch (const po::error &e) {
		std::cerr << "fxblk-nltest: " << e.what() << '\n';
		return 2;
	}
	if (vm.count("help")) {
		std::cout << opts;
		return 0;
	}
	if (vm.count("live-volumes")) {
		try {
			return live_volumes();
		} catch (const std::exception &e) {
			std::cerr << "fxblk-nltest: " << e.what() << '\n';
			return 1;
		}
	}
	if (vm.count("cmd")) {
		try {
			return run_expect(vm);
		} catch (const po::error &e) {
			std::cerr << "fxblk-nltest: " << e.what() << '\n';
			return 2;
		} catch (const std::exception &e) {
			std::cerr << "fxblk-nltest: " << e.what() << '\n';
			return 1;
		}
	}
	bool eperm = vm.count("expect-eperm") > 0;
	bool need_extack = !vm.count("no-extack");
	try {
		if (eperm)
			drop_privileges(vm["as-uid"].as<unsigned>());
		else if (geteuid() != 0)
			std::cerr << "fxblk-nltest: warning: not root; admin commands will get "
				     "EPERM before any validation\n";
		GenlSocket sock;
		int passed = 0, failed = 0;
		for (const auto &c : eperm ? eperm_cases() : malformed_cases()) {
			msg_ptr msg = new_genl_msg(sock.family(), c.cmd, c.flags);
			c.fill(msg.get());
			auto r = sock.transact(msg.get(), [](nlmsghdr *) {});
			// The genetlink core refuses GENL_ADMIN_PERM ops before the
			// family sees them, without an extack: don't ask for one.
			bool want_extack = need_extack && r.err && r.err != EPERM;
			bool ok = r.err == c.expect && (!want_extack || !r.extack.empty());
			std::string why;
			if (r.err != c.expect)
				why = fmt::format(", expected {}", errno_name(c.expect));
			else if (!ok)
				why = ", but no extack message";
			std::cout << fmt::format("{} {}: {}{}{}\n", ok ? "PASS" : "FAIL", c.name,
						 errno_name(r.err),
						 r.extack.empty() ? "" : " \"" + r.extack + "\"", why);
			(ok ? passed : failed)++;
		}
		std::cout << fmt::format("fxblk-nltest: {} passed, {} failed\n", passed, failed);
		return failed ? 1 : 0;
	} catch (const std::exception &e) {
		std::cerr << "fxblk-nltest: " << e.what() << '\n';
		return 1;
	}
}
