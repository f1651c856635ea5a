// NVMe-oF connect: matching existing controllers, error causes, back-off,
// and the connect/connect-all commands over a fake fabric.
#include <doctest/doctest.h>

#include "fakes.hpp"

extern "C" {
#include <nvme/util.h>
}
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace fxtest;
using doctest::Contains;

namespace {

FabricTarget target(const std::string &nqn = "nqn.test:m0", const std::string &svc = "")
{
	FabricTarget t;
	t.transport = "rdma";
	t.traddr = "10.0.0.1";
	t.trsvcid = svc;
	t.subsysnqn = nqn;
	t.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
	return t;
}

Controller ctrl(const std::string &name, const std::string &nqn, const std::string &state = "live")
{
	Controller c;
	c.name = name;
	c.transport = "rdma";
	c.traddr = "10.0.0.1";
	c.trsvcid = "4420";
	c.subsysnqn = nqn;
	c.hostnqn = target().hostnqn;
	c.state = state;
	return c;
}

// A fabric whose connects succeed or fail from a script.
struct FakeFabric final : Fabric {
	struct State {
		std::vector<Controller> ctrls;
		// One entry per connect: the errno (0 = success) and kernel lines.
		std::deque<std::pair<int, std::vector<std::string>>> outcomes;
		std::vector<FabricTarget> config;
		std::vector<FabricTarget> connected;
		bool rdma_loaded = true;
		int route_err = 0;
		std::string hostid;  // /etc/nvme/hostid
		std::set<std::string> recorded;                           // /run/fxblk/connected
		std::map<std::string, std::vector<std::string>> users;    // controller -> users
		std::map<std::string, std::vector<std::string>> disks;    // controller -> heads
		std::vector<std::string> disconnected;
		std::map<std::string, std::vector<DiscoveryEntry>> logs;  // traddr -> log
		std::vector<std::string> discovered;                     // traddrs asked
		// traddr -> how its next discover() calls fail: ECONNREFUSED as
		// LibnvmeFabric::discover's connect does (ConnectFailed), EIO as
		// its failed log page read (a plain Error); none left: the log
		std::map<std::string, std::deque<int>> discover_fails;
		double discover_seconds = 0;  // each discover() takes this long
	};
	State &s;
	explicit FakeFabric(State &st, std::function<void(double)> pass = {})
		: s(st), pass_time(std::move(pass)) {}
	std::function<void(double)> pass_time;  // advances the harness's clock
	std::vector<Controller> controllers() override { return s.ctrls; }
	std::string connect(const FabricTarget &t) override
	{
		s.connected.push_back(t);
		auto o = s.outcomes.empty() ? std::pair<int, std::vector<std::string>>{0, {}}
					    : s.outcomes.front();
		if (!s.outcomes.empty())
			s.outcomes.pop_front();
		if (o.first)
			throw ConnectFailed(o.first, o.second, "cannot connect");
		Controller c = ctrl("nvme" + std::to_string(s.ctrls.size()), t.subsysnqn);
		c.trsvcid = t.trsvcid.empty() ? "4420" : t.trsvcid;
		s.ctrls.push_back(c);
		return c.name;
	}
	void record_connected(const Controller &c) override { s.recorded.insert(c.name); }
	bool connected_by_fxctl(const Controller &c) override { return s.recorded.count(c.name); }
	void forget_connected(const std::string &c) override { s.recorded.erase(c); }
	std::vector<std::string> namespace_users(const std::string &c) override { return s.users[c]; }
	std::vector<std::string> namespace_disks(const std::string &c) override { return s.disks[c]; }
	std::vector<DiscoveryEntry> discover(const FabricTarget &t) override
	{
		s.discovered.push_back(t.traddr);
		if (pass_time && s.discover_seconds > 0)
			pass_time(s.discover_seconds);
		auto &fails = s.discover_fails[t.traddr];
		if (!fails.empty()) {
			int err = fails.front();
			fails.pop_front();
			if (err == EIO)  // the text of LibnvmeFabric::discover
				throw Error(fmt::format("cannot read the discovery log of {}: {}",
							t.display(), std::strerror(err)),
					    errno_error(err));
			throw ConnectFailed(err, {}, "cannot connect");
		}
		return s.logs[t.traddr];
	}
	void disconnect(const std::string &c) override { s.disconnected.push_back(c); }
	std::vector<FabricTarget> read_config(const std::string &) override { return s.config; }
	bool module_loaded(const std::string &) override { return s.rdma_loaded; }
	int route_error(const std::string &) override { return s.route_err; }
	std::string default_hostnqn() override { return target().hostnqn; }
	std::string default_hostid() override { return s.hostid; }
};

struct FabricHarness : Harness {
	FakeFabric::State fs;
	FabricHarness()
	{
		fabric = [this](bool) {
			return std::make_unique<FakeFabric>(fs, [this](double t) { now += t; });
		};
	}
};

const std::vector<std::string> connect0 = {"connect", "-t", "rdma", "-a", "10.0.0.1", "-n",
					   "nqn.test:m0"};

}  // namespace

