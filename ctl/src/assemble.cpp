#include "assemble.hpp"

#include "assembly_plan.hpp"
#include "ownership.hpp"
#include "scan.hpp"
#include "volume_ops.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <streambuf>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fxctl {
namespace po = boost::program_options;
namespace fs = std::filesystem;

// Where scans report unreadable devices: stderr with -v, else nowhere.
std::ostream &scan_log(const Ctx &ctx)
{
	struct NullBuf final : std::streambuf {
		int overflow(int c) override { return c; }
	};
	static NullBuf buf;
	static std::ostream null(&buf);
	return ctx.verbose ? ctx.env.err : null;
}

std::string volume_object(const label::Label &l)
{
	return fmt::format("\"{}\" ({})", l.volume_name, label::uuid_to_string(l.volume_uuid));
}

std::string devnames(const std::vector<Candidate> &cands)
{
	std::string s;
	for (const auto &c : cands)
		s += (s.empty() ? "" : " ") + c.devname;
	return s;
}

namespace {

std::string refusal(const Plan &p)
{
	std::string msg = fmt::format("cannot assemble {}: {}", volume_object(p.reference),
				      p.summary());
	for (const auto &why : p.problems)
		msg += "\n  " + why;
	for (const auto &w : p.warnings)
		msg += "\n  note: " + w;
	return msg;
}

// Warnings of a plan that goes ahead, on stderr.
void warn(const Ctx &ctx, const Plan &p)
{
	for (const auto &w : p.warnings)
		ctx.env.err << "fxctl: warning: " << w << '\n';
}

// A member missing: exit 3 (not found); anything else wrong: exit 1.
[[noreturn]] void refuse(const Plan &p)
{
	throw Error(refusal(p), p.missing.empty() ? std::error_code() : errno_error(ENODEV));
}

json plan_doc(const Plan &p, const std::string &status, const Volume *v)
{
	json d;
	d["name"] = p.reference.volume_name;
	d["uuid"] = label::uuid_to_string(p.reference.volume_uuid);
	d["status"] = status;  // assembled, running, waiting, refused, skipped
	d["owner"] = p.reference.owner_nqn.empty() ? json(nullptr) : json(p.reference.owner_nqn);
	d["generation"] = p.reference.generation;
	d["disk"] = v ? json(v->disk) : json(nullptr);
	json members = json::array();
	for (const auto &c : p.ordered)
		members.push_back(c.devnode);
	d["members"] = members;
	d["problems"] = p.problems;
	d["warnings"] = p.warnings;
	return d;
}

struct Outcome {
	std::string status;  // "assembled" or "running"
	Volume volume;
};

std::string outcome_text(const Plan &p, const Outcome &o)
{
	if (o.status == "running")
		return fmt::format("{} is already running as {}\n", volume_object(p.reference),
				   o.volume.disk);
	return fmt::format("assembled {} as /dev/{} from {}\n", volume_object(p.reference),
			   o.volume.disk, devnames(p.ordered));
}

// Rewrites every member's label from the plan's reference at the next
// generation, with owner @owner: after an import (new owner) or a forced
// assembly (reused or stale members). Signatures libblkid found on a member
// are erased first (as create --force does).
void rewrite_labels(Ctx &ctx, Plan &p, const std::string &owner)
{
	MemberIO &io = ctx.env.members();
	for (const Candidate &c : p.ordered) {
		if (c.signatures.empty())
			continue;
		io.erase_signatures(c.devnode);
		ctx.env.err << fmt::format("fxctl: --force: erased {} on {}\n",
					   fmt::join(c.signatures, ", "), c.devnode);
	}
	label::Label next = p.reference;
	next.owner_nqn = owner;
	rewrite_members(ctx, p, next,
			"the volume was not started: fix the device and run the same command "
			"again, with --force when some labels were rewritten (it takes the "
			"members left behind)");
	if (ctx.verbose)
		ctx.env.err << fmt::format("fxctl: rewrote the labels of {}: generation {}, owner "
					   "{}\n", volume_object(p.reference), p.reference.generation,
					   owner.empty() ? "none" : owner);
}

// CREATE the volume of a complete plan, members in index order with the
// labels' geometry, unless it already runs over the same devices. With
// @rewrite_owner, the labels are rewritten first (rewrite_labels), once the
// volume is known not to run and its members not to be in use.
Outcome start(Ctx &ctx, Plan &p, const std::optional<std::string> &rewrite_owner = std::nullopt)
{
	const label::Label &ref = p.reference;
	std::vector<BlockDevice> devs;
	for (const auto &c : p.ordered)
		devs.push_back(ctx.env.blockdevs().probe(c.devnode));
	auto client = ctx.env.connect();
	auto running = [&]() -> std::optional<Volume> {
		for (auto &v : client->list()) {
			if (v.name != ref.volume_name)
				continue;
			bool same = v.members.size() == devs.size();
			for (std::size_t i = 0; same && i < devs.size(); ++i)
				same = v.members[i].major == devs[i].major &&
				       v.members[i].minor == devs[i].minor;
			if (same)
				return v;
			throw Error(fmt::format("cannot assemble {}: a volume of that name already "
						"runs as {} over other devices; stop it first "
						"('fxctl stop {}')",
						volume_object(ref), v.disk, v.name),
				    errno_error(EEXIST));
		}
		return std::nullopt;
	};
	if (auto v = running())
		return {"running", *v};
	for (std::size_t i = 0; i < devs.size(); ++i)
		if (!devs[i].holders.empty())
			throw Error(fmt::format("cannot assemble {}: {} (member {}) is in use by {}; "
						"stop or remove {} first",
						volume_object(ref), devs[i].path, i,
						devs[i].holders.front(), devs[i].holders.front()),
				    errno_error(EBUSY));
	if (rewrite_owner)
		rewrite_labels(ctx, p, *rewrite_owner);
	CreateRequest req;
	req.name = ref.volume_name;
	req.chunk_sectors = ref.chunk_sectors;
	for (const auto &d : devs)
		req.members.push_back({d.major, d.minor, ref.data_offset_sectors, ref.data_sectors});
	take_uuid(*client, req, ref.volume_uuid);
	try {
		return {"assembled", client->create(req)};
	} catch (const KernelError &e) {
		// Another fxctl (udev's incremental) won the race: fine if it
		// is the same volume.
		if (e.err() == EEXIST)
			if (auto v = running())
				return {"running", *v};
		fail_kernel(e, "assemble", "assemble", volume_object(ref));
	}
}

// What is on the namespace @name that a missing member's identity names
// but no label claims (mkfs or dd over both label copies, fxctl wipe, or
// another volume's create).
std::string missing_namespace(const Ctx &ctx, const std::string &name)
{
	const std::string dev = "/dev/" + name;
	std::string what;
	try {
		label::MemberLabel ml = ctx.env.members().read_label(dev);
		if (ml.label)
			return fmt::format("its namespace is present as {}, which now carries a "
					   "label of {} (member {}): it was reused",
					   name, volume_object(*ml.label), ml.label->member_index);
		for (const auto &sig : ctx.env.members().signatures(dev))
			what += (what.empty() ? "" : ", ") + describe(sig);
	} catch (const std::exception &e) {
		return fmt::format("its namespace is present as {}, unreadable: {}", name, e.what());
	}
	return fmt::format("its namespace is present as {} without an fxblk label ({}): "
			   "its labels were overwritten or wiped; 'fxctl examine {}'",
			   name, what.empty() ? "no other signature either: zeroed?"
					      : "libblkid finds " + what,
			   dev);
}

// Refuses @p (exit 3 when a member is missing, else 1). A missing member
// whose namespace is present without its label (the plan saw labelled
// devices only) is named first, with what is on it now: each present
// disk's identity is read once.
[[noreturn]] void refuse(const Ctx &ctx, Plan p)
{
	// the sentence plan_volume wrote for missing member @i, told more
	auto tell = [&p](std::uint32_t i, const std::string &more) {
		std::string head = fmt::format("member {} of {} is missing", i,
					       p.reference.member_count);
		for (auto &why : p.problems)
			if (why.rfind(head, 0) == 0) {
				why += "; " + more;
				return;
			}
	};
	const auto &ids = p.reference.members;
	for (const auto &name : p.missing.empty() ? std::vector<std::string>()
						  : ctx.env.blockdevs().present_disks()) {
		label::MemberId id;
		try {
			id = ctx.env.members().identity(name);
		} catch (const std::exception &) {
			continue;  // no NVMe identity (not a namespace)
		}
		for (std::uint32_t i : p.missing)
			if (i < ids.size() && ids[i] == id)
				tell(i, missing_namespace(ctx, name));
	}
	refuse(p);
}

// A complete plan: refused with its problems, or warned about and started
// (or found running), and reported. assemble NAME and incremental end here.
int run_plan(Ctx &ctx, Plan p, const std::optional<std::string> &rewrite_owner = std::nullopt)
{
	if (!p.ok())
		refuse(ctx, p);
	warn(ctx, p);
	Outcome o = start(ctx, p, rewrite_owner);
	ctx.print(plan_doc(p, o.status, &o.volume), outcome_text(p, o));
	return exit_ok;
}

// The end of incremental: a set with only members missing waits (exit 0,
// "<who>waiting: <summary>" and what is missing); anything else is refused
// or started (run_plan).
int wait_or_start(Ctx &ctx, const Plan &p, const std::string &who)
{
	if (!p.only_missing())
		return run_plan(ctx, p);
	std::string text = who + "waiting: " + p.summary();
	for (const auto &why : p.problems)
		text += "\n  " + why;
	ctx.print(plan_doc(p, "waiting", nullptr), text + '\n');
	return exit_ok;
}

void write_record(const fs::path &file, const label::Label &l, const std::string &devnode)
{
	fs::path tmp = file;
	tmp += ".tmp";
	{
		std::ofstream out(tmp, std::ios::trunc);
		out << fmt::format("device {}\nindex {}\ncount {}\ngeneration {}\n", devnode,
				   l.member_index, l.member_count, l.generation);
		if (!out.flush())
			throw Error(fmt::format("cannot write {}", tmp.string()), errno_error(EIO));
	}
	fs::rename(tmp, file);
}

// The members recorded for one volume, each re-read: a record whose device
// is gone or no longer carries this volume's label is dropped.
std::vector<Candidate> recorded_members(const Ctx &ctx, const fs::path &dir,
					const VolumeUuid &uuid)
{
	std::vector<Candidate> out;
	std::error_code ec;
	if (!fs::is_directory(dir, ec))
		return out;
	for (const auto &e : fs::directory_iterator(dir)) {
		std::string name = e.path().filename().string();
		if (name.ends_with(".tmp") || name.starts_with("."))
			continue;
		Candidate c;
		if (!ctx.env.blockdevs().stat("/dev/" + name).error)
			c = read_candidate(ctx.env.members(), name, scan_log(ctx));
		if (!c.ml.label || c.ml.label->volume_uuid != uuid) {
			fs::remove(e.path());
			continue;
		}
		out.push_back(std::move(c));
	}
	return out;
}

// Whether the records in @dir (written by write_record, read as they are:
// no member's label is read again) name every member index 0..count-1 at
// generation @generation: the test of `incremental --defer`, which runs in
// udev's worker and must stay cheap. The records may be stale (a device
// gone since); the unit that starts the volume re-reads them all.
bool records_complete(const fs::path &dir, std::uint32_t count, std::uint64_t generation)
{
	std::vector<bool> seen(count, false);
	for (const auto &e : fs::directory_iterator(dir)) {
		std::string name = e.path().filename().string();
		if (name.ends_with(".tmp") || name.starts_with("."))
			continue;
		std::ifstream in(e.path());
		std::string key;
		std::uint64_t index = count, n = 0, gen = 0;
		std::string value;
		while (in >> key >> value) {
			try {
				if (key == "index")
					index = std::stoull(value);
				else if (key == "count")
					n = std::stoull(value);
				else if (key == "generation")
					gen = std::stoull(value);
			} catch (const std::exception &) {
				index = count;  // a damaged record counts for nothing
				break;
			}
		}
		if (n == count && gen == generation && index < count)
			seen[index] = true;
	}
	return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
}

// The plan of volume @uuid from the block devices present now: for a plan
// made before its lock, when another fxctl (create, incremental) held the
// lock meanwhile and may have written labels or started the volume.
Plan replan(const Ctx &ctx, const VolumeUuid &uuid, bool force)
{
	auto groups = group_by_volume(scan_members(ctx.env.blockdevs(), ctx.env.members(),
						   scan_log(ctx)));
	auto it = groups.find(uuid);
	if (it == groups.end()) {
		Plan p;
		p.problems.push_back("no member of the volume is present any more");
		return p;
	}
	return plan_volume(it->second, {force});
}

// Takes the lock of @p's volume; when another fxctl held it first, @p is
// made again from the devices present now (see replan).
std::unique_ptr<RunLock> lock_plan(const Ctx &ctx, Plan &p, bool force)
{
	auto lock = try_volume_lock(p.reference.volume_uuid);
	if (lock && lock->waited()) {
		label::Label before = p.reference;
		p = replan(ctx, before.volume_uuid, force);
		if (p.ordered.empty() && p.missing.empty())
			p.reference = before;  // gone: name it as it was
	}
	return lock;
}

}  // namespace

