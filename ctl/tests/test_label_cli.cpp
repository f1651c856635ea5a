// fxctl create's label handling and fxctl examine, against fake members.
#include "assemble.hpp"
#include "fakes.hpp"
#include "label.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

using namespace fxtest;

namespace {

const std::vector<std::string> four = {"/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1",
				       "/dev/nvme3n1"};

std::vector<std::string> create_args(std::vector<std::string> extra = {})
{
	std::vector<std::string> a = {"create", "vol1"};
	a.insert(a.end(), extra.begin(), extra.end());
	a.insert(a.end(), four.begin(), four.end());
	return a;
}

label::MemberLabel labelled(std::uint32_t index, bool backup = false)
{
	label::MemberLabel ml;
	label::Label l;
	l.volume_uuid = *label::uuid_from_string("11111111-2222-4333-8444-555555555555");
	l.volume_name = "old";
	l.member_index = index;
	l.member_count = 2;
	l.chunk_sectors = 1024;
	l.data_offset_sectors = 8192;
	l.data_sectors = 2048;
	l.generation = 3;
	l.created_unix = 1764585000;
	l.members.resize(2);
	l.members[0].subsys_nqn = "nqn.2026-12.org.example:a";
	l.members[0].nsid = 1;
	l.members[0].nguid[0] = 0xab;
	ml.label = l;
	ml.from_backup = backup;
	if (backup) {
		ml.primary_reason = "bad crc32c: stored 00000001, computed 00000002";
	}
	return ml;
}

}  // namespace

TEST_CASE("create writes a label on every member, then creates")
{
	Harness h;
	REQUIRE(h.run(create_args()) == 0);
	CHECK(h.members.writes == four);
	CHECK(h.members.locked == four);  // sorted, each once
	CHECK(h.state.creates.size() == 1);
	CHECK(h.members.wipes.empty());
	CHECK(h.members.erased.empty());
	for (std::uint32_t i = 0; i < 4; i++) {
		const label::Label &l = h.members.written.at(four[i]);
		CHECK(l.member_index == i);
		CHECK(l.member_count == 4);
		CHECK(l.volume_name == "vol1");
		CHECK(label::uuid_to_string(l.volume_uuid) == "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0");
		CHECK(l.generation == 1);
		CHECK(l.chunk_sectors == 1024);
		CHECK(l.data_offset_sectors == 8192);
		// whole chunks of the 1 GiB fakes, the 1 MiB tail left out
		CHECK(l.data_sectors == (2097152 - 8192 - 2048) / 1024 * 1024);
		REQUIRE(l.members.size() == 4);
		CHECK(l.members[2].subsys_nqn == "nqn.2026-12.org.example:nvme2n1");
		CHECK(label::validate(l).empty());
		// this host owns it (review M1)
		CHECK(l.owner_nqn == "nqn.2014-08.org.nvmexpress:uuid:host-a");
	}
	// No udevd: no wait, and -v says so.
	REQUIRE(h.run(create_args({"-v"})) == 0);
	CHECK(has(h.err.str(), "no udev daemon runs"));
	CHECK(has(h.err.str(), "wrote labels of volume \"vol1\""));
	CHECK(h.sleeps.empty());
}

TEST_CASE("create refuses members with signatures or labels unless --force")
{
	Harness h;
	h.members.sigs["/dev/nvme2n1"] = {{"xfs", "filesystem", 0}};
	CHECK(h.run(create_args()) == 1);
	CHECK(h.err.str() ==
	      "fxctl: /dev/nvme2n1 is not empty: it carries xfs filesystem signature at byte 0; "
	      "nothing was written; check the device, then use --force to overwrite\n");
	CHECK(h.members.writes.empty());
	CHECK(h.state.creates.empty());

	h.members.sigs.clear();
	h.members.labels["/dev/nvme1n1"] = labelled(1);
	CHECK(h.run(create_args()) == 1);
	CHECK(has(h.err.str(), "/dev/nvme1n1 is not empty: it carries fxblk label of volume "
			       "\"old\" (11111111-2222-4333-8444-555555555555, member 1 of 2)"));
	CHECK(h.members.writes.empty());

	// A damaged label is something too.
	label::MemberLabel bad;
	bad.primary_reason = "bad crc32c: stored 1, computed 2";
	bad.backup_blank = true;
	bad.backup_reason = "no fxblk label (magic not found)";
	h.members.labels["/dev/nvme1n1"] = bad;
	CHECK(h.run(create_args()) == 1);
	CHECK(has(h.err.str(), "damaged fxblk label (bad crc32c"));

	h.members.labels["/dev/nvme1n1"] = labelled(1);
	h.members.sigs["/dev/nvme3n1"] = {{"gpt", "partition table", 512}};
	REQUIRE(h.run(create_args({"--force"})) == 0);
	CHECK(has(h.err.str(), "--force: overwriting gpt partition table signature at byte 512 "
			       "on /dev/nvme3n1"));
	CHECK(has(h.err.str(), "--force: overwriting fxblk label of volume \"old\""));
	CHECK(h.members.erased == four);
	CHECK(h.members.writes == four);
	CHECK(h.state.creates.size() == 1);
}

