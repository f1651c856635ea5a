#include "member_cmds.hpp"

#include "assembly_plan.hpp"
#include "label.hpp"

#include <cerrno>
#include <fmt/format.h>

namespace fxctl {

int cmd_examine(Ctx &ctx)
{
	if (!ctx.vm.count("device"))
		throw UsageError("missing DEVICE (a member block device, e.g. /dev/nvme0n1)");
	auto dev = ctx.vm["device"].as<std::string>();
	require_block_device(ctx.env.blockdevs(), dev);
	Candidate c;
	c.ml = ctx.env.members().read_label(dev);
	const label::MemberLabel &ml = c.ml;
	if (ml.label)
		for (const auto &sig : ctx.env.members().signatures(dev))
			c.signatures.push_back(describe(sig));
	json doc = examine_doc(dev, ml, reuse_reason(c));
	if (ctx.vm["export"].as<bool>()) {
		// For udev: nothing and success for a non-member.
		ctx.env.out << export_examine(doc);
		return exit_ok;
	}
	ctx.print(doc, text_examine(doc));
	return ml.label ? exit_ok : exit_not_found;
}

// wipe DEV: both copies of an fxblk label, which wipefs cannot see
// (libblkid has no fxblk prober), like mdadm --zero-superblock. Refused on
// a member of a running volume; asks first unless --yes.
int cmd_wipe(Ctx &ctx)
{
	if (!ctx.vm.count("device"))
		throw UsageError("missing DEVICE (a block device carrying an fxblk label)");
	auto dev = ctx.vm["device"].as<std::string>();
	require_block_device(ctx.env.blockdevs(), dev);
	BlockDevice d = ctx.env.blockdevs().probe(dev);
	MemberIO &io = ctx.env.members();
	label::MemberLabel ml = io.read_label(dev);
	json doc = {{"schema_version", schema_version}, {"device", dev}, {"wiped", false}};
	if (!ml.label && ml.primary_blank && ml.backup_blank) {
		ctx.print(doc, fmt::format("{} carries no fxblk label; nothing to wipe\n", dev));
		return exit_ok;
	}
	std::string what =
		ml.label ? fmt::format("the fxblk label of member {} of {} of volume \"{}\" ({})",
				       ml.label->member_index, ml.label->member_count,
				       ml.label->volume_name,
				       label::uuid_to_string(ml.label->volume_uuid))
			 : fmt::format("a damaged fxblk label ({})", !ml.primary_blank
									 ? ml.primary_reason
									 : ml.backup_reason);
	if (!d.holders.empty())
		throw Error(fmt::format("{} is a member of running volume {}: {} is not wiped; stop "
					"the volume first ('fxctl stop'), or 'fxctl remove' it, which "
					"wipes its members' labels", dev, d.holders.front(), what),
			    errno_error(EBUSY));
	if (d.busy)
		throw Error(fmt::format("{} is in use (mounted or opened exclusively): {} is not "
					"wiped; unmount or release it first", dev, what),
			    errno_error(EBUSY));
	if (!ctx.vm["yes"].as<bool>()) {
		auto yes = ctx.env.confirm(fmt::format("wipe {} on {}?", what, dev));
		if (!yes)
			throw Error(fmt::format("{} is not wiped: no terminal to ask for confirmation; "
						"run 'fxctl wipe --yes {}' to wipe {}", dev, dev, what),
				    errno_error(ECANCELED));
		if (!*yes)
			throw Error(fmt::format("{} is not wiped (not confirmed)", dev),
				    errno_error(ECANCELED));
	}
	auto lock = io.lock(dev);  // udev's protocol: no event while we write
	io.wipe_label(dev);
	doc["wiped"] = true;
	doc["label"] = ml.label ? json({{"volume_name", ml.label->volume_name},
					{"volume_uuid", label::uuid_to_string(ml.label->volume_uuid)},
					{"member_index", ml.label->member_index}})
				: json(nullptr);
	ctx.print(doc, fmt::format("wiped {} on {} (every copy carrying the fxblk magic); "
				   "the rest of the device is untouched\n", what, dev));
	return exit_ok;
}

}  // namespace fxctl
