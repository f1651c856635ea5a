#include "label_cmds.hpp"

#include "assemble.hpp"
#include "assembly_plan.hpp"
#include "label.hpp"
#include "scan.hpp"
#include "volume_ops.hpp"

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
		 "namespace DEVICE is on now as its member's, in every member's label")
		("volume", po::value<std::string>()->value_name("NAME"),
		 "refuse unless DEVICE is a member of volume NAME (or UUID)")
		("yes,y", po::bool_switch(), "update without asking (for scripts)");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
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

int cmd_update(Ctx &ctx)
{
	if (!ctx.vm["identity"].as<bool>())
		throw UsageError("update needs what to update: --identity");
	if (!ctx.vm.count("device"))
		throw UsageError("update --identity needs a DEVICE (a member, e.g. /dev/nvme0n1)");
	const std::string dev = ctx.vm["device"].as<std::string>();
	require_block_device(ctx.env.blockdevs(), dev);
	const std::string devname =
		std::filesystem::path(ctx.env.blockdevs().canonical(dev)).filename().string();
	MemberIO &io = ctx.env.members();
	Candidate self = read_candidate(io, devname, scan_log(ctx));
	if (!self.ml.label)
		throw Error(fmt::format("{} carries no fxblk label: it belongs to no volume, nothing "
					"to update ('fxctl examine {}' says why)", dev, dev),
			    errno_error(ENOENT));
	const VolumeUuid uuid = self.ml.label->volume_uuid;
	auto lock = volume_lock(uuid);
	self = read_candidate(io, devname, scan_log(ctx));  // as it is under the lock
	if (!self.ml.label || self.ml.label->volume_uuid != uuid)
		throw Error(fmt::format("the label of {} changed meanwhile; nothing updated: see "
					"'fxctl examine {}'", dev, dev),
			    errno_error(EAGAIN));
	const label::Label &l = *self.ml.label;
	const std::uint32_t index = l.member_index;
	std::string member = fmt::format("member {} of {}", index, volume_object(l));
	if (ctx.vm.count("volume")) {
		std::string want = ctx.vm["volume"].as<std::string>();
		auto want_uuid = label::uuid_from_string(want);
		if (want_uuid ? *want_uuid != uuid : want != l.volume_name)
			throw Error(fmt::format("{} is {}, not of volume \"{}\"; nothing updated: "
						"check the device", dev, member, want),
				    errno_error(EINVAL));
	}
	if (!self.identity)
		throw Error(fmt::format("cannot read the NVMe identity of {} ({}); nothing updated",
					dev, member),
			    errno_error(EIO));
	const label::MemberId now = *self.identity;
	const label::MemberId was = l.members.at(index);
	json doc = {{"device", dev},
		    {"name", l.volume_name},
		    {"uuid", label::uuid_to_string(uuid)},
		    {"member_index", index},
		    {"old_identity", member_id_json(was)},
		    {"new_identity", member_id_json(now)},
		    {"generation", l.generation},
		    {"updated", false}};
	if (now == was) {
		ctx.print(doc, fmt::format("{} ({}) already records its identity ({}); nothing "
					   "to update\n", dev, member, now.describe()));
		return exit_ok;
	}
	auto groups = scan_volumes(ctx);
	std::vector<Candidate> group = groups[uuid];
	// the namespace the labels record is still there: @dev is a copy
	for (const auto &c : group)
		if (c.identity && *c.identity == was)
			throw Error(fmt::format("{} is the namespace the labels record as {} ({}); "
						"{} is a copy of its label, not the member: nothing "
						"updated ('fxctl wipe {}' removes a copy no longer used)",
						c.devnode, member, was.describe(), dev, dev),
				    errno_error(EEXIST));
	for (std::size_t j = 0; j < l.members.size(); ++j)
		if (j != index)
			if (auto same = label::same_namespace(now, l.members[j]); !same.empty())
				throw Error(fmt::format("{} has {} as member {} of {}: it cannot be "
							"member {} too; nothing updated",
							dev, same, j, volume_object(l), index),
					    errno_error(EEXIST));
	// the set as it will be: every label records @now for @index
	for (auto &c : group)
		if (auto &cl = *c.ml.label; cl.members.size() > index && cl.members[index] == was)
			cl.members[index] = now;
	Plan p = plan_volume(group);
	refuse_plan(p, fmt::format("update the identity of member {} of", index));
	refuse_running(ctx, p, fmt::format("update the identity of member {} of", index));
	std::string change = fmt::format("{} of {}: recorded {}, now {}", dev, member,
					 was.describe(), now.describe());
	if (!ctx.vm["yes"].as<bool>()) {
		auto yes = ctx.env.confirm(fmt::format("re-record the identity of {}?", change));
		if (!yes)
			throw Error(fmt::format("the identity of {} is not updated: no terminal to ask "
						"for confirmation; run 'fxctl update --identity --yes {}' "
						"to update {}", dev, dev, change),
				    errno_error(ECANCELED));
		if (!*yes)
			throw Error(fmt::format("the identity of {} is not updated (not confirmed)", dev),
				    errno_error(ECANCELED));
	}
	rewrite_members(ctx, p, p.reference,
			fmt::format("'fxctl assemble --force {}' takes the members left behind and "
				    "rewrites their labels", l.volume_name));
	doc["generation"] = p.reference.generation;
	doc["updated"] = true;
	ctx.print(doc, fmt::format("updated the identity of {}\n  old: {}\n  new: {}\nlabels of {} "
				   "rewritten at generation {}\n",
				   member, was.describe(), now.describe(), devnames(p.ordered),
				   p.reference.generation));
	return exit_ok;
}

}  // namespace fxctl
