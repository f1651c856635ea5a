// Assembly policy without devices: labels in, ordered members or refusals
// (naming the device and the member) out.
#include "assembly_plan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace fxctl;

namespace {

label::MemberId ident(unsigned i)
{
	label::MemberId id;
	id.subsys_nqn = "nqn.2026-11.io.fxblk.test:member" + std::to_string(i);
	id.nsid = 1;
	id.nguid[15] = static_cast<std::uint8_t>(i + 1);
	return id;
}

label::Label volume_label(unsigned count, std::uint64_t generation = 5)
{
	label::Label l;
	l.volume_uuid[0] = 0xab;
	l.volume_name = "kv-cache";
	l.member_count = count;
	l.chunk_sectors = 1024;
	l.data_offset_sectors = 8192;
	l.data_sectors = 1 << 20;
	l.generation = generation;
	for (unsigned i = 0; i < count; ++i)
		l.members.push_back(ident(i));
	return l;
}

// Device @dev ("nvme<dev>n1") holding member @index's label and, unless
// told otherwise, the identity the labels record for it.
Candidate member(unsigned dev, unsigned index, const label::Label &vol)
{
	Candidate c;
	c.devname = "nvme" + std::to_string(dev) + "n1";
	c.devnode = "/dev/" + c.devname;
	label::Label l = vol;
	l.member_index = index;
	c.ml.label = l;
	c.identity = vol.members.at(index);
	return c;
}

bool mentions(const Plan &p, const std::string &a, const std::string &b = "")
{
	return std::any_of(p.problems.begin(), p.problems.end(), [&](const std::string &s) {
		return s.find(a) != std::string::npos && s.find(b) != std::string::npos;
	});
}

std::string all(const Plan &p)
{
	std::string s;
	for (const auto &x : p.problems)
		s += x + "\n";
	return s;
}

}  // namespace

TEST_CASE("a complete set comes out in index order, whatever the device order")
{
	auto vol = volume_label(4);
	// kernel names reshuffled by a reconnect: nvme0n1 now holds member 2
	Plan p = plan_volume({member(0, 2, vol), member(1, 0, vol), member(2, 3, vol),
			      member(3, 1, vol)});
	INFO(all(p));
	REQUIRE(p.ok());
	REQUIRE(p.ordered.size() == 4);
	CHECK(p.ordered[0].devname == "nvme1n1");
	CHECK(p.ordered[1].devname == "nvme3n1");
	CHECK(p.ordered[2].devname == "nvme0n1");
	CHECK(p.ordered[3].devname == "nvme2n1");
	CHECK(p.reference.volume_name == "kv-cache");
	CHECK(p.summary().find("4 of 4 members present") != std::string::npos);
}

TEST_CASE("a missing member is named by index and identity; nothing is assembled")
{
	auto vol = volume_label(4);
	Plan p = plan_volume({member(0, 0, vol), member(1, 1, vol), member(2, 3, vol)});
	CHECK_FALSE(p.ok());
	CHECK(p.ordered.empty());
	REQUIRE(p.missing == std::vector<std::uint32_t>{2});
	CHECK(mentions(p, "member 2 of 4 is missing", ident(2).describe()));
	CHECK(p.summary().find("3 of 4 members present") != std::string::npos);
}

TEST_CASE("a device whose identity is not the one recorded for its index is foreign")
{
	auto vol = volume_label(2);
	auto intruder = member(7, 1, vol);
	intruder.identity = ident(9);  // same label bytes, another namespace
	Plan p = plan_volume({member(0, 0, vol), intruder});
	CHECK_FALSE(p.ok());
	CHECK(p.ordered.empty());
	CHECK(mentions(p, "nvme7n1 (member 1) is foreign", ident(1).describe()));
	CHECK(mentions(p, "foreign", ident(9).describe()));
	CHECK(mentions(p, "member 1 of 2 is missing"));

	auto unknown = member(7, 1, vol);
	unknown.identity.reset();  // could not be read: not trusted either
	CHECK(mentions(plan_volume({member(0, 0, vol), unknown}), "nvme7n1",
		       "unknown identity (not readable)"));
}

