#include "volume_ops.hpp"

#include "assemble.hpp"
#include "geometry.hpp"
#include "kernel_error.hpp"
#include "label.hpp"
#include "volume_cmds.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <fmt/format.h>
#include <optional>

namespace fxctl {

void check_name(const std::string &name)
{
	// The kernel's rule, shared through the uapi header (FXBLK_NAME_CHARS).
	if (auto why = label::name_problem(name); !why.empty())
		throw UsageError(fmt::format("invalid volume name '{}': {}", name, why));
	if (VolumeRef::parse(name).index)
		throw UsageError(fmt::format("volume name '{}' looks like a disk name (fxN); "
					     "choose another", name));
}

namespace {

// Refuses members carrying a signature (libblkid) or an fxblk label, naming
// what was found, unless @force.
void check_signatures(Ctx &ctx, MemberIO &io, const std::vector<BlockDevice> &devs, bool force)
{
	for (const auto &d : devs) {
		std::vector<std::string> found;
		for (const auto &sig : io.signatures(d.path))
			found.push_back(describe(sig));
		label::MemberLabel ml = io.read_label(d.path);
		if (ml.label)
			found.push_back(fmt::format(
				"fxblk label of volume \"{}\" ({}, member {} of {})",
				ml.label->volume_name, label::uuid_to_string(ml.label->volume_uuid),
				ml.label->member_index, ml.label->member_count));
		else if (!ml.primary_blank || !ml.backup_blank)
			found.push_back(fmt::format("damaged fxblk label ({})",
						    !ml.primary_blank ? ml.primary_reason
								      : ml.backup_reason));
		if (found.empty())
			continue;
		std::string what;
		for (const auto &f : found)
			what += (what.empty() ? "" : ", ") + f;
		if (!force)
			throw Error(fmt::format("{} is not empty: it carries {}; nothing was "
						"written; check the device, then use --force to "
						"overwrite", d.path, what),
				    errno_error(EEXIST));
		ctx.env.err << fmt::format("fxctl: --force: overwriting {} on {}\n", what, d.path);
	}
}

// Two disks of one namespace (native NVMe multipath off: one per
// controller) are not two members: the stripe would overwrite itself.
// @d is the newest device, its identity the last of @ids. Refused even with
// --force: no signature to erase makes this safe.
void check_one_path(const std::vector<BlockDevice> &devs, const std::vector<label::MemberId> &ids,
		    const BlockDevice &d)
{
	for (std::size_t i = 0; i < devs.size(); i++) {
		std::string why = label::same_namespace(ids[i], ids.back());
		if (why.empty())
			continue;
		throw Error(fmt::format("{} and {} are two paths to one namespace: {} ({}); a "
					"volume over both would stripe the namespace over itself; "
					"nothing was written; give each namespace once: one path "
					"per namespace, or native NVMe multipath "
					"(nvme_core.multipath=Y) and its /dev/nvmeXnY head",
					devs[i].path, d.path, why, ids.back().describe()),
			    errno_error(EINVAL));
	}
}

// mdadm's rule: members differing by more than 1% waste space; say how much.
void warn_sizes(Ctx &ctx, const std::vector<BlockDevice> &devs, const CreateRequest &req,
		std::uint64_t chunk)
{
	auto [lo, hi] = std::minmax_element(req.members.begin(), req.members.end(),
					    [](const MemberSpec &a, const MemberSpec &b) {
						    return a.data_sectors < b.data_sectors;
					    });
	std::uint64_t used = common_data_sectors(req.members, chunk), lost = 0;
	for (const auto &m : req.members)
		lost += m.data_sectors - used;
	if ((hi->data_sectors - lo->data_sectors) * 100 <= lo->data_sectors)
		return;
	const auto &small = devs[static_cast<std::size_t>(lo - req.members.begin())];
	const auto &big = devs[static_cast<std::size_t>(hi - req.members.begin())];
	ctx.env.err << fmt::format(
		"fxctl: warning: member sizes differ by more than 1%: {} has {} of data space, "
		"{} only {}; every member contributes {}, so {} of the members' space is "
		"unused\n",
		big.path, format_size(hi->data_sectors * sector_size), small.path,
		format_size(lo->data_sectors * sector_size), format_size(used * sector_size),
		format_size(lost * sector_size));
}

// create returns once /dev/fx/NAME exists, so "fxctl create ...; mkfs
// /dev/fx/NAME" never races udev. Bounded: a missing rule only warns.
void wait_for_link(Ctx &ctx, MemberIO &io, const std::string &name)
{
	constexpr double limit = 10;
	std::string link = "/dev/fx/" + name;
	if (!io.udev_running()) {
		if (ctx.verbose)
			ctx.env.err << fmt::format("fxctl: no udev daemon runs (no /run/udev/control):"
						   " not waiting for {}\n", link);
		return;
	}
	double start = ctx.env.clock();
	while (!io.exists(link)) {
		if (ctx.env.clock() - start >= limit) {
			ctx.env.err << fmt::format("fxctl: warning: {} did not appear within {:g} s; "
						   "is the fxblk udev rule installed? ('udevadm "
						   "settle' waits for udev)\n", link, limit);
			return;
		}
		ctx.env.sleep(0.05);
	}
	if (ctx.verbose)
		ctx.env.err << fmt::format("fxctl: {} exists after {:.2f} s\n", link,
					   ctx.env.clock() - start);
}

// A removed volume is gone for good: its labels go too, so the members
// count as free again (the data area is not touched). Only labels naming
// this volume at this member's index are wiped; a member that cannot be
// read (gone) is skipped with a warning. Returns the volume's UUID if a
// label was wiped (forget_volume() its records, once its lock is let go).
std::optional<std::array<std::uint8_t, 16>> unlabel_members(Ctx &ctx, const Volume &v)
{
	MemberIO &io = ctx.env.members();
	std::optional<std::array<std::uint8_t, 16>> uuid;
	for (const auto &m : v.members) {
		std::string dev = "/dev/" + m.disk;
		try {
			label::MemberLabel ml = io.read_label(dev);
			if (!ml.label || ml.label->volume_name != v.name ||
			    ml.label->member_index != m.index)
				continue;
			io.wipe_label(dev);
			uuid = ml.label->volume_uuid;
			if (ctx.verbose)
				ctx.env.err << fmt::format("fxctl: wiped the label of {} on {}\n",
							   quote(v.name), dev);
		} catch (const std::exception &e) {
			ctx.env.err << fmt::format("fxctl: warning: label of {} left on {}: {}\n",
						   quote(v.name), dev, e.what());
		}
	}
	return uuid;
}

// The owner create records: this host's NQN. A host without one is
// refused before anything is written (review H3): an owner-less label is
// started by every host whose AUTO takes unowned volumes, the default, so
// one must be asked for (--no-owner, as mdadm's --homehost=<none>). Not
// libnvme's generated NQN (nvmf_hostnqn_generate): it is not in
// /etc/nvme/hostnqn, so the next run's policy, and nvme-cli's postinst
// writing that file later, would make this host's own volume foreign.
std::string create_owner(Ctx &ctx, const std::string &name)
{
	HostPolicy pol = ctx.env.host_policy();
	if (ctx.vm["no-owner"].as<bool>()) {
		ctx.env.err << fmt::format("fxctl: note: {} has no owner (--no-owner): every host "
					   "that sees its members and whose AUTO allows unowned "
					   "volumes (the default) starts it by itself\n",
					   quote(name));
		return {};
	}
	if (pol.host_nqn.empty())
		throw Error(fmt::format("cannot create {}: this host has no host NQN to record "
					"as the volume's owner (no {}, no HOSTNQN in {}), and a "
					"volume without an owner is started by every host that "
					"sees its members; nothing was written; create one with "
					"'nvme gen-hostnqn > {}' (the NQN fxctl connect and nvme "
					"connect then use), or give --no-owner to create it without "
					"an owner",
					quote(name), default_hostnqn_path, pol.conf_path,
					default_hostnqn_path),
			    errno_error(EINVAL));
	return pol.host_nqn;
}

}  // namespace

int cmd_create(Ctx &ctx)
{
	if (!ctx.vm.count("name"))
		throw UsageError("missing volume NAME");
	auto name = ctx.vm["name"].as<std::string>();
	check_name(name);
	if (!ctx.vm.count("members"))
		throw UsageError(fmt::format("no MEMBER devices given for \"{}\"", name));
	auto paths = ctx.vm["members"].as<std::vector<std::string>>();
	if (paths.size() > FXBLK_MAX_MEMBERS)
		throw UsageError(fmt::format("{} members given; at most {} are supported",
					     paths.size(), FXBLK_MAX_MEMBERS));
	std::uint64_t chunk = parse_chunk(ctx.vm["chunk"].as<std::string>());
	std::string owner = create_owner(ctx, name);
	std::uint64_t offset = default_data_offset(chunk);
	if (ctx.vm.count("data-offset"))
		offset = parse_data_offset(ctx.vm["data-offset"].as<std::string>());

	// Exclusive locks on every member, taken in one order, from the checks
	// through CREATE: a concurrent create over a shared member waits, then
	// finds it in use, and never overwrites (or wipes) our labels.
	std::vector<std::string> order = paths;
	std::sort(order.begin(), order.end());
	order.erase(std::unique(order.begin(), order.end()), order.end());
	std::vector<std::shared_ptr<void>> locks;
	for (const auto &p : order)
		locks.push_back(ctx.env.members().lock(p));

	CreateRequest req;
	req.name = name;
	req.chunk_sectors = static_cast<std::uint32_t>(chunk / sector_size);
	std::vector<BlockDevice> devs;
	std::vector<label::MemberId> ids;
	for (const auto &path : paths) {
		BlockDevice d = ctx.env.blockdevs().probe(path);
		// Review M5: the label records the identity of a whole namespace,
		// and udev and assemble look for members among whole disks only:
		// a volume over partitions could be created, never assembled.
		if (d.partition)
			throw Error(fmt::format("{} is a partition of {}: fxblk members are whole "
						"namespaces (a volume over a partition could not be "
						"assembled again: the label records the namespace's "
						"identity, and udev and 'fxctl assemble' look only at "
						"whole disks); nothing was written; give the whole "
						"namespace, /dev/{}",
						path, d.disk, d.disk),
				    errno_error(EINVAL));
		if (!d.holders.empty()) {
			std::string h = d.holders.front();
			throw Error(fmt::format("{} is in use by {}; remove {} first", path, h, h),
				    errno_error(EBUSY));
		}
		if (d.busy)
			throw Error(fmt::format("{} is in use (mounted or opened exclusively); "
						"unmount or release it first", path),
				    errno_error(EBUSY));
		// Before any label is written: a read-only member refuses its
		// label, and the kernel refuses a zoned one.
		if (d.read_only)
			throw Error(fmt::format("{} is read-only: its fxblk label cannot be "
						"written; nothing was written; make it writable first "
						"('blockdev --setrw {}', or export the namespace "
						"read-write on the target)",
						path, path),
				    errno_error(EROFS));
		if (d.zoned != "none")
			throw Error(fmt::format("{} is a zoned block device ({}): fxblk "
						"stripes only conventional block devices; nothing was "
						"written; use a conventional (non-zoned) namespace",
						path, d.zoned),
				    errno_error(EINVAL));
		for (const auto &o : devs)
			if (o.major == d.major && o.minor == d.minor)
				throw Error(fmt::format("{} and {} are the same device ({}:{}); "
							"list each member once",
							o.path, path, d.major, d.minor),
					    errno_error(EINVAL));
		ids.push_back(ctx.env.members().identity(d.name));
		check_one_path(devs, ids, d);
		if (!devs.empty() && d.logical_block_size != devs.front().logical_block_size)
			throw Error(fmt::format("{} has {}-byte logical blocks but {} has {}; "
						"use members with the same logical block size",
						path, d.logical_block_size, devs.front().path,
						devs.front().logical_block_size),
				    errno_error(EINVAL));
		MemberLayout l = member_layout(d, offset, chunk);
		if (ctx.verbose)
			ctx.env.err << fmt::format("fxctl: {} ({}:{}) {}, {}-byte blocks: data at "
						   "{}, {} usable\n",
						   path, d.major, d.minor,
						   format_size(d.size_sectors * sector_size),
						   d.logical_block_size,
						   format_size(l.data_offset * sector_size),
						   format_size(l.data_sectors * sector_size));
		req.members.push_back({d.major, d.minor, l.data_offset, l.data_sectors});
		devs.push_back(std::move(d));
	}

	bool force = ctx.vm["force"].as<bool>();
	auto c = ctx.env.connect();  // no module: nothing written
	MemberIO &io = ctx.env.members();
	check_signatures(ctx, io, devs, force);
	warn_sizes(ctx, devs, req, chunk / sector_size);

	// The labels go on before CREATE: once /dev/fxN exists its data area
	// may be written, and a crash then must leave labelled members.
	label::Label l;
	l.volume_uuid = io.new_uuid();
	l.volume_name = name;
	l.member_count = static_cast<std::uint32_t>(devs.size());
	l.chunk_sectors = req.chunk_sectors;
	l.data_offset_sectors = req.members.front().data_offset;
	l.data_sectors = common_data_sectors(req.members, l.chunk_sectors);
	l.generation = 1;
	l.created_unix = static_cast<std::uint64_t>(ctx.env.wall_clock());
	l.members = ids;
	// This host owns the volume: udev on other hosts leaves it alone
	// (ownership.hpp); none with --no-owner (label format 1).
	l.owner_nqn = owner;
	if (force)
		for (const auto &d : devs)
			io.erase_signatures(d.path);
	// Until CREATE is done: udev's incremental must not assemble the
	// volume from these labels first (assemble.hpp).
	auto assembly_lock = try_volume_lock(l.volume_uuid);
	std::size_t written = 0;
	// A failed create leaves nothing: its labels go, and with them the
	// lock file (and any incremental records) of a volume that never was;
	// the lock is released first, forget_volume takes it itself.
	auto undo = [&] {
		for (std::size_t i = 0; i < written; i++) {
			try {
				auto ml = io.read_label(devs[i].path);
				if (!ml.label || ml.label->volume_uuid != l.volume_uuid)
					continue;  // not ours (any more)
				io.wipe_label(devs[i].path);
			} catch (const std::exception &e) {
				ctx.env.err << "fxctl: warning: " << e.what() << '\n';
			}
		}
		assembly_lock.reset();
		forget_volume(l.volume_uuid);
	};
	try {
		for (; written < devs.size(); written++) {
			l.member_index = static_cast<std::uint32_t>(written);
			io.write_label(devs[written].path, l);
		}
	} catch (...) {
		undo();
		throw;
	}
	if (ctx.verbose)
		ctx.env.err << fmt::format("fxctl: wrote labels of volume {} (uuid {}, generation "
					   "1) on {} member(s)\n", quote(name),
					   label::uuid_to_string(l.volume_uuid), devs.size());

	take_uuid(*c, req, l.volume_uuid);
	Volume v;
	try {
		v = c->create(req);
	} catch (const KernelError &e) {
		undo();
		fail_kernel(e, "create", "create", quote(name));
	} catch (...) {
		undo();
		throw;
	}
	wait_for_link(ctx, io, name);
	json doc = volume_doc(v);
	ctx.print(doc, text_created(doc));
	return exit_ok;
}

int cmd_remove(Ctx &ctx)
{
	VolumeRef ref = need_ref(ctx);
	bool force = ctx.vm["force"].as<bool>();
	auto c = ctx.env.connect();
	if (force) {
		// An older module rejects the unknown FORCE attribute as invalid;
		// say what is missing instead.
		ModuleStatus st = c->status();
		if (!(st.features & FXBLK_FEAT_HEALTH))
			throw Error(fmt::format("the loaded fxblk module ({}) cannot remove an open "
						"volume (no 'health' feature); update fxblk.ko, or "
						"close {} and remove it without --force",
						st.version, ref.display()),
				    errno_error(EOPNOTSUPP));
	}
	Volume v = get_volume(*c, ref, "remove");
	std::optional<std::array<std::uint8_t, 16>> gone;
	{
		// not while incremental or assemble works on it; the labels
		// are read only after the DESTROY
		auto lock = running_volume_lock(v);
		destroy_volume(*c, v, force);
		gone = unlabel_members(ctx, v);
	}
	if (gone)
		forget_volume(*gone);  // takes the lock itself
	json doc = volume_doc(v);
	std::string text = text_removed(doc);
	if (force && v.open_count)
		text += fmt::format("{} was open: its I/O now fails with EIO; /dev/{} goes away "
				    "at its last close\n", v.disk, v.disk);
	ctx.print(doc, text);
	return exit_ok;
}

void destroy_volume(Client &c, const Volume &v, bool force)
{
	std::string object = fmt::format("{} ({})", v.disk, v.name);
	try {
		// Name and index: if the volume was removed and another created
		// in between, the kernel refuses instead of removing the new one.
		c.destroy(VolumeRef{v.index, v.name}, force);
	} catch (const KernelError &e) {
		if (e.err() == EBUSY)
			throw Error(fmt::format("{} is open (mounted or in use); unmount it first, "
						"or use 'fxctl remove --force' to fail its I/O and "
						"remove it now", object),
				    errno_error(EBUSY));
		if (e.err() == ENOENT)
			throw Error(fmt::format("{} was removed or replaced while fxctl was "
						"removing it; nothing was removed; see 'fxctl list'",
						object),
				    errno_error(ENOENT));
		fail_kernel(e, "remove", "remove", object);
	}
}

}  // namespace fxctl