std::filesystem::path run_dir()
{
	const char *d = std::getenv("FXBLK_RUN_DIR");
	return d && *d ? d : default_run_dir;
}

RunLock::RunLock(const std::filesystem::path &path)
{
	// forget_volume() unlinks a lock file while holding it: a lock taken
	// on the unlinked file is no lock, so take it again on the new one
	for (;;) {
		fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd_ < 0)
			throw Error(fmt::format("cannot open the lock file {}: {}", path.string(),
						std::strerror(errno)),
				    errno_error(errno));
		if (flock(fd_, LOCK_EX | LOCK_NB) < 0) {
			waited_ = waited_ || errno == EWOULDBLOCK;
			while (flock(fd_, LOCK_EX) < 0) {
				if (errno == EINTR)
					continue;
				int err = errno;
				close(fd_);
				throw Error(fmt::format("cannot lock {}: {}", path.string(),
							std::strerror(err)),
					    errno_error(err));
			}
		}
		struct stat held, now;
		if (fstat(fd_, &held) == 0 && stat(path.c_str(), &now) == 0 &&
		    held.st_dev == now.st_dev && held.st_ino == now.st_ino)
			return;
		close(fd_);
	}
}

RunLock::~RunLock()
{
	close(fd_);  // releases the lock
}

std::unique_ptr<RunLock> volume_lock(const VolumeUuid &uuid)
{
	fs::create_directories(run_dir());
	return std::make_unique<RunLock>(run_dir() / (label::uuid_to_string(uuid) + ".lock"));
}

