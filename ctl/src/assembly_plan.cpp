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

// The first field in which two labels of one set disagree, or "". A @stale label (an older generation,
// taken under --force) may differ in what rename and update --identity
// rewrite (name, member identities): only the geometry counts.
std::string disagreement(const label::Label &a, const label::Label &b, bool stale)
{
	if (!stale && a.volume_name != b.volume_name)
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
	if (!stale && a.members != b.members)
		return "the list of member identities";
	return "";
}

// "is <identity>" for a foreign device; when describe() shows both alike
// (it shows one of NGUID, UUID, EUI-64), also the field that differs.
std::string foreign_is(const label::MemberId &want, const std::optional<label::MemberId> &have)
{
	if (!have)
		return "of unknown identity (not readable)";
	std::string is = have->describe();
	if (is != want.describe())
		return is;
	if (have->uuid != want.uuid)
		return fmt::format("{}, but with uuid {} instead of {} (a target that gives "
				   "its namespaces a new UUID at every start?)",
				   is, label::uuid_to_string(have->uuid),
				   label::uuid_to_string(want.uuid));
	return is + ", but with another NGUID/EUI-64";
}

// @c is the namespace its own label records at its index.
bool genuine(const Candidate &c)
{
	const label::Label &l = *c.ml.label;
	return c.identity && l.member_index < l.members.size() &&
	       *c.identity == l.members[l.member_index];
}

std::string identity_of(const Candidate &c)
{
	return c.identity ? c.identity->describe() : "of unknown identity (not readable)";
}

}  // namespace

std::string reuse_reason(const Candidate &c)
{
	if (!c.ml.label)
		return "";
	if (!c.signatures.empty()) {
		std::string sigs;
		for (const auto &s : c.signatures)
			sigs += (sigs.empty() ? "" : ", ") + s;
		return fmt::format("libblkid finds {} on it (its {} fxblk label is left)", sigs,
				   c.ml.source());
	}
	if (c.ml.from_backup && c.ml.primary_blank)
		return "its primary label at byte 4096 is gone (overwritten or zeroed: no fxblk "
		       "magic there), only the backup copy at the end is left";
	return "";
}

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

Plan plan_volume(const std::vector<Candidate> &group, PlanOptions opts)
{
	Plan p;
	if (group.empty()) {
		p.problems.push_back("no member of the volume is present");
		return p;
	}
	// The newest generation decides; a device carrying it is the reference
	// every other label is compared with: the real namespace of its index
	// if there is one, not a copy (the target's backing device seen
	// locally, a clone), so that messages name the member.
	const Candidate *newest = nullptr;
	for (const auto &c : group) {
		const auto g = c.ml.label->generation;
		if (!newest || g > newest->ml.label->generation ||
		    (g == newest->ml.label->generation && genuine(c) && !genuine(*newest)))
			newest = &c;
	}
	p.reference = *newest->ml.label;
	const label::Label &ref = p.reference;

	std::map<std::uint32_t, std::vector<const Candidate *>> claims;
	std::vector<bool> held(ref.member_count, false);  // by any label, stale too
	// Indices whose member is present but was reused (refused above): a
	// copy of its label elsewhere does not make them missing.
	std::vector<bool> reused(ref.member_count, false);
	for (const auto &c : group) {
		const label::Label &l = *c.ml.label;
		if (l.generation < ref.generation && !genuine(c)) {
			// not the namespace its label names: an old copy, not the
			// member (whose own label, or absence, is reported)
			p.warnings.push_back(fmt::format(
				"{} carries an old copy (generation {}) of member {}'s label "
				"but is not that namespace ({}); ignored", c.devname,
				l.generation, l.member_index, identity_of(c)));
			continue;
		}
		if (l.member_index < held.size())
			held[l.member_index] = true;
		// (a copy of the label elsewhere is dealt with as foreign below)
		if (std::string why = reuse_reason(c); !why.empty() && genuine(c)) {
			if (!opts.force) {
				reused[l.member_index] = true;  // genuine: index < count
				p.problems.push_back(fmt::format(
					"{} was reused: {}; it is not taken as a member: if it no "
					"longer is one, 'fxctl wipe {}' removes the old fxblk label; if "
					"it still is, 'fxctl assemble --force {}' erases the other "
					"signature and rewrites its label", who(c), why, c.devnode,
					ref.volume_name));
				continue;
			}
			p.warnings.push_back(fmt::format("--force: {} was reused ({}); taken as "
							 "member {}, its label is rewritten",
							 who(c), why, l.member_index));
		}
		if (l.generation < ref.generation && opts.force) {
			p.warnings.push_back(fmt::format(
				"--force: {} has a stale label (generation {}, the set {}); taken "
				"as member {}, its label is rewritten", who(c), l.generation,
				ref.generation, l.member_index));
		} else if (l.generation < ref.generation) {
			p.problems.push_back(fmt::format(
				"{} has a stale label: generation {}, but {} has generation {}; it "
				"missed an update of the set, so its data cannot be trusted "
				"(member {}: {})",
				who(c), l.generation, who(*newest), ref.generation, l.member_index,
				c.identity->describe()));
			continue;
		}
		std::string differs = disagreement(l, ref, l.generation < ref.generation);
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
		claims[l.member_index].push_back(&c);
	}
	// Per index: the device with the recorded identity is the member; a
	// copy of its label elsewhere (the target's backing device seen
	// locally, a dd clone) is foreign and ignored. Without such a device
	// the index is missing, and foreign claimants are named.
	std::vector<const Candidate *> chosen(ref.member_count, nullptr);
	for (const auto &[index, devs] : claims) {
		const label::MemberId &want = ref.members[index];
		std::vector<const Candidate *> match, foreign;
		for (const auto *d : devs)
			(d->identity && *d->identity == want ? match : foreign).push_back(d);
		if (match.size() > 1) {
			std::string names;
			for (const auto *d : match)
				names += (names.empty() ? "" : " and ") + d->devname;
			p.problems.push_back(fmt::format(
				"{} all claim member index {} with its identity ({}); refusing to "
				"guess which one is member {} (two paths to one namespace without "
				"multipath?)", names, index, want.describe(), index));
		} else if (match.size() == 1) {
			chosen[index] = match.front();
		}
		for (const auto *f : foreign) {
			std::string is = foreign_is(want, f->identity);
			std::string msg = fmt::format("{} is foreign: the labels record member {} as "
						      "{}, but {} is {}", who(*f), index,
						      want.describe(), f->devname, is);
			if (match.empty() && !reused[index])
				p.problems.push_back(msg);
			else if (match.empty())
				p.warnings.push_back(msg + "; ignored");
			else
				p.warnings.push_back(fmt::format("{} and {} claim member index {}; {}; "
								 "ignored", match.front()->devname,
								 f->devname, index, msg));
		}
		if (match.empty() && !reused[index])
			held[index] = false;  // reported missing below
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
	for (const auto *c : chosen)
		p.ordered.push_back(*c);
	return p;
}

}  // namespace fxctl