TEST_CASE("sysfs address and timeouts")
{
	auto kv = parse_address("traddr=10.0.0.1,trsvcid=4420,src_addr=10.0.0.2");
	CHECK(kv["traddr"] == "10.0.0.1");
	CHECK(kv["trsvcid"] == "4420");
	CHECK(kv["src_addr"] == "10.0.0.2");
	CHECK(parse_address("").empty());
	CHECK(parse_tmo("600") == 600);
	CHECK(parse_tmo("off") == -1);
	CHECK(parse_tmo("") == std::nullopt);
	CHECK(parse_tmo("12x") == std::nullopt);
}

TEST_CASE("an existing controller matches on transport, address, service, subsystem, host")
{
	std::vector<Controller> cs = {ctrl("nvme0", "nqn.test:m0"), ctrl("nvme1", "nqn.test:m1")};
	CHECK(find_controller(cs, target())->name == "nvme0");
	CHECK(find_controller(cs, target("nqn.test:m1", "4420"))->name == "nvme1");
	CHECK(!find_controller(cs, target("nqn.test:m0", "4421")));
	CHECK(!find_controller(cs, target("nqn.test:m2")));
	FabricTarget other_host = target();
	other_host.hostnqn = "nqn.other";
	CHECK(!find_controller(cs, other_host));
	cs[0].state = "connecting";  // recovering: still the one to report
	CHECK(find_controller(cs, target())->name == "nvme0");
	cs[0].state = "deleting";
	CHECK(!find_controller(cs, target()));
}

TEST_CASE("connect failures name their cause")
{
	FabricTarget t = target();
	auto c = explain_connect_failure(t, ENVME_CONNECT_INVAL,
					 {"nvme_fabrics: no handler found for transport rdma."},
					 false, 0);
	CHECK(c.message == "nvme_rdma not loaded (modprobe nvme-rdma)");
	CHECK(!c.transient);
	c = explain_connect_failure(t, ENVME_CONNECT_WRITE,
				    {"nvme nvme2: Connect for subsystem nqn.test:m0 is not allowed, "
				     "hostnqn: nqn.h"}, true, 0);
	CHECK_MESSAGE(c.message.find("host NQN " + t.hostnqn + " rejected by the target") == 0,
		      c.message);
	CHECK(!c.transient);
	c = explain_connect_failure(t, ENVME_CONNECT_WRITE,
				    {"nvme nvme2: Connect rejected: status 8 (invalid service ID)."},
				    true, 0);
	CHECK(c.message.find("connection refused by 10.0.0.1:4420") == 0);
	CHECK(c.transient);
	c = explain_connect_failure(t, ENVME_CONNECT_WRITE, {}, true, ENETUNREACH);
	CHECK(c.message.find("no route to 10.0.0.1") == 0);
	CHECK(c.transient);
	c = explain_connect_failure(t, ENVME_CONNECT_WRITE,
				    {"nvme_fabrics: Connect Invalid Data Parameter, subsysnqn "
				     "\"nqn.test:m0\""}, true, 0);
	CHECK(c.message.find("subsystem nqn.test:m0 does not exist") == 0);
	c = explain_connect_failure(t, ENVME_CONNECT_OPEN, {}, true, 0);
	CHECK(c.message.find("nvme_fabrics not loaded") != std::string::npos);
	c = explain_connect_failure(t, ENVME_CONNECT_INVAL, {"nvme_fabrics: unknown parameter"},
				    true, 0);
	CHECK(c.message.find("Invalid argument") == std::string::npos);
	CHECK(c.message.find("unknown parameter") != std::string::npos);
	CHECK(!c.transient);
}

TEST_CASE("back-off: 1, 2, 4, 8, 8 s")
{
	CHECK(backoff_seconds(1) == 1);
	CHECK(backoff_seconds(2) == 2);
	CHECK(backoff_seconds(3) == 4);
	CHECK(backoff_seconds(4) == 8);
	CHECK(backoff_seconds(9) == 8);
}

