// doctor: each check over fake facts, and the command's output and exit.
#include <doctest/doctest.h>

#include "fakes.hpp"

#include <nlohmann/json.hpp>

using namespace fxtest;

namespace {

// A healthy host: rxe0 with a RoCEv2 GID on a 9000-byte netdev, modules
// loaded, a host NQN of its own, one live controller, one live volume;
// fxblk's udev rules installed with an executable fxctl, systemd with
// fxblk-connect.service enabled, an fstab mount of fx0 with _netdev.
DoctorFacts healthy()
{
	DoctorFacts f;
	RdmaGid g{1, "::ffff:10.0.0.1", "RoCEv2", "dummy0", 9000};
	f.rdma = {{"rxe0", {{1, "active", "Ethernet", 4096, {g}}}}};
	for (const char *m : {"fxblk", "nvme_core", "nvme_fabrics", "nvme_rdma", "rdma_rxe"})
		f.modules[m] = true;
	f.hostnqn_file = true;
	f.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:0f0b1a00-0000-4000-8000-000000000001";
	f.hostid = "0f0b1a00-0000-4000-8000-000000000001";
	f.multipath = true;
	Controller c;
	c.name = "nvme0";
	c.transport = "rdma";
	c.traddr = "10.0.0.1";
	c.trsvcid = "4420";
	c.subsysnqn = "nqn.test:m0";
	c.state = "live";
	c.ctrl_loss_tmo = 600;
	c.fast_io_fail_tmo = 5;
	f.controllers = {c};
	Volume v = fixed_volume(2);
	for (auto &m : v.members)
		m.state = FXBLK_STATE_LIVE;
	f.volumes = std::vector<Volume>{v};
	f.udev_rules = {{"60-fxblk.rules", "/usr/lib/udev/rules.d/60-fxblk.rules", false, {}},
			{"61-fxblk-assembly.rules", "/usr/lib/udev/rules.d/61-fxblk-assembly.rules",
			 false, {{"/usr/sbin/fxctl", true}}}};
	f.systemd = true;
	f.units = {{"fxblk-connect.service", "enabled"}, {"nvmf-autoconnect.service", "disabled"}};
	f.nvme_config = true;
	f.fstab = {{"UUID=5e1f0000-0000-4000-8000-000000000001", "/data", "xfs", "_netdev,nofail"},
		   {"/dev/nvme9n1p1", "/", "ext4", "errors=remount-ro"}};
	f.fx_filesystems = {{"UUID=5e1f0000-0000-4000-8000-000000000001", "fx0"}};
	return f;
}

bool has(const std::vector<Finding> &fs, const std::string &sev, const std::string &text)
{
	for (const auto &f : fs)
		if (f.severity == sev && f.message.find(text) != std::string::npos)
			return !f.fix.empty() || sev == "info";
	return false;
}

}  // namespace

TEST_CASE("a healthy host has no findings")
{
	CHECK(run_checks(healthy()).empty());
}

TEST_CASE("rdma: no device, port down, no RoCEv2 GID, small MTU")
{
	DoctorFacts f = healthy();
	f.rdma.clear();
	CHECK(has(check_rdma(f), "error", "no RDMA device"));  // nvme_rdma is loaded
	f.modules["nvme_rdma"] = false;
	f.controllers.clear();
	CHECK(has(check_rdma(f), "warning", "no RDMA device"));
	f = healthy();
	f.rdma[0].ports[0].state = "down";
	CHECK(has(check_rdma(f), "warning", "rxe0 port 1 is down"));
	f = healthy();
	f.rdma[0].ports[0].gids[0].type = "RoCEv1";
	CHECK(has(check_rdma(f), "error", "no RoCEv2 GID"));
	f = healthy();
	f.rdma[0].ports[0].gids[0].netdev_mtu = 1500;
	f.rdma[0].ports[0].active_mtu = 1024;
	CHECK(has(check_rdma(f), "warning", "netdev dummy0 has MTU 1500"));
}

TEST_CASE("modules")
{
	DoctorFacts f = healthy();
	f.modules["fxblk"] = false;
	f.modules["nvme_fabrics"] = false;
	f.modules["nvme_rdma"] = false;
	auto fs = check_modules(f);
	// fxblk loads itself (genetlink alias), nvme_fabrics at the first
	// connect: neither is an error (review M-6)
	CHECK(has(fs, "info", "fxblk is not loaded"));
	CHECK(has(fs, "info", "nvme_fabrics is not loaded"));
	CHECK(has(fs, "error", "nvme_rdma is not loaded although RDMA devices exist"));
	f.rdma.clear();
	CHECK(has(check_modules(f), "info", "nvme_rdma is not loaded"));
}

