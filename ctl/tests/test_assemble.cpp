// assemble, incremental and stop against fake members and a fake kernel
// (fakes.hpp): the members carry the labels fxctl create wrote on them, the
// disks present are the fake block devices, the records and locks live in
// the test's FXBLK_RUN_DIR.
#include "assemble.hpp"
#include "fakes.hpp"
#include "label.hpp"

#include <chrono>
#include <doctest/doctest.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

using namespace fxtest;

namespace {

// The order create is given the members in: member i is order[i], so that
// stripe order and name order differ.
const std::vector<std::string> order = {"/dev/nvme2n1", "/dev/nvme0n1", "/dev/nvme3n1",
					"/dev/nvme1n1"};
const char *const uuid = "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0";  // FakeMemberIO::new_uuid
const char *const host_b = "nqn.2014-08.org.nvmexpress:uuid:host-b";

// Volume "kv" created over @order by this host, then stopped: its labels
// stay, the kernel runs nothing, no member is recorded yet.
struct Stopped : Harness {
	Stopped()
	{
		forget_volume(*label::uuid_from_string(uuid));  // records of earlier runs
		members.persist = true;
		state.volumes.clear();
		state.remember_creates = true;
		std::vector<std::string> args = {"create", "kv"};
		args.insert(args.end(), order.begin(), order.end());
		REQUIRE(run(args) == 0);
		REQUIRE(run({"stop", "kv"}) == 0);
		state.volumes.clear();  // the fake kernel does not forget by itself
		state.creates.clear();
		state.destroys.clear();
		members.writes.clear();
	}
	label::Label &label(std::size_t index) { return members.written.at(order[index]); }
	// dev_t minors of the members of the one CREATE, in request order
	std::vector<std::uint32_t> created_minors() const
	{
		std::vector<std::uint32_t> m;
		for (const auto &mem : state.creates.at(0).members)
			m.push_back(mem.minor);
		return m;
	}
};

}  // namespace

TEST_CASE("assemble starts a stopped volume from its labels, members in stripe order")
{
	Stopped h;
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	CHECK(h.out.str() == fmt::format("assembled \"kv\" ({}) as /dev/fx0 from nvme2n1 nvme0n1 "
					 "nvme3n1 nvme1n1\n", uuid));
	REQUIRE(h.state.creates.size() == 1);
	CHECK(h.created_minors() == std::vector<std::uint32_t>{2, 0, 3, 1});
	CHECK(h.state.creates[0].members[0].data_offset == h.label(0).data_offset_sectors);
	CHECK(h.state.creates[0].members[0].data_sectors == h.label(0).data_sectors);
	CHECK(h.members.writes.empty());  // nothing to rewrite
	// again: found running over the same devices, not created twice
	REQUIRE(h.run({"assemble", uuid}) == 0);
	CHECK(h.out.str() == fmt::format("\"kv\" ({}) is already running as fx0\n", uuid));
	CHECK(h.state.creates.size() == 1);
	// a name nobody carries
	CHECK(h.run({"assemble", "nosuch"}) == 3);
	CHECK(has(h.err.str(), "no member of a volume named \"nosuch\" found"));
}

TEST_CASE("assemble refuses a member with an older generation, --force takes it")
{
	Stopped h;
	// member 2 (nvme3n1) missed a rewrite of the set
	for (std::size_t i : {0, 1, 3})
		h.label(i).generation = 2;
	CHECK(h.run({"assemble", "kv"}) == 1);
	CHECK(has(h.err.str(), "cannot assemble \"kv\""));
	CHECK(has(h.err.str(), "nvme3n1 (member 2) has a stale label: generation 1, but "));
	CHECK(has(h.err.str(), "has generation 2"));
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());

	REQUIRE(h.run({"assemble", "--force", "kv"}) == 0);
	CHECK(has(h.err.str(), "--force: nvme3n1 (member 2) has a stale label"));
	CHECK(h.state.creates.size() == 1);
	// every label rewritten at the next generation, in stripe order
	CHECK(h.members.writes == order);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).generation == 3);
		CHECK(h.label(i).member_index == i);
	}
}

TEST_CASE("assemble refuses a volume owned by another host unless --import")
{
	Stopped h;
	for (std::size_t i = 0; i < 4; ++i)
		h.label(i).owner_nqn = host_b;
	CHECK(h.run({"assemble", "kv"}) == 1);
	CHECK(h.err.str() ==
	      fmt::format("fxctl: cannot assemble \"kv\" ({}) is owned by host {} (its labels "
			  "say so), and this host is nqn.2014-08.org.nvmexpress:uuid:host-a: "
			  "another host may be using it; if that host is gone or no longer uses "
			  "it, 'fxctl assemble --import kv' takes it over (records this host as "
			  "its owner)\n", uuid, host_b));
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());
	// nor does --all (as udev would not)
	CHECK(h.run({"assemble", "--all"}) == 0);
	CHECK(has(h.out.str(), "skipped \"kv\""));
	CHECK(h.state.creates.empty());

	REQUIRE(h.run({"assemble", "--import", "kv"}) == 0);
	CHECK(h.state.creates.size() == 1);
	CHECK(h.members.writes == order);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).owner_nqn == h.policy.host_nqn);
		CHECK(h.label(i).generation == 2);
	}
}