TEST_CASE("connect: an existing controller is reported, not duplicated")
{
	FabricHarness h;
	h.fs.ctrls = {ctrl("nvme2", "nqn.test:m0")};
	CHECK(h.run(connect0) == 0);
	CHECK(h.out.str() == "already connected as nvme2 (live): nqn.test:m0 via rdma "
			     "10.0.0.1:4420\n");
	CHECK(h.fs.connected.empty());
	auto args = connect0;
	args.insert(args.begin(), {"-o", "json"});
	CHECK(h.run(args) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["connections"][0]["status"] == "already-connected");
	CHECK(doc["connections"][0]["controller"] == "nvme2");
}

TEST_CASE("connect: a refused target is retried with back-off, then connected")
{
	FabricHarness h;
	std::vector<std::string> refused = {"nvme nvme0: Connect rejected: status 8"};
	h.fs.outcomes = {{ENVME_CONNECT_WRITE, refused}, {ENVME_CONNECT_WRITE, refused}};
	CHECK(h.run(connect0) == 0);
	CHECK(h.sleeps == std::vector<double>{1, 2});
	CHECK(h.fs.connected.size() == 3);
	CHECK_MESSAGE(h.err.str().find("connection refused by 10.0.0.1:4420") != std::string::npos,
		      h.err.str());
	CHECK(h.err.str().find("retry 2 of 5 in 2 s") != std::string::npos);
	CHECK(h.out.str() == "connected nqn.test:m0 via rdma 10.0.0.1:4420 as nvme0 (attempt 3)\n");
}

TEST_CASE("connect: retries are bounded by --retries and --timeout")
{
	FabricHarness h;
	std::vector<std::string> refused = {"nvme nvme0: Connect rejected: status 8"};
	for (int i = 0; i < 10; ++i)
		h.fs.outcomes.push_back({ENVME_CONNECT_WRITE, refused});
	auto args = connect0;
	args.insert(args.end(), {"--retries", "2"});
	CHECK(h.run(args) == 1);
	CHECK(h.fs.connected.size() == 3);
	CHECK(h.out.str().find("failed: nqn.test:m0") == 0);
	h.fs.connected.clear();
	h.sleeps.clear();
	args = connect0;
	args.insert(args.end(), {"--timeout", "5"});
	CHECK(h.run(args) == 1);
	CHECK(h.sleeps == std::vector<double>{1, 2});  // 1+2 = 3 s; 4 more would pass 5 s
}

TEST_CASE("connect: a permanent cause fails at once")
{
	FabricHarness h;
	h.fs.outcomes = {{ENVME_CONNECT_WRITE, {"nvme nvme0: Connect for subsystem x is not "
						"allowed, hostnqn: y"}}};
	CHECK(h.run(connect0) == exit_permission);
	CHECK(h.sleeps.empty());
	CHECK(h.err.str().find("rejected by the target") != std::string::npos);
}

