// fxblk-nltest: send deliberately malformed requests to netlink family
// "fxblk" and check that each is refused with the expected errno and an
// extack message. Run inside the lab VM, as root; with --expect-eperm it
// drops to an unprivileged user first and checks that state-changing
// commands are refused with EPERM while queries still work. With
// --live-volumes it only prints the module's FXBLK_ATTR_LIVE_VOLUMES from
// STATUS (volumes allocated and not yet freed), for the lab's leak test.
//
// Exit status: 0 if every case got the expected result, 1 otherwise,
// 2 on a usage error; --live-volumes: 0, 1 on error, 3 (and "absent") if the
// module does not report the attribute.
#include "error.hpp"
#include "genl_socket.hpp"

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <grp.h>
#include <iostream>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <string>
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

}  // namespace

int main(int argc, char **argv)
{
	po::options_description opts("Usage: fxblk-nltest [--expect-eperm] [--as-uid UID] | --live-volumes\n"
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