TEST_CASE("assemble refuses a member whose primary label was overwritten")
{
	Stopped h;
	// mkfs wrote over byte 4096 of nvme0n1 (member 1); the backup survived
	label::MemberLabel ml;
	ml.label = h.label(1);
	ml.from_backup = true;
	ml.primary_blank = true;
	ml.primary_reason = "no fxblk label (magic not found)";
	h.members.labels["/dev/nvme0n1"] = ml;
	CHECK(h.run({"assemble", "kv"}) == 1);
	CHECK(has(h.err.str(), "nvme0n1 (member 1) was reused: its primary label at byte 4096 "
			       "is gone"));
	CHECK(has(h.err.str(), "'fxctl wipe /dev/nvme0n1'"));
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());
	// udev's path leaves it alone too, and records nothing for it
	REQUIRE(h.run({"incremental", "/dev/nvme0n1"}) == 0);
	CHECK(has(h.out.str(), "/dev/nvme0n1: not assembled automatically"));
	CHECK(!std::filesystem::exists(run_dir() / uuid / "nvme0n1"));

	REQUIRE(h.run({"assemble", "--force", "kv"}) == 0);
	CHECK(h.state.creates.size() == 1);
	CHECK(h.members.writes == order);  // its label written again, with the others'
}

TEST_CASE("assemble names a missing member's namespace when it is present without its label")
{
	Stopped h;
	// mkfs.ext4 over all of nvme0n1 (member 1): both label copies gone
	h.members.labels["/dev/nvme0n1"] = label::MemberLabel{};
	h.members.sigs["/dev/nvme0n1"] = {{"ext4", "filesystem", 1080}};
	CHECK(h.run({"assemble", "kv"}) == 3);
	CHECK(has(h.err.str(), "member 1 of 4 is missing: "));
	CHECK(has(h.err.str(), "; its namespace is present as nvme0n1 without an fxblk label "
			       "(libblkid finds ext4 filesystem signature at byte 1080): its labels "
			       "were overwritten or wiped; 'fxctl examine /dev/nvme0n1'"));
	// zeroed: nothing found on it either
	h.members.sigs.erase("/dev/nvme0n1");
	CHECK(h.run({"assemble", "kv"}) == 3);
	CHECK(has(h.err.str(), "without an fxblk label (no other signature either: zeroed?)"));
	// another volume's create took it
	label::MemberLabel other;
	other.label = h.label(1);
	other.label->volume_name = "other";
	other.label->volume_uuid[0] ^= 0xff;
	other.label->member_index = 0;
	h.members.labels["/dev/nvme0n1"] = other;
	CHECK(h.run({"assemble", "kv"}) == 3);
	CHECK(has(h.err.str(), "its namespace is present as nvme0n1, which now carries a label of "
			       "\"other\""));
	// gone for real: the plain sentence
	h.members.labels.erase("/dev/nvme0n1");
	h.members.ids["nvme0n1"] = h.members.identity("nvme9n9");
	CHECK(h.run({"assemble", "kv"}) == 3);
	CHECK(has(h.err.str(), "member 1 of 4 is missing: "));
	CHECK(!has(h.err.str(), "its namespace is present"));
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());
}

