#include "cli.hpp"

#include "assemble.hpp"
#include "assembly_plan.hpp"
#include "command.hpp"
#include "completion.hpp"
#include "doctor.hpp"
#include "error.hpp"
#include "fabric_cmds.hpp"
#include "label.hpp"
#include "peer.hpp"
#include "render.hpp"
#include "units.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <ostream>
#include <unistd.h>
#include <sstream>

namespace fxctl {
namespace po = boost::program_options;
namespace {

constexpr std::uint64_t reserved_tail_bytes = 1 * MiB;  // labels at the end
constexpr std::uint64_t min_data_offset_bytes = 4 * MiB;  // labels at the start

// ---- kernel errors -> messages that name the object and the fix --------

std::string kernel_says(const KernelError &e)
{
	return e.extack().empty() ? "" : fmt::format(" (kernel: {})", e.extack());
}

// @verb is what failed ("show statistics of"), @command the fxctl command
// whose help to point at ("stats").
[[noreturn]] void fail(const KernelError &e, const std::string &verb, const std::string &command,
		       const std::string &object)
{
	std::string msg;
	switch (e.err()) {
	case EPERM:
	case EACCES:
		msg = fmt::format("permission denied to {} {}{}; run fxctl as root "
				  "(needs CAP_SYS_ADMIN and CAP_NET_ADMIN)", verb, object, kernel_says(e));
		break;
	case ENOENT:
		// The kernel's message only repeats the name.
		msg = fmt::format("no volume {}; see 'fxctl list'", object);
		break;
	case EEXIST:
		msg = fmt::format("a volume named {} already exists{}; choose another name or "
				  "remove it first", object, kernel_says(e));
		break;
	case EBUSY:
		msg = fmt::format("cannot {} {}: a member is in use{}; remove the volume using "
				  "it or unmount it first", verb, object, kernel_says(e));
		break;
	case EINVAL:
		msg = fmt::format("cannot {} {}: {}; check the arguments against "
				  "'fxctl {} --help'", verb, object,
				  e.extack().empty() ? "the module rejected the request as invalid"
						     : e.extack(),
				  command);
		break;
	case ENODEV:
	case ENXIO:
		msg = fmt::format("cannot {} {}: a member device disappeared{}; check the "
				  "NVMe-oF connections ('nvme list')", verb, object, kernel_says(e));
		break;
	case ENOSPC:
	case EMFILE:
		msg = fmt::format("cannot {} {}: too many volumes (at most {}){}; remove unused "
				  "volumes first", verb, object, FXBLK_MAX_VOLUMES, kernel_says(e));
		break;
	default:
		msg = fmt::format("cannot {} {}: {}{}; see dmesg for details", verb, object,
				  std::strerror(e.err()), kernel_says(e));
	}
	throw Error(msg, errno_error(e.err()));
}

std::string quote(const std::string &name)
{
	return fmt::format("\"{}\"", name);
}

std::string ref_object(const VolumeRef &ref)
{
	return ref.index ? ref.display() : quote(ref.name);
}

VolumeRef need_ref(const Ctx &ctx)
{
	if (!ctx.vm.count("name"))
		throw UsageError("missing volume NAME (a name, fxN or /dev/fxN)");
	return VolumeRef::parse(ctx.vm["name"].as<std::string>());
}

Volume get_volume(Client &c, const VolumeRef &ref, const char *command)
{
	try {
		return c.get(ref);
	} catch (const KernelError &e) {
		fail(e, "show", command, ref_object(ref));
	}
}

// ---- option tables ------------------------------------------------------

void no_options(po::options_description &, po::options_description &,
		po::positional_options_description &)
{
}

void name_only(po::options_description &, po::options_description &hidden,
	       po::positional_options_description &pos)
{
	hidden.add_options()("name", po::value<std::string>(), "volume");
	pos.add("name", 1);
}

void create_options(po::options_description &opts, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	opts.add_options()
		("chunk,c", po::value<std::string>()->default_value("512K")->value_name("SIZE"),
		 "stripe chunk: power of two, 4K..16M")
		("data-offset", po::value<std::string>()->value_name("SIZE"),
		 "start of data on each member, a multiple of 4K, at least 4M "
		 "(default: max(4M, chunk))")
		("force,f", po::bool_switch(),
		 "use members that carry a file system, partition table, another volume's "
		 "label or any other signature: erase those signatures (as wipefs -a)");
	hidden.add_options()
		("name", po::value<std::string>(), "volume name")
		("members", po::value<std::vector<std::string>>(), "member devices");
	pos.add("name", 1).add("members", -1);
}

void remove_options(po::options_description &opts, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	opts.add_options()
		("force,f", po::bool_switch(),
		 "remove even while open: its I/O fails with EIO at once, the name is free "
		 "again, /dev/fxN goes away at its last close");
	name_only(opts, hidden, pos);
}

void examine_options(po::options_description &opts, po::options_description &hidden,
		     po::positional_options_description &pos)
{
	opts.add_options()
		("export", po::bool_switch(),
		 "print KEY=VALUE lines for udev's IMPORT{program}; nothing (exit 0) for a "
		 "device that is not a member");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
}

void stats_options(po::options_description &opts, po::options_description &hidden,
		   po::positional_options_description &pos)
{
	// A string: Boost hands an implicit-value option the next word, which
	// may be the volume name (see stats_args).
	opts.add_options()
		("watch,w", po::value<std::string>()->implicit_value("1")->value_name("SECONDS"),
		 "repeat every SECONDS (0.1..86400, default 1), showing rates and latency "
		 "over the interval measured between samples")
		("count", po::value<unsigned>()->value_name("N"),
		 "with --watch: stop after N samples (N >= 1; default: until interrupted)");
	name_only(opts, hidden, pos);
}

void monitor_options(po::options_description &opts, po::options_description &,
		     po::positional_options_description &)
{
	opts.add_options()
		("count", po::value<unsigned>()->value_name("N"),
		 "exit after N events (N >= 1; default: until interrupted)")
		("timeout", po::value<std::string>()->value_name("SECONDS"),
		 "exit (status 0) after SECONDS (0.1..86400), however many events came");
}

// ---- commands -----------------------------------------------------------

// version and --version: the module is optional, and a version query is
// no failure (scripts and package checks run it before modprobe): both
// print fxctl's version and the module's, or that it is not loaded (JSON:
// "module": null), and exit 0.
int cmd_version(Ctx &ctx)
{
	std::optional<ModuleStatus> st;
	try {
		st = ctx.env.connect()->status();
	} catch (const ModuleNotLoaded &) {
	}
	if (st && st->api_version != FXBLK_API_VERSION)
		ctx.env.err << fmt::format("fxctl: warning: the module speaks API {}, fxctl API {}; "
					   "install matching fxctl and fxblk.ko\n",
					   st->api_version, FXBLK_API_VERSION);
	json doc = version_doc(st);
	ctx.print(doc, text_version(doc));
	return exit_ok;
}

void check_name(const std::string &name)
{
	// The kernel's rule, shared through the uapi header (FXBLK_NAME_CHARS).
	if (auto why = label::name_problem(name); !why.empty())
		throw UsageError(fmt::format("invalid volume name '{}': {}", name, why));
	if (VolumeRef::parse(name).index)
		throw UsageError(fmt::format("volume name '{}' looks like a disk name (fxN); "
					     "choose another", name));
}

std::uint64_t parse_chunk(const std::string &text)
{
	std::uint64_t b = parse_size(text, "chunk size");
	std::uint64_t lo = FXBLK_CHUNK_MIN_SECTORS * sector_size,
		      hi = FXBLK_CHUNK_MAX_SECTORS * sector_size;
	if (b < lo || b > hi || (b & (b - 1)))
		throw UsageError(fmt::format("invalid chunk size '{}': must be a power of two "
					     "from {} to {}", text, format_size(lo),
					     format_size(hi)));
	return b;
}

std::uint64_t parse_data_offset(const std::string &text)
{
	std::uint64_t offset = parse_size(text, "data offset");
	if (offset % 4096)
		throw UsageError(fmt::format("invalid data offset '{}': must be a multiple of "
					     "4 KiB", text));
	if (offset < min_data_offset_bytes)
		throw UsageError(fmt::format("invalid data offset '{}': the first {} of each "
					     "member are reserved for labels; use at least 4M",
					     text, format_size(min_data_offset_bytes)));
	return offset;
}

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
	std::uint64_t used = lo->data_sectors / chunk * chunk, lost = 0;
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
	l.data_sectors = ~0ULL;
	for (const auto &m : req.members)
		l.data_sectors = std::min(l.data_sectors, m.data_sectors / l.chunk_sectors *
								  l.chunk_sectors);
	l.generation = 1;
	l.created_unix = static_cast<std::uint64_t>(ctx.env.wall_clock());
	l.members = ids;
	// This host owns the volume: udev on other hosts leaves it alone
	// (ownership.hpp). Without a host NQN: no owner (label format 1).
	l.owner_nqn = ctx.env.host_policy().host_nqn;
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