void forget_volume(const VolumeUuid &uuid)
{
	std::string id = label::uuid_to_string(uuid);
	fs::path lock_file = run_dir() / (id + ".lock");
	std::error_code ec;
	if (!fs::exists(lock_file, ec) && !fs::exists(run_dir() / id, ec))
		return;
	try {
		RunLock lock(lock_file);
		fs::remove_all(run_dir() / id, ec);
		fs::remove(lock_file, ec);
	} catch (const std::exception &) {
		// best effort: what is left is a few bytes in /run until reboot
	}
}

std::unique_ptr<RunLock> try_volume_lock(const VolumeUuid &uuid)
{
	try {
		return volume_lock(uuid);
	} catch (const std::exception &) {
		return nullptr;
	}
}

void rewrite_members(Ctx &ctx, Plan &p, label::Label next, const std::string &fix)
{
	MemberIO &io = ctx.env.members();
	const std::uint64_t before = p.reference.generation;
	next.generation = before + 1;
	const fs::path records = run_dir() / label::uuid_to_string(next.volume_uuid);
	for (std::size_t i = 0; i < p.ordered.size(); ++i) {
		Candidate &c = p.ordered[i];
		next.member_index = static_cast<std::uint32_t>(i);
		try {
			io.write_label(c.devnode, next);
		} catch (const Error &e) {
			std::string done = i ? fmt::format("members 0..{} carry generation {} now, the "
							   "others generation {}", i - 1,
							   next.generation, before)
					     : std::string("no label was rewritten");
			throw Error(fmt::format("cannot rewrite the label of {} (member {}) of {}: {}; "
						"{}; {}", c.devnode, i, volume_object(p.reference),
						e.what(), done, fix),
				    e.code());
		}
		c.ml.label = next;
		// what incremental --defer counts must show the new generation
		std::error_code ec;
		if (fs::exists(records / c.devname, ec))
			write_record(records / c.devname, next, c.devnode);
	}
	next.member_index = p.reference.member_index;
	p.reference = next;
}

