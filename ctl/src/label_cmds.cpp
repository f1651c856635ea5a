#include "label_cmds.hpp"

#include "assemble.hpp"
#include "assembly_plan.hpp"
#include "label.hpp"
#include "scan.hpp"
#include "volume_ops.hpp"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fmt/format.h>

namespace fxctl {
namespace po = boost::program_options;
namespace {

std::map<VolumeUuid, std::vector<Candidate>> scan_volumes(const Ctx &ctx)
{
	return group_by_volume(
		scan_members(ctx.env.blockdevs(), ctx.env.members(), scan_log(ctx)));
}

// Refuses to rewrite the labels of @ref (for command @cmd) while the
// kernel runs it (by UUID or name) or a member is held by a volume: the
// kernel's view of the set would no longer be its labels'. Without the
// module nothing runs; the members' holders still count.
void refuse_running(Ctx &ctx, const Plan &p, const std::string &cmd)
{
	const label::Label &ref = p.reference;
	std::vector<Volume> vols;
	try {
		vols = ctx.env.connect()->list();
	} catch (const ModuleNotLoaded &) {
	}
	for (const auto &v : vols)
		if ((v.uuid && *v.uuid == ref.volume_uuid) || v.name == ref.volume_name)
			throw Error(fmt::format("cannot {} {}: it is running as /dev/{}; its labels "
						"are rewritten only while it is stopped: 'fxctl stop "
						"{}' first, then run the command again",
						cmd, volume_object(ref), v.disk, v.name),
				    errno_error(EBUSY));
	for (const auto &c : p.ordered) {
		BlockDevice d = ctx.env.blockdevs().probe(c.devnode);
		if (!d.holders.empty())
			throw Error(fmt::format("cannot {} {}: {} (member {}) is in use by {}; stop "
						"or remove {} first",
						cmd, volume_object(ref), c.devnode,
						c.ml.label->member_index, d.holders.front(),
						d.holders.front()),
				    errno_error(EBUSY));
	}
}

// Refuses an incomplete or inconsistent set, with the plan's problems
// (exit 3 when members are missing, as assemble).
void refuse_plan(const Plan &p, const std::string &cmd)
{
	if (p.ok())
		return;
	std::string msg = fmt::format("cannot {} {}: {}; every member must be present and its "
				      "labels agree (as for 'fxctl assemble {}')",
				      cmd, volume_object(p.reference), p.summary(),
				      p.reference.volume_name);
	for (const auto &why : p.problems)
		msg += "\n  " + why;
	throw Error(msg, p.missing.empty() ? errno_error(EINVAL) : errno_error(ENODEV));
}

// The devices of volume NAME or UUID @target among @groups: exactly one
// volume, else an Error naming what to do.
const std::vector<Candidate> &
select_volume(const std::map<VolumeUuid, std::vector<Candidate>> &groups,
	      const std::string &target)
{
	auto uuid = label::uuid_from_string(target);
	std::vector<const std::vector<Candidate> *> match;
	std::string ids;
	for (const auto &[id, group] : groups) {
		Plan p = plan_volume(group);
		if (uuid ? id == *uuid : p.reference.volume_name == target) {
			match.push_back(&group);
			ids += "\n  " + p.summary();
		}
	}
	if (match.empty())
		throw Error(fmt::format("no member of a volume {} \"{}\" found among the block "
					"devices present; connect its members ('nvme list' shows what "
					"is connected) or see 'fxctl examine DEV'",
					uuid ? "with UUID" : "named", target),
			    errno_error(ENOENT));
	if (match.size() > 1)
		throw Error(fmt::format("more than one volume is named \"{}\"; name one by its "
					"UUID:{}", target, ids),
			    errno_error(EINVAL));
	return *match.front();
}

}  // namespace

void rename_options(po::options_description &, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	hidden.add_options()("old", po::value<std::string>(), "volume NAME or UUID")(
		"new", po::value<std::string>(), "new name");
	pos.add("old", 1).add("new", 1);
}

void update_options(po::options_description &opts, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	opts.add_options()
		("identity", po::bool_switch(),
		 "re-record the NVMe identity (NQN, NSID, NGUID, UUID, EUI-64) of the "
		 "namespace each DEVICE is on now as its member's, in every member's label, "
		 "in one rewrite; without DEVICE (with --volume): every member of the volume")
		("volume", po::value<std::string>()->value_name("NAME"),
		 "refuse unless every DEVICE is a member of volume NAME (or UUID); alone: "
		 "take every device carrying one of its labels")
		("yes,y", po::bool_switch(), "update without asking (for scripts)");
	hidden.add_options()("device", po::value<std::vector<std::string>>(), "member devices");
	pos.add("device", -1);
}

int cmd_rename(Ctx &ctx)
{
	if (!ctx.vm.count("old") || !ctx.vm.count("new"))
		throw UsageError("rename needs the volume's NAME (or UUID) and its NEW name");
	const std::string target = ctx.vm["old"].as<std::string>();
	const std::string name = ctx.vm["new"].as<std::string>();
	check_name(name);
	const VolumeUuid uuid = [&] {
		auto groups = scan_volumes(ctx);
		return select_volume(groups, target).front().ml.label->volume_uuid;
	}();
	// as assemble, incremental and stop: nothing else starts it meanwhile
	auto lock = volume_lock(uuid);
	auto groups = scan_volumes(ctx);
	Plan p = plan_volume(select_volume(groups, label::uuid_to_string(uuid)));
	const std::string old = p.reference.volume_name;
	if (old == name) {
		ctx.print(json{{"uuid", label::uuid_to_string(uuid)}, {"old_name", old},
			       {"name", name}, {"generation", p.reference.generation},
			       {"renamed", false}},
			  fmt::format("{} is already named \"{}\"; nothing to do\n",
				      volume_object(p.reference), name));
		return exit_ok;
	}
	for (const auto &[id, group] : groups) {
		if (id == uuid)
			continue;
		const label::Label &other = plan_volume(group).reference;
		if (other.volume_name == name)
			throw Error(fmt::format("cannot rename {} to \"{}\": volume {} already carries "
						"that name (its members are present); choose another name",
						volume_object(p.reference), name, volume_object(other)),
				    errno_error(EEXIST));
	}
	refuse_plan(p, "rename");
	refuse_running(ctx, p, "rename");
	try {
		for (const auto &v : ctx.env.connect()->list())
			if (v.name == name)
				throw Error(fmt::format("cannot rename {} to \"{}\": a volume of that "
							"name runs as /dev/{}; choose another name",
							volume_object(p.reference), name, v.disk),
					    errno_error(EEXIST));
	} catch (const ModuleNotLoaded &) {
	}
	label::Label next = p.reference;
	next.volume_name = name;
	rewrite_members(ctx, p, next,
			fmt::format("'fxctl assemble --force {}' takes the members left behind and "
				    "rewrites their labels", name));
	ctx.print(json{{"uuid", label::uuid_to_string(uuid)}, {"old_name", old}, {"name", name},
		       {"generation", p.reference.generation}, {"renamed", true}},
		  fmt::format("renamed \"{}\" ({}) to \"{}\": labels of {} rewritten at generation "
			      "{}; 'fxctl assemble {}' starts it\n",
			      old, label::uuid_to_string(uuid), name, devnames(p.ordered),
			      p.reference.generation, name));
	return exit_ok;
}

namespace {

// One member update --identity re-records: the device, its index and the
// identity the labels record for it (@was) and the one it has now.
struct IdentityMove {
	std::string dev;  // as given (/dev/nvme0n1)
	std::uint32_t index = 0;
	label::MemberId was, now;
};

// "DEV (what it is) and DEV (what it is)": which of two devices carrying one
// member's label is on the fabric is the admin's best clue to the member.
std::string two_devices(const Candidate &a, const Candidate &b)
{
	auto one = [](const Candidate &c) {
		return fmt::format("{} ({})", c.devnode,
				   c.identity ? c.identity->describe() : "identity unreadable");
	};
	return one(a) + " and " + one(b);
}

// A wipe of the wrong one destroys the member's label: a target's backing
// device on the same host (a loopback set-up, a lab) shows the label of the
// namespace it backs.
constexpr const char *kCopyAdvice =
	"Wipe the other ('fxctl wipe DEVICE') only if it is a copy (a snapshot, "
	"a clone): never the device a target on this host exports, which holds "
	"the member's own label";

// The devices update --identity works on, as /dev paths: the DEVICE
// arguments, or (--volume alone) every device carrying a label of that
// volume, in stripe order (review H1: an nvmet restart, an NQN rename or a
// DR array moves every member at once).
std::vector<std::string> identity_devices(Ctx &ctx)
{
	if (ctx.vm.count("device"))
		return ctx.vm["device"].as<std::vector<std::string>>();
	if (!ctx.vm.count("volume"))
		throw UsageError("update --identity needs the DEVICEs that moved (members, e.g. "
				 "/dev/nvme0n1), or --volume NAME for every member of NAME");
	auto groups = scan_volumes(ctx);
	std::vector<Candidate> group = select_volume(groups, ctx.vm["volume"].as<std::string>());
	// old copies of a label (an earlier generation) are not members
	std::uint64_t newest = 0;
	for (const auto &c : group)
		newest = std::max<std::uint64_t>(newest, c.ml.label->generation);
	std::erase_if(group, [&](const Candidate &c) { return c.ml.label->generation < newest; });
	// (index, device) pairs: sorting the candidates themselves trips GCC's
	// maybe-uninitialized on the optional label
	std::vector<std::pair<std::uint32_t, const Candidate *>> by_index;
	for (const auto &c : group)
		by_index.emplace_back(c.ml.label->member_index, &c);
	std::stable_sort(by_index.begin(), by_index.end(),
			 [](const auto &a, const auto &b) { return a.first < b.first; });
	std::vector<std::string> out;
	for (std::size_t i = 0; i < by_index.size(); ++i) {
		if (i && by_index[i - 1].first == by_index[i].first)
			throw Error(fmt::format("{} both carry the label of member {} of {}: one is a "
						"copy, or one device seen twice; nothing updated: give "
						"the devices that are the members ('fxctl update "
						"--identity DEVICE...'). {}",
						two_devices(*by_index[i - 1].second,
							    *by_index[i].second),
						by_index[i].first, volume_object(*group.front().ml.label),
						kCopyAdvice),
				    errno_error(EEXIST));
		out.push_back(by_index[i].second->devnode);
	}
	return out;
}

// The candidate for each of @devs, read under the volume's lock, all of one
// volume (@uuid) and each a different member; an Error naming the device
// and the fix otherwise.
std::vector<Candidate> identity_candidates(Ctx &ctx, const std::vector<std::string> &devs,
					   const VolumeUuid &uuid)
{
	std::vector<Candidate> out;
	for (const auto &dev : devs) {
		require_block_device(ctx.env.blockdevs(), dev);
		const std::string devname =
			std::filesystem::path(ctx.env.blockdevs().canonical(dev)).filename().string();
		Candidate c = read_candidate(ctx.env.members(), devname, scan_log(ctx));
		if (!c.ml.label)
			throw Error(fmt::format("{} carries no fxblk label: it belongs to no volume, "
						"nothing to update ('fxctl examine {}' says why)",
						dev, dev),
				    errno_error(ENOENT));
		c.devnode = dev;  // messages name the device as given
		const label::Label &l = *c.ml.label;
		if (l.volume_uuid != uuid)
			throw Error(fmt::format("{} is a member of {}, {} of {}: nothing updated; "
						"update one volume at a time", dev, volume_object(l),
						devs.front(), label::uuid_to_string(uuid)),
				    errno_error(EINVAL));
		for (std::size_t j = 0; j < out.size(); ++j)
			if (out[j].ml.label->member_index == l.member_index)
				throw Error(fmt::format("{} both carry the label of member {} of {}: "
							"one is a copy, or one device seen twice; "
							"nothing updated: give only the one that is "
							"the member. {}",
							two_devices(out[j], c), l.member_index,
							volume_object(l), kCopyAdvice),
					    errno_error(EEXIST));
		out.push_back(std::move(c));
	}
	return out;
}

}  // namespace

int cmd_update(Ctx &ctx)
{
	if (!ctx.vm["identity"].as<bool>())
		throw UsageError("update needs what to update: --identity");
	const std::vector<std::string> devs = identity_devices(ctx);
	MemberIO &io = ctx.env.members();
	const VolumeUuid uuid = [&] {
		const std::string &dev = devs.front();
		require_block_device(ctx.env.blockdevs(), dev);
		std::string devname =
			std::filesystem::path(ctx.env.blockdevs().canonical(dev)).filename().string();
		Candidate c = read_candidate(io, devname, scan_log(ctx));
		if (!c.ml.label)
			throw Error(fmt::format("{} carries no fxblk label: it belongs to no volume, "
						"nothing to update ('fxctl examine {}' says why)",
						dev, dev),
				    errno_error(ENOENT));
		return c.ml.label->volume_uuid;
	}();
	auto lock = volume_lock(uuid);
	// as they are under the lock
	const std::vector<Candidate> selves = identity_candidates(ctx, devs, uuid);
	const label::Label &l = *selves.front().ml.label;
	const std::string vol = volume_object(l);
	if (ctx.vm.count("volume")) {
		std::string want = ctx.vm["volume"].as<std::string>();
		auto want_uuid = label::uuid_from_string(want);
		if (want_uuid ? *want_uuid != uuid : want != l.volume_name)
			throw Error(fmt::format("{} is member {} of {}, not of volume \"{}\"; nothing "
						"updated: check the device", devs.front(),
						l.member_index, vol, want),
				    errno_error(EINVAL));
	}
	std::vector<IdentityMove> moves, same;
	for (const auto &c : selves) {
		const std::uint32_t index = c.ml.label->member_index;
		if (!c.identity)
			throw Error(fmt::format("cannot read the NVMe identity of {} (member {} of {}); "
						"nothing updated", c.devnode, index, vol),
				    errno_error(EIO));
		IdentityMove m{c.devnode, index, c.ml.label->members.at(index), *c.identity};
		(m.now == m.was ? same : moves).push_back(m);
	}
	json members = json::array();
	for (const auto &m : moves)
		members.push_back({{"device", m.dev},
				   {"member_index", m.index},
				   {"old_identity", member_id_json(m.was)},
				   {"new_identity", member_id_json(m.now)}});
	json doc = {{"name", l.volume_name},
		    {"uuid", label::uuid_to_string(uuid)},
		    {"members", members},
		    {"generation", l.generation},
		    {"updated", false}};
	if (devs.size() == 1) {  // the shape of one device (schema 1), kept
		const Candidate &c = selves.front();
		doc["device"] = devs.front();
		doc["member_index"] = c.ml.label->member_index;
		doc["old_identity"] = member_id_json(c.ml.label->members.at(c.ml.label->member_index));
		doc["new_identity"] = member_id_json(*c.identity);
	}
	if (moves.empty()) {
		std::string text;
		for (const auto &m : same)
			text += fmt::format("{} (member {} of {}) already records its identity ({}); "
					    "nothing to update\n", m.dev, m.index, vol,
					    m.now.describe());
		ctx.print(doc, text);
		return exit_ok;
	}
	auto groups = scan_volumes(ctx);
	std::vector<Candidate> group = groups[uuid];
	auto given = [&](const Candidate &c) {
		return std::any_of(selves.begin(), selves.end(), [&](const Candidate &s) {
			return s.devname == c.devname;
		});
	};
	// the namespace the labels record is still there: the device is a
	// copy (a device given itself may be on it: members that swapped)
	for (const auto &m : moves)
		for (const auto &c : group)
			if (!given(c) && c.identity && *c.identity == m.was)
				throw Error(fmt::format("{} is the namespace the labels record as "
							"member {} of {} ({}); {} is a copy of its "
							"label, not the member: nothing updated ('fxctl "
							"wipe {}' removes a copy no longer used)",
							c.devnode, m.index, vol, m.was.describe(), m.dev,
							m.dev),
					    errno_error(EEXIST));
	// the identities as they will be: no namespace twice
	std::vector<label::MemberId> next = l.members;
	for (const auto &m : moves)
		next.at(m.index) = m.now;
	for (const auto &m : moves)
		for (std::size_t j = 0; j < next.size(); ++j)
			if (j != m.index)
				if (auto dup = label::same_namespace(m.now, next[j]); !dup.empty())
					throw Error(fmt::format("{} has {} as member {} of {}: it "
								"cannot be member {} too; nothing "
								"updated", m.dev, dup, j, vol, m.index),
						    errno_error(EEXIST));
	// the set as it will be: every label records the new identities
	for (auto &c : group)
		for (const auto &m : moves)
			if (auto &cl = *c.ml.label; cl.members.size() > m.index &&
						    cl.members[m.index] == m.was)
				cl.members[m.index] = m.now;
	std::string what = moves.size() == 1 ? fmt::format("member {}", moves.front().index)
					     : fmt::format("{} members", moves.size());
	Plan p = plan_volume(group);
	if (!p.ok()) {
		try {
			refuse_plan(p, fmt::format("update the identity of {} of", what));
		} catch (const Error &e) {
			// members that moved too are foreign until given as well
			throw Error(fmt::format("{}\nif other members moved too, update them in "
						"the same run: 'fxctl update --identity {} "
						"DEVICE...', or 'fxctl update --identity --volume {}' "
						"for every member present",
						e.what(), devs.front(), l.volume_name),
				    e.code());
		}
	}
	refuse_running(ctx, p, fmt::format("update the identity of {} of", what));
	std::string change;
	for (const auto &m : moves)
		change += fmt::format("{}{} of member {} of {}: recorded {}, now {}",
				      change.empty() ? "" : "; ", m.dev, m.index, vol,
				      m.was.describe(), m.now.describe());
	if (!ctx.vm["yes"].as<bool>()) {
		std::string list;
		for (const auto &d : devs)
			list += " " + d;
		auto yes = ctx.env.confirm(fmt::format("re-record the identity of {}?", change));
		if (!yes)
			throw Error(fmt::format("the identity of{} is not updated: no terminal to ask "
						"for confirmation; run 'fxctl update --identity --yes{}' "
						"to update {}", list, list, change),
				    errno_error(ECANCELED));
		if (!*yes)
			throw Error(fmt::format("the identity of{} is not updated (not confirmed)",
						list),
				    errno_error(ECANCELED));
	}
	rewrite_members(ctx, p, p.reference,
			fmt::format("'fxctl assemble --force {}' takes the members left behind and "
				    "rewrites their labels", l.volume_name));
	doc["generation"] = p.reference.generation;
	doc["updated"] = true;
	std::string text;
	for (const auto &m : moves)
		text += fmt::format("updated the identity of member {} of {}\n  old: {}\n  new: {}\n",
				    m.index, vol, m.was.describe(), m.now.describe());
	ctx.print(doc, text + fmt::format("labels of {} rewritten at generation {}\n",
					  devnames(p.ordered), p.reference.generation));
	return exit_ok;
}

}  // namespace fxctl