TEST_CASE("assemble --scan lists each volume's state and changes nothing")
{
	Stopped h;
	auto status = [&]() {
		REQUIRE(h.run({"assemble", "--scan", "-o", "json"}) == 0);
		auto doc = nlohmann::json::parse(h.out.str());
		REQUIRE(doc["volumes"].size() == 1);
		CHECK(doc["volumes"][0]["name"] == "kv");
		CHECK(doc["volumes"][0]["uuid"] == uuid);
		CHECK(doc["kernel_error"].is_null());
		return doc["volumes"][0];
	};
	// complete, ours: assemble would start it
	REQUIRE(h.run({"assemble", "--scan"}) == 0);
	CHECK(h.out.str() == fmt::format("stopped    volume \"kv\" ({}): 4 of 4 members present: "
					 "'fxctl assemble kv' starts it\n", uuid));
	CHECK(status()["status"] == "stopped");
	// a stale member: refused, with assemble's reason
	for (std::size_t i : {0, 1, 3})
		h.label(i).generation = 2;
	auto v = status();
	CHECK(v["status"] == "refused");
	CHECK(has(v["problems"][0].get<std::string>(), "nvme3n1 (member 2) has a stale label"));
	REQUIRE(h.run({"assemble", "--scan"}) == 0);
	CHECK(has(h.out.str(), "\n           nvme3n1 (member 2) has a stale label"));
	for (std::size_t i : {0, 1, 2, 3})
		h.label(i).generation = 1;
	// another host's: kept by the policy
	for (std::size_t i = 0; i < 4; ++i)
		h.label(i).owner_nqn = host_b;
	v = status();
	CHECK(v["status"] == "not-auto");
	CHECK(has(v["next"].get<std::string>(), "'fxctl assemble --import kv' takes it over"));
	for (std::size_t i = 0; i < 4; ++i)
		h.label(i).owner_nqn = h.policy.host_nqn;
	// a member gone: incomplete
	h.members.labels["/dev/nvme3n1"] = label::MemberLabel{};
	v = status();
	CHECK(v["status"] == "incomplete");
	CHECK(has(v["problems"][0].get<std::string>(), "member 2 of 4 is missing"));
	// and a stale member besides: still incomplete, as assemble's exit 3
	for (std::size_t i : {0, 1})
		h.label(i).generation = 2;
	v = status();
	CHECK(v["status"] == "incomplete");
	CHECK(v["problems"].size() == 2);
	for (std::size_t i : {0, 1})
		h.label(i).generation = 1;
	h.members.labels.erase("/dev/nvme3n1");
	// nothing created, nothing written by any of them
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());
	// running, with its disk
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	v = status();
	CHECK(v["status"] == "running");
	CHECK(v["disk"] == "fx0");
	// not with anything else
	CHECK(h.run({"assemble", "--scan", "kv"}) == 2);
	CHECK(h.run({"assemble", "--scan", "--all"}) == 2);
}

