// fxctl's command line: one table of commands, each with its own
// Boost.Program_options description; help is generated from the table.
#pragma once

#include "blockdev.hpp"
#include "client.hpp"
#include "member_io.hpp"
#include "doctor.hpp"
#include "fabrics.hpp"
#include "nvme_info.hpp"
#include "ownership.hpp"
#include "peer.hpp"

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

double monotonic_seconds();  // CLOCK_MONOTONIC
double epoch_seconds();      // CLOCK_REALTIME
// "QUESTION [y/N] " on stderr, an answer from stdin when both are a
// terminal; nullopt otherwise.
std::optional<bool> ask_terminal(const std::string &question);

// Everything a command touches outside the process, so tests can fake it.
struct Env {
	Env(std::ostream &o, std::ostream &e) : out(o), err(e) {}
	std::ostream &out;
	std::ostream &err;
	std::function<std::unique_ptr<Client>()> connect = make_genl_client;
	std::function<BlockDevices &()> blockdevs;
	std::function<std::unique_ptr<NvmeLookup>()> nvme;  // optional
	std::function<MemberIO &()> members;                // labels, signatures, udev
	std::function<void(double)> sleep;                  // stats --watch
	std::function<double()> clock = monotonic_seconds;  // measured intervals
	std::function<double()> wall_clock = epoch_seconds; // stats timestamps
	// NVMe-oF (connect, discover, doctor); the argument is -v.
	std::function<std::unique_ptr<Fabric>(bool)> fabric = make_libnvme_fabric;
	std::function<DoctorFacts(Env &, bool)> doctor_facts = collect_doctor_facts;
	std::function<PeerFacts(Env &)> peer_facts = collect_peer_facts;  // peer status
	// This host's NQN and auto-assembly policy (ownership.hpp).
	std::function<HostPolicy()> host_policy = load_host_policy;
	// Asks @question on the terminal: true for yes; nullopt when there is
	// no terminal to ask (stdin is not a tty).
	std::function<std::optional<bool>(const std::string &)> confirm = ask_terminal;
};

// Runs one fxctl invocation; @args excludes argv[0]. Returns the exit code
// (enum exit_code in error.hpp).
int run(const std::vector<std::string> &args, Env &env);

}  // namespace fxctl