std::unique_ptr<RunLock> running_volume_lock(const Volume &v)
{
	return v.uuid ? try_volume_lock(*v.uuid) : nullptr;
}

void assemble_options(po::options_description &opts, po::options_description &hidden,
		      po::positional_options_description &pos)
{
	opts.add_options()
		("all,a", po::bool_switch(),
		 "assemble every complete volume found that the auto-assembly policy allows "
		 "on this host (the others are reported)")
		("force,f", po::bool_switch(),
		 "take members that were reused (another signature on them, or only the backup "
		 "label left) or carry a stale label: erase the other signatures and rewrite "
		 "every member's label (next generation)")
		("import", po::bool_switch(),
		 "take over a volume owned by another host (or without an owner): record this "
		 "host's NQN as its owner in every label (next generation), then assemble it")
		("scan", po::bool_switch(),
		 "change nothing: list every volume whose labelled members are present, its "
		 "state (running, stopped, incomplete, refused, not-auto) and what starts it");
	hidden.add_options()("target", po::value<std::string>(), "volume name or UUID");
	pos.add("target", 1);
}

void stop_options(po::options_description &opts, po::options_description &hidden,
		  po::positional_options_description &pos)
{
	opts.add_options()("all,a", po::bool_switch(), "stop every volume that is not open");
	hidden.add_options()("name", po::value<std::string>(), "volume");
	pos.add("name", 1);
}