TEST_CASE("create refuses a partition, naming its namespace (review M5)")
{
	// A volume over a partition could be created but never assembled again
	// (its label records no namespace identity, udev and assemble look at
	// whole disks only): refused, even with --force, before any write.
	Harness h;
	h.devices.add("/dev/nvme1n1p1", 10, 1048576);
	h.devices.devs["/dev/nvme1n1p1"].partition = true;
	h.devices.devs["/dev/nvme1n1p1"].disk = "nvme1n1";
	CHECK(h.run({"create", "--force", "vol1", "/dev/nvme0n1", "/dev/nvme1n1p1"}) == 1);
	CHECK(h.err.str() ==
	      "fxctl: /dev/nvme1n1p1 is a partition of nvme1n1: fxblk members are whole "
	      "namespaces (a volume over a partition could not be assembled again: the label "
	      "records the namespace's identity, and udev and 'fxctl assemble' look only at "
	      "whole disks); nothing was written; give the whole namespace, /dev/nvme1n1\n");
	CHECK(h.wrote_nothing());
	CHECK(h.run({"-o", "json", "create", "vol1", "/dev/nvme1n1p1"}) == 1);
	CHECK(nlohmann::json::parse(h.out.str()).at("error").at("errno_name") == "EINVAL");
	// the whole namespace is fine
	CHECK(h.run({"create", "vol1", "/dev/nvme0n1", "/dev/nvme1n1"}) == 0);
}

TEST_CASE("create refuses a read-only or zoned member before writing any label")
{
	Harness h;
	h.devices.devs["/dev/nvme2n1"].read_only = true;
	CHECK(h.run(create_args({"--force"})) == 1);  // --force cannot help
	CHECK(h.err.str() ==
	      "fxctl: /dev/nvme2n1 is read-only: its fxblk label cannot be written; nothing was "
	      "written; make it writable first ('blockdev --setrw /dev/nvme2n1', or export the "
	      "namespace read-write on the target)\n");
	CHECK(h.members.writes.empty());
	CHECK(h.members.erased.empty());
	CHECK(h.state.creates.empty());

	h.devices.devs["/dev/nvme2n1"].read_only = false;
	h.devices.devs["/dev/nvme3n1"].zoned = "host-managed";
	CHECK(h.run(create_args()) == 1);
	CHECK(h.err.str() ==
	      "fxctl: /dev/nvme3n1 is a zoned block device (host-managed): fxblk stripes only "
	      "conventional block devices; nothing was written; use a conventional (non-zoned) "
	      "namespace\n");
	CHECK(h.members.writes.empty());
	CHECK(h.state.creates.empty());

	h.devices.devs["/dev/nvme3n1"].zoned = "none";
	CHECK(h.run(create_args()) == 0);
	CHECK(h.members.writes == four);
}