TEST_CASE("connect-all: every config target, existing ones reported")
{
	FabricHarness h;
	h.fs.ctrls = {ctrl("nvme0", "nqn.test:m0")};
	h.fs.config = {target("nqn.test:m0", "4420"), target("nqn.test:m1", "4420")};
	h.fs.config[1].tuning.ctrl_loss_tmo = 120;
	CHECK(h.run({"-o", "json", "connect-all", "--config", "/x.json", "--fast-io-fail-tmo",
		     "5"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["connections"].size() == 2);
	CHECK(doc["connections"][0]["status"] == "already-connected");
	CHECK(doc["connections"][1]["status"] == "connected");
	REQUIRE(h.fs.connected.size() == 1);
	CHECK(h.fs.connected[0].tuning.ctrl_loss_tmo == 120);   // from the config
	CHECK(h.fs.connected[0].tuning.fast_io_fail_tmo == 5);  // from the command line
	h.fs.config.clear();
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == exit_not_found);
}

TEST_CASE("connect-all: every target tried once before any retry; some connected is exit 7")
{
	FabricHarness h;
	std::vector<std::string> refused = {"nvme nvme0: Connect rejected: status 8"};
	h.fs.config = {target("nqn.test:m0", "4420"), target("nqn.test:m1", "4420"),
		       target("nqn.test:m2", "4420")};
	// m0 is down in every round; m1 and m2 answer at once
	h.fs.outcomes = {{ENVME_CONNECT_WRITE, refused}, {0, {}}, {0, {}},
			 {ENVME_CONNECT_WRITE, refused}, {ENVME_CONNECT_WRITE, refused}};
	CHECK(h.run({"-o", "json", "connect-all", "--config", "/x.json", "--retries", "2"}) ==
	      exit_partial);
	std::vector<std::string> order;
	for (const auto &t : h.fs.connected)
		order.push_back(t.subsysnqn);
	// m1 and m2 before m0's first retry, not after its back-off
	CHECK(order == std::vector<std::string>{"nqn.test:m0", "nqn.test:m1", "nqn.test:m2",
						"nqn.test:m0", "nqn.test:m0"});
	CHECK(h.sleeps == std::vector<double>{1, 2});
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["connections"][0]["status"] == "failed");
	CHECK(doc["connections"][0]["attempts"] == 3);
	CHECK(doc["connections"][1]["status"] == "connected");
	CHECK(doc["connections"][2]["status"] == "connected");
	// text: every failed target named on stderr, not only the first
	h.fs.ctrls.clear();
	h.fs.connected.clear();
	h.fs.outcomes = {{ENVME_CONNECT_WRITE, refused}, {0, {}}, {ENVME_CONNECT_WRITE, refused}};
	CHECK(h.run({"connect-all", "--config", "/x.json", "--retries", "0"}) == exit_partial);
	CHECK_MESSAGE(h.err.str().find("nqn.test:m0 via rdma") != std::string::npos, h.err.str());
	CHECK_MESSAGE(h.err.str().find("nqn.test:m2 via rdma") != std::string::npos, h.err.str());
	// none connected: 1
	h.fs.ctrls.clear();
	h.fs.outcomes = {{ENVME_CONNECT_WRITE, refused}, {ENVME_CONNECT_WRITE, refused},
			 {ENVME_CONNECT_WRITE, refused}};
	CHECK(h.run({"connect-all", "--config", "/x.json", "--retries", "0"}) == exit_runtime);
}

TEST_CASE("connect-all: --timeout bounds the whole run, not each target")
{
	FabricHarness h;
	std::vector<std::string> refused = {"nvme nvme0: Connect rejected: status 8"};
	h.fs.config = {target("nqn.test:m0", "4420"), target("nqn.test:m1", "4420")};
	for (int i = 0; i < 20; ++i)
		h.fs.outcomes.push_back({ENVME_CONNECT_WRITE, refused});
	CHECK(h.run({"connect-all", "--config", "/x.json", "--timeout", "5"}) == exit_runtime);
	// 1 + 2 s of back-off shared by both; a per-target bound waited 1, 2, 1, 2
	CHECK(h.sleeps == std::vector<double>{1, 2});
	CHECK(h.fs.connected.size() == 6);
}

TEST_CASE("a second path through another host address is another controller")
{
	std::vector<Controller> cs = {ctrl("nvme0", "nqn.test:m0")};
	cs[0].host_traddr = "10.0.0.1";
	FabricTarget a = target();
	a.host_traddr = "10.0.0.1";
	FabricTarget b = target();
	b.host_traddr = "10.0.1.1";
	CHECK(find_controller(cs, a)->name == "nvme0");
	CHECK(!find_controller(cs, b));
	CHECK(find_controller(cs, target())->name == "nvme0");  // no host address: any
	b.host_traddr.clear();
	b.host_iface = "dummy1";
	CHECK(!find_controller(cs, b));
	CHECK(a.display() == "nqn.test:m0 via rdma 10.0.0.1:4420 from 10.0.0.1");
}

TEST_CASE("a refused DH-CHAP key is a permanent cause naming the target")
{
	FabricTarget t = target();
	// no key, target requires one (6.12 logs only the ENOKEY of queue 0)
	auto none = explain_connect_failure(
		t, ENVME_CONNECT_WRITE, {"nvme nvme1: failed to connect queue: 0 ret=-126"}, true, 0);
	CHECK(!none.transient);
	CHECK(none.message.find("nqn.test:m0 requires DH-CHAP authentication and no key") == 0);
	auto c = explain_connect_failure(t, ENVME_CONNECT_WRITE,
					 {"nvme nvme2: qid 0: authentication failed, error -13"},
					 true, 0);
	CHECK(!c.transient);
	CHECK(c.err == EACCES);
	CHECK_MESSAGE(c.message.find("DH-CHAP authentication of host " + t.hostnqn +
				     " with nqn.test:m0 failed") == 0,
		      c.message);
}