void incremental_options(po::options_description &opts, po::options_description &hidden,
			 po::positional_options_description &pos)
{
	opts.add_options()
		("defer", po::bool_switch(),
		 "only record DEVICE, start nothing, and print FXBLK_COMPLETE=1 when the "
		 "records show every member of its volume (for udev's IMPORT{program}: the "
		 "rule then pulls in fxblk-assemble@UUID.service); messages go to stderr")
		("uuid", po::value<std::string>(),
		 "start volume UUID from the members recorded for it, if all are there "
		 "(what fxblk-assemble@UUID.service runs); no DEVICE");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
}

// Why @ref may not be assembled here without --import, or "": owned by
// another host (and not allowed by the AUTO line).
std::string not_ours(const HostPolicy &pol, const label::Label &ref)
{
	if (!foreign_owner(pol, ref) || auto_assembly(pol, ref).allowed)
		return "";
	return fmt::format("{} is owned by host {} (its labels say so), and this host is {}: "
			   "another host may be using it; if that host is gone or no longer "
			   "uses it, 'fxctl assemble --import {}' takes it over (records this "
			   "host as its owner)",
			   volume_object(ref), ref.owner_nqn,
			   pol.host_nqn.empty() ? "without a host NQN (no /etc/nvme/hostnqn)"
						: pol.host_nqn,
			   ref.volume_name);
}

namespace {

// The volume of @p the kernel runs: the one CREATE gave its UUID, else the
// one of its name.
const Volume *running_volume(const std::vector<Volume> &vols, const Plan &p)
{
	for (const auto &v : vols)
		if (v.uuid ? *v.uuid == p.reference.volume_uuid
			   : v.name == p.reference.volume_name)
			return &v;
	return nullptr;
}

// assemble --scan: each volume whose labelled members are present, what
// state it is in and what starts it, changing nothing (as mdadm --examine
// --scan and vgs list what exists but is not running). The decisions are
// assemble's own: plan_volume(), auto_assembly().
int scan_report(Ctx &ctx, const std::vector<Plan> &plans, const HostPolicy &pol)
{
	std::vector<Volume> vols;
	std::optional<std::string> kernel_error;
	try {
		vols = ctx.env.connect()->list();
	} catch (const std::exception &e) {
		kernel_error = e.what();
	}
	json docs = json::array();
	std::string text;
	for (const auto &p : plans) {
		const std::string &name = p.reference.volume_name;
		const Volume *v = running_volume(vols, p);
		std::string status, next;
		if (v) {
			status = "running";
			next = fmt::format("runs as /dev/{}", v->disk);
		} else if (!p.missing.empty()) {
			// as assemble's exit 3: members missing, whatever else is
			// wrong (each listed)
			status = "incomplete";
			next = "connect the missing members ('fxctl connect-all'); udev starts "
			       "it when the last appears";
		} else if (!p.ok()) {
			status = "refused";
			next = fmt::format("'fxctl assemble {}' says why and what to do", name);
		} else if (AutoDecision d = auto_assembly(pol, p.reference); !d.allowed) {
			status = "not-auto";
			next = fmt::format("not started by itself on this host ({}); 'fxctl "
					   "assemble --import {}' takes it over", d.why, name);
		} else {
			status = "stopped";
			next = fmt::format("'fxctl assemble {}' starts it", name);
		}
		json doc = plan_doc(p, status, v);
		doc["next"] = next;
		docs.push_back(doc);
		text += fmt::format("{:<10} {}: {}\n", status, p.summary(), next);
		for (const auto &why : p.problems)
			text += "           " + why + "\n";
	}
	if (plans.empty())
		text = "no fxblk members found\n";
	if (kernel_error)
		text += fmt::format("(running volumes unknown: {})\n", *kernel_error);
	json out{{"volumes", docs}};
	out["kernel_error"] = kernel_error ? json(*kernel_error) : json(nullptr);
	ctx.print(out, text);
	return exit_ok;
}

}  // namespace