TEST_CASE("create wipes the labels it wrote when CREATE or a write fails")
{
	// the fake's new volume UUID: its lock file in the run dir (FXBLK_RUN_DIR)
	const auto lock_file = fxctl::run_dir() / "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0.lock";
	std::filesystem::remove(lock_file);
	Harness h;
	h.members.persist = true;
	h.state.fail_create = KernelError(EINVAL, "member 1 (nvme1n1): zoned", "create");
	CHECK(h.run(create_args()) == 1);
	CHECK(h.members.writes == four);
	CHECK(h.members.wipes == four);
	CHECK(h.members.written.empty());
	CHECK_FALSE(std::filesystem::exists(lock_file));  // nor a lock of a volume that never was

	// A label meanwhile replaced by another create's is not ours to wipe.
	Harness o;
	o.members.persist = true;
	o.state.fail_create = KernelError(EBUSY, "member 0 busy", "create");
	label::MemberLabel other = labelled(0);
	o.members.labels["/dev/nvme0n1"] = other;  // what read_label sees after our write
	CHECK(o.run(create_args({"--force"})) == 4);
	CHECK(o.members.wipes == std::vector<std::string>{"/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"});

	Harness w;
	w.members.persist = true;
	w.members.fail_write = "/dev/nvme2n1";
	CHECK(w.run(create_args()) == 1);
	CHECK(has(w.err.str(), "cannot write the label of /dev/nvme2n1"));
	CHECK(w.members.wipes == std::vector<std::string>{"/dev/nvme0n1", "/dev/nvme1n1"});
	CHECK(w.state.creates.empty());
	CHECK_FALSE(std::filesystem::exists(lock_file));

	Harness m;
	m.module_loaded = false;
	CHECK(m.run(create_args()) == 5);
	CHECK(m.members.writes.empty());
}

TEST_CASE("create refuses two paths to one namespace, even with --force")
{
	// Native multipath off: nvme0n1 and nvme2n1 are two controllers'
	// disks of one namespace, so they show one identity (fakes.hpp).
	Harness h;
	label::MemberId ns = h.members.identity("nvme0n1");
	h.members.ids["nvme2n1"] = ns;
	for (bool force : {false, true}) {
		CHECK(h.run(create_args(force ? std::vector<std::string>{"--force"}
					      : std::vector<std::string>{})) == 1);
		INFO(h.err.str());
		CHECK(has(h.err.str(), "fxctl: /dev/nvme0n1 and /dev/nvme2n1 are two paths to one "
				       "namespace: the same NGUID 000000000000000000"));
		CHECK(has(h.err.str(), "(nsid 1 of nqn.2026-12.org.example:nvme0n1"));
		CHECK(has(h.err.str(), "nothing was written"));
		CHECK(has(h.err.str(), "nvme_core.multipath=Y"));
		CHECK(h.members.writes.empty());
		CHECK(h.members.erased.empty());
		CHECK(h.state.creates.empty());
	}
	// Each designator alone is evidence, when not zero; the same
	// NQN and NSID without any designator too.
	auto only = [&](auto set) {
		h.members.ids.clear();
		label::MemberId a = h.members.identity("nvme1n1"), b = h.members.identity("nvme3n1");
		a.nguid = b.nguid = {};
		a.uuid = b.uuid = {};
		set(a, b);
		h.members.ids = {{"nvme1n1", a}, {"nvme3n1", b}};
		return h.run(create_args({"--force"}));
	};
	CHECK(only([](auto &a, auto &b) { a.uuid[3] = b.uuid[3] = 9; }) == 1);
	CHECK(has(h.err.str(), "/dev/nvme1n1 and /dev/nvme3n1 are two paths to one namespace: "
			       "the same UUID 00000009-"));
	CHECK(only([](auto &a, auto &b) { a.eui64[0] = b.eui64[0] = 0xee; }) == 1);
	CHECK(has(h.err.str(), "the same EUI-64 ee00000000000000"));
	CHECK(only([](auto &a, auto &b) { b = a; }) == 1);
	CHECK(has(h.err.str(), "the same identity (nsid 1 of nqn.2026-12.org.example:nvme1n1)"));
	CHECK(h.state.creates.empty());
	// zero designators are no evidence: two namespaces of two subsystems
	CHECK(only([](auto &, auto &) {}) == 0);
	// nor are empty identities (loop, sd: no NVMe attributes)
	h.members.ids = {{"nvme1n1", {}}, {"nvme3n1", {}}};
	CHECK(h.run(create_args()) == 0);
	CHECK(h.state.creates.size() == 2);
}

TEST_CASE("create warns when member sizes differ by more than 1%")
{
	Harness h;
	h.devices.add("/dev/nvme1n1", 1, 2097152 * 2);  // 2 GiB
	REQUIRE(h.run(create_args()) == 0);
	CHECK(has(h.err.str(), "warning: member sizes differ by more than 1%: /dev/nvme1n1 has "
			       "1.99 GiB of data space, /dev/nvme0n1 only 1019 MiB; every member "
			       "contributes 1019 MiB, so 1 GiB of the members' space is unused"));

	Harness s;
	s.devices.add("/dev/nvme1n1", 1, 2097152 + 20000);  // < 1% more
	REQUIRE(s.run(create_args()) == 0);
	CHECK_FALSE(has(s.err.str(), "warning"));
}

