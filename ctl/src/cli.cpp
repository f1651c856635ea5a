#include "cli.hpp"

#include "error.hpp"
#include "render.hpp"
#include "units.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <ostream>
#include <sstream>

namespace fxctl {
namespace po = boost::program_options;
namespace {

constexpr std::uint64_t reserved_tail_bytes = 1 * MiB;  // labels at the end
constexpr std::uint64_t min_data_offset_bytes = 4 * MiB;  // labels at the start

struct Ctx {
	Env &env;
	po::variables_map vm;
	bool as_json = false;
	bool verbose = false;

	void print(const json &doc, const std::string &text) const
	{
		if (as_json)
			env.out << doc.dump(2) << '\n';
		else
			env.out << text;
	}
};

struct Command {
	const char *name;
	const char *synopsis;
	const char *help;
	void (*options)(po::options_description &, po::options_description &hidden,
			po::positional_options_description &);
	int (*handler)(Ctx &);
};

// ---- kernel errors -> messages that name the object and the fix --------

std::string kernel_says(const KernelError &e)
{
	return e.extack().empty() ? "" : fmt::format(" (kernel: {})", e.extack());
}

[[noreturn]] void fail(const KernelError &e, const std::string &op, const std::string &object)
{
	std::string msg;
	switch (e.err()) {
	case EPERM:
	case EACCES:
		msg = fmt::format("permission denied to {} {}{}; run fxctl as root "
				  "(needs CAP_SYS_ADMIN and CAP_NET_ADMIN)", op, object, kernel_says(e));
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
				  "it or unmount it first", op, object, kernel_says(e));
		break;
	case EINVAL:
		msg = fmt::format("cannot {} {}: {}; check the arguments against "
				  "'fxctl {} --help'", op, object,
				  e.extack().empty() ? "the module rejected the request as invalid"
						     : e.extack(),
				  op);
		break;
	case ENODEV:
	case ENXIO:
		msg = fmt::format("cannot {} {}: a member device disappeared{}; check the "
				  "NVMe-oF connections ('nvme list')", op, object, kernel_says(e));
		break;
	case ENOSPC:
	case EMFILE:
		msg = fmt::format("cannot {} {}: too many volumes (at most {}){}; remove unused "
				  "volumes first", op, object, FXBLK_MAX_VOLUMES, kernel_says(e));
		break;
	default:
		msg = fmt::format("cannot {} {}: {}{}; see dmesg for details", op, object,
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

Volume get_volume(Client &c, const VolumeRef &ref)
{
	try {
		return c.get(ref);
	} catch (const KernelError &e) {
		fail(e, "show", ref_object(ref));
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
		 "start of data on each member (default: max(4M, chunk))");
	hidden.add_options()
		("name", po::value<std::string>(), "volume name")
		("members", po::value<std::vector<std::string>>(), "member devices");
	pos.add("name", 1).add("members", -1);
}

void stats_options(po::options_description &opts, po::options_description &hidden,
		   po::positional_options_description &pos)
{
	opts.add_options()
		("watch,w", po::value<double>()->implicit_value(1.0)->value_name("SECONDS"),
		 "repeat every SECONDS (default 1), showing rates")
		("count", po::value<unsigned>()->value_name("N"),
		 "with --watch: stop after N samples");
	name_only(opts, hidden, pos);
}

// ---- commands -----------------------------------------------------------

int cmd_version(Ctx &ctx)
{
	auto c = ctx.env.connect();
	ModuleStatus st = c->status();
	if (st.api_version != FXBLK_API_VERSION)
		ctx.env.err << fmt::format("fxctl: warning: the module speaks API {}, fxctl API {}; "
					   "install matching fxctl and fxblk.ko\n",
					   st.api_version, FXBLK_API_VERSION);
	json doc = version_doc(st);
	ctx.print(doc, text_version(doc));
	return exit_ok;
}

void check_name(const std::string &name)
{
	if (name.empty() || name.size() >= FXBLK_NAME_MAX)
		throw UsageError(fmt::format("volume name '{}' must be 1..{} characters", name,
					     FXBLK_NAME_MAX - 1));
	for (char ch : name)
		if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' &&
		    ch != '-')
			throw UsageError(fmt::format("volume name '{}' may only contain letters, "
						     "digits, '.', '_' and '-'", name));
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
	if (ctx.vm.count("data-offset")) {
		offset = parse_size(ctx.vm["data-offset"].as<std::string>(), "data offset");
		if (offset % 4096)
			throw UsageError(fmt::format("invalid data offset '{}': must be a multiple "
						     "of 4 KiB",
						     ctx.vm["data-offset"].as<std::string>()));
	}

	CreateRequest req;
	req.name = name;
	req.chunk_sectors = static_cast<std::uint32_t>(chunk / sector_size);
	std::vector<BlockDevice> devs;
	for (const auto &path : paths) {
		BlockDevice d = ctx.env.blockdevs().probe(path);
		if (!d.holders.empty()) {
			std::string h = d.holders.front();
			throw Error(fmt::format("{} is in use by {}; remove {} first", path, h, h),
				    errno_error(EBUSY));
		}
		if (d.busy)
			throw Error(fmt::format("{} is in use (mounted or opened exclusively); "
						"unmount or release it first", path),
				    errno_error(EBUSY));
		for (const auto &o : devs)
			if (o.major == d.major && o.minor == d.minor)
				throw Error(fmt::format("{} and {} are the same device ({}:{}); "
							"list each member once",
							o.path, path, d.major, d.minor),
					    errno_error(EINVAL));
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

	auto c = ctx.env.connect();
	Volume v;
	try {
		v = c->create(req);
	} catch (const KernelError &e) {
		fail(e, "create", quote(name));
	}
	json doc = volume_doc(v);
	ctx.print(doc, text_created(doc));
	return exit_ok;
}

int cmd_remove(Ctx &ctx)
{
	VolumeRef ref = need_ref(ctx);
	auto c = ctx.env.connect();
	Volume v = get_volume(*c, ref);
	try {
		c->destroy(VolumeRef{v.index, {}});
	} catch (const KernelError &e) {
		if (e.err() == EBUSY)
			throw Error(fmt::format("{} ({}) is open (mounted or in use); unmount it "
						"first", v.disk, v.name),
				    errno_error(EBUSY));
		fail(e, "remove", fmt::format("{} ({})", v.disk, v.name));
	}
	json doc = volume_doc(v);
	ctx.print(doc, text_removed(doc));
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
	Volume v = get_volume(*c, ref);
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
		fail(e, "list", "volumes");
	}
	json doc = list_doc(vols);
	ctx.print(doc, text_list(doc));
	return exit_ok;
}

int cmd_stats(Ctx &ctx)
{
	VolumeRef ref = need_ref(ctx);
	std::optional<double> watch;
	if (ctx.vm.count("watch")) {
		watch = ctx.vm["watch"].as<double>();
		if (!(*watch > 0 && *watch <= 86400))
			throw UsageError(fmt::format("invalid --watch interval {}: must be between "
						     "0 and 86400 seconds", *watch));
	}
	unsigned count = ctx.vm.count("count") ? ctx.vm["count"].as<unsigned>() : 0;
	if (!watch && count)
		throw UsageError("--count only makes sense with --watch");
	if (!watch)
		count = 1;
	auto c = ctx.env.connect();
	json prev;
	for (unsigned n = 0; count == 0 || n < count; ++n) {
		if (n)
			ctx.env.sleep(*watch);
		Volume v;
		try {
			v = c->stats(ref);
		} catch (const KernelError &e) {
			fail(e, "show statistics of", ref_object(ref));
		}
		json doc = volume_doc(v);
		if (ctx.as_json)
			// One compact document per line when watching (JSON lines).
			ctx.env.out << (watch ? doc.dump() : doc.dump(2)) << '\n';
		else
			ctx.env.out << (n ? "\n" : "")
				    << text_stats(doc, n ? &prev : nullptr, watch.value_or(0));
		ctx.env.out.flush();
		prev = std::move(doc);
	}
	return exit_ok;
}

const Command commands[] = {
	{"version", "version", "Show fxctl's version and the loaded module's version, API "
	 "version and features.", no_options, cmd_version},
	{"create", "create NAME [--chunk SIZE] [--data-offset SIZE] MEMBER...",
	 "Create striped volume NAME (/dev/fxN) over the MEMBER block devices, in order. "
	 "SIZE takes K/M/G suffixes (binary) or plain bytes. 1 MiB at the end of each "
	 "member is left unused for labels.", create_options, cmd_create},
	{"remove", "remove NAME", "Remove a volume (NAME, fxN or /dev/fxN). Refused while "
	 "it is open.", name_only, cmd_remove},
	{"list", "list", "List all volumes.", no_options, cmd_list},
	{"show", "show NAME", "Show a volume's geometry and members.", name_only, cmd_show},
	{"stats", "stats NAME [--watch [SECONDS]] [--count N]",
	 "Show per-member I/O counters and latency; --watch repeats and shows rates.",
	 stats_options, cmd_stats},
};

po::options_description global_options()
{
	po::options_description g("Global options");
	g.add_options()
		("output,o", po::value<std::string>()->default_value("normal")->value_name("FORMAT"),
		 "output format: normal or json")
		("verbose,v", po::bool_switch(), "explain what is being done")
		("help,h", po::bool_switch(), "show help");
	return g;
}

std::string main_help()
{
	std::ostringstream s;
	s << "Usage: fxctl [OPTIONS] COMMAND [ARGS]\n\n"
	     "Manage fxblk striped volumes over NVMe-oF namespaces.\n\nCommands:\n";
	for (const auto &c : commands) {
		std::string help = c.help;
		s << fmt::format("  {:<9} {}\n", c.name, help.substr(0, help.find('.') + 1));
	}
	s << '\n' << global_options() << "\nRun 'fxctl COMMAND --help' for a command's options.\n"
	  << "Exit status: 0 ok, 1 runtime error, 2 usage error.\n";
	return s.str();
}

std::string command_help(const Command &c, const po::options_description &opts)
{
	std::ostringstream s;
	s << "Usage: fxctl " << c.synopsis << "\n\n" << c.help << "\n\n";
	if (!opts.options().empty())
		s << opts << '\n';
	s << global_options();
	return s.str();
}

bool takes_value(const std::string &tok)
{
	return tok == "-o" || tok == "--output";
}

// Global options may come before the command: the command is the first
// word that is neither an option nor the value of one.
std::optional<std::size_t> find_command(const std::vector<std::string> &args)
{
	for (std::size_t i = 0; i < args.size(); ++i) {
		if (args[i] == "--")
			return i + 1 < args.size() ? std::optional(i + 1) : std::nullopt;
		if (takes_value(args[i])) {
			++i;
			continue;
		}
		if (!args[i].starts_with("-") || args[i] == "-")
			return i;
	}
	return std::nullopt;
}

bool is_number(const std::string &s)
{
	double d;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
	return ec == std::errc() && p == s.data() + s.size();
}

int dispatch(const std::vector<std::string> &args, Env &env)
{
	auto pos = find_command(args);
	std::vector<std::string> rest = args;
	const Command *cmd = nullptr;
	if (pos) {
		std::string name = args[*pos];
		for (const auto &c : commands)
			if (name == c.name)
				cmd = &c;
		if (!cmd)
			throw UsageError(fmt::format("unknown command '{}'", name));
		rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(*pos));
	}
	// "--watch 2" means an interval of 2, not a second positional.
	for (std::size_t i = 0; i + 1 < rest.size(); ++i)
		if ((rest[i] == "--watch" || rest[i] == "-w") && is_number(rest[i + 1])) {
			rest[i] = "--watch=" + rest[i + 1];
			rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i) + 1);
		}