	Volume v;
	try {
		v = c->create(req);
	} catch (const KernelError &e) {
		undo();
		fail(e, "create", "create", quote(name));
	} catch (...) {
		undo();
		throw;
	}
	wait_for_link(ctx, io, name);
	json doc = volume_doc(v);
	ctx.print(doc, text_created(doc));
	return exit_ok;
}

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

void wipe_options(po::options_description &opts, po::options_description &hidden,
		  po::positional_options_description &pos)
{
	opts.add_options()("yes,y", po::bool_switch(), "wipe without asking (for scripts)");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
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

// A removed volume is gone for good: its labels go too, so the members
// count as free again (the data area is not touched). Only labels naming
// this volume at this member's index are wiped; a member that cannot be
// read (gone) is skipped with a warning.
void unlabel_members(Ctx &ctx, const Volume &v)
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
	if (uuid)
		forget_volume(*uuid);
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
	destroy_volume(*c, v, force);
	unlabel_members(ctx, v);
	json doc = volume_doc(v);
	std::string text = text_removed(doc);
	if (force && v.open_count)
		text += fmt::format("{} was open: its I/O now fails with EIO; /dev/{} goes away "
				    "at its last close\n", v.disk, v.disk);
	ctx.print(doc, text);
	return exit_ok;
}

void add_nvme_identity(Ctx &ctx, Volume &v)
{
	if (!ctx.env.nvme)
		return;
	try {
		auto lookup = ctx.env.nvme();
		for (auto &m : v.members)
			m.nvme = lookup->identify(m.disk);
	} catch (const std::exception &e) {
		if (ctx.verbose)
			ctx.env.err << "fxctl: NVMe lookup failed: " << e.what() << '\n';
	}
}

int cmd_show(Ctx &ctx)
{
	VolumeRef ref = need_ref(ctx);
	auto c = ctx.env.connect();
	Volume v = get_volume(*c, ref, "show");
	add_nvme_identity(ctx, v);
	json doc = volume_doc(v);
	ctx.print(doc, text_volume(doc));
	return exit_ok;
}

int cmd_list(Ctx &ctx)
{
	auto c = ctx.env.connect();
	std::vector<Volume> vols;
	try {
		vols = c->list();
	} catch (const KernelError &e) {
		fail(e, "list", "list", "volumes");
	}
	json doc = list_doc(vols);
	ctx.print(doc, text_list(doc));
	return exit_ok;
}

std::optional<double> parse_seconds(const std::string &text)
{
	double d;
	auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
	if (ec != std::errc() || p != text.data() + text.size())
		return std::nullopt;
	return d;
}

// stats NAME with --watch [SECONDS] anywhere. Boost gives a bare --watch
// the next word: "--watch 2" is an interval, but in "--watch vol1" and in
// "--watch 5" without another NAME (volume "5") that word is the NAME.
// Decided from the parsed tokens, not by rewriting the command line.
std::pair<std::string, std::optional<double>> stats_args(const Ctx &ctx)
{
	std::optional<std::string> name;
	if (ctx.vm.count("name"))
		name = ctx.vm["name"].as<std::string>();
	std::optional<double> watch;
	for (const auto &o : ctx.parsed.options) {
		if (o.string_key != "watch")
			continue;
		std::string val = o.value.empty() ? "1" : o.value.front();
		bool separate = o.original_tokens.size() >= 2;  // "--watch", "val"
		watch = parse_seconds(val);
		if (separate && !name) {
			name = val;
			watch = 1.0;
		} else if (!watch) {
			throw UsageError(fmt::format("invalid --watch interval '{}': not a number",
						     val));
		}
	}
	if (!name)
		throw UsageError("missing volume NAME (a name, fxN or /dev/fxN)");
	return {*name, watch};
}

int cmd_stats(Ctx &ctx)
{
	auto [name, watch] = stats_args(ctx);
	VolumeRef ref = VolumeRef::parse(name);
	if (watch && !(*watch >= 0.1 && *watch <= 86400))
		throw UsageError(fmt::format("invalid --watch interval {}: must be from 0.1 to "
					     "86400 seconds", *watch));
	std::optional<unsigned> count;
	if (ctx.vm.count("count")) {
		count = ctx.vm["count"].as<unsigned>();
		if (!watch)
			throw UsageError("--count only makes sense with --watch");
		if (!*count)
			throw UsageError("invalid --count 0: must be at least 1 (omit --count to "
					 "watch until interrupted)");
	}
	if (!watch)
		count = 1;
	auto c = ctx.env.connect();
	json prev;
	double prev_t = 0;
	for (unsigned n = 0; !count || n < *count; ++n) {
		if (n)
			ctx.env.sleep(*watch);
		Volume v;
		try {
			v = c->stats(ref);
		} catch (const KernelError &e) {
			fail(e, "show statistics of", "stats", ref_object(ref));
		}
		// Rates over the time actually measured between the replies,
		// not the nominal interval.
		double t = ctx.env.clock();
		json doc = stats_doc(v, ctx.env.wall_clock());
		bool rates = n && add_interval(doc, prev, t - prev_t);
		if (ctx.as_json)
			// One compact document per line when watching (JSON lines).
			ctx.env.out << (watch ? doc.dump() : doc.dump(2)) << '\n';
		else
			ctx.env.out << (n ? "\n" : "")
				    << (n && !rates ? "(volume changed since the last sample: "
						      "totals)\n" : "")
				    << text_stats(doc);
		ctx.env.out.flush();
		prev = std::move(doc);
		prev_t = t;
	}
	return exit_ok;
}

int cmd_monitor(Ctx &ctx)
{
	std::optional<unsigned> count;
	if (ctx.vm.count("count")) {
		count = ctx.vm["count"].as<unsigned>();
		if (!*count)
			throw UsageError("invalid --count 0: must be at least 1 (omit --count to "
					 "monitor until interrupted)");
	}
	std::optional<double> timeout;
	if (ctx.vm.count("timeout")) {
		auto text = ctx.vm["timeout"].as<std::string>();
		timeout = parse_seconds(text);
		if (!timeout || !(*timeout >= 0.1 && *timeout <= 86400))
			throw UsageError(fmt::format("invalid --timeout '{}': must be from 0.1 to "
						     "86400 seconds", text));
	}
	auto c = ctx.env.connect();
	std::unique_ptr<EventSource> events = c->subscribe();
	if (ctx.verbose) {
		// Scripts wait for this line before causing the events they expect.
		ctx.env.err << "fxctl: subscribed to the fxblk events; waiting\n";
		ctx.env.err.flush();
	}
	double deadline = timeout ? ctx.env.clock() + *timeout : 0;
	for (unsigned n = 0; !count || n < *count;) {
		std::optional<double> left;
		if (timeout) {
			left = deadline - ctx.env.clock();
			if (*left <= 0)
				break;
		}
		std::optional<Event> ev = events->next(left);
		if (events->lost()) {
			ctx.env.err << "fxctl: warning: events were lost (netlink receive buffer "
				       "overflow); check 'fxctl list' for the current state\n";
			ctx.env.err.flush();
		}
		if (!ev)
			continue;
		json doc = event_doc(*ev, ctx.env.wall_clock());
		// JSON Lines; flushed per event, as readers sit behind a pipe.
		ctx.env.out << (ctx.as_json ? doc.dump() + '\n' : text_event(doc));
		ctx.env.out.flush();
		if (!ctx.env.out)
			throw Error("cannot write events to standard output", errno_error(EPIPE));
		++n;
	}
	return exit_ok;
}

const Command commands[] = {
	{"version", "version", "Show fxctl's and the module's versions.",
	 "Show fxctl's version and the loaded module's version, API version, features "
	 "and live volume count. Without the module, prints fxctl's version and says "
	 "that the module is not loaded (JSON: \"module\": null). Exits 0 either way, as "
	 "fxctl --version does.", no_options, cmd_version},
	{"create", "create NAME [--chunk SIZE] [--data-offset SIZE] [--force] MEMBER...",
	 "Create a striped volume over block devices and label them.",
	 "Create striped volume NAME (/dev/fxN, /dev/fx/NAME) over the MEMBER block "
	 "devices, in order. SIZE takes K/M/G/T suffixes (binary) or plain bytes. NAME is "
	 "1-31 of [A-Za-z0-9._-] (the kernel's rule).\n"
	 "Members carrying a file system, partition table, another volume's fxblk label "
	 "or any other signature libblkid knows are refused, naming what was found, "
	 "unless --force (which erases those signatures). Two members that are one "
	 "namespace (the same NGUID, UUID or EUI-64: two paths without native NVMe "
	 "multipath) are refused, even with --force, and so is a partition: give the "
	 "whole namespace. Members whose sizes differ by "
	 "more than 1% get a warning saying how much space is lost.\n"
	 "Writes a label (docs/on-disk-format.md) on every member, a primary copy at 4 KiB "
	 "and a backup in the last 1 MiB, then creates the volume; if that fails, the "
	 "labels are wiped again. The data area starts at max(4M, chunk) (--data-offset) "
	 "and stops 1 MiB before the member end. When a udev daemon runs, create returns "
	 "once /dev/fx/NAME exists (at most 10 s).\n\n"
	 "Example: fxctl create vol1 --chunk 512K /dev/nvme0n1 /dev/nvme1n1",
	 create_options, cmd_create},
	{"examine", "examine [--export] DEVICE", "Show the fxblk label on a member device.",
	 "Read both label copies on DEVICE and show the volume it belongs to: volume name "
	 "and UUID, this member's index and the member count, generation, geometry and "
	 "the NVMe identity of every member in stripe order. Says which copy was used "
	 "(primary, or backup when the primary is damaged) and why a copy was refused. "
	 "Exits 3 if DEVICE carries no valid label.\n"
	 "--export prints KEY=VALUE lines for udev's IMPORT{program}: FXBLK_MEMBER=1, "
	 "FXBLK_UUID, FXBLK_NAME, FXBLK_INDEX, FXBLK_COUNT, FXBLK_GENERATION, "
	 "FXBLK_LABEL=primary|backup; for a device that is not a member it prints nothing "
	 "and exits 0.\n\nExample: fxctl examine -o json /dev/nvme0n1",
	 examine_options, cmd_examine},
	{"wipe", "wipe [--yes] DEVICE", "Remove the fxblk label from a device.",
	 "Zero both copies of the fxblk label on DEVICE (wipefs cannot: libblkid has no "
	 "fxblk prober), like mdadm --zero-superblock: for a disk that is no longer a "
	 "member, e.g. one reused by mkfs whose backup label at the end survived. Only "
	 "copies carrying the fxblk magic are zeroed: whatever now lives where the "
	 "primary copy was stays. Refused on a member of a running volume (exit 4). Asks "
	 "first on a terminal; without one, --yes is needed. A device without an fxblk "
	 "label: nothing to do, exit 0.\n\nExample: fxctl wipe --yes /dev/nvme3n1",
	 wipe_options, cmd_wipe},
	{"remove", "remove [--force] NAME", "Remove a volume.",
	 "Remove a volume (NAME, fxN or /dev/fxN). Refused while it is open (exit 4), "
	 "unless --force: then its I/O fails with EIO at once, the name is free again and "
	 "/dev/fxN disappears at its last close (for a volume whose member is gone). The "
	 "volume's labels on the members are wiped; their data area is not touched.", remove_options, cmd_remove},
	{"assemble", "assemble [--force] [--import] NAME|UUID | --all",
	 "Start volumes from their members' labels.",
	 "Find the members of volume NAME (or UUID) by their labels among the block devices "
	 "present, check them and create the volume with the labels' geometry, members in "
	 "stripe order whatever their nvmeXnY names are now. Refused, naming the device or "
	 "the member, when a member is missing (exit 3), foreign (its identity is not the "
	 "one the labels record for its index), has a stale label (an older generation "
	 "than the others), was reused (libblkid finds another signature on it, e.g. from "
	 "mkfs or a partition table, or its primary label is gone and only the backup is "
	 "left) or when two devices claim the same index: never a partial volume. A volume "
	 "owned by another host (its labels record that host's NQN) is refused unless the "
	 "AUTO line of /etc/fxblk/fxblk.conf allows it. A volume already running over the "
	 "same devices is reported (exit 0).\n"
	 "--force takes reused and stale members as the members their labels name: the "
	 "other signatures are erased and every member's label is rewritten at the next "
	 "generation. --import takes over a volume owned by another host (or one without "
	 "an owner): every label is rewritten with this host's NQN as the owner, at the next "
	 "generation. --all assembles every complete volume the auto-assembly policy "
	 "allows on this host (as udev would) and reports the others as skipped.\n\n"
	 "Example: fxctl assemble kv-cache",
	 assemble_options, cmd_assemble},
	{"stop", "stop NAME|--all", "Stop a volume; its labels stay.",
	 "Remove the volume from the kernel without touching its members or their labels "
	 "(like mdadm --stop): 'fxctl assemble' starts it again, and so does udev when its "
	 "members appear again (an \"add\" event: connect, boot; not a \"change\" event). "
	 "Refused while the volume is open (exit 4). --all stops every volume that is not "
	 "open and reports the others.", stop_options, cmd_stop},
	{"incremental", "incremental DEVICE | --defer DEVICE | --uuid UUID",
	 "Add one member as it appears (for udev).",
	 "Called by the udev rule when a block device carrying an fxblk label appears (an "
	 "\"add\" event): records DEVICE under /run/fxblk/<volume uuid>/ and, once every "
	 "member of its volume is there, assembles the volume. Says what it is waiting for "
	 "until then. With systemd the rule runs 'incremental --defer DEVICE', which only "
	 "records and prints FXBLK_COMPLETE=1 once the records show every member; the rule "
	 "then pulls in fxblk-assemble@UUID.service, whose 'incremental --uuid UUID' "
	 "starts the volume outside the udev worker. Nothing is recorded or started (exit "
	 "0, saying why) when fxblk.auto=0 is on the kernel command line, when DEVICE was "
	 "reused (see assemble), or when the auto-assembly policy does not allow the volume "
	 "on this host (by default: only volumes owned by this host, or without an owner). "
	 "Safe to run concurrently for several members (one at a time per volume, under a "
	 "lock on /run/fxblk/<uuid>.lock: a member that stalls its volume's assembly delays "
	 "no other volume) and again (a running volume is reported, exit 0). A device "
	 "without a label: nothing to do, exit 0. Refused like assemble (exit 1) for "
	 "foreign, stale or duplicated members.",
	 incremental_options, cmd_incremental},
	{"list", "list", "List all volumes with their state.",
	 "List all volumes: disk, name, state (live, failing, gone), capacity, chunk, "
	 "members, open count and flags (read-only, nowait, removed).", no_options,
	 cmd_list},
	{"show", "show NAME", "Show a volume's health, geometry and members.",
	 "Show a volume's state and flags, geometry, and each member's state, error count "
	 "and data area; for NVMe-oF members the subsystem and every path (controller, "
	 "transport, address, state: live, reconnecting, resetting, deleting).", name_only,
	 cmd_show},
	{"stats", "stats NAME [--watch [SECONDS]] [--count N]",
	 "Show per-member I/O counters and latency.",
	 "Show per-member I/O counters (bytes), errors, in-flight I/O and p50/p99 latency "
	 "for reads, writes, discards and flushes. --watch repeats and shows rates and "
	 "latency over the interval measured between samples; with -o json, one document "
	 "per line.\n\nExample: fxctl stats vol1 --watch 2 --count 10", stats_options,
	 cmd_stats},
	{"monitor", "monitor [--count N] [--timeout SECONDS]",
	 "Print the module's events as they happen.",
	 "Print the module's events as they happen, one line each: volume created or "
	 "destroyed, member I/O error (at most one a second per member, with the errno) "
	 "and member state change (live, failing, gone). With -o json, one compact JSON "
	 "object per line (JSON Lines) with schema_version, timestamp (seconds since the "
	 "epoch), event (created, destroyed, member_error, member_state), volume {name, "
	 "index, disk} and, for member events, member {index, disk, state, errors, errno, "
	 "errno_name}. Output is flushed after every event. Needs no privileges. Runs "
	 "until interrupted, --count events or --timeout seconds (exit 0); exits 5 if the "
	 "module is not loaded or is unloaded meanwhile.\n\n"
	 "Example: fxctl -o json monitor --count 1 --timeout 60", monitor_options,
	 cmd_monitor},
	{"discover", "discover -t TR -a ADDR [-s PORT]",
	 "List the subsystems an NVMe-oF discovery controller offers.",
	 "Connect to the discovery controller at ADDR (through libnvme), print its log "
	 "page (subsystem NQN, transport, address, service, port ID) and disconnect.\n\n"
	 "Example: fxctl discover -t rdma -a 10.0.0.1", discover_options, cmd_discover},
	{"connect", "connect -t TR -a ADDR [-s PORT] -n NQN [OPTIONS]",
	 "Connect one NVMe-oF subsystem (idempotent, with retries).",
	 "Connect subsystem NQN at ADDR through libnvme. If a controller to the same "
	 "transport, address, service, subsystem and host NQN exists, it is reported "
	 "(\"already connected as nvme2\") and none is added. A target that is down "
	 "(refused, timed out, no route) is retried --retries times within --timeout "
	 "seconds, waiting 1, 2, 4, 8, 8... s; each retry is reported on stderr. "
	 "Failures name their cause from the errno and the kernel log: transport "
	 "module not loaded, no route, connection refused, host NQN rejected, unknown "
	 "subsystem. The host NQN and ID default to /etc/nvme/hostnqn and hostid.\n\n"
	 "Example: fxctl connect -t rdma -a 10.0.0.1 -n nqn.2026-11.io.example:vol1 "
	 "--ctrl-loss-tmo 600 --fast-io-fail-tmo 5", connect_options, cmd_connect},
	{"connect-all", "connect-all [--config FILE] [OPTIONS]",
	 "Connect every subsystem of libnvme's /etc/nvme/config.json.",
	 "Connect every subsystem port listed in libnvme's JSON configuration "
	 "(/etc/nvme/config.json, the file nvme-cli reads; --config overrides), as "
	 "'connect' does each one: existing controllers are reported, unreachable "
	 "targets retried. A port of the discovery subsystem "
	 "(nqn.2014-08.org.nvmexpress.discovery) is asked for its log page and every "
	 "NVMe subsystem it lists is connected. Tuning values in the file "
	 "(ctrl_loss_tmo, fast_io_fail_tmo, ...) apply; command-line options override "
	 "them. Exits 0 when every target is connected, 1 otherwise. Run at boot by "
	 "fxblk-connect.service.", connect_all_options, cmd_connect_all},
	{"disconnect", "disconnect nvmeX... | -n NQN | --config [FILE]",
	 "Disconnect NVMe-oF controllers.",
	 "Disconnect the named controllers, every controller of subsystem NQN, or (--config) "
	 "the controllers of every subsystem port in libnvme's JSON configuration, i.e. what "
	 "connect-all connected (none connected is not an error). A volume over their "
	 "namespaces loses those members: remove or stop it first.", disconnect_options,
	 cmd_disconnect},
	{"doctor", "doctor", "Check RDMA, modules, host NQN, controllers and volumes.",
	 "Check the host for what fxblk over NVMe-oF needs: RDMA devices, their ports "
	 "and RoCEv2 GIDs with the netdev MTU; loaded modules (fxblk, nvme_fabrics, "
	 "nvme_rdma, RDMA drivers); /etc/nvme/hostnqn present, valid and not a shared "
	 "default; each NVMe-oF controller's state, ctrl_loss_tmo and fast_io_fail_tmo "
	 "and nvme_core multipath; each volume's member states and completeness; every "
	 "volume whose labelled members are present but that does not run, with the "
	 "reason (stopped or failed, members missing, members that cannot be assembled, "
	 "kept by the ownership policy). Every "
	 "finding has a severity (error, warning, info), a message and a fix. With -o "
	 "json: summary, findings and the facts. Exits 0 without error findings, 1 "
	 "with.", doctor_options, cmd_doctor},
	{"peer", "peer status | peer bench NAME [--size SIZE] [--block SIZE] [--depth N] [--paths LIST]",
	 "GPU peer memory: which path I/O takes, and its bandwidth.",
	 "peer status (the default) answers which path an I/O between a volume and host, "
	 "ROCm or Ascend memory takes, and why not direct (as gdscheck -p): the kernel's "
	 "control node /dev/fxblk-peer, each memory provider (host, rocm, ascend, dmabuf: "
	 "present, can serve direct I/O, why not, pinned bytes, registrations), the copy "
	 "engines libfxio can load (host built in; hip: libamdhip64.so, acl: "
	 "libascendcl.so), the volumes, and per memory kind the path: direct (O_DIRECT "
	 "into the registered pages, no CPU copy), staged (through a pinned host bounce "
	 "pool, pipelined with the accelerator's copy engine), posix (plain O_DIRECT, "
	 "compat mode) or unavailable; and the PCI topology: for each AMD or Huawei "
	 "accelerator and each RDMA device, whether the NIC can reach its memory (ok, maybe, "
	 "no): under one PCIe switch, through the root complex, across host bridges, or a "
	 "software device; ACS redirect on the switch's ports, the IOMMU mode, a BAR smaller "
	 "than the memory. Needs no privileges (ACS is read from config space by root "
	 "only); exits 0.\n"
	 "peer bench NAME (a volume, fxN, /dev/fxN or any block device or file path) reads "
	 "--size bytes from the start of it in --block reads, --depth in flight, once per "
	 "path of --paths, through libfxio with the host engine, and prints MiB/s, the "
	 "ratio to the posix path, I/Os and overlapped slots of the staged pipeline (as "
	 "gdsio). Reads only. The direct row runs when the kernel registers host memory "
	 "for direct I/O, else it says why not. The bounce pool follows FXIO_POOL_SLOTS and "
	 "FXIO_SLOT_KIB.\n\nExample: fxctl peer bench vol1 --size 1G --block 4M",
	 peer_options, cmd_peer},
};

po::options_description global_options()
{
	po::options_description g("Global options (anywhere on the command line)");
	g.add_options()
		("output,o", po::value<std::string>()->default_value("normal")->value_name("FORMAT"),
		 "output format: normal or json")
		("verbose,v", po::bool_switch(), "explain what is being done")
		("help,h", po::bool_switch(), "show help")
		("version,V", po::bool_switch(), "show fxctl's version (and the module's if loaded)");
	return g;
}

const char exit_status_help[] =
	"Exit status: 0 ok, 1 failed, 2 usage error, 3 not found, 4 busy (open or in use),\n"
	"5 module not loaded, 6 permission denied. With -o json, errors are printed on\n"
	"stdout as {\"error\": {\"message\", \"code\", \"errno\", \"errno_name\"}}.\n";

std::string main_help()
{
	std::ostringstream s;
	s << "Usage: fxctl [OPTIONS] COMMAND [ARGS]\n\n"
	     "Manage fxblk striped volumes over NVMe-oF namespaces.\n\nCommands:\n";
	for (const auto &c : commands)
		s << fmt::format("  {:<12} {}\n", c.name, c.summary);
	s << '\n' << global_options()
	  << "\nRun 'fxctl help COMMAND' or 'fxctl COMMAND --help' for a command's options.\n"
	  << exit_status_help;
	return s.str();
}

// Wraps @text at @width columns, keeping its paragraphs.
std::string wrap(const std::string &text, std::size_t width = 78)
{
	std::string out, line;
	std::istringstream paras(text);
	for (std::string para; std::getline(paras, para);) {
		std::istringstream words(para);
		line.clear();
		for (std::string w; words >> w;) {
			if (!line.empty() && line.size() + 1 + w.size() > width) {
				out += line + '\n';
				line.clear();
			}
			line += (line.empty() ? "" : " ") + w;
		}
		out += line + '\n';
	}
	return out;
}

std::string command_help(const Command &c)
{
	po::options_description opts(fmt::format("Options for {}", c.name)), hidden;
	po::positional_options_description pos;
	c.options(opts, hidden, pos);
	std::ostringstream s;
	s << "Usage: fxctl " << c.synopsis << "\n\n" << wrap(c.help) << '\n';
	if (!opts.options().empty())
		s << opts << '\n';
	s << global_options() << '\n' << exit_status_help;
	return s.str();
}

// The command table as completion sees it: names, options, value sets.
std::vector<OptionSpec> option_specs(const po::options_description &desc)
{
	std::vector<OptionSpec> v;
	for (const auto &o : desc.options()) {
		OptionSpec spec{o->long_name(), "", o->semantic()->min_tokens() > 0, {}};
		auto s = o->canonical_display_name(po::command_line_style::allow_dash_for_short);
		if (s.size() == 2 && s[0] == '-')
			spec.short_name = s.substr(1);
		if (spec.long_name == "output")
			spec.values = {"normal", "json"};
		v.push_back(std::move(spec));
	}
	return v;
}

std::string completion_script(const std::string &shell)
{
	if (shell != "bash")
		throw UsageError(fmt::format("no completion for shell '{}': only bash", shell));
	std::vector<CommandSpec> cmds;
	for (const auto &c : commands) {
		po::options_description opts, hidden;
		po::positional_options_description pos;
		c.options(opts, hidden, pos);
		cmds.push_back({c.name, option_specs(opts)});
	}
	return bash_completion(cmds, option_specs(global_options()));
}

const Command *find_command(const std::string &name)
{
	for (const auto &c : commands)
		if (name == c.name)
			return &c;
	throw UsageError(fmt::format("unknown command '{}'", name));
}

constexpr auto style = po::command_line_style::unix_style ^ po::command_line_style::allow_guessing;

int dispatch(const std::vector<std::string> &args, Env &env, bool &as_json)
{
	// Pass 1 (Boost's subcommand idiom): global options wherever they are,
	// the command, and the rest left unrecognized for the command's parser.
	po::options_description first = global_options();
	first.add_options()
		("command", po::value<std::string>(), "command")
		("args", po::value<std::vector<std::string>>(), "arguments")
		// hidden: the build generates the installed completion script with it
		("completion", po::value<std::string>(), "print a shell completion script");
	po::positional_options_description cmdpos;
	cmdpos.add("command", 1).add("args", -1);
	po::variables_map g;
	std::vector<std::string> rest;
	try {
		po::parsed_options parsed = po::command_line_parser(args)
						    .options(first)
						    .positional(cmdpos)
						    .allow_unregistered()
						    .style(style)
						    .run();
		po::store(parsed, g);
		po::notify(g);
		rest = po::collect_unrecognized(parsed.options, po::include_positional);
	} catch (const po::error &e) {
		throw UsageError(e.what());
	}
	if (g.count("completion")) {
		env.out << completion_script(g["completion"].as<std::string>());
		return exit_ok;
	}
	auto output = g["output"].as<std::string>();
	if (output != "normal" && output != "json")
		throw UsageError(fmt::format("invalid output format '{}': use normal or json",
					     output));
	as_json = output == "json";

	Ctx ctx{env, {}, po::parsed_options(nullptr), as_json, g["verbose"].as<bool>()};
	const Command *cmd = nullptr;
	if (g.count("command")) {
		rest.erase(rest.begin());  // the command itself
		std::string name = g["command"].as<std::string>();
		if (name == "help") {
			if (rest.size() > 1)
				throw UsageError("help takes at most one COMMAND");
			env.out << (rest.empty() ? main_help() : command_help(*find_command(rest[0])));
			return exit_ok;
		}
		cmd = find_command(name);
	}
	if (g["help"].as<bool>()) {
		env.out << (cmd ? command_help(*cmd) : main_help());
		return exit_ok;
	}
	if (g["version"].as<bool>()) {
		cmd_version(ctx);
		return exit_ok;
	}
	if (!cmd)
		throw UsageError("no command given");

	// Pass 2: the command's own options and arguments.
	po::options_description opts, hidden;
	po::positional_options_description positional;
	cmd->options(opts, hidden, positional);
	po::options_description all;
	all.add(opts).add(hidden);
	try {
		ctx.parsed = po::command_line_parser(rest)
				     .options(all)
				     .positional(positional)
				     .style(style)
				     .run();
		po::store(ctx.parsed, ctx.vm);
		po::notify(ctx.vm);
	} catch (const po::error &e) {
		throw UsageError(fmt::format("{}: {}", cmd->name, e.what()));
	}
	return cmd->handler(ctx);
}

}  // namespace

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
		fail(e, "remove", "remove", object);
	}
}