TEST_CASE("create waits for /dev/fx/NAME while udevd runs, bounded")
{
	Harness h;
	h.members.udev = true;
	h.members.link_after_checks = 3;
	REQUIRE(h.run(create_args({"-v"})) == 0);
	CHECK(h.sleeps.size() == 3);
	CHECK(has(h.err.str(), "/dev/fx/vol1 exists after"));

	Harness never;
	never.members.udev = true;
	never.members.link_after_checks = 1000000;
	REQUIRE(never.run(create_args()) == 0);  // the volume exists: a warning only
	CHECK(has(never.err.str(), "/dev/fx/vol1 did not appear within 10 s"));
	CHECK(never.now - 1000.0 >= 10.0);
	CHECK(never.now - 1000.0 < 10.2);
}

TEST_CASE("create refuses names the kernel refuses (shared rule)")
{
	Harness h;
	for (std::string bad : std::vector<std::string>{"a/b", "a b", ".", "..", "", std::string(32, 'x'), "é"}) {
		CHECK_MESSAGE(h.run({"create", bad, "/dev/nvme0n1"}) == 2, bad);
		CHECK(has(h.err.str(), "invalid volume name"));
	}
	CHECK(h.state.creates.empty());
	CHECK(h.members.writes.empty());
}

TEST_CASE("examine: text, json and --export")
{
	Harness h;
	h.members.labels["/dev/nvme0n1"] = labelled(0);
	REQUIRE(h.run({"examine", "/dev/nvme0n1"}) == 0);
	CHECK(h.out.str() ==
	      "/dev/nvme0n1: member 0 of 2 of volume \"old\" (label: primary)\n"
	      "  volume uuid  11111111-2222-4333-8444-555555555555\n"
	      "  generation   3, created 2025-12-01T10:30:00Z\n"
	      "  owner        none recorded (label format 1)\n"
	      "  geometry     chunk 512 KiB, data offset 4 MiB, 1 MiB per member, capacity 2 MiB\n"
	      "  members (stripe order):\n"
	      "     0* nsid 1 of nqn.2026-12.org.example:a (nguid ab000000000000000000000000000000)\n"
	      "     1  unknown device (no NVMe identity)\n");

	REQUIRE(h.run({"examine", "--export", "/dev/nvme0n1"}) == 0);
	CHECK(h.out.str() ==
	      "FXBLK_MEMBER=1\nFXBLK_UUID=11111111-2222-4333-8444-555555555555\nFXBLK_NAME=old\n"
	      "FXBLK_INDEX=0\nFXBLK_COUNT=2\nFXBLK_GENERATION=3\nFXBLK_LABEL=primary\n");

	h.members.labels["/dev/nvme1n1"] = labelled(1, true);
	REQUIRE(h.run({"-o", "json", "examine", "/dev/nvme1n1"}) == 0);
	auto j = nlohmann::json::parse(h.out.str());
	CHECK(j["device"] == "/dev/nvme1n1");
	CHECK(j["member"] == true);
	CHECK(j["label_source"] == "backup");
	CHECK(j["primary"]["valid"] == false);
	CHECK(j["primary"]["reason"] == "bad crc32c: stored 00000001, computed 00000002");
	CHECK(j["backup"]["valid"] == true);
	CHECK(j["label"]["member_index"] == 1);
	CHECK(j["label"]["volume_uuid"] == "11111111-2222-4333-8444-555555555555");
	CHECK(j["label"]["chunk_bytes"] == 524288);
	CHECK(j["label"]["capacity_bytes"] == 2097152);
	CHECK(j["label"]["members"][0]["nguid"] == "ab000000000000000000000000000000");
	CHECK(j["label"]["members"][1]["nguid"] == "");
	REQUIRE(h.run({"examine", "/dev/nvme1n1"}) == 0);
	CHECK(has(h.out.str(), "(label: backup)"));
	CHECK(has(h.out.str(), "warning: primary label: bad crc32c: stored 00000001, computed "
			       "00000002; the backup label serves"));
	REQUIRE(h.run({"examine", "--export", "/dev/nvme1n1"}) == 0);
	CHECK(has(h.out.str(), "FXBLK_LABEL=backup\n"));

	// Not a member: exit 3 with the reasons; --export prints nothing, exit 0.
	CHECK(h.run({"examine", "/dev/nvme2n1"}) == 3);
	CHECK(h.out.str() == "/dev/nvme2n1: not an fxblk member (primary label: no fxblk label "
			     "(magic not found); backup label: no fxblk label (magic not found))\n");
	CHECK(h.run({"examine", "--export", "/dev/nvme2n1"}) == 0);
	CHECK(h.out.str().empty());
	CHECK(h.run({"-o", "json", "examine", "/dev/nvme2n1"}) == 3);
	j = nlohmann::json::parse(h.out.str());
	CHECK(j["member"] == false);
	CHECK(j["label"].is_null());
	CHECK(j["label_source"].is_null());

	CHECK(h.run({"examine"}) == 2);
	CHECK(h.run({"help", "examine"}) == 0);
	CHECK(has(h.out.str(), "Usage: fxctl examine [--export] DEVICE"));
}

