// Host ownership and the auto-assembly policy (ownership.hpp): fxblk.conf
// parsing, the kernel command line switch, and which labels start by
// themselves on this host.
#include "error.hpp"
#include "ownership.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace fxctl;

namespace {

const std::string host_a = "nqn.2014-08.org.nvmexpress:uuid:host-a";
const std::string host_b = "nqn.2014-08.org.nvmexpress:uuid:host-b";

HostPolicy host(const std::string &nqn, const std::string &conf = "")
{
	HostPolicy p;
	p.host_nqn = nqn;
	return conf.empty() ? p : parse_conf(conf, p, "/etc/fxblk/fxblk.conf");
}

label::Label owned_by(const std::string &owner, const std::string &name = "kv")
{
	label::Label l;
	l.volume_uuid = *label::uuid_from_string("0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0");
	l.volume_name = name;
	l.owner_nqn = owner;
	return l;
}

bool has(const std::string &s, const std::string &what)
{
	return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("default policy: this host's volumes and volumes without an owner, not another host's")
{
	HostPolicy p = host(host_a);
	CHECK(auto_assembly(p, owned_by(host_a)).allowed);
	CHECK(auto_assembly(p, owned_by("")).allowed);  // label format 1 (before owners)
	AutoDecision d = auto_assembly(p, owned_by(host_b));
	CHECK_FALSE(d.allowed);
	CHECK(has(d.why, "owned by " + host_b));
	CHECK(has(d.why, "this host is " + host_a));
	CHECK(has(d.why, "AUTO -all"));
	CHECK(foreign_owner(p, owned_by(host_b)));
	CHECK_FALSE(foreign_owner(p, owned_by(host_a)));
	CHECK_FALSE(foreign_owner(p, owned_by("")));
}

TEST_CASE("a host without a host NQN owns nothing")
{
	HostPolicy p = host("");
	CHECK_FALSE(auto_assembly(p, owned_by(host_a)).allowed);
	CHECK(has(auto_assembly(p, owned_by(host_a)).why, "this host has no host NQN"));
	CHECK(auto_assembly(p, owned_by("")).allowed);
	CHECK(foreign_owner(p, owned_by(host_a)));
}

TEST_CASE("AUTO: the first matching word decides, as in mdadm.conf")
{
	// only this host's volumes; unowned ones no longer
	HostPolicy p = host(host_a, "AUTO +homehost -all\n");
	CHECK(auto_assembly(p, owned_by(host_a)).allowed);
	CHECK_FALSE(auto_assembly(p, owned_by("")).allowed);
	CHECK_FALSE(auto_assembly(p, owned_by(host_b)).allowed);
	// nothing at all (only fxctl assemble NAME starts volumes)
	p = host(host_a, "auto -all");
	CHECK_FALSE(auto_assembly(p, owned_by(host_a)).allowed);
	// a shared volume by name, another refused by UUID before +all
	p = host(host_a, "# shared scratch\nAUTO +scratch -0F1E2D3C-4B5A-4978-8796-A5B4C3D2E1F0 +all\n");
	CHECK(auto_assembly(p, owned_by(host_b, "scratch")).allowed);
	CHECK_FALSE(auto_assembly(p, owned_by(host_b, "kv")).allowed);
	// no word matches: allowed (mdadm's rule)
	p = host(host_a, "AUTO -unowned");
	CHECK(auto_assembly(p, owned_by(host_b)).allowed);
	CHECK(has(auto_assembly(p, owned_by(host_b)).why, "no AUTO word matches"));
}

TEST_CASE("HOSTNQN overrides /etc/nvme/hostnqn")
{
	HostPolicy p = host(host_a, "HOSTNQN " + host_b + "  # the cluster's name for us\n");
	CHECK(p.host_nqn == host_b);
	CHECK(auto_assembly(p, owned_by(host_b)).allowed);
	CHECK_FALSE(auto_assembly(p, owned_by(host_a)).allowed);
	// the default AUTO line stays when the file has none
	CHECK(p.autos.size() == 3);
}

TEST_CASE("fxblk.conf errors name the file and the line")
{
	auto refusal = [](const std::string &text) {
		try {
			host(host_a, text);
		} catch (const Error &e) {
			return std::string(e.what());
		}
		return std::string("accepted");
	};
	CHECK(has(refusal("AUTO homehost"), "fxblk.conf line 1: AUTO word 'homehost' does not start with + or -"));
	CHECK(has(refusal("\n\nDEVICE /dev/nvme*"), "line 3: unknown keyword 'device'"));
	CHECK(has(refusal("HOSTNQN"), "HOSTNQN takes one word"));
	CHECK(has(refusal("HOSTNQN a b"), "HOSTNQN takes one word"));
	CHECK(has(refusal("HOSTNQN " + std::string(224, 'n')), "longer than 223"));
	CHECK(has(refusal("AUTO +all\nAUTO -all"), "line 2: a second AUTO line"));
}

TEST_CASE("fxblk.auto=0 on the kernel command line turns auto-assembly off")
{
	CHECK(cmdline_auto_off("BOOT_IMAGE=/vmlinuz root=/dev/sda1 fxblk.auto=0 quiet\n"));
	CHECK(cmdline_auto_off("fxblk.auto=off"));
	CHECK_FALSE(cmdline_auto_off("root=/dev/sda1 quiet"));
	CHECK_FALSE(cmdline_auto_off("fxblk.auto=1"));
	CHECK_FALSE(cmdline_auto_off("xfxblk.auto=0"));
	CHECK_FALSE(cmdline_auto_off("fxblk.auto=0 fxblk.auto=1"));  // the last one wins
}