void fail_kernel(const KernelError &e, const std::string &verb, const std::string &command,
		 const std::string &object)
{
	fail(e, verb, command, object);
}

std::uint64_t default_data_offset(std::uint64_t chunk_bytes)
{
	return std::max(min_data_offset_bytes, chunk_bytes);
}

MemberLayout member_layout(const BlockDevice &dev, std::uint64_t offset_bytes,
			   std::uint64_t chunk_bytes)
{
	if (offset_bytes % dev.logical_block_size)
		throw Error(fmt::format("data offset {} is not a multiple of {}'s logical block "
					"size ({} bytes); choose an aligned --data-offset",
					offset_bytes, dev.path, dev.logical_block_size),
			    errno_error(EINVAL));
	std::uint64_t size = dev.size_sectors * sector_size;
	if (offset_bytes >= size)
		throw Error(fmt::format("data offset {} is beyond the end of {} ({}); choose a "
					"smaller --data-offset",
					format_size(offset_bytes), dev.path, format_size(size)),
			    errno_error(ENOSPC));
	// No sum can wrap: offset < size, and chunk and tail are small.
	std::uint64_t need = offset_bytes + chunk_bytes + reserved_tail_bytes;
	if (need < offset_bytes || size < need)
		throw Error(fmt::format("{} is too small ({}): needs at least {} (data offset {} "
					"+ one chunk {} + {} reserved at the end); use a larger "
					"device or a smaller chunk/data offset",
					dev.path, format_size(size), format_size(need),
					format_size(offset_bytes), format_size(chunk_bytes),
					format_size(reserved_tail_bytes)),
			    errno_error(ENOSPC));
	return {offset_bytes / sector_size,
		(size - offset_bytes - reserved_tail_bytes) / sector_size};
}