int cmd_assemble(Ctx &ctx)
{
	bool all = ctx.vm["all"].as<bool>();
	bool force = ctx.vm["force"].as<bool>();
	bool import = ctx.vm["import"].as<bool>();
	bool scan = ctx.vm["scan"].as<bool>();
	if (scan && (all || force || import || ctx.vm.count("target")))
		throw UsageError("--scan lists every volume found and takes nothing else");
	if (!scan && all == (ctx.vm.count("target") > 0))
		throw UsageError("assemble needs a volume NAME or UUID, --all or --scan");
	if (all && (force || import))
		throw UsageError("--force and --import take one volume NAME or UUID, not --all");
	HostPolicy pol = ctx.env.host_policy();
	if (import && pol.host_nqn.empty())
		throw Error(fmt::format("cannot import: this host has no host NQN to record as the "
					"owner; create /etc/nvme/hostnqn ('nvme gen-hostnqn > "
					"/etc/nvme/hostnqn') or set HOSTNQN in {}", pol.conf_path),
			    errno_error(EINVAL));
	// Each volume is started under its own lock, as incremental and
	// create hold it (assemble.hpp); a volume that another fxctl starts
	// meanwhile is found running by start().
	std::vector<Plan> plans;
	for (const auto &[uuid, group] :
	     group_by_volume(scan_members(ctx.env.blockdevs(), ctx.env.members(), scan_log(ctx))))
		plans.push_back(plan_volume(group, {force}));
	if (scan)
		return scan_report(ctx, plans, pol);

	if (!all) {
		std::string target = ctx.vm["target"].as<std::string>();
		auto uuid = label::uuid_from_string(target);
		std::vector<const Plan *> match;
		for (const auto &p : plans)
			if (uuid ? p.reference.volume_uuid == *uuid
				 : p.reference.volume_name == target)
				match.push_back(&p);
		if (match.empty())
			throw Error(fmt::format("no member of a volume {} \"{}\" found among the "
						"block devices present; connect its members ('nvme "
						"list' shows what is connected) or see 'fxctl examine "
						"DEV'",
						uuid ? "with UUID" : "named", target),
				    errno_error(ENOENT));
		if (match.size() > 1) {
			std::string ids;
			for (const auto *p : match)
				ids += "\n  " + p->summary();
			throw Error(fmt::format("more than one volume is named \"{}\"; assemble one "
						"by its UUID:{}", target, ids),
				    errno_error(EINVAL));
		}
		Plan p = *match.front();
		auto lock = lock_plan(ctx, p, force);
		if (!p.ok())
			refuse(ctx, p);
		if (auto why = not_ours(pol, p.reference); !why.empty() && !import)
			throw Error("cannot assemble " + why, errno_error(EREMOTE));
		bool rewrite = import;
		for (const auto &c : p.ordered)
			rewrite = rewrite || !reuse_reason(c).empty() ||
				  c.ml.label->generation < p.reference.generation;
		if (!rewrite)
			return run_plan(ctx, p);
		return run_plan(ctx, p, import ? pol.host_nqn : p.reference.owner_nqn);
	}

	json docs = json::array();
	std::string text;
	int rc = exit_ok;
	for (auto &p : plans) {
		auto lock = lock_plan(ctx, p, force);
		if (AutoDecision d = auto_assembly(pol, p.reference); !d.allowed) {
			json doc = plan_doc(p, "skipped", nullptr);
			doc["problems"].push_back("not auto-assembled on this host: " + d.why);
			docs.push_back(doc);
			text += fmt::format("skipped {}: not auto-assembled on this host ({}); 'fxctl "
					    "assemble {}' or --import starts it\n",
					    volume_object(p.reference), d.why,
					    p.reference.volume_name);
			continue;
		}
		if (!p.ok()) {
			ctx.env.err << "fxctl: " << refusal(p) << '\n';
			docs.push_back(plan_doc(p, "refused", nullptr));
			rc = exit_runtime;
			continue;
		}
		try {
			warn(ctx, p);
			Outcome o = start(ctx, p);
			docs.push_back(plan_doc(p, o.status, &o.volume));
			text += outcome_text(p, o);
		} catch (const Error &e) {
			ctx.env.err << "fxctl: " << e.what() << '\n';
			docs.push_back(plan_doc(p, "refused", nullptr));
			rc = exit_runtime;
		}
	}
	if (plans.empty())
		text = "no fxblk members found\n";
	ctx.print(json{{"volumes", docs}}, text);
	return rc;
}