TEST_CASE("incremental starts a volume when its last member appears, and only once")
{
	Stopped h;
	// any order, by any name; each one but the last waits
	h.devices.links["/dev/disk/by-id/nvme-kv-3"] = order[3];
	const std::vector<std::string> arrival = {"/dev/disk/by-id/nvme-kv-3", order[0], order[2]};
	for (const auto &dev : arrival) {
		INFO(dev);
		REQUIRE(h.run({"incremental", dev}) == 0);
		CHECK(has(h.out.str(), "waiting: volume \"kv\""));
		CHECK(h.state.creates.empty());
	}
	CHECK(std::filesystem::exists(run_dir() / uuid / "nvme1n1"));  // the link's disk
	CHECK(has(h.out.str(), "member 1 of 4 is missing"));
	// the last one starts it, in stripe order
	REQUIRE(h.run({"-o", "json", "incremental", order[1]}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc.at("status") == "assembled");
	CHECK(doc.at("disk") == "fx0");
	REQUIRE(h.state.creates.size() == 1);
	CHECK(h.created_minors() == std::vector<std::uint32_t>{2, 0, 3, 1});
	// another event for a member: found running, not created again
	REQUIRE(h.run({"incremental", order[2]}) == 0);
	CHECK(has(h.out.str(), "is already running as fx0"));
	CHECK(h.state.creates.size() == 1);
}

TEST_CASE("incremental --defer only records; --uuid starts the volume once")
{
	Stopped h;
	for (std::size_t i = 0; i < 4; ++i) {
		REQUIRE(h.run({"incremental", "--defer", order[i]}) == 0);
		CHECK(h.out.str() == (i < 3 ? "FXBLK_COMPLETE=0\n" : "FXBLK_COMPLETE=1\n"));
	}
	CHECK(h.state.creates.empty());
	CHECK(has(h.err.str(), "every member is there: fxblk-assemble@"));
	REQUIRE(h.run({"incremental", "--uuid", uuid}) == 0);
	CHECK(h.state.creates.size() == 1);
	REQUIRE(h.run({"incremental", "--uuid", uuid}) == 0);
	CHECK(has(h.out.str(), "is already running as fx0"));
	CHECK(h.state.creates.size() == 1);
}

TEST_CASE("incremental leaves a volume of another host alone")
{
	Stopped h;
	for (std::size_t i = 0; i < 4; ++i)
		h.label(i).owner_nqn = host_b;
	for (const auto &dev : order) {
		REQUIRE(h.run({"incremental", dev}) == 0);
		CHECK(has(h.out.str(), "not auto-assembled on this host"));
	}
	CHECK(h.state.creates.empty());
	CHECK(!std::filesystem::exists(run_dir() / uuid));
}

// Review H3: a host without a host NQN wrote owner-less labels without a
// word, and the default AUTO (+unowned) then starts them on every host
// that sees the members.
TEST_CASE("create refuses without a host NQN to record as owner, unless --no-owner")
{
	Harness h;
	h.policy.host_nqn.clear();  // no /etc/nvme/hostnqn, no HOSTNQN
	std::vector<std::string> args = {"create", "kv"};
	args.insert(args.end(), order.begin(), order.end());
	CHECK(h.run(args) == exit_runtime);
	CHECK_MESSAGE(has(h.err.str(), "cannot create \"kv\": this host has no host NQN"),
		      h.err.str());
	CHECK(has(h.err.str(), "nothing was written"));
	CHECK(has(h.err.str(), "nvme gen-hostnqn > /etc/nvme/hostnqn"));
	CHECK(has(h.err.str(), "--no-owner"));
	CHECK(h.wrote_nothing());

	// an explicit choice (mdadm's --homehost=<none>): no owner, said so
	forget_volume(*label::uuid_from_string(uuid));
	args.insert(args.begin() + 1, "--no-owner");
	REQUIRE(h.run(args) == 0);
	CHECK_MESSAGE(has(h.err.str(), "\"kv\" has no owner"), h.err.str());
	for (const auto &dev : order)
		CHECK(h.members.written.at(dev).owner_nqn.empty());
	// --no-owner on a host that has a host NQN: still no owner
	Harness o;
	forget_volume(*label::uuid_from_string(uuid));
	REQUIRE(o.run(args) == 0);
	CHECK(o.members.written.at(order[0]).owner_nqn.empty());
}

TEST_CASE("stop: an unknown volume is named with the fix; labels stay")
{
	Stopped h;
	CHECK(h.run({"stop", "nosuch"}) == 3);
	CHECK(h.err.str() == "fxctl: no volume nosuch; see 'fxctl list'\n");
	CHECK(h.run({"stop", "/dev/fx7"}) == 3);
	CHECK(h.err.str() == "fxctl: no volume fx7; see 'fxctl list'\n");
	CHECK(h.state.destroys.empty());

	REQUIRE(h.run({"assemble", "kv"}) == 0);
	// open: refused with the fix
	h.state.volumes.at(0).open_count = 1;
	h.state.fail_destroy = KernelError(EBUSY, "volume is open", "busy");
	CHECK(h.run({"stop", "kv"}) == 4);
	CHECK(h.err.str() == "fxctl: fx0 (kv) is open (mounted or in use); unmount it first, or "
			     "use 'fxctl remove --force' to fail its I/O and remove it now\n");
	h.state.fail_destroy.reset();
	REQUIRE(h.run({"stop", "kv"}) == 0);
	CHECK(h.out.str() == "stopped fx0 (kv); its members keep their labels: 'fxctl assemble "
			     "kv' starts it again\n");
	CHECK(h.members.wipes.empty());
	CHECK(h.members.written.size() == 4);
}

// A module with FXBLK_FEAT_UUID is given the labels' volume UUID at CREATE
// (create and assemble) and reports it; an older one gets none (the fake
// kernel, like a strict policy, refuses it unannounced).
TEST_CASE("create and assemble give the labels' UUID to a module that takes it")
{
	Stopped h;
	// Stopped's create ran on an older module: no UUID sent, none shown
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	REQUIRE(h.state.creates.size() == 1);
	CHECK_FALSE(h.state.creates[0].uuid);
	REQUIRE(h.run({"-o", "json", "show", "kv"}) == 0);
	CHECK(nlohmann::json::parse(h.out.str()).at("volume").at("uuid").is_null());
	REQUIRE(h.run({"stop", "kv"}) == 0);
	h.state.volumes.clear();

	h.state.module.features |= FXBLK_FEAT_UUID;
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	REQUIRE(h.state.creates.size() == 2);
	REQUIRE(h.state.creates[1].uuid);
	CHECK(label::uuid_to_string(*h.state.creates[1].uuid) == uuid);
	REQUIRE(h.run({"-o", "json", "list"}) == 0);
	CHECK(nlohmann::json::parse(h.out.str()).at("volumes").at(0).at("uuid") == uuid);
	REQUIRE(h.run({"show", "kv"}) == 0);
	CHECK(has(h.out.str(), fmt::format("  uuid {}\n", uuid)));

	// create: the UUID it writes into the labels
	Harness c;
	c.state.volumes.clear();
	c.state.module.features |= FXBLK_FEAT_UUID;
	std::vector<std::string> args = {"create", "kv2"};
	args.insert(args.end(), order.begin(), order.end());
	REQUIRE(c.run(args) == 0);
	REQUIRE(c.state.creates.size() == 1);
	REQUIRE(c.state.creates[0].uuid);
	CHECK(*c.state.creates[0].uuid == c.members.written.at(order[0]).volume_uuid);
	forget_volume(*c.state.creates[0].uuid);
}

// While another fxctl holds the volume's lock (an incremental run for one of
// its members, an assemble), stop and remove wait for it; the lock is found
// by the UUID the kernel reports, and no label is read before the DESTROY
// (a stalled member would hold it up). Without the lock they would be done
// within the 300 ms the test waits.
TEST_CASE("stop and remove wait for the volume's lock, found without label reads")
{
	Stopped h;
	h.state.module.features |= FXBLK_FEAT_UUID;
	std::vector<bool> read_before_destroy;
	h.members.on_read = [&](const std::string &) {
		read_before_destroy.push_back(h.state.destroys.empty());
	};
	for (std::string cmd : {"stop", "remove"}) {
		CAPTURE(cmd);
		h.members.on_read = nullptr;
		REQUIRE(h.run({"assemble", "kv"}) == 0);
		h.members.on_read = [&](const std::string &) {
			read_before_destroy.push_back(h.state.destroys.empty());
		};
		h.state.destroys.clear();
		auto held = volume_lock(*label::uuid_from_string(uuid));
		int rc = -1;
		std::thread t([&] { rc = h.run({cmd, "kv"}); });
		std::this_thread::sleep_for(std::chrono::milliseconds(300));
		CHECK(h.state.destroys.empty());
		held.reset();
		t.join();
		CHECK(rc == 0);
		CHECK(h.state.destroys.size() == 1);
		h.state.volumes.clear();  // the fake kernel does not forget by itself
	}
	// remove read the labels (to wipe them), after its DESTROY only
	CHECK(read_before_destroy == std::vector<bool>(4, false));
	CHECK(h.members.wipes.size() == 4);
	CHECK(!std::filesystem::exists(run_dir() / (std::string(uuid) + ".lock")));
}

// ---- rename and update --identity (review M4) ----------------------------

namespace {

// Another volume's member on a fifth disk, nvme4n1: volume @name, one member.
void add_other_volume(Harness &h, const std::string &name)
{
	h.devices.add("/dev/nvme4n1", 4);
	label::Label l = h.members.written.at(order[0]);
	l.volume_uuid = *label::uuid_from_string("11111111-2222-4333-8444-555555555555");
	l.volume_name = name;
	l.member_index = 0;
	l.member_count = 1;
	l.members = {h.members.identity("nvme4n1")};
	h.members.written["/dev/nvme4n1"] = l;
}

// nvme0n1 (member 1 of kv) after a target migration: another subsystem,
// NSID and UUID.
label::MemberId migrated()
{
	label::MemberId id;
	id.subsys_nqn = "nqn.2026-12.org.example:moved";
	id.nsid = 7;
	id.uuid = *label::uuid_from_string("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
	return id;
}

}  // namespace

TEST_CASE("rename rewrites every member's label with the new name at the next generation")
{
	Stopped h;
	REQUIRE(h.run({"rename", "kv", "kv2"}) == 0);
	CHECK(h.out.str() == fmt::format("renamed \"kv\" ({}) to \"kv2\": labels of nvme2n1 nvme0n1 "
					 "nvme3n1 nvme1n1 rewritten at generation 2; 'fxctl "
					 "assemble kv2' starts it\n", uuid));
	CHECK(h.members.writes == order);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).volume_name == "kv2");
		CHECK(h.label(i).generation == 2);
		CHECK(h.label(i).member_index == i);
		CHECK(label::uuid_to_string(h.label(i).volume_uuid) == uuid);
	}
	CHECK(h.state.creates.empty());  // renamed, not started
	CHECK(h.run({"assemble", "kv"}) == 3);
	REQUIRE(h.run({"assemble", "kv2"}) == 0);
	CHECK(h.state.creates.at(0).name == "kv2");

	// JSON: the one print path, schema_version
	REQUIRE(h.run({"stop", "kv2"}) == 0);
	h.state.volumes.clear();
	REQUIRE(h.run({"-o", "json", "rename", uuid, "kv3"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc.at("schema_version").is_number());
	CHECK(doc.at("old_name") == "kv2");
	CHECK(doc.at("name") == "kv3");
	CHECK(doc.at("generation") == 3);
	CHECK(doc.at("renamed") == true);
}

TEST_CASE("rename refuses a running volume, a taken or invalid name, a missing member")
{
	Stopped h;
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	h.members.writes.clear();
	CHECK(h.run({"rename", "kv", "kv2"}) == 4);
	CHECK(h.err.str() == fmt::format("fxctl: cannot rename \"kv\" ({}): it is running as "
					 "/dev/fx0; its labels are rewritten only while it is "
					 "stopped: 'fxctl stop kv' first, then run the command "
					 "again\n", uuid));
	CHECK(h.members.writes.empty());
	REQUIRE(h.run({"stop", "kv"}) == 0);
	h.state.volumes.clear();

	add_other_volume(h, "other");
	CHECK(h.run({"rename", "kv", "other"}) == 1);
	CHECK(has(h.err.str(), "cannot rename \"kv\" (" + std::string(uuid) +
				       ") to \"other\": volume \"other\" (11111111-2222-4333-"
				       "8444-555555555555) already carries that name"));
	CHECK(h.run({"rename", "kv", "fx3"}) == 2);
	CHECK(has(h.err.str(), "looks like a disk name"));
	CHECK(h.run({"rename", "kv", "bad/name"}) == 2);
	CHECK(h.run({"rename", "kv"}) == 2);
	CHECK(h.run({"rename", "nosuch", "kv2"}) == 3);
	CHECK(has(h.err.str(), "no member of a volume named \"nosuch\" found"));
	CHECK(h.members.writes.empty());

	h.devices.devs.at(order[1]).holders = {"fx9"};  // held by a volume the kernel runs
	CHECK(h.run({"rename", "kv", "kv2"}) == 4);
	CHECK(has(h.err.str(), "/dev/nvme0n1 (member 1) is in use by fx9; stop or remove fx9 "
			       "first"));
	h.devices.devs.at(order[1]).holders.clear();
	CHECK(h.members.writes.empty());

	h.devices.devs.erase(order[2]);
	CHECK(h.run({"rename", "kv", "kv2"}) == 3);
	CHECK(has(h.err.str(), "cannot rename \"kv\""));
	CHECK(has(h.err.str(), "member 2 of 4 is missing"));
	CHECK(h.members.writes.empty());
}

TEST_CASE("a member that missed a rename is refused at assemble as stale, naming it")
{
	Stopped h;
	h.members.fail_write = order[2];  // nvme3n1, member 2
	CHECK(h.run({"rename", "kv", "kv2"}) == 1);
	CHECK(has(h.err.str(), "cannot rewrite the label of /dev/nvme3n1 (member 2) of \"kv\""));
	CHECK(has(h.err.str(), "members 0..1 carry generation 2 now, the others generation 1; "
			       "'fxctl assemble --force kv2' takes the members left behind"));
	h.members.fail_write.clear();
	CHECK(h.run({"assemble", "kv2"}) == 1);
	CHECK(has(h.err.str(), "nvme3n1 (member 2) has a stale label: generation 1, but "));
	CHECK(has(h.err.str(), "has generation 2"));
	CHECK(h.state.creates.empty());
	REQUIRE(h.run({"assemble", "--force", "kv2"}) == 0);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).volume_name == "kv2");
		CHECK(h.label(i).generation == 3);
	}
}

