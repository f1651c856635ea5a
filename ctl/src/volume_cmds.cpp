#include "volume_cmds.hpp"

#include "kernel_error.hpp"

#include <charconv>
#include <fmt/format.h>
#include <optional>
#include <utility>

namespace fxctl {
namespace {

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

}  // namespace

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
		fail_kernel(e, "show", command, ref_object(ref));
	}
}

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
		fail_kernel(e, "list", "list", "volumes");
	}
	json doc = list_doc(vols);
	ctx.print(doc, text_list(doc));
	return exit_ok;
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
			fail_kernel(e, "show statistics of", "stats", ref_object(ref));
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

}  // namespace fxctl
