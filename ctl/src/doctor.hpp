// fxctl doctor: facts about the host (RDMA devices and GIDs, modules, host
// NQN, NVMe-oF controllers, fxblk volumes) are collected once; small pure
// checks turn them into findings, each with a severity and a fix.
#pragma once

#include "fabrics.hpp"
#include "model.hpp"

#include <boost/program_options.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

struct Env;

struct RdmaGid {
	unsigned index = 0;
	std::string gid;      // "::ffff:10.0.0.1" or "fe80::..."
	std::string type;     // "RoCEv2", "RoCEv1", "IB"
	std::string netdev;   // "" for IB
	std::optional<unsigned> netdev_mtu;
	bool operator==(const RdmaGid &) const = default;
};

struct RdmaPort {
	unsigned port = 1;
	std::string state;       // ibv_port_state_str(): "active", "down", ...
	std::string link_layer;  // "Ethernet", "InfiniBand"
	unsigned active_mtu = 0;  // bytes
	std::vector<RdmaGid> gids;
	bool operator==(const RdmaPort &) const = default;
};

struct RdmaDevice {
	std::string name;  // rxe0, mlx5_0
	std::vector<RdmaPort> ports;
	bool operator==(const RdmaDevice &) const = default;
};

// A volume whose labels are on block devices present here but that does
// not run: what its assembly plan says (assembly_plan.hpp).
struct IdleVolume {
	std::string name, uuid;
	std::string summary;                // Plan::summary(): "volume ... 3 of 4 present"
	std::vector<std::string> problems;  // Plan::problems: why it cannot start
	bool only_missing = false;          // every problem is a missing member
	std::string not_auto;  // why the policy does not start it by itself; "" if it does
	bool operator==(const IdleVolume &) const = default;
};

struct DoctorFacts {
	std::vector<RdmaDevice> rdma;
	std::string rdma_error;  // libibverbs could not list devices
	std::map<std::string, bool> modules;  // name -> loaded
	bool hostnqn_file = false;  // /etc/nvme/hostnqn exists
	std::string hostnqn, hostid;
	// The NQN nvme gen-hostnqn derives from this machine's DMI UUID; empty
	// when unknown.
	std::string machine_hostnqn;
	std::optional<bool> multipath;  // nvme_core.multipath
	std::vector<Controller> controllers;
	std::optional<std::vector<Volume>> volumes;  // absent: fxblk not loaded
	std::string volumes_error;
	// Labelled volumes present but not running (none running when fxblk
	// is not loaded); labels_error: the block devices could not be read.
	std::vector<IdleVolume> idle;
	std::string labels_error;
};

struct Finding {
	std::string severity;  // error, warning, info
	std::string check;     // rdma, modules, hostnqn, controller, multipath, volume, labels
	std::string message;
	std::string fix;       // empty for info
	bool operator==(const Finding &) const = default;
};

std::vector<Finding> check_rdma(const DoctorFacts &f);
std::vector<Finding> check_modules(const DoctorFacts &f);
std::vector<Finding> check_hostnqn(const DoctorFacts &f);
std::vector<Finding> check_controllers(const DoctorFacts &f);
std::vector<Finding> check_volumes(const DoctorFacts &f);
std::vector<Finding> check_labels(const DoctorFacts &f);
// All of the above, in that order.
std::vector<Finding> run_checks(const DoctorFacts &f);

// Host NQNs every machine of a kind shares (zero or vendor-placeholder
// DMI UUIDs): a target cannot tell such hosts apart.
bool shared_default_hostnqn(const std::string &nqn);

DoctorFacts collect_doctor_facts(Env &env, bool verbose);

namespace po = boost::program_options;
struct Ctx;
void doctor_options(po::options_description &, po::options_description &,
		    po::positional_options_description &);
int cmd_doctor(Ctx &ctx);

}  // namespace fxctl