TEST_CASE("update --identity re-records a migrated member's identity on every member")
{
	Stopped h;
	const label::MemberId was = h.label(1).members[1];
	h.members.ids["nvme0n1"] = migrated();
	CHECK(h.run({"assemble", "kv"}) == 3);  // foreign until updated
	CHECK(has(h.err.str(), "nvme0n1 (member 1) is foreign"));

	h.answer = true;
	REQUIRE(h.run({"update", "--identity", "/dev/nvme0n1"}) == 0);
	REQUIRE(h.questions.size() == 1);
	CHECK(h.questions[0] == fmt::format("re-record the identity of /dev/nvme0n1 of member 1 of "
					    "\"kv\" ({}): recorded {}, now {}?", uuid,
					    was.describe(), migrated().describe()));
	CHECK(h.out.str() == fmt::format("updated the identity of member 1 of \"kv\" ({})\n"
					 "  old: {}\n  new: {}\nlabels of nvme2n1 nvme0n1 nvme3n1 "
					 "nvme1n1 rewritten at generation 2\n",
					 uuid, was.describe(), migrated().describe()));
	CHECK(h.members.writes == order);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).generation == 2);
		CHECK(h.label(i).members[1] == migrated());
		CHECK(h.label(i).member_index == i);
		CHECK(h.label(i).volume_name == "kv");
	}
	// again: nothing to do
	h.members.writes.clear();
	REQUIRE(h.run({"update", "--identity", "--volume", "kv", "/dev/nvme0n1"}) == 0);
	CHECK(has(h.out.str(), "already records its identity"));
	CHECK(h.members.writes.empty());
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	CHECK(h.created_minors() == std::vector<std::uint32_t>{2, 0, 3, 1});
}