TEST_CASE("a namespace whose UUID changed is foreign, and the message says what differs")
{
	// nvmet without device_uuid: same NQN, NSID and NGUID, a new UUID
	auto vol = volume_label(2);
	auto moved = member(1, 1, vol);
	moved.identity->uuid[0] = 0x42;
	Plan p = plan_volume({member(0, 0, vol), moved});
	INFO(all(p));
	CHECK_FALSE(p.ok());
	CHECK(mentions(p, "nvme1n1 (member 1) is foreign",
		       "but nvme1n1 is nsid 1 of nqn.2026-11.io.fxblk.test:member1 (nguid "
		       "00000000000000000000000000000002), but with uuid "
		       "42000000-0000-0000-0000-000000000000 instead of "
		       "00000000-0000-0000-0000-000000000000"));
}

TEST_CASE("a foreign copy beside the real member is ignored, with a warning")
{
	auto vol = volume_label(2);
	auto copy = member(5, 1, vol);  // e.g. the target's backing device
	copy.identity = label::MemberId{};
	Plan p = plan_volume({copy, member(0, 0, vol), member(1, 1, vol)});
	INFO(all(p));
	REQUIRE(p.ok());
	CHECK(p.ordered.at(1).devname == "nvme1n1");
	REQUIRE(p.warnings.size() == 1);
	CHECK(p.warnings[0].find("nvme1n1 and nvme5n1 claim member index 1") != std::string::npos);
	CHECK(p.warnings[0].find("ignored") != std::string::npos);
}

TEST_CASE("a member with an older generation than the set is refused, named")
{
	auto vol = volume_label(3, 7);
	auto old = member(2, 2, volume_label(3, 6));
	Plan p = plan_volume({member(0, 0, vol), member(1, 1, vol), old});
	CHECK_FALSE(p.ok());
	CHECK(p.ordered.empty());
	CHECK(mentions(p, "nvme2n1 (member 2) has a stale label", "generation 6"));
	CHECK(mentions(p, "stale", "generation 7"));
	CHECK(p.missing.empty());  // present, but not usable: not reported as missing
	CHECK(p.reference.generation == 7);

	// the newest generation wins whatever the scan order
	Plan q = plan_volume({old, member(0, 0, vol), member(1, 1, vol)});
	CHECK(q.reference.generation == 7);
	CHECK(mentions(q, "nvme2n1 (member 2) has a stale label"));
}

TEST_CASE("a stale label is reported against a member, not against a copy")
{
	// The lab's (and a host-side target's) backing devices carry copies of
	// the labels without an NVMe identity, and may come first in the scan.
	auto vol = volume_label(3, 7);
	auto copy0 = member(7, 0, vol);
	copy0.devname = "nullb0";
	copy0.identity = label::MemberId{};
	auto old = member(2, 2, volume_label(3, 6));
	auto copy2 = member(8, 2, volume_label(3, 6));  // member 2's old label, copied
	copy2.devname = "nullb2";
	copy2.identity = label::MemberId{};
	Plan p = plan_volume({copy0, copy2, member(0, 0, vol), member(1, 1, vol), old});
	INFO(all(p));
	CHECK_FALSE(p.ok());
	REQUIRE(p.problems.size() == 1);
	CHECK(p.problems[0] ==
	      "nvme2n1 (member 2) has a stale label: generation 6, but nvme0n1 (member 0) has "
	      "generation 7; it missed an update of the set, so its data cannot be trusted "
	      "(member 2: nsid 1 of nqn.2026-11.io.fxblk.test:member2 (nguid "
	      "00000000000000000000000000000003))");
	CHECK(p.missing.empty());
	// the old copy is no member: a warning, and it holds no index
	CHECK(std::any_of(p.warnings.begin(), p.warnings.end(), [](const std::string &w) {
		return w.find("nullb2 carries an old copy (generation 6) of member 2's label but is "
			      "not that namespace (unknown device (no NVMe identity)); ignored") !=
		       std::string::npos;
	}));
	Plan q = plan_volume({copy0, copy2, member(0, 0, vol), member(1, 1, vol)});
	INFO(all(q));
	CHECK(q.missing == std::vector<std::uint32_t>{2});
}