	po::options_description opts(cmd ? fmt::format("Options for {}", cmd->name) : "Options");
	po::options_description hidden;
	po::positional_options_description positional;
	if (cmd)
		cmd->options(opts, hidden, positional);
	po::options_description all;
	all.add(global_options()).add(opts).add(hidden);

	Ctx ctx{env, {}, false, false};
	try {
		po::store(po::command_line_parser(rest)
				  .options(all)
				  .positional(positional)
				  .style(po::command_line_style::unix_style ^
					 po::command_line_style::allow_guessing)
				  .run(),
			  ctx.vm);
		po::notify(ctx.vm);
	} catch (const po::error &e) {
		throw UsageError(e.what());
	}
	if (ctx.vm["help"].as<bool>()) {
		env.out << (cmd ? command_help(*cmd, opts) : main_help());
		return exit_ok;
	}
	if (!cmd)
		throw UsageError("no command given");
	auto output = ctx.vm["output"].as<std::string>();
	if (output != "normal" && output != "json")
		throw UsageError(fmt::format("invalid output format '{}': use normal or json",
					     output));
	ctx.as_json = output == "json";
	ctx.verbose = ctx.vm["verbose"].as<bool>();
	return cmd->handler(ctx);
}

}  // namespace

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
	std::uint64_t need = offset_bytes + chunk_bytes + reserved_tail_bytes;
	if (size < need)
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

int run(const std::vector<std::string> &args, Env &env)
{
	try {
		return dispatch(args, env);
	} catch (const UsageError &e) {
		env.err << "fxctl: " << e.what() << "\nRun 'fxctl --help' for usage.\n";
		return exit_usage;
	} catch (const KernelError &e) {
		env.err << "fxctl: " << e.what() << '\n';
		return exit_runtime;
	} catch (const std::exception &e) {
		env.err << "fxctl: " << e.what() << '\n';
		return exit_runtime;
	}
}

}  // namespace fxctl
