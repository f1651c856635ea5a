// The NVMe-oF commands: discover, connect, connect-all, disconnect. Connect
// is idempotent (an existing controller is reported, not duplicated) and
// retries targets that are down with a bounded back-off, printing each
// attempt's state on stderr.
#include "fabric_cmds.hpp"

#include "error.hpp"
#include "client.hpp"
#include "render.hpp"

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

namespace fxctl {
namespace {

constexpr const char *default_config = "/etc/nvme/config.json";

void target_options(po::options_description &opts, bool need_nqn)
{
	opts.add_options()
		("transport,t", po::value<std::string>()->default_value("rdma")->value_name("TR"),
		 "transport: rdma, tcp, fc or loop")
		("traddr,a", po::value<std::string>()->value_name("ADDR"), "target address")
		("trsvcid,s", po::value<std::string>()->value_name("PORT"),
		 "target service (default 4420; 8009 for TCP discovery)")
		("host-traddr", po::value<std::string>()->value_name("ADDR"),
		 "local address to connect from")
		("host-iface", po::value<std::string>()->value_name("IFACE"),
		 "local interface to connect through (TCP)");
	if (need_nqn)
		opts.add_options()("nqn,n", po::value<std::string>()->value_name("NQN"),
				   "subsystem NQN");
}

void host_options(po::options_description &opts)
{
	opts.add_options()
		("hostnqn", po::value<std::string>()->value_name("NQN"),
		 "host NQN (default: /etc/nvme/hostnqn)")
		("hostid", po::value<std::string>()->value_name("UUID"),
		 "host ID (default: /etc/nvme/hostid)");
}

void tuning_options(po::options_description &opts)
{
	opts.add_options()
		("ctrl-loss-tmo", po::value<int>()->value_name("SECONDS"),
		 "give a lost controller up after SECONDS (-1: never; kernel default 600)")
		("fast-io-fail-tmo", po::value<int>()->value_name("SECONDS"),
		 "fail I/O after SECONDS of reconnecting instead of holding it until "
		 "ctrl-loss-tmo (-1: off, the default)")
		("reconnect-delay", po::value<int>()->value_name("SECONDS"),
		 "between reconnect attempts (kernel default 10)")
		("nr-io-queues", po::value<int>()->value_name("N"), "I/O queues (default: CPUs)")
		("nr-poll-queues", po::value<int>()->value_name("N"), "polled I/O queues")
		("retries", po::value<unsigned>()->default_value(5)->value_name("N"),
		 "retry unreachable targets N times, waiting 1, 2, 4, 8, 8... s; every "
		 "target is tried once before any is retried")
		("timeout", po::value<double>()->default_value(60)->value_name("SECONDS"),
		 "start no retry after SECONDS in all (not per target)");
}

std::string get(const Ctx &ctx, const char *key)
{
	return ctx.vm.count(key) ? ctx.vm[key].as<std::string>() : std::string();
}

void take_tuning(const Ctx &ctx, FabricTuning &t)
{
	auto take = [&](const char *key, std::optional<int> &dst, int lo) {
		if (!ctx.vm.count(key))
			return;
		int v = ctx.vm[key].as<int>();
		if (v < lo)
			throw UsageError(fmt::format("invalid --{} {}: must be at least {}", key, v,
						     lo));
		dst = v;
	};
	take("ctrl-loss-tmo", t.ctrl_loss_tmo, -1);
	take("fast-io-fail-tmo", t.fast_io_fail_tmo, -1);
	take("reconnect-delay", t.reconnect_delay, 1);
	take("nr-io-queues", t.nr_io_queues, 1);
	take("nr-poll-queues", t.nr_poll_queues, 0);
}

// Command-line host NQN/ID first, then the target's (config), then /etc/nvme.
// Without a host ID the kernel pairs the NQN with its default host's random
// one, which changes every boot and which 6.x refuses for a second NQN, so
// one is always given: /etc/nvme/hostid for /etc/nvme/hostnqn's NQN, and
// for another NQN (--hostnqn, a second host in config.json) one of its own
// (host_id_for; nvme-cli gives /etc/nvme/hostid to every NQN, review L2).
// The one place the host of a connection is defaulted: Fabric takes @t's as
// they are.
void take_host(const Ctx &ctx, Fabric &f, FabricTarget &t)
{
	if (ctx.vm.count("hostnqn"))
		t.hostnqn = get(ctx, "hostnqn");
	if (ctx.vm.count("hostid"))
		t.hostid = get(ctx, "hostid");
	std::string file_nqn = f.default_hostnqn();
	if (t.hostnqn.empty())
		t.hostnqn = file_nqn;
	if (t.hostid.empty())
		t.hostid = host_id_for(t.hostnqn, file_nqn, f.default_hostid());
}

FabricTarget target_from_args(const Ctx &ctx, Fabric &f, bool need_nqn)
{
	FabricTarget t;
	t.transport = get(ctx, "transport");
	if (transport_module(t.transport).empty())
		throw UsageError(fmt::format("unknown transport '{}': use rdma, tcp, fc or loop",
					     t.transport));
	t.traddr = get(ctx, "traddr");
	if (t.traddr.empty() && t.transport != "loop")
		throw UsageError("missing target address (--traddr/-a ADDR)");
	t.trsvcid = get(ctx, "trsvcid");
	t.host_traddr = get(ctx, "host-traddr");
	t.host_iface = get(ctx, "host-iface");
	t.subsysnqn = need_nqn ? get(ctx, "nqn") : discovery_nqn;
	if (t.subsysnqn.empty())
		throw UsageError("missing subsystem NQN (--nqn/-n NQN)");
	take_host(ctx, f, t);
	return t;
}

// The cause of @e, with what the host says about the transport module and
// the route to the target.
ConnectCause cause_of(Fabric &f, const FabricTarget &t, const ConnectFailed &e)
{
	std::string mod = transport_module(t.transport);
	return explain_connect_failure(t, e.err(), e.kernel_log(),
				       mod.empty() || f.module_loaded(mod), f.route_error(t.traddr));
}

struct RetryPolicy {
	unsigned retries;
	double timeout;
};

RetryPolicy retry_policy(const Ctx &ctx)
{
	double timeout = ctx.vm["timeout"].as<double>();
	if (!(timeout >= 0 && timeout <= 86400))
		throw UsageError(fmt::format("invalid --timeout {}: must be from 0 to 86400 seconds",
					     timeout));
	return {ctx.vm["retries"].as<unsigned>(), timeout};
}

// A target for connect_rounds, not tried yet.
ConnectResult pending(const FabricTarget &t)
{
	ConnectResult r;
	r.target = t;
	return r;
}

// One attempt at @r's target, unless a controller for it exists: true once
// it is settled (connected, or failed for good), false after a transient
// failure (r.error says which). Never throws for a failed target.
bool attempt_one(Ctx &ctx, Fabric &f, ConnectResult &r)
{
	const FabricTarget &t = r.target;
	bool raced = false;
	++r.attempts;
	for (;;) {
		if (auto c = find_controller(f.controllers(), t)) {
			r.status = r.attempts == 1 ? "already-connected" : "connected";
			r.controller = c->name;
			r.state = c->state;
			return true;
		}
		try {
			r.controller = f.connect(t);
			r.status = "connected";
			r.state = "live";
			for (const auto &c : f.controllers())
				if (c.name == r.controller)
					f.record_connected(c);
			return true;
		} catch (const ConnectFailed &e) {
			ConnectCause cause = cause_of(f, t, e);
			if (cause.err == EEXIST && !raced) {
				raced = true;  // another connect won: look again, once
				continue;
			}
			if (ctx.verbose)
				for (const auto &l : e.kernel_log())
					ctx.env.err << "fxctl: kernel: " << l << '\n';
			r.status = "failed";
			r.error = cause.message;
			r.err = cause.err;
			return !cause.transient;
		}
	}
}

// Reads the log page of discovery controller @r (attempt_one's contract,
// for a discovery port of connect-all): on success @found gets every NVMe
// subsystem it lists and its referrals (entries of the discovery subtype),
// all with @r's host, host address/interface, config and tuning. A connect
// that failed is judged as any connect's (explain_connect_failure); a log
// page that could not be read (nvmf_get_discovery_log) is transient: the
// controller was there, and one coming up may not serve its log yet.
bool attempt_discovery(Fabric &f, ConnectResult &r, std::vector<FabricTarget> &found)
{
	const FabricTarget d = r.target;
	++r.attempts;
	std::vector<DiscoveryEntry> entries;
	try {
		entries = f.discover(d);
	} catch (const ConnectFailed &e) {
		ConnectCause cause = cause_of(f, d, e);
		r.status = "failed";
		r.error = "discovery: " + cause.message;
		r.err = cause.err;
		return !cause.transient;
	} catch (const Error &e) {
		r.status = "failed";
		r.error = std::string("discovery: ") + e.what();
		r.err = e.code().value() ? e.code().value() : EIO;
		return false;
	}
	r.status = "discovered";
	r.error.clear();
	r.err = 0;
	for (const auto &e : entries) {
		FabricTarget s = d;
		s.transport = e.transport;
		s.traddr = e.traddr;
		s.trsvcid = e.trsvcid;
		s.subsysnqn = e.subtype == "nvme" ? e.subsysnqn : std::string(discovery_nqn);
		found.push_back(std::move(s));
	}
	return true;
}

// A target not tried because the deadline had passed (review M-2).
void not_tried(ConnectResult &r, const RetryPolicy &p)
{
	r.status = "failed";
	r.error = fmt::format("not tried: the --timeout of {} s had passed", p.timeout);
	r.err = ETIMEDOUT;
}

// Inserts the targets discovery port @i found right after it in @results,
// except those already there (a referral back, the controller listing
// itself, a subsystem two controllers list) and referrals beyond
// @referrals_left; shifts the indices in @todo and @again past @i, and
// queues the new ones in @todo right after position @k (this round).
void insert_found(std::vector<ConnectResult> &results, std::size_t i,
		  const std::vector<FabricTarget> &found, std::vector<std::size_t> &todo,
		  std::size_t k, std::vector<std::size_t> &again, unsigned &referrals_left)
{
	auto known = [&](const FabricTarget &t) {
		return std::any_of(results.begin(), results.end(), [&](const ConnectResult &o) {
			return o.target.display() == t.display() && o.target.hostnqn == t.hostnqn;
		});
	};
	std::vector<ConnectResult> add;
	for (const auto &t : found) {
		bool dup = known(t) || std::any_of(add.begin(), add.end(), [&](const auto &o) {
				   return o.target.display() == t.display();
			   });
		if (dup || (t.discovery() && referrals_left == 0))
			continue;
		referrals_left -= t.discovery();
		add.push_back(pending(t));
	}
	std::size_t n = add.size();
	if (!n)
		return;
	results.insert(results.begin() + static_cast<std::ptrdiff_t>(i + 1), add.begin(),
		       add.end());
	for (auto *v : {&todo, &again})
		for (auto &j : *v)
			j += j > i ? n : 0;
	std::vector<std::size_t> fresh(n);
	for (std::size_t m = 0; m < n; ++m)
		fresh[m] = i + 1 + m;
	todo.insert(todo.begin() + static_cast<std::ptrdiff_t>(k + 1), fresh.begin(), fresh.end());
}

// Connects the targets of @results that are not settled yet (empty
// status). Every target is tried once, in order, before any is tried
// again: the kernel takes one connect at a time (nvmf_dev_mutex in
// drivers/nvme/host/fabrics.c), so retrying a target that is down first
// would hold back every target behind it. Those that failed transiently
// are tried again after backoff_seconds(round), for at most p.retries
// more rounds and p.timeout seconds in all: no attempt, first or retry,
// starts after that (one in progress takes the transport's own time, up
// to a few seconds over RDMA); a target never tried is "failed", "not
// tried", and what is still failing then stays "failed".
// With @discover_ports (connect-all), a discovery port is a target like
// the others (review H2): its attempt reads its log page (retried, with
// the same back-off, when that fails), and what it lists is inserted
// after it and tried in the same round; it ends "discovered".
void connect_rounds(Ctx &ctx, Fabric &f, std::vector<ConnectResult> &results,
		    const RetryPolicy &p, bool discover_ports = false)
{
	constexpr unsigned max_referrals = 16;
	unsigned referrals_left = max_referrals;
	double deadline = ctx.env.clock() + p.timeout;
	std::vector<std::size_t> todo;
	for (std::size_t i = 0; i < results.size(); ++i)
		if (results[i].status.empty())
			todo.push_back(i);
	for (unsigned round = 1; !todo.empty(); ++round) {
		std::vector<std::size_t> again;
		for (std::size_t k = 0; k < todo.size(); ++k) {
			std::size_t i = todo[k];
			if (ctx.env.clock() > deadline) {
				if (!results[i].attempts)
					not_tried(results[i], p);
				continue;
			}
			std::vector<FabricTarget> found;
			bool settled = discover_ports && results[i].target.discovery()
					       ? attempt_discovery(f, results[i], found)
					       : attempt_one(ctx, f, results[i]);
			if (!settled)
				again.push_back(i);
			insert_found(results, i, found, todo, k, again, referrals_left);
		}
		double wait = backoff_seconds(round);
		if (again.empty() || round > p.retries || ctx.env.clock() + wait > deadline)
			return;
		for (std::size_t i : again)
			ctx.env.err << fmt::format("fxctl: {}: {}; retry {} of {} in {} s\n",
						   results[i].target.display(), results[i].error,
						   round, p.retries, wait);
		ctx.env.err.flush();
		ctx.env.sleep(wait);
		todo = std::move(again);
	}
}

// One target (fxctl connect): the same rounds, with one target in them.
ConnectResult connect_one(Ctx &ctx, Fabric &f, const FabricTarget &t, const RetryPolicy &p)
{
	std::vector<ConnectResult> one = {pending(t)};
	connect_rounds(ctx, f, one, p);
	return one[0];
}

int finish(Ctx &ctx, const std::vector<ConnectResult> &results)
{
	json doc = connect_doc(results);
	ctx.print(doc, text_connect(doc));
	const ConnectResult *first = nullptr;
	std::size_t failed = 0;
	for (const auto &r : results) {
		if (r.status != "failed")
			continue;
		first = first ? first : &r;
		++failed;
		if (!ctx.as_json)
			ctx.env.err << "fxctl: " << r.target.display() << ": " << r.error << '\n';
	}
	if (!first)
		return exit_ok;
	if (results.size() == 1)
		return exit_code_for_errno(first->err);
	// some connected, the others named above: fxblk-connect.service counts
	// this as started (SuccessExitStatus=7), so its stop path still runs
	return failed < results.size() ? exit_partial : exit_runtime;
}

// The controllers of @config's subsystem ports among @all (of a discovery
// port: every I/O controller at its address, for that host).
std::vector<Controller> config_controllers(Ctx &ctx, Fabric &f, const std::vector<Controller> &all,
					   const std::string &config)
{
	std::vector<Controller> out;
	auto add = [&](const Controller &c) {
		if (std::find(out.begin(), out.end(), c) == out.end())
			out.push_back(c);
	};
	for (FabricTarget t : f.read_config(config)) {
		take_host(ctx, f, t);
		if (t.discovery()) {
			for (const auto &c : all)
				if (c.transport == t.transport && c.traddr == t.traddr &&
				    c.hostnqn == t.hostnqn && c.subsysnqn != discovery_nqn)
					add(c);
		} else if (auto c = find_controller(all, t)) {
			add(*c);
		}
	}
	return out;
}

// Namespace head (nvme0n1) -> the fx volume it is a member of, from the
// module; none when the module is not loaded.
std::map<std::string, std::string> volume_members(Ctx &ctx)
{
	std::map<std::string, std::string> out;
	std::unique_ptr<Client> c;
	try {
		c = ctx.env.connect();
	} catch (const ModuleNotLoaded &) {
		return out;
	}
	for (const auto &v : c->list())
		for (const auto &m : c->get(VolumeRef{v.index, v.name}).members)
			out.emplace(m.disk, v.name);
	return out;
}

// What uses @c's namespaces: holders, mounts, fx volumes.
std::vector<std::string> users_of(Fabric &f, const Controller &c,
				  const std::map<std::string, std::string> &members)
{
	std::vector<std::string> users = f.namespace_users(c.name);
	for (const auto &disk : f.namespace_disks(c.name)) {
		auto m = members.find(disk);
		if (m != members.end())
			users.push_back(fmt::format("{} member of fx volume {}", disk, m->second));
	}
	return users;
}

// disconnect --config: the controllers of @config's ports that fxctl
// connected and whose namespaces nothing uses. Others are left, and said
// so; one in use fails the command (exit 4) after the rest are done.
int disconnect_config(Ctx &ctx, Fabric &f, const std::vector<Controller> &all,
		      const std::string &config)
{
	// Nothing connected is not an error here: stopping twice is fine.
	std::vector<Controller> gone;
	std::vector<std::string> busy;
	std::map<std::string, std::string> members;
	bool members_read = false;
	for (const auto &c : config_controllers(ctx, f, all, config)) {
		if (!f.connected_by_fxctl(c)) {
			if (!ctx.as_json)
				ctx.env.err << fmt::format("fxctl: left {} ({} via {} {}:{}): not "
							   "connected by fxctl\n",
							   c.name, c.subsysnqn, c.transport, c.traddr,
							   c.trsvcid);
			continue;
		}
		if (!members_read) {
			members = volume_members(ctx);
			members_read = true;
		}
		auto users = users_of(f, c, members);
		if (!users.empty()) {
			std::string list;
			for (const auto &u : users)
				list += (list.empty() ? "" : ", ") + u;
			busy.push_back(fmt::format("not disconnecting {} ({}): its namespace is in "
						   "use: {}", c.name, c.subsysnqn, list));
			continue;
		}
		f.disconnect(c.name);
		f.forget_connected(c.name);
		gone.push_back(c);
	}
	json doc = disconnect_doc(gone);
	if (!busy.empty())
		doc["refused"] = busy;
	ctx.print(doc, text_disconnect(doc));
	for (const auto &b : busy)
		ctx.env.err << "fxctl: " << b << '\n';
	return busy.empty() ? exit_ok : exit_busy;
}

}  // namespace

void connect_options(po::options_description &opts, po::options_description &,
		     po::positional_options_description &)
{
	target_options(opts, true);
	host_options(opts);
	tuning_options(opts);
}

void connect_all_options(po::options_description &opts, po::options_description &,
			 po::positional_options_description &)
{
	opts.add_options()
		("config", po::value<std::string>()->default_value(default_config)
				   ->value_name("FILE"),
		 "libnvme's JSON configuration (the one nvme-cli reads)");
	host_options(opts);
	tuning_options(opts);
}

void discover_options(po::options_description &opts, po::options_description &,
		      po::positional_options_description &)
{
	target_options(opts, false);
	host_options(opts);
}

void disconnect_options(po::options_description &opts, po::options_description &hidden,
			po::positional_options_description &pos)
{
	opts.add_options()
		("nqn,n", po::value<std::string>()->value_name("NQN"),
		 "disconnect every controller of subsystem NQN")
		("config", po::value<std::string>()->implicit_value(default_config)
				   ->value_name("FILE"),
		 "disconnect the controllers of the subsystem ports in FILE (default "
		 "/etc/nvme/config.json) that fxctl connected (recorded in "
		 "/run/fxblk/connected); one whose namespace is in use (held, mounted, "
		 "an fx volume's member) is refused (exit 4)");
	hidden.add_options()("ctrl", po::value<std::vector<std::string>>(), "controllers");
	pos.add("ctrl", -1);
}

int cmd_connect(Ctx &ctx)
{
	auto f = ctx.env.fabric(ctx.verbose);
	FabricTarget t = target_from_args(ctx, *f, true);
	take_tuning(ctx, t.tuning);
	return finish(ctx, {connect_one(ctx, *f, t, retry_policy(ctx))});
}

int cmd_connect_all(Ctx &ctx)
{
	auto f = ctx.env.fabric(ctx.verbose);
	RetryPolicy p = retry_policy(ctx);
	std::string path = get(ctx, "config");
	std::vector<FabricTarget> targets = f->read_config(path);
	if (targets.empty())
		throw Error(fmt::format("{} names no subsystem ports; see 'fxctl help connect-all' "
					"for its format", path),
			    errno_error(ENOENT));
	std::vector<ConnectResult> results;
	for (FabricTarget t : targets) {
		take_host(ctx, *f, t);
		take_tuning(ctx, t.tuning);
		results.push_back(pending(t));
	}
	connect_rounds(ctx, *f, results, p, true);
	// a discovery port that was read is said by what it listed
	std::erase_if(results, [](const ConnectResult &r) { return r.status == "discovered"; });
	return finish(ctx, results);
}

int cmd_discover(Ctx &ctx)
{
	auto f = ctx.env.fabric(ctx.verbose);
	FabricTarget t = target_from_args(ctx, *f, false);
	std::vector<DiscoveryEntry> entries;
	try {
		entries = f->discover(t);
	} catch (const ConnectFailed &e) {
		ConnectCause cause = cause_of(*f, t, e);
		throw Error(fmt::format("cannot discover at {}: {}", t.display(), cause.message),
			    errno_error(cause.err));
	}
	json doc = discovery_doc(t, entries);
	ctx.print(doc, text_discovery(doc));
	return exit_ok;
}

int cmd_disconnect(Ctx &ctx)
{
	auto f = ctx.env.fabric(ctx.verbose);
	std::vector<std::string> names;
	if (ctx.vm.count("ctrl"))
		names = ctx.vm["ctrl"].as<std::vector<std::string>>();
	std::string nqn = get(ctx, "nqn");
	std::string config = get(ctx, "config");
	if (!names.empty() + !nqn.empty() + !config.empty() != 1)
		throw UsageError("give one of: controllers (nvmeX...), --nqn NQN, --config [FILE]");
	std::vector<Controller> all = f->controllers();
	std::vector<Controller> gone;
	if (!config.empty())
		return disconnect_config(ctx, *f, all, config);
	for (const auto &c : all)
		if (c.subsysnqn == nqn && !nqn.empty())
			gone.push_back(c);
	for (const auto &n : names) {
		std::string name = n.rfind("/dev/", 0) == 0 ? n.substr(5) : n;
		auto it = std::find_if(all.begin(), all.end(),
				       [&](const Controller &c) { return c.name == name; });
		if (it == all.end())
			throw Error(fmt::format("no NVMe controller {}; see 'nvme list-subsys'", name),
				    errno_error(ENOENT));
		gone.push_back(*it);
	}
	if (gone.empty())
		throw Error(fmt::format("no controller of subsystem {} is connected", nqn),
			    errno_error(ENOENT));
	for (const auto &c : gone) {
		f->disconnect(c.name);
		f->forget_connected(c.name);
	}
	json doc = disconnect_doc(gone);
	ctx.print(doc, text_disconnect(doc));
	return exit_ok;
}

}  // namespace fxctl