namespace {

// A libnvme JSON configuration in a temporary file.
struct ConfigFile {
	std::string path;
	explicit ConfigFile(const std::string &text)
	{
		char tmpl[] = "/tmp/fxctl-test-config-XXXXXX";
		int fd = ::mkstemp(tmpl);
		REQUIRE(fd >= 0);
		REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
		::close(fd);
		path = tmpl;
	}
	~ConfigFile() { ::unlink(path.c_str()); }
};

const char *two_path_config = R"([
  {
    "hostnqn": "nqn.test:host",
    "dhchap_key": "DHHC-1:00:hostkey:",
    "subsystems": [
      { "nqn": "nqn.test:m0",
        "ports": [
          { "transport": "rdma", "traddr": "10.0.0.1", "trsvcid": "4420",
            "host_traddr": "10.0.0.1", "nr_io_queues": 1, "queue_size": 64,
            "tos": 3, "ctrl_loss_tmo": 30 },
          { "transport": "rdma", "traddr": "10.0.1.1", "trsvcid": "4420",
            "host_traddr": "10.0.1.1", "dhchap_key": "DHHC-1:00:portkey:",
            "dhchap_ctrl_key": "DHHC-1:00:ctrlkey:", "keep_alive_tmo": 7 }
        ] },
      { "nqn": "nqn.test:m1",
        "ports": [ { "transport": "tcp", "traddr": "10.0.0.1", "trsvcid": "4420",
                     "host_iface": "eth1", "hdr_digest": true, "data_digest": true } ] }
    ]
  }
])";

}  // namespace

TEST_CASE("connect-all hands libnvme each port's own settings from config.json")
{
	ConfigFile f(two_path_config);
	auto targets = make_libnvme_fabric(false)->read_config(f.path);
	REQUIRE(targets.size() == 3);
	for (const auto &t : targets) {
		CHECK(t.config == f.path);
		CHECK(t.hostid.empty());  // the file has none: take_host defaults it
	}
	// (libnvme lists them in its own order)
	auto by_addr = [&](const std::string &nqn, const std::string &traddr) {
		for (const auto &t : targets)
			if (t.subsysnqn == nqn && t.traddr == traddr)
				return t;
		FAIL("no target ", nqn, " at ", traddr);
		return FabricTarget{};
	};
	FabricTarget a = by_addr("nqn.test:m0", "10.0.0.1"), b = by_addr("nqn.test:m0", "10.0.1.1"),
		     c = by_addr("nqn.test:m1", "10.0.0.1");
	CHECK(a.host_traddr == "10.0.0.1");
	CHECK(b.host_traddr == "10.0.1.1");
	CHECK(c.host_iface == "eth1");
	// libnvme 1.3 drops tos and ctrl_loss_tmo; read again from the file
	CHECK(a.tuning.tos == 3);
	CHECK(a.tuning.ctrl_loss_tmo == 30);
	CHECK(!b.tuning.tos);

	a.hostid = b.hostid = c.hostid = "0b7a1e5c-0000-4000-8000-000000000001";  // /etc/nvme/hostid
	ConfigPort pa = config_port(a);
	CHECK(pa.found);
	CHECK(pa.host_key == "DHHC-1:00:hostkey:");  // the file's host, though another host ID
	CHECK(pa.port_host_key.empty());
	CHECK(pa.ctrl_key.empty());
	CHECK(pa.host_traddr == "10.0.0.1");
	CHECK(pa.nr_io_queues == 1);
	CHECK(pa.queue_size == 64);
	CHECK(pa.tos == 3);
	CHECK(pa.ctrl_loss_tmo == 30);
	CHECK(pa.keep_alive_tmo == 0);

	ConfigPort pb = config_port(b);  // the second path: its own keys and settings
	CHECK(pb.found);
	CHECK(pb.host_traddr == "10.0.1.1");
	CHECK(pb.port_host_key == "DHHC-1:00:portkey:");
	CHECK(pb.ctrl_key == "DHHC-1:00:ctrlkey:");
	CHECK(pb.keep_alive_tmo == 7);
	CHECK(pb.nr_io_queues == 0);
	CHECK(pb.queue_size == 0);
	CHECK(pb.tos == -1);

	ConfigPort pc = config_port(c);
	CHECK(pc.found);
	CHECK(pc.host_iface == "eth1");
	CHECK(pc.hdr_digest);
	CHECK(pc.data_digest);

	// the command line wins over the file
	a.tuning.nr_io_queues = 4;
	CHECK(config_port(a).nr_io_queues == 4);
	// a subsystem the file does not name (a discovery log entry): the host's key only
	FabricTarget d = a;
	d.subsysnqn = "nqn.test:other";
	ConfigPort pd = config_port(d);
	CHECK(!pd.found);
	CHECK(pd.host_key == "DHHC-1:00:hostkey:");
	CHECK(pd.queue_size == 0);
}