TEST_CASE("update --identity shows the old and new identity in JSON")
{
	Stopped h;
	h.members.ids["nvme0n1"] = migrated();
	REQUIRE(h.run({"-o", "json", "update", "--identity", "--yes", "/dev/nvme0n1"}) == 0);
	CHECK(h.questions.empty());
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc.at("schema_version").is_number());
	CHECK(doc.at("device") == "/dev/nvme0n1");
	CHECK(doc.at("name") == "kv");
	CHECK(doc.at("uuid") == uuid);
	CHECK(doc.at("member_index") == 1);
	CHECK(doc.at("old_identity").at("subsys_nqn") == "nqn.2026-12.org.example:nvme0n1");
	CHECK(doc.at("new_identity").at("subsys_nqn") == "nqn.2026-12.org.example:moved");
	CHECK(doc.at("new_identity").at("nsid") == 7);
	CHECK(doc.at("new_identity").at("uuid") == "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
	CHECK(doc.at("new_identity").at("nguid") == "");
	CHECK(doc.at("generation") == 2);
	CHECK(doc.at("updated") == true);
}

TEST_CASE("update --identity refuses without a label, a copy, a running or torn set")
{
	Stopped h;
	h.members.ids["nvme0n1"] = migrated();
	// not confirmed, no terminal
	h.answer = false;
	CHECK(h.run({"update", "--identity", "/dev/nvme0n1"}) == 1);
	CHECK(has(h.err.str(), "the identity of /dev/nvme0n1 is not updated (not confirmed)"));
	h.answer = std::nullopt;
	CHECK(h.run({"update", "--identity", "/dev/nvme0n1"}) == 1);
	CHECK(has(h.err.str(), "run 'fxctl update --identity --yes /dev/nvme0n1'"));
	CHECK(h.members.writes.empty());
	// usage
	CHECK(h.run({"update", "/dev/nvme0n1"}) == 2);
	CHECK(h.run({"update", "--identity"}) == 2);
	// another volume named
	CHECK(h.run({"update", "--identity", "--yes", "--volume", "db", "/dev/nvme0n1"}) == 1);
	CHECK(has(h.err.str(), "/dev/nvme0n1 is member 1 of \"kv\" (" + std::string(uuid) +
				       "), not of volume \"db\""));
	// a disk without a label
	h.devices.add("/dev/nvme5n1", 5);
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme5n1"}) == 3);
	CHECK(has(h.err.str(), "/dev/nvme5n1 carries no fxblk label: it belongs to no volume"));
	// the labels disagree
	h.label(3).chunk_sectors *= 2;
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme0n1"}) == 1);
	CHECK(has(h.err.str(), "cannot update the identity of member 1 of \"kv\""));
	CHECK(has(h.err.str(), "disagree on"));
	h.label(3).chunk_sectors /= 2;
	// a member missing
	auto gone = h.devices.devs.extract(order[2]);
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme0n1"}) == 3);
	CHECK(has(h.err.str(), "member 2 of 4 is missing"));
	h.devices.devs.insert(std::move(gone));
	CHECK(h.members.writes.empty());
	// running
	h.state.volumes.push_back(fixed_volume());
	h.state.volumes.back().name = "kv";
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme0n1"}) == 4);
	CHECK(has(h.err.str(), "it is running as /dev/fx0"));
	CHECK(has(h.err.str(), "'fxctl stop kv' first"));
	h.state.volumes.clear();
	CHECK(h.members.writes.empty());
}