TEST_CASE("two devices claiming one index are refused, both named")
{
	auto vol = volume_label(2);
	// the same namespace twice (two paths without multipath): both match
	Plan q = plan_volume({member(0, 0, vol), member(3, 0, vol), member(1, 1, vol)});
	CHECK_FALSE(q.ok());
	CHECK(q.ordered.empty());
	CHECK(mentions(q, "nvme0n1 and nvme3n1 all claim member index 0"));

	// member 0's label copied onto member 1: the copy is foreign, and
	// member 1 is missing
	auto copy = member(1, 0, vol);
	copy.identity = ident(1);
	Plan p = plan_volume({member(0, 0, vol), copy});
	CHECK_FALSE(p.ok());
	CHECK(p.ordered.empty());
	CHECK(mentions(p, "member 1 of 2 is missing"));
	REQUIRE(p.warnings.size() == 1);
	CHECK(p.warnings[0].find("nvme0n1 and nvme1n1 claim member index 0") != std::string::npos);
	CHECK(p.warnings[0].find("nvme1n1 (member 0) is foreign") != std::string::npos);
}

TEST_CASE("labels of one generation that disagree on the geometry are refused")
{
	auto vol = volume_label(2);
	auto odd = member(1, 1, vol);
	odd.ml.label->chunk_sectors = 256;
	Plan p = plan_volume({member(0, 0, vol), odd});
	CHECK_FALSE(p.ok());
	CHECK(mentions(p, "nvme1n1 and nvme0n1", "chunk 256 vs 1024 sectors"));
}

TEST_CASE("devices are grouped by volume UUID; unlabelled ones are left out")
{
	auto a = volume_label(2);
	auto b = volume_label(1);
	b.volume_uuid[0] = 0xcd;
	b.volume_name = "other";
	Candidate blank;
	blank.devname = "nvme9n1";
	auto groups = group_by_volume({member(0, 0, a), blank, member(1, 0, b), member(2, 1, a)});
	REQUIRE(groups.size() == 2);
	CHECK(groups.at(a.volume_uuid).size() == 2);
	CHECK(groups.at(b.volume_uuid).size() == 1);
	CHECK(plan_volume(groups.at(a.volume_uuid)).ok());
	CHECK(plan_volume(groups.at(b.volume_uuid)).ok());
}

// Review M2: a disk reused by mkfs or a partition table keeps the backup
// label at its end; it is not a member any more unless --force says so.
TEST_CASE("a reused member (another signature on it) is refused, named with what libblkid finds")
{
	auto vol = volume_label(3);
	Candidate reused = member(1, 1, vol);
	reused.ml.from_backup = true;
	reused.ml.primary_blank = true;
	reused.signatures = {"ext4 filesystem signature at byte 1080"};
	CHECK(reuse_reason(reused) ==
	      "libblkid finds ext4 filesystem signature at byte 1080 on it (its backup fxblk "
	      "label is left)");
	Plan p = plan_volume({member(0, 0, vol), reused, member(2, 2, vol)});
	CHECK_FALSE(p.ok());
	CHECK(p.missing.empty());  // not missing: there, but reused
	CHECK(mentions(p, "nvme1n1 (member 1) was reused: libblkid finds ext4 filesystem",
		       "'fxctl wipe /dev/nvme1n1' removes the old fxblk label"));
	CHECK(mentions(p, "'fxctl assemble --force kv-cache'"));
	CHECK(p.ordered.empty());

	// --force: taken as member 1, with a warning
	p = plan_volume({member(0, 0, vol), reused, member(2, 2, vol)}, {true});
	INFO(all(p));
	REQUIRE(p.ok());
	REQUIRE(p.ordered.size() == 3);
	CHECK(p.ordered[1].devname == "nvme1n1");
	REQUIRE(p.warnings.size() == 1);
	CHECK(p.warnings[0].find("--force: nvme1n1 (member 1) was reused") != std::string::npos);
}

