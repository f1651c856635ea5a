// fxctl doctor: facts about the host (RDMA devices and GIDs, modules, host
// NQN, NVMe-oF controllers, fxblk volumes and labels, udev rules, systemd
// units, /etc/fstab) are collected once; small pure checks turn them into
// findings, each with a severity and a fix.
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

// One of fxblk's udev rules files as udev finds it.
struct RulesFile {
	std::string name;     // "61-fxblk-assembly.rules"
	std::string path;     // the file udev reads (/etc/udev/rules.d first); "" if none
	bool masked = false;  // a link to /dev/null: turned off by the administrator
	// The fxctl paths its IMPORT{program} and RUN keys run -> executable.
	std::map<std::string, bool> fxctl;
	bool operator==(const RulesFile &) const = default;
};

// The absolute fxctl paths a rules text runs (comments skipped), once each.
std::vector<std::string> rules_fxctl_paths(const std::string &text);

// One line of /etc/fstab (fstab(5)); options "defaults" when absent.
struct FstabEntry {
	std::string spec, file, type, options;
	bool operator==(const FstabEntry &) const = default;
};

// The entries of an fstab text; comments, blank and short lines skipped.
std::vector<FstabEntry> parse_fstab(const std::string &text);

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
	// Volumes whose labels record no owner host (running or not).
	std::vector<std::string> unowned;
	// fxblk's rules files (60-fxblk.rules, 61-fxblk-assembly.rules); empty:
	// not looked at.
	std::vector<RulesFile> udev_rules;
	// systemd runs (/run/systemd/system); then unit -> what 'systemctl
	// is-enabled' says ("enabled", "disabled", "masked", "not-found", ...)
	// for fxblk-connect.service and nvmf-autoconnect.service.
	bool systemd = false;
	std::map<std::string, std::string> units;
	bool nvme_config = false;  // /etc/nvme/config.json exists
	std::vector<FstabEntry> fstab;
	// File systems on fxN by their fstab names: "UUID=<uuid>" or
	// "LABEL=<label>" -> "fx0" (from /dev/disk/by-uuid, by-label).
	std::map<std::string, std::string> fx_filesystems;
};

struct Finding {
	std::string severity;  // error, warning, info
	// rdma, modules, hostnqn, controller, multipath, volume, labels, udev,
	// systemd, fstab
	std::string check;
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
// Volumes whose labels record no owner (check "labels", a warning).
std::vector<Finding> check_owners(const DoctorFacts &f);
std::vector<Finding> check_udev(const DoctorFacts &f);
std::vector<Finding> check_systemd(const DoctorFacts &f);
std::vector<Finding> check_fstab(const DoctorFacts &f);
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