// Review H1: update --identity re-recorded one member; with two or more
// moved at once (an nvmet restart regenerating every namespace UUID, a
// subsystem NQN rename, a DR array) the others were foreign and the set
// could not be updated in any order.
TEST_CASE("update --identity re-records every moved member in one rewrite")
{
	Stopped h;
	// every namespace got a new UUID (nvmet without device_uuid, restarted)
	std::vector<label::MemberId> was, now;
	for (std::size_t i = 0; i < 4; ++i) {
		was.push_back(h.label(0).members[i]);
		label::MemberId id = was.back();
		id.uuid = *label::uuid_from_string(
			fmt::format("aaaaaaaa-bbbb-4ccc-8ddd-00000000000{}", i));
		id.nguid = {};
		now.push_back(id);
		h.members.ids[order[i].substr(5)] = id;
	}
	CHECK(h.run({"assemble", "kv"}) == 3);
	// one at a time cannot work: the others are foreign; the fix is named
	CHECK(h.run({"update", "--identity", "--yes", order[0]}) == 3);
	CHECK_MESSAGE(has(h.err.str(), "nvme0n1 (member 1) is foreign"), h.err.str());
	CHECK(has(h.err.str(), "if other members moved too, update them in the same run"));
	CHECK(has(h.err.str(), "'fxctl update --identity --volume kv'"));
	CHECK(h.members.writes.empty());

	// all four given: one rewrite, each label written once, generation 2
	std::vector<std::string> args = {"-o", "json", "update", "--identity", "--yes"};
	args.insert(args.end(), order.begin(), order.end());
	REQUIRE(h.run(args) == 0);
	CHECK(h.members.writes == order);
	for (std::size_t i = 0; i < 4; ++i) {
		CHECK(h.label(i).generation == 2);
		CHECK(h.label(i).member_index == i);
		for (std::size_t j = 0; j < 4; ++j)
			CHECK(h.label(i).members[j] == now[j]);
	}
	auto doc = nlohmann::json::parse(h.out.str());
	REQUIRE(doc.at("members").size() == 4);
	CHECK(doc.at("members")[2].at("device") == order[2]);
	CHECK(doc.at("members")[2].at("member_index") == 2);
	CHECK(doc.at("updated") == true);
	CHECK(!doc.contains("device"));  // the one-device keys: one device only
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	CHECK(h.created_minors() == std::vector<std::uint32_t>{2, 0, 3, 1});
}