TEST_CASE("host NQN: missing, invalid, shared default, cloned, no host ID")
{
	DoctorFacts f = healthy();
	f.hostnqn_file = false;
	f.hostnqn.clear();
	CHECK(has(check_hostnqn(f), "error", "/etc/nvme/hostnqn is missing"));
	f = healthy();
	f.hostnqn = "host1";
	CHECK(has(check_hostnqn(f), "error", "not a valid NQN"));
	f.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:03000200-0400-0500-0006-000700080009";
	CHECK(has(check_hostnqn(f), "error", "shared default"));
	f.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000000";
	CHECK(has(check_hostnqn(f), "error", "shared default"));
	f = healthy();
	f.machine_hostnqn = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001";
	CHECK(has(check_hostnqn(f), "warning", "does not derive from this machine"));
	f.machine_hostnqn = f.hostnqn;
	CHECK(check_hostnqn(f).empty());
	f.hostid.clear();
	CHECK(has(check_hostnqn(f), "warning", "/etc/nvme/hostid is missing"));
	// the kernel's default host ID is made per module load, not per connect
	auto out = check_hostnqn(f);
	CHECK(out[0].message.find("per connect") == std::string::npos);
	CHECK(out[0].message.find("each time nvme-fabrics loads") != std::string::npos);
}

TEST_CASE("controllers: state, ctrl_loss_tmo, fast_io_fail_tmo, multipath")
{
	DoctorFacts f = healthy();
	f.controllers[0].state = "connecting";
	CHECK(has(check_controllers(f), "warning", "nvme0 (nqn.test:m0 via rdma 10.0.0.1:4420) is "
						    "connecting"));
	f = healthy();
	f.controllers[0].ctrl_loss_tmo = -1;
	CHECK(has(check_controllers(f), "warning", "ctrl_loss_tmo is off"));
	f = healthy();
	f.controllers[0].fast_io_fail_tmo = -1;
	CHECK(has(check_controllers(f), "info", "fast_io_fail_tmo is off"));
	f = healthy();
	f.controllers.push_back(f.controllers[0]);
	f.controllers[1].name = "nvme1";
	f.multipath = false;
	CHECK(has(check_controllers(f), "warning", "2 controllers reach subsystem nqn.test:m0"));
	f.controllers[0].transport = f.controllers[1].transport = "pcie";  // not checked
	CHECK(check_controllers(f).empty());
}

TEST_CASE("volumes: failing and gone members, incomplete volume")
{
	DoctorFacts f = healthy();
	(*f.volumes)[0].members[1].state = FXBLK_STATE_FAILING;
	(*f.volumes)[0].members[1].errors = 3;
	CHECK(has(check_volumes(f), "warning", "member 1 (nvme1n1) is failing (3 failed I/Os)"));
	(*f.volumes)[0].members[1].state = FXBLK_STATE_GONE;
	auto fs = check_volumes(f);
	CHECK(has(fs, "error", "member 1 (nvme1n1) is gone"));
	CHECK(has(fs, "error", "vol1 (fx0) is incomplete: 1 of 2 members gone"));
	// the admin guide's procedure (stop, reconnect, assemble), not re-creating
	for (const auto &x : fs) {
		CHECK(x.fix.find("re-created") == std::string::npos);
		CHECK(x.fix.find("'fxctl stop vol1'") != std::string::npos);
		CHECK(x.fix.find("'fxctl assemble vol1'") != std::string::npos);
	}
	f = healthy();
	NvmeIdentity id;
	id.paths.push_back({"nvme1", "connecting", "rdma", "10.0.0.1", "4420", ""});
	(*f.volumes)[0].members[1].nvme = id;
	CHECK(has(check_volumes(f), "warning", "path nvme1 is connecting"));
}