int cmd_stop(Ctx &ctx)
{
	bool all = ctx.vm["all"].as<bool>();
	if (all == (ctx.vm.count("name") > 0))
		throw UsageError("stop needs a volume NAME (a name, fxN or /dev/fxN) or --all");
	auto client = ctx.env.connect();
	std::vector<Volume> vols;
	if (all) {
		vols = client->list();
	} else {
		VolumeRef ref = VolumeRef::parse(ctx.vm["name"].as<std::string>());
		try {
			vols.push_back(client->get(ref));
		} catch (const KernelError &e) {
			fail_kernel(e, "stop", "stop", ref.display());
		}
	}
	json docs = json::array();
	std::string text;
	int rc = exit_ok;
	for (const auto &v : vols) {
		try {
			// not while incremental or assemble works on it
			auto lock = running_volume_lock(v);
			destroy_volume(*client, v, false);
		} catch (const Error &e) {
			if (!all)
				throw;
			ctx.env.err << "fxctl: " << e.what() << '\n';
			rc = exit_code_for_errno(e.code().value());
			continue;
		}
		docs.push_back(volume_doc(v));
		text += fmt::format("stopped {} ({}); its members keep their labels: 'fxctl "
				    "assemble {}' starts it again\n", v.disk, v.name, v.name);
	}
	if (all)
		ctx.print(json{{"stopped", docs}}, vols.empty() ? "no volumes running\n" : text);
	else
		ctx.print(docs.front(), text);
	return rc;
}

// incremental --uuid UUID (fxblk-assemble@UUID.service): start the volume
// from the members udev recorded for it, under its lock, if they are all
// there and the policy allows; each recorded member is read again.
int incremental_start(Ctx &ctx, const std::string &arg)
{
	auto uuid = label::uuid_from_string(arg);
	if (!uuid)
		throw UsageError(fmt::format("--uuid {}: not a volume UUID (the form "
					     "'fxctl examine DEV' shows, e.g. "
					     "0f0f0f0f-0000-4000-8000-00000000b0b0)", arg));
	std::string id = label::uuid_to_string(*uuid);
	HostPolicy pol = ctx.env.host_policy();
	if (pol.cmdline_off) {
		ctx.print(json{{"uuid", id}, {"status", "auto-off"}},
			  fmt::format("volume {}: auto-assembly is off (fxblk.auto=0 on the kernel "
				      "command line); 'fxctl assemble {}' starts it\n", id, id));
		return exit_ok;
	}
	auto lock = volume_lock(*uuid);
	auto members = recorded_members(ctx, run_dir() / id, *uuid);
	if (members.empty()) {
		ctx.print(json{{"uuid", id}, {"status", "not-recorded"}},
			  fmt::format("volume {}: no member recorded in {} (udev records them as "
				      "they appear: 'fxctl incremental --defer DEV'); nothing to "
				      "do\n", id, (run_dir() / id).string()));
		return exit_ok;
	}
	Plan p = plan_volume(members);
	if (AutoDecision d = auto_assembly(pol, p.reference); !d.allowed) {
		ctx.print(plan_doc(p, "skipped", nullptr),
			  fmt::format("{}: not auto-assembled on this host: {}; 'fxctl assemble "
				      "--import {}' takes it over, or allow it in {} (AUTO)\n",
				      volume_object(p.reference), d.why, p.reference.volume_name,
				      pol.conf_path));
		return exit_ok;
	}
	return wait_or_start(ctx, p, volume_object(p.reference) + ": ");
}

