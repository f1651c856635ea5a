// NVMe-oF connect: matching existing controllers, error causes, back-off,
// and the connect/connect-all commands over a fake fabric.
#include <doctest/doctest.h>

#include "fakes.hpp"

extern "C" {
#include <nvme/util.h>
}
#include <deque>
#include <nlohmann/json.hpp>

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
	};
	State &s;
	explicit FakeFabric(State &st) : s(st) {}
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
	std::vector<DiscoveryEntry> discover(const FabricTarget &) override { return {}; }
	void disconnect(const std::string &) override {}
	std::vector<FabricTarget> read_config(const std::string &) override { return s.config; }
	bool module_loaded(const std::string &) override { return s.rdma_loaded; }
	int route_error(const std::string &) override { return s.route_err; }
	std::string default_hostnqn() override { return target().hostnqn; }
	std::string default_hostid() override { return ""; }
};

struct FabricHarness : Harness {
	FakeFabric::State fs;
	FabricHarness()
	{
		fabric = [this](bool) { return std::make_unique<FakeFabric>(fs); };
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