TEST_CASE("doctor command: JSON document and exit status")
{
	Harness h;
	DoctorFacts facts = healthy();
	h.doctor_facts = [&](Env &, bool) { return facts; };
	CHECK(h.run({"-o", "json", "doctor"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["summary"]["errors"] == 0);
	CHECK(doc["rdma"][0]["ports"][0]["gids"][0]["gid"] == "::ffff:10.0.0.1");
	CHECK(doc["rdma"][0]["ports"][0]["gids"][0]["netdev_mtu"] == 9000);
	CHECK(doc["controllers"][0]["ctrl_loss_tmo"] == 600);
	CHECK(doc["volumes"][0]["complete"] == true);
	facts.hostnqn_file = false;
	facts.hostnqn.clear();
	CHECK(h.run({"-o", "json", "doctor"}) == 1);
	doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["summary"]["errors"] == 1);
	CHECK(doc["findings"][0]["check"] == "hostnqn");
	CHECK(h.run({"doctor"}) == 1);
	CHECK(h.out.str().find("error: /etc/nvme/hostnqn is missing") != std::string::npos);
	CHECK(h.out.str().find("rdma: rxe0 port 1 active RoCEv2 GID ::ffff:10.0.0.1 (index 1) on "
			       "dummy0, MTU 9000") != std::string::npos);
}

TEST_CASE("labels: members present for a volume that does not run, with the reason")
{
	DoctorFacts f = healthy();
	CHECK(check_labels(f).empty());
	// every member there, nothing wrong: stopped, or its assembly failed
	f.idle = {{"kv0", "0f0f0f0f-0000-4000-8000-00000000b0b0",
		   "volume \"kv0\" (0f0f0f0f-0000-4000-8000-00000000b0b0): 2 of 2 members present",
		   {}, false, ""}};
	auto out = check_labels(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "every member present, but the volume is not running"));
	CHECK(out[0].message.find("fxblk-assemble@0f0f0f0f-0000-4000-8000-00000000b0b0") !=
	      std::string::npos);
	CHECK(out[0].fix == "'fxctl assemble kv0' starts it");
	CHECK(out[0].check == "labels");
	// members missing: a warning naming them
	f.idle[0].problems = {"member 1 is missing"};
	f.idle[0].only_missing = true;
	out = check_labels(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "not running: member 1 is missing"));
	CHECK(out[0].fix.find("connect-all") != std::string::npos);
	// anything else: an error, so doctor exits 1
	f.idle[0].problems = {"/dev/nvme1n1 (member 1) was reused: ext4 filesystem"};
	f.idle[0].only_missing = false;
	out = check_labels(f);
	CHECK(has(out, "error", "cannot be assembled: /dev/nvme1n1 (member 1) was reused"));
	CHECK(out[0].fix.find("assemble --force kv0") != std::string::npos);
	// complete, but owned elsewhere: as configured, info only
	f.idle[0].problems.clear();
	f.idle[0].not_auto = "owned by host nqn.other";
	out = check_labels(f);
	CHECK(has(out, "info", "not started by itself on this host (owned by host nqn.other)"));
	// unreadable devices: a warning, not silence
	f.idle.clear();
	f.labels_error = "Permission denied";
	CHECK(has(check_labels(f), "warning", "cannot read the block devices for fxblk labels"));
	// and run_checks includes the check
	CHECK(has(run_checks(f), "warning", "cannot read the block devices"));
}

// Review M-6: a host where only fxblk is not loaded (no volume runs yet)
// is healthy: no error, exit 0.
TEST_CASE("doctor: fxblk not loaded, everything else healthy: no error, exit 0")
{
	Harness h;
	DoctorFacts facts = healthy();
	facts.modules["fxblk"] = false;
	facts.volumes.reset();
	h.doctor_facts = [&](Env &, bool) { return facts; };
	CHECK(h.run({"-o", "json", "doctor"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["summary"]["errors"] == 0);
	CHECK(doc["summary"]["warnings"] == 0);
	// and before the first connect: nvme_fabrics not loaded, no controller
	facts.modules["nvme_fabrics"] = false;
	facts.modules["nvme_rdma"] = false;
	facts.rdma.clear();
	facts.controllers.clear();
	CHECK(h.run({"-o", "json", "doctor"}) == 0);
	doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["summary"]["errors"] == 0);
}

TEST_CASE("labels: volumes without an owner host (H3) are a warning")
{
	DoctorFacts f = healthy();
	f.unowned = {"kv0"};
	auto out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "volume kv0: its labels record no owner host"));
	CHECK(out[0].check == "labels");
	CHECK(out[0].fix.find("fxctl assemble --import kv0") != std::string::npos);
}

