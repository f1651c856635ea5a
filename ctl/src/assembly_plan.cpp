#include "assembly_plan.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace fxctl {
namespace {

// "nvme2n1 (member 2)"
std::string who(const Candidate &c)
{
	return fmt::format("{} (member {})", c.devname, c.ml.label->member_index);
}

// The first field in which two labels of one set disagree, or "".
std::string disagreement(const label::Label &a, const label::Label &b)
{
	if (a.volume_name != b.volume_name)
		return fmt::format("name \"{}\" vs \"{}\"", a.volume_name, b.volume_name);
	if (a.member_count != b.member_count)
		return fmt::format("member count {} vs {}", a.member_count, b.member_count);
	if (a.chunk_sectors != b.chunk_sectors)
		return fmt::format("chunk {} vs {} sectors", a.chunk_sectors, b.chunk_sectors);
	if (a.data_offset_sectors != b.data_offset_sectors)
		return fmt::format("data offset {} vs {} sectors", a.data_offset_sectors,
				   b.data_offset_sectors);
	if (a.data_sectors != b.data_sectors)
		return fmt::format("data size {} vs {} sectors", a.data_sectors, b.data_sectors);
	if (a.members != b.members)
		return "the list of member identities";
	return "";
}

}  // namespace

std::map<VolumeUuid, std::vector<Candidate>> group_by_volume(std::vector<Candidate> cands)
{
	std::map<VolumeUuid, std::vector<Candidate>> groups;
	for (auto &c : cands)
		if (c.ml.label)
			groups[c.ml.label->volume_uuid].push_back(std::move(c));
	return groups;
}

std::string Plan::summary() const
{
	std::size_t present = ordered.size();
	if (!ok())
		present = reference.member_count - missing.size();
	return fmt::format("volume \"{}\" ({}): {} of {} members present",
			   reference.volume_name, label::uuid_to_string(reference.volume_uuid),
			   present, reference.member_count);
}

Plan plan_volume(const std::vector<Candidate> &group)
{
	Plan p;
	if (group.empty()) {
		p.problems.push_back("no member of the volume is present");
		return p;
	}
	// The newest generation decides; the first device carrying it is the
	// reference every other label is compared with.
	const Candidate *newest = &group.front();
	for (const auto &c : group)
		if (c.ml.label->generation > newest->ml.label->generation)
			newest = &c;
	p.reference = *newest->ml.label;
	const label::Label &ref = p.reference;

	std::map<std::uint32_t, std::vector<const Candidate *>> claims;
	std::vector<bool> held(ref.member_count, false);  // by any label, stale too
	for (const auto &c : group) {
		const label::Label &l = *c.ml.label;
		if (l.member_index < held.size())
			held[l.member_index] = true;
		if (l.generation < ref.generation) {
			p.problems.push_back(fmt::format(
				"{} has a stale label: generation {}, but {} has generation {}; it "
				"missed an update of the set, so its data cannot be trusted",
				who(c), l.generation, newest->devname, ref.generation));
			continue;
		}
		std::string differs = disagreement(l, ref);
		if (!differs.empty()) {
			p.problems.push_back(fmt::format(
				"{} and {} carry generation {} of the volume but disagree on {}",
				c.devname, newest->devname, l.generation, differs));
			continue;
		}
		if (l.member_index >= ref.member_count || ref.members.size() != ref.member_count) {
			p.problems.push_back(fmt::format("{} claims index {} of a {}-member volume",
							 c.devname, l.member_index, ref.member_count));
			continue;
		}
		const label::MemberId &want = ref.members[l.member_index];
		if (!c.identity)
			p.problems.push_back(fmt::format("{}: cannot read the device's identity to "
							 "check it against the label", who(c)));
		else if (!(*c.identity == want))
			p.problems.push_back(fmt::format(
				"{} is foreign: the labels record member {} as {}, but {} is {}",
				who(c), l.member_index, want.describe(), c.devname,
				c.identity->describe()));
		claims[l.member_index].push_back(&c);
	}
	for (const auto &[index, devs] : claims) {
		if (devs.size() < 2)
			continue;
		std::string names;
		for (const auto *d : devs)
			names += (names.empty() ? "" : " and ") + d->devname;
		p.problems.push_back(fmt::format("{} all claim member index {}; refusing to guess "
						 "which one is member {}", names, index, index));
	}
	for (std::uint32_t i = 0; i < ref.member_count; ++i) {
		if (held[i])
			continue;
		p.missing.push_back(i);
		p.problems.push_back(fmt::format(
			"member {} of {} is missing: {}", i, ref.member_count,
			i < ref.members.size() ? ref.members[i].describe() : "unknown identity"));
	}
	if (!p.ok())
		return p;
	for (std::uint32_t i = 0; i < ref.member_count; ++i)
		p.ordered.push_back(*claims.at(i).front());
	return p;
}

}  // namespace fxctl