TEST_CASE("update --identity --volume NAME takes every member present; refuses two of one index")
{
	Stopped h;
	// a subsystem NQN rename: every member's NQN changed
	for (std::size_t i = 0; i < 4; ++i) {
		label::MemberId id = h.label(0).members[i];
		id.subsys_nqn = "nqn.2026-12.org.example:renamed";
		h.members.ids[order[i].substr(5)] = id;
	}
	CHECK(h.run({"update", "--identity"}) == 2);  // neither DEVICE nor --volume
	h.answer = true;
	REQUIRE(h.run({"update", "--identity", "--volume", "kv"}) == 0);
	REQUIRE(h.questions.size() == 1);
	CHECK(has(h.questions[0], "/dev/nvme2n1 of member 0 of \"kv\""));
	CHECK(has(h.questions[0], "; /dev/nvme1n1 of member 3 of \"kv\""));
	CHECK(h.members.writes == order);
	CHECK(has(h.out.str(), "updated the identity of member 3 of \"kv\""));
	CHECK(has(h.out.str(), "rewritten at generation 2"));
	for (std::size_t i = 0; i < 4; ++i)
		CHECK(h.label(i).members[i].subsys_nqn == "nqn.2026-12.org.example:renamed");
	REQUIRE(h.run({"assemble", "kv"}) == 0);
	REQUIRE(h.run({"stop", "kv"}) == 0);
	h.state.volumes.clear();
	h.members.writes.clear();

	// a clone of member 1's label (same generation) beside it: which is
	// the member cannot be told from the labels alone
	h.devices.add("/dev/nvme4n1", 4);
	h.members.written["/dev/nvme4n1"] = h.label(1);
	CHECK(h.run({"update", "--identity", "--yes", "--volume", "kv"}) == 1);
	// each named with what it is (the one on the fabric is the member's
	// best clue), and no bare advice to wipe "the copy": a target's backing
	// device on this host would be the member itself
	for (const char *want : {"/dev/nvme0n1 (nsid ", "/dev/nvme4n1 (nsid ",
				 "both carry the label of member 1",
				 "never the device a target on this host exports"})
		CHECK_MESSAGE(has(h.err.str(), want), (std::string(want) + " not in: " + h.err.str()));
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme0n1", "/dev/nvme4n1"}) == 1);
	for (const char *want : {"/dev/nvme0n1 (nsid ", "/dev/nvme4n1 (nsid ",
				 "both carry the label of member 1",
				 "never the device a target on this host exports"})
		CHECK_MESSAGE(has(h.err.str(), want), (std::string(want) + " not in: " + h.err.str()));
	CHECK(h.members.writes.empty());
}

TEST_CASE("update --identity refuses a copy beside the namespace the labels record")
{
	Stopped h;
	// nvme4n1 carries a copy of member 1's label (a dd clone); the real
	// member 1 (nvme0n1) is present with its recorded identity
	h.devices.add("/dev/nvme4n1", 4);
	h.members.written["/dev/nvme4n1"] = h.label(1);
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme4n1"}) == 1);
	CHECK(has(h.err.str(), "/dev/nvme0n1 is the namespace the labels record as member 1 of "
			       "\"kv\""));
	CHECK(has(h.err.str(), "/dev/nvme4n1 is a copy of its label"));
	// another member's namespace cannot be member 1 too
	h.devices.devs.erase("/dev/nvme4n1");
	h.members.ids["nvme0n1"] = h.label(0).members[0];
	CHECK(h.run({"update", "--identity", "--yes", "/dev/nvme0n1"}) == 1);
	CHECK(has(h.err.str(), "it cannot be member 1 too"));
	CHECK(h.members.writes.empty());
}

TEST_CASE("rename refreshes incremental's records: the set stays complete at the new generation")
{
	Stopped h;
	for (std::size_t i = 0; i < 3; ++i)
		REQUIRE(h.run({"incremental", "--defer", order[i]}) == 0);
	REQUIRE(h.run({"rename", "kv", "kv2"}) == 0);
	// the fourth member's record carries generation 2, as the others now
	REQUIRE(h.run({"incremental", "--defer", order[3]}) == 0);
	CHECK(h.out.str() == "FXBLK_COMPLETE=1\n");
	REQUIRE(h.run({"incremental", "--uuid", uuid}) == 0);
	REQUIRE(h.state.creates.size() == 1);
	CHECK(h.state.creates[0].name == "kv2");
}