TEST_CASE("connect-all: the host ID comes from /etc/nvme/hostid when the config names none")
{
	FabricHarness h;
	h.fs.hostid = "0b7a1e5c-0000-4000-8000-000000000001";
	h.fs.config = {target("nqn.test:m0"), target("nqn.test:m1")};
	h.fs.config[0].config = h.fs.config[1].config = "/x.json";
	h.fs.config[1].hostid = "0b7a1e5c-0000-4000-8000-000000000002";  // the config's own
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == 0);
	REQUIRE(h.fs.connected.size() == 2);
	CHECK(h.fs.connected[0].hostid == "0b7a1e5c-0000-4000-8000-000000000001");
	CHECK(h.fs.connected[1].hostid == "0b7a1e5c-0000-4000-8000-000000000002");
	CHECK(h.fs.connected[0].config == "/x.json");
}

// Review L2/H3: /etc/nvme/hostid went to every host NQN, and 6.x refuses a
// known host ID with a second NQN ("found same hostid ... but different
// hostnqn", nvmf_host_add in drivers/nvme/host/fabrics.c).
TEST_CASE("one host ID per host NQN: /etc/nvme/hostid only for /etc/nvme/hostnqn's NQN")
{
	const std::string file_nqn = target().hostnqn, file_id = "0b7a1e5c-0000-4000-8000-000000000001";
	CHECK(host_id_for(file_nqn, file_nqn, file_id) == file_id);
	CHECK(host_id_for("", file_nqn, file_id) == file_id);  // libnvme's default host
	// another NQN of the uuid: form: its UUID, as libnvme derives it
	CHECK(host_id_for("nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
			  file_nqn, file_id) == "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
	// any other NQN: a version-8 UUID of its own, the same at every run
	std::string a = host_id_for("nqn.2026-12.io.example:host-b", file_nqn, file_id);
	std::string b = host_id_for("nqn.2026-12.io.example:host-c", file_nqn, file_id);
	CHECK(a.size() == 36);
	CHECK(a[14] == '8');
	CHECK(std::string("89ab").find(a[19]) != std::string::npos);
	CHECK(a != file_id);
	CHECK(a != b);
	CHECK(a == host_id_for("nqn.2026-12.io.example:host-b", file_nqn, file_id));

	FabricHarness h;
	h.fs.hostid = file_id;
	std::vector<std::string> args = connect0;
	args.insert(args.end(), {"--hostnqn", "nqn.2026-12.io.example:host-b"});
	CHECK(h.run(args) == 0);
	REQUIRE(h.fs.connected.size() == 1);
	CHECK(h.fs.connected[0].hostid == a);
	// the file's own NQN keeps the file's ID; --hostid wins over both
	h.fs.ctrls.clear();
	h.fs.connected.clear();
	CHECK(h.run(connect0) == 0);
	CHECK(h.fs.connected.at(0).hostid == file_id);
	h.fs.ctrls.clear();
	h.fs.connected.clear();
	args.insert(args.end(), {"--hostid", "0b7a1e5c-0000-4000-8000-000000000009"});
	CHECK(h.run(args) == 0);
	CHECK(h.fs.connected.at(0).hostid == "0b7a1e5c-0000-4000-8000-000000000009");
	// a second host in config.json without a hostid: its own, not the file's
	h.fs.ctrls.clear();
	h.fs.connected.clear();
	h.fs.config = {target("nqn.test:m0"), target("nqn.test:m1")};
	h.fs.config[1].hostnqn = "nqn.2026-12.io.example:host-b";
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == 0);
	REQUIRE(h.fs.connected.size() == 2);
	CHECK(h.fs.connected[0].hostid == file_id);
	CHECK(h.fs.connected[1].hostid == a);
}