int cmd_incremental(Ctx &ctx)
{
	bool defer = ctx.vm["defer"].as<bool>();
	if (ctx.vm.count("uuid")) {
		if (ctx.vm.count("device") || defer)
			throw UsageError("incremental --uuid UUID takes no DEVICE and no --defer");
		return incremental_start(ctx, ctx.vm["uuid"].as<std::string>());
	}
	if (!ctx.vm.count("device"))
		throw UsageError("incremental needs a DEVICE (e.g. /dev/nvme0n1), or --uuid UUID");
	// --defer: stdout carries KEY=VALUE lines for udev's IMPORT{program}
	// only; what the other modes print goes to stderr (udev's log)
	auto report = [&](const json &doc, const std::string &text) {
		if (!defer)
			return ctx.print(doc, text);
		ctx.env.err << "fxctl: " << text;
		ctx.env.out << "FXBLK_COMPLETE=0\n";
	};
	std::string arg = ctx.vm["device"].as<std::string>();
	require_block_device(ctx.env.blockdevs(), arg);
	fs::path real = ctx.env.blockdevs().canonical(arg);
	HostPolicy pol = ctx.env.host_policy();
	if (pol.cmdline_off) {
		report(json{{"device", real.string()}, {"status", "auto-off"}},
			  fmt::format("{}: auto-assembly is off (fxblk.auto=0 on the kernel command "
				      "line); 'fxctl assemble NAME' starts a volume\n",
				      real.string()));
		return exit_ok;
	}
	std::ostream &log = scan_log(ctx);
	Candidate self = read_candidate(ctx.env.members(), real.filename().string(), log);
	if (!self.ml.label) {
		std::string why = self.ml.primary_reason.empty()
					  ? ""
					  : fmt::format(" (primary label: {}; backup: {})",
							self.ml.primary_reason,
							self.ml.backup_reason);
		report(json{{"device", self.devnode}, {"status", "not-a-member"}},
			  fmt::format("{} is not an fxblk member{}; nothing to do\n", self.devnode,
				      why));
		return exit_ok;
	}
	const label::Label &l = *self.ml.label;
	fs::path dir = run_dir() / label::uuid_to_string(l.volume_uuid);
	if (std::string reused = reuse_reason(self); !reused.empty()) {
		std::error_code ec;
		fs::remove(dir / self.devname, ec);  // recorded before it was reused
		report(json{{"device", self.devnode}, {"status", "reused"}, {"reason", reused}},
			  fmt::format("{}: not assembled automatically: it carries an old label of "
				      "member {} of {} but was reused: {}; 'fxctl wipe {}' removes "
				      "the old label, 'fxctl assemble --force {}' takes it back as "
				      "a member\n",
				      self.devnode, l.member_index, volume_object(l), reused,
				      self.devnode, l.volume_name));
		return exit_ok;
	}
	if (AutoDecision d = auto_assembly(pol, l); !d.allowed) {
		report(json{{"device", self.devnode}, {"status", "not-auto"}, {"reason", d.why}},
			  fmt::format("{}: member {} of {}: not auto-assembled on this host: {}; "
				      "'fxctl assemble --import {}' takes it over, or allow it in "
				      "{} (AUTO)\n",
				      self.devnode, l.member_index, volume_object(l), d.why,
				      l.volume_name, pol.conf_path));
		return exit_ok;
	}
	fs::create_directories(dir);
	// One incremental per volume at a time: with several members appearing
	// together, exactly one of them sees the set complete and creates the
	// volume (or, --defer, pulls in its unit); other volumes go on.
	auto lock = volume_lock(l.volume_uuid);
	// A create may have held the lock meanwhile (and wiped the labels when
	// its CREATE failed): what counts is the label now.
	Candidate now = read_candidate(ctx.env.members(), self.devname, log);
	if (!now.ml.label || now.ml.label->volume_uuid != l.volume_uuid) {
		report(json{{"device", self.devnode}, {"status", "not-a-member"}},
			  fmt::format("{}: its label changed meanwhile; nothing to do\n",
				      self.devnode));
		return exit_ok;
	}
	write_record(dir / self.devname, l, self.devnode);
	if (defer) {
		bool complete = records_complete(dir, l.member_count, l.generation);
		ctx.env.err << fmt::format("fxctl: {}: member {} of {} recorded{}\n", self.devnode,
					   l.member_index, volume_object(l),
					   complete ? "; every member is there: fxblk-assemble@" +
							      label::uuid_to_string(l.volume_uuid) +
							      ".service starts it"
						    : "");
		ctx.env.out << fmt::format("FXBLK_COMPLETE={}\n", complete ? 1 : 0);
		return exit_ok;
	}
	return wait_or_start(ctx, plan_volume(recorded_members(ctx, dir, l.volume_uuid)),
			     fmt::format("{}: member {} of {}; ", self.devnode, l.member_index,
					 volume_object(l)));
}

}  // namespace fxctl