TEST_CASE("examine names a reused member and the owner")
{
	Harness h;
	auto ml = labelled(1);
	ml.label->owner_nqn = "nqn.2014-08.org.nvmexpress:uuid:host-b";
	ml.from_backup = true;
	ml.primary_blank = true;
	ml.primary_reason = "no fxblk label (magic not found)";
	h.members.labels["/dev/nvme1n1"] = ml;
	h.members.sigs["/dev/nvme1n1"] = {{"ext4", "filesystem", 1080}};
	REQUIRE(h.run({"examine", "/dev/nvme1n1"}) == 0);
	CHECK(has(h.out.str(), "  owner        nqn.2014-08.org.nvmexpress:uuid:host-b\n"));
	CHECK(has(h.out.str(), "warning: reused: libblkid finds ext4 filesystem signature at byte "
			       "1080 on it (its backup fxblk label is left); not assembled as a "
			       "member: 'fxctl wipe /dev/nvme1n1' removes the old label"));
	REQUIRE(h.run({"examine", "--export", "/dev/nvme1n1"}) == 0);
	CHECK(has(h.out.str(), "FXBLK_LABEL=backup\nFXBLK_REUSED=1\n"));
	REQUIRE(h.run({"-o", "json", "examine", "/dev/nvme1n1"}) == 0);
	auto j = nlohmann::json::parse(h.out.str());
	CHECK(j["label"]["owner"] == "nqn.2014-08.org.nvmexpress:uuid:host-b");
	CHECK(j["label"]["format_version"] == 2);
	CHECK(has(j["reused"].get<std::string>(), "ext4 filesystem signature"));
	// a member without signatures is no reused disk
	h.members.labels["/dev/nvme0n1"] = labelled(0);
	REQUIRE(h.run({"examine", "--export", "/dev/nvme0n1"}) == 0);
	CHECK_FALSE(has(h.out.str(), "REUSED"));
}