TEST_CASE("disconnect --config: only what fxctl connected, never a namespace in use")
{
	FabricHarness h;
	h.fs.config = {target("nqn.test:m0"), target("nqn.test:m1"), target("nqn.test:m2")};
	for (auto &t : h.fs.config)
		t.config = "/x.json";
	h.fs.ctrls = {ctrl("nvme0", "nqn.test:m0")};  // connected by someone else
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == 0);
	CHECK(h.fs.recorded == std::set<std::string>{"nvme1", "nvme2"});  // only the new ones
	h.fs.users["nvme2"] = {"nvme2n1 mounted on /mnt/data"};
	h.fs.disks["nvme1"] = {"nvme1n1"};
	h.state.volumes.clear();  // no fx volume
	CHECK(h.run({"disconnect", "--config", "/x.json"}) == exit_busy);
	CHECK(h.fs.disconnected == std::vector<std::string>{"nvme1"});
	CHECK(h.fs.recorded == std::set<std::string>{"nvme2"});
	CHECK_MESSAGE(h.err.str().find("left nvme0 (nqn.test:m0 via rdma 10.0.0.1:4420): not "
				       "connected by fxctl") != std::string::npos,
		      h.err.str());
	CHECK(h.err.str().find("not disconnecting nvme2 (nqn.test:m2): its namespace is in use: "
			       "nvme2n1 mounted on /mnt/data") != std::string::npos);
	CHECK(h.out.str().find("disconnected nvme1") != std::string::npos);
}

TEST_CASE("disconnect --config refuses a member of a running fx volume")
{
	FabricHarness h;
	h.fs.config = {target("nqn.test:m0")};
	h.fs.config[0].config = "/x.json";
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == 0);
	h.fs.disks["nvme0"] = {"nvme0n1"};  // the fake module's vol1 has it as a member
	CHECK(h.run({"disconnect", "--config", "/x.json"}) == exit_busy);
	CHECK(h.fs.disconnected.empty());
	CHECK_MESSAGE(h.err.str().find("not disconnecting nvme0 (nqn.test:m0): its namespace is "
				       "in use: nvme0n1 member of fx volume vol1") != std::string::npos,
		      h.err.str());
}

TEST_CASE("a namespace path counts by its head")
{
	CHECK(namespace_head("nvme1c2n1") == "nvme1n1");
	CHECK(namespace_head("nvme0n1") == "nvme0n1");
	CHECK(namespace_head("nvme12c3n10") == "nvme12n10");
}

namespace {

DiscoveryEntry log_entry(const std::string &subtype, const std::string &addr,
			 const std::string &nqn)
{
	DiscoveryEntry e;
	e.transport = "rdma";
	e.traddr = addr;
	e.trsvcid = "4420";
	e.subsysnqn = nqn;
	e.subtype = subtype;
	return e;
}

FabricTarget discovery_port(const std::string &addr)
{
	FabricTarget d = target(discovery_nqn, "4420");
	d.traddr = addr;
	d.config = "/x.json";
	return d;
}

}  // namespace

TEST_CASE("connect-all follows discovery referrals, each address once")
{
	FabricHarness h;
	FabricTarget d = target(discovery_nqn, "4420");
	d.config = "/x.json";
	h.fs.config = {d};
	h.fs.logs["10.0.0.1"] = {log_entry("discovery", "10.0.0.1", discovery_nqn),  // itself
				 log_entry("nvme", "10.0.0.1", "nqn.test:m0"),
				 log_entry("discovery", "10.0.0.2", discovery_nqn)};     // a referral
	h.fs.logs["10.0.0.2"] = {log_entry("nvme", "10.0.0.2", "nqn.test:m1"),
				 log_entry("discovery", "10.0.0.1", discovery_nqn)};     // and back
	CHECK(h.run({"connect-all", "--config", "/x.json"}) == 0);
	CHECK(h.fs.discovered == std::vector<std::string>{"10.0.0.1", "10.0.0.2"});
	REQUIRE(h.fs.connected.size() == 2);
	CHECK(h.fs.connected[0].subsysnqn == "nqn.test:m0");
	CHECK(h.fs.connected[1].subsysnqn == "nqn.test:m1");
	CHECK(h.fs.connected[1].traddr == "10.0.0.2");
	CHECK(h.fs.connected[1].config == "/x.json");
}