std::optional<bool> ask_terminal(const std::string &question)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return std::nullopt;
	std::cerr << "fxctl: " << question << " [y/N] " << std::flush;
	std::string answer;
	if (!std::getline(std::cin, answer))
		return false;
	return answer == "y" || answer == "Y" || answer == "yes";
}

double monotonic_seconds()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

double epoch_seconds()
{
	return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
		.count();
}

int run(const std::vector<std::string> &args, Env &env)
{
	bool as_json = false;
	auto report = [&](const std::string &msg, int code, int err, const char *hint = "") {
		env.err << "fxctl: " << msg << '\n' << hint;
		if (as_json)
			env.out << error_doc(msg, code, err).dump(2) << '\n';
		return code;
	};
	try {
		return dispatch(args, env, as_json);
	} catch (const UsageError &e) {
		return report(e.what(), exit_usage, 0, "Run 'fxctl --help' for usage.\n");
	} catch (const ModuleNotLoaded &e) {
		return report(e.what(), exit_no_module, 0);
	} catch (const KernelError &e) {
		return report(e.what(), exit_code_for_errno(e.err()), e.err());
	} catch (const Error &e) {
		int err = e.code().category() == std::generic_category() ? e.code().value() : 0;
		return report(e.what(), err ? exit_code_for_errno(err) : exit_runtime, err);
	} catch (const std::exception &e) {
		return report(e.what(), exit_runtime, 0);
	}
}

}  // namespace fxctl