TEST_CASE("udev: rules missing, masked, or running an fxctl that is not there")
{
	CHECK(rules_fxctl_paths("# runs /usr/sbin/fxctl here\n"
				"IMPORT{program}=\"/usr/local/sbin/fxctl examine --export $devnode\"\n"
				"TEST!=\"/run/systemd/system\", RUN+=\"/usr/local/sbin/fxctl "
				"incremental $devnode\"\n") ==
	      std::vector<std::string>{"/usr/local/sbin/fxctl"});
	DoctorFacts f = healthy();
	f.udev_rules[1].path.clear();
	f.udev_rules[1].fxctl.clear();
	auto out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "61-fxblk-assembly.rules is not installed: no volume starts"));
	CHECK(out[0].check == "udev");
	f = healthy();
	f.udev_rules[0].path.clear();
	CHECK(has(run_checks(f), "warning", "60-fxblk.rules is not installed: no /dev/fx/NAME"));
	f = healthy();
	f.udev_rules[1].fxctl = {{"/usr/local/sbin/fxctl", false}};
	out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "error", "61-fxblk-assembly.rules runs /usr/local/sbin/fxctl, which is "
				"not an executable file"));
	f = healthy();
	f.udev_rules[1].path = "/etc/udev/rules.d/61-fxblk-assembly.rules";
	f.udev_rules[1].masked = true;
	f.udev_rules[1].fxctl.clear();
	CHECK(has(run_checks(f), "info", "61-fxblk-assembly.rules is masked"));
}

TEST_CASE("systemd: fxblk-connect.service not enabled, nvmf-autoconnect as well")
{
	DoctorFacts f = healthy();
	f.units["fxblk-connect.service"] = "disabled";
	auto out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "fxblk-connect.service is not enabled (disabled)"));
	CHECK(out[0].fix == "systemctl enable fxblk-connect.service");
	f.units["fxblk-connect.service"] = "not-found";
	CHECK(has(run_checks(f), "warning", "fxblk-connect.service is not enabled (not-found)"));
	// nothing to connect: as configured
	f.nvme_config = false;
	CHECK(run_checks(f).empty());
	// no systemd: the units are not looked at
	f = healthy();
	f.systemd = false;
	f.units.clear();
	CHECK(run_checks(f).empty());
	// two connectors
	f = healthy();
	f.units["nvmf-autoconnect.service"] = "enabled";
	out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "warning", "both enabled"));
	CHECK(out[0].fix == "systemctl disable nvmf-autoconnect.service");
}

TEST_CASE("fstab: mounts on fxN without _netdev (M-5)")
{
	auto tab = parse_fstab("# <file system> <mount point> <type> <options>\n"
			       "\n"
			       "/dev/fx/kv0  /kv  xfs  defaults  0 0\n"
			       "  LABEL=models /models xfs\n"
			       "short line\n");
	REQUIRE(tab.size() == 2);
	CHECK(tab[0] == FstabEntry{"/dev/fx/kv0", "/kv", "xfs", "defaults"});
	CHECK(tab[1] == FstabEntry{"LABEL=models", "/models", "xfs", "defaults"});
	DoctorFacts f = healthy();
	f.fstab.push_back(tab[0]);
	auto out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "error", "/etc/fstab mounts /dev/fx/kv0 on /kv without _netdev"));
	CHECK(out[0].check == "fstab");
	// by file system UUID or label on fxN, by /dev/disk links, with nofail
	f = healthy();
	f.fstab[0].options = "nofail";
	CHECK(has(run_checks(f), "warning", "mounts UUID=5e1f0000-0000-4000-8000-000000000001 (on "
					    "fx0) on /data without _netdev"));
	f.fx_filesystems["LABEL=models"] = "fx1p1";
	f.fstab = {{"/dev/disk/by-label/models", "/models", "xfs", "defaults"},
		   {"/dev/fx3", "/x", "xfs", "noauto"},
		   {"/dev/disk/by-id/fxblk-uuid-0f0f", "/y", "xfs", "_netdev"},
		   {"UUID=0000", "/z", "xfs", "defaults"}};
	out = run_checks(f);
	REQUIRE(out.size() == 1);
	CHECK(has(out, "error", "/dev/disk/by-label/models (on fx1p1) on /models"));
}