// Review H2: a discovery controller that was not up yet failed the run for
// good (never retried), and a failed log page read aborted connect-all
// before any target was connected.
TEST_CASE("connect-all retries a discovery controller that is not up yet, as any target")
{
	FabricHarness h;
	h.fs.config = {discovery_port("10.0.0.1")};
	h.fs.logs["10.0.0.1"] = {log_entry("nvme", "10.0.0.1", "nqn.test:m0")};
	// refused (its port is not up yet), then the log page read fails, then the log
	h.fs.discover_fails["10.0.0.1"] = {ECONNREFUSED, EIO};
	CHECK(h.run({"-o", "json", "connect-all", "--config", "/x.json"}) == 0);
	CHECK(h.fs.discovered == std::vector<std::string>{"10.0.0.1", "10.0.0.1", "10.0.0.1"});
	CHECK(h.sleeps == std::vector<double>{1, 2});  // the back-off of I/O targets
	REQUIRE(h.fs.connected.size() == 1);
	CHECK(h.fs.connected[0].subsysnqn == "nqn.test:m0");
	CHECK(h.fs.connected[0].config == "/x.json");
	auto doc = nlohmann::json::parse(h.out.str());
	REQUIRE(doc["connections"].size() == 1);  // what was connected, as before
	CHECK(doc["connections"][0]["status"] == "connected");
	CHECK_MESSAGE(has(h.err.str(), "discovery: connection refused by 10.0.0.1:4420"),
		      h.err.str());
	CHECK(has(h.err.str(), "discovery: cannot read the discovery log of"));
	CHECK(has(h.err.str(), "retry 2 of 5 in 2 s"));
}

TEST_CASE("connect-all: one failing discovery controller stops neither the others nor I/O targets")
{
	FabricHarness h;
	h.fs.config = {target("nqn.test:m0", "4420"), discovery_port("10.0.0.2"),
		       discovery_port("10.0.0.3"), target("nqn.test:m1", "4420")};
	h.fs.logs["10.0.0.3"] = {log_entry("nvme", "10.0.0.3", "nqn.test:m3")};
	for (int i = 0; i < 10; ++i)
		h.fs.discover_fails["10.0.0.2"].push_back(EIO);  // its log never reads
	CHECK(h.run({"-o", "json", "connect-all", "--config", "/x.json", "--retries", "2"}) ==
	      exit_partial);
	std::vector<std::string> order;
	for (const auto &t : h.fs.connected)
		order.push_back(t.subsysnqn);
	// m3, listed by the other discovery controller, in the first round
	CHECK(order == std::vector<std::string>{"nqn.test:m0", "nqn.test:m3", "nqn.test:m1"});
	CHECK(h.fs.discovered ==
	      std::vector<std::string>{"10.0.0.2", "10.0.0.3", "10.0.0.2", "10.0.0.2"});
	auto doc = nlohmann::json::parse(h.out.str());
	REQUIRE(doc["connections"].size() == 4);
	CHECK(doc["connections"][0]["status"] == "connected");
	CHECK(doc["connections"][1]["subsysnqn"] == discovery_nqn);
	CHECK(doc["connections"][1]["traddr"] == "10.0.0.2");
	CHECK(doc["connections"][1]["status"] == "failed");
	CHECK(doc["connections"][1]["attempts"] == 3);
	CHECK(doc["connections"][1]["errno_name"] == "EIO");
	// text: the discovery controller named, with its cause
	h.fs.ctrls.clear();
	h.fs.connected.clear();
	CHECK(h.run({"connect-all", "--config", "/x.json", "--retries", "0"}) == exit_partial);
	CHECK_MESSAGE(has(h.err.str(), "fxctl: nqn.2014-08.org.nvmexpress.discovery via rdma "
				       "10.0.0.2:4420: discovery: cannot read the discovery log"),
		      h.err.str());
}

// Review M-2: the deadline was checked from round 2 on only, so N targets
// that each take a transport timeout to fail ran N times that, past the
// unit's TimeoutStartSec.
TEST_CASE("connect-all: --timeout bounds the first round too; untried targets are named")
{
	FabricHarness h;
	for (int i = 0; i < 20; ++i) {
		FabricTarget t = discovery_port("10.0.1." + std::to_string(i));
		h.fs.config.push_back(t);
		h.fs.discover_fails[t.traddr] = {ETIMEDOUT, ETIMEDOUT};
	}
	h.fs.discover_seconds = 10;  // each one times out after 10 s
	CHECK(h.run({"-o", "json", "connect-all", "--config", "/x.json", "--timeout", "90"}) ==
	      exit_runtime);
	// 10 tried (the last starting at 90 s), none retried: no time left
	CHECK(h.fs.discovered.size() == 10);
	CHECK(h.sleeps.empty());
	CHECK(h.now - 1000.0 <= 100.0);
	auto doc = nlohmann::json::parse(h.out.str());
	REQUIRE(doc["connections"].size() == 20);
	CHECK(doc["connections"][9]["attempts"] == 1);
	CHECK(doc["connections"][10]["status"] == "failed");
	CHECK(doc["connections"][10]["attempts"] == 0);
	CHECK(doc["connections"][10]["error"] == "not tried: the --timeout of 90 s had passed");
	CHECK(doc["connections"][10]["errno_name"] == "ETIMEDOUT");
}