TEST_CASE("wipe: asks, or --yes; refuses a running volume's member; only a labelled device")
{
	Harness h;
	h.members.labels["/dev/nvme1n1"] = labelled(1, true);
	// no terminal, no --yes: refused, nothing written
	CHECK(h.run({"wipe", "/dev/nvme1n1"}) == 1);
	CHECK(has(h.err.str(), "/dev/nvme1n1 is not wiped: no terminal to ask for confirmation; "
			       "run 'fxctl wipe --yes /dev/nvme1n1' to wipe the fxblk label of "
			       "member 1 of 2 of volume \"old\""));
	CHECK(h.members.wipes.empty());
	// asked, answered no
	h.answer = false;
	CHECK(h.run({"wipe", "/dev/nvme1n1"}) == 1);
	REQUIRE(h.questions.size() == 2);
	CHECK(h.questions.back() == "wipe the fxblk label of member 1 of 2 of volume \"old\" "
				    "(11111111-2222-4333-8444-555555555555) on /dev/nvme1n1?");
	CHECK(h.members.wipes.empty());
	// yes
	h.answer = true;
	REQUIRE(h.run({"wipe", "/dev/nvme1n1"}) == 0);
	CHECK(h.members.wipes == std::vector<std::string>{"/dev/nvme1n1"});
	CHECK(has(h.out.str(), "wiped the fxblk label of member 1 of 2"));
	// --yes: not asked
	h.answer.reset();
	h.questions.clear();
	REQUIRE(h.run({"-o", "json", "wipe", "--yes", "/dev/nvme1n1"}) == 0);
	CHECK(h.questions.empty());
	CHECK(nlohmann::json::parse(h.out.str())["wiped"] == true);
	// a member of a running volume: refused, exit 4
	h.members.wipes.clear();
	h.devices.devs["/dev/nvme1n1"].holders = {"fx0"};
	CHECK(h.run({"wipe", "--yes", "/dev/nvme1n1"}) == 4);
	CHECK(has(h.err.str(), "/dev/nvme1n1 is a member of running volume fx0"));
	CHECK(h.members.wipes.empty());
	// no label at all: nothing to do
	REQUIRE(h.run({"wipe", "--yes", "/dev/nvme2n1"}) == 0);
	CHECK(has(h.out.str(), "/dev/nvme2n1 carries no fxblk label; nothing to wipe"));
	CHECK(h.members.wipes.empty());
	CHECK(h.run({"wipe"}) == 2);
}

TEST_CASE("remove wipes the volume's own labels, nothing else")
{
	Harness h;  // fixed volume "vol1" on nvme0n1..nvme3n1
	label::MemberLabel own = labelled(0);
	own.label->volume_name = "vol1";
	h.members.labels["/dev/nvme0n1"] = own;
	own.label->member_index = 1;
	h.members.labels["/dev/nvme1n1"] = own;
	own.label->member_index = 3;  // index mismatch: not this member's label
	h.members.labels["/dev/nvme2n1"] = own;
	h.members.labels["/dev/nvme3n1"] = labelled(3);  // another volume's
	REQUIRE(h.run({"remove", "vol1"}) == 0);
	CHECK(h.members.wipes == std::vector<std::string>{"/dev/nvme0n1", "/dev/nvme1n1"});
}

TEST_CASE("every command taking a member device gives one message for one mistake")
{
	// create, examine and incremental (and examine --export, which udev
	// runs) share one check: a character device, a directory or a file is
	// "not a block device", a missing path "cannot access" (issue 23:
	// examine /dev/null used to answer "Inappropriate ioctl for device").
	Harness h;
	h.devices.others["/dev/null"] = S_IFCHR;
	h.devices.others["/tmp"] = S_IFDIR;
	h.devices.others["/tmp/image"] = S_IFREG;
	struct Mistake {
		std::string path;
		int rc;
		std::string msg;
	};
	std::vector<Mistake> mistakes = {
		{"/dev/null", 1,
		 "fxctl: /dev/null is not a block device (it is a character device); give a "
		 "block device, e.g. /dev/nvme0n1\n"},
		{"/tmp", 1,
		 "fxctl: /tmp is not a block device (it is a directory); give a block device, "
		 "e.g. /dev/nvme0n1\n"},
		{"/tmp/image", 1,
		 "fxctl: /tmp/image is not a block device (it is a regular file); give a block "
		 "device, e.g. /dev/nvme0n1\n"},
		{"/dev/nvme9n1", 3,
		 "fxctl: cannot access /dev/nvme9n1: No such file or directory; check the device "
		 "path\n"},
	};
	for (const auto &m : mistakes) {
		std::vector<std::vector<std::string>> commands = {
			{"create", "vol1", "/dev/nvme0n1", m.path},
			{"create", "--force", "vol1", m.path},
			{"examine", m.path},
			{"examine", "--export", m.path},
			{"incremental", m.path},
		};
		for (const auto &args : commands) {
			INFO(args.front(), " ", args.back());
			CHECK(h.run(args) == m.rc);
			CHECK(h.err.str() == m.msg);
			CHECK(h.out.str().empty());
		}
	}
	CHECK(h.members.writes.empty());
	CHECK(h.state.creates.empty());
	// the same in JSON: an error object naming the path
	CHECK(h.run({"-o", "json", "examine", "/dev/null"}) == 1);
	auto j = nlohmann::json::parse(h.out.str());
	CHECK(j.at("error").at("message").get<std::string>().find(
		      "/dev/null is not a block device") == 0);
}