TEST_CASE("a signature beside an intact primary label is reuse too (mkfs.xfs writes at 0)")
{
	auto vol = volume_label(2);
	Candidate c = member(0, 0, vol);
	c.signatures = {"xfs filesystem signature at byte 0"};
	CHECK(reuse_reason(c) == "libblkid finds xfs filesystem signature at byte 0 on it (its "
				 "primary fxblk label is left)");
	CHECK_FALSE(plan_volume({c, member(1, 1, vol)}).ok());
}

TEST_CASE("primary gone, backup left: reuse; primary damaged (magic, bad crc): the backup serves")
{
	auto vol = volume_label(2);
	Candidate gone = member(0, 0, vol);
	gone.ml.from_backup = true;
	gone.ml.primary_blank = true;
	gone.ml.primary_reason = "no fxblk label (magic not found)";
	CHECK(reuse_reason(gone).find("primary label at byte 4096 is gone") != std::string::npos);
	Plan p = plan_volume({gone, member(1, 1, vol)});
	CHECK(mentions(p, "nvme0n1 (member 0) was reused: its primary label at byte 4096 is gone"));

	Candidate damaged = member(0, 0, vol);
	damaged.ml.from_backup = true;
	damaged.ml.primary_reason = "bad crc32c: stored 00000001, computed 00000002";
	CHECK(reuse_reason(damaged).empty());
	p = plan_volume({damaged, member(1, 1, vol)});
	INFO(all(p));
	CHECK(p.ok());
}

TEST_CASE("--force takes a member at an older generation, with a warning")
{
	auto vol = volume_label(2, 6);
	Candidate old = member(1, 1, volume_label(2, 5));
	Plan p = plan_volume({member(0, 0, vol), old});
	CHECK(mentions(p, "nvme1n1 (member 1) has a stale label: generation 5"));
	p = plan_volume({member(0, 0, vol), old}, {true});
	INFO(all(p));
	REQUIRE(p.ok());
	CHECK(p.reference.generation == 6);
	REQUIRE(p.warnings.size() == 1);
	CHECK(p.warnings[0].find("--force: nvme1n1 (member 1) has a stale label (generation 5, "
				 "the set 6)") != std::string::npos);
	// geometry still has to agree
	label::Label other = volume_label(2, 5);
	other.chunk_sectors = 2048;
	p = plan_volume({member(0, 0, vol), member(1, 1, other)}, {true});
	CHECK(mentions(p, "disagree on chunk"));
}

TEST_CASE("a reused member beside a copy of its label is reused, not missing")
{
	// the lab: the target's backing device nullb1 shows member 1's label too
	auto vol = volume_label(2);
	Candidate reused = member(1, 1, vol);
	reused.signatures = {"ext4 filesystem signature at byte 1080"};
	Candidate copy = member(9, 1, vol);
	copy.devname = "nullb1";
	copy.identity = label::MemberId{};
	copy.signatures = reused.signatures;
	Plan p = plan_volume({member(0, 0, vol), reused, copy});
	INFO(all(p));
	CHECK(p.missing.empty());
	REQUIRE(p.problems.size() == 1);
	CHECK(mentions(p, "nvme1n1 (member 1) was reused"));
	CHECK_FALSE(mentions(p, "nullb1"));
}
