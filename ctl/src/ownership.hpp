// Host ownership of volumes and the auto-assembly policy (issue 19, review
// M1): which volumes udev (`fxctl incremental`) and `assemble --all` may
// start on this host. Like mdadm's HOMEHOST/AUTO (mdadm.conf(5)) and LVM's
// system_id: a label records the host NQN of the host that owns the volume;
// /etc/fxblk/fxblk.conf says which volumes start by themselves; the kernel
// command line switch fxblk.auto=0 turns auto-assembly off. Parsing and the
// decision are pure functions (tests/test_ownership.cpp); load_host_policy()
// reads the files.
#pragma once

#include "label.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace fxctl {

inline constexpr const char *default_conf_path = "/etc/fxblk/fxblk.conf";
// This host's NVMe-oF identity as nvme-cli keeps it: the files ownership,
// connect's defaults (take_host in fabric_cmds.cpp) and doctor read.
inline constexpr const char *default_hostnqn_path = "/etc/nvme/hostnqn";
inline constexpr const char *default_hostid_path = "/etc/nvme/hostid";
inline constexpr const char *default_cmdline_path = "/proc/cmdline";

// One word of an AUTO line: +/- and what it matches: "homehost" (owned by
// this host), "unowned" (a label without an owner, written by fxctl before
// owners existed), "all", or a volume name or UUID.
struct AutoRule {
	bool allow = true;
	std::string what;
};

struct HostPolicy {
	// This host's NQN: HOSTNQN in fxblk.conf, else /etc/nvme/hostnqn; ""
	// when neither says (then no volume is owned by this host).
	std::string host_nqn;
	// The AUTO line; the default when fxblk.conf has none.
	std::vector<AutoRule> autos = default_autos();
	bool cmdline_off = false;  // fxblk.auto=0 on the kernel command line
	std::string conf_path = default_conf_path;  // for messages

	static std::vector<AutoRule> default_autos();  // +homehost +unowned -all
};

// fxblk.conf: lines of words, '#' starts a comment. Keywords (case
// insensitive): HOSTNQN <nqn>; AUTO <+|-word>... Returns the policy with
// the file's values over @base; throws UsageError-like Error naming the
// line for an unknown keyword or a malformed word.
HostPolicy parse_conf(std::string_view text, HostPolicy base, const std::string &path);

// fxblk.auto=0 (or =off, =no) among the words of a kernel command line.
bool cmdline_auto_off(std::string_view cmdline);

struct AutoDecision {
	bool allowed = false;
	std::string why;  // the rule that decided, for messages
};

// Whether a volume with label @l starts by itself on this host: the first
// AUTO word that matches decides (mdadm's rule); none matching: allowed.
// fxblk.auto=0 is not looked at here (callers say it first).
AutoDecision auto_assembly(const HostPolicy &p, const label::Label &l);

// Owned by another host: the label has an owner and it is not this host.
bool foreign_owner(const HostPolicy &p, const label::Label &l);

// The policy of this machine: FXBLK_CONF (default /etc/fxblk/fxblk.conf,
// absent: defaults), FXBLK_HOSTNQN_FILE (/etc/nvme/hostnqn), FXBLK_CMDLINE
// (/proc/cmdline); the environment variables are for tests.
HostPolicy load_host_policy();

}  // namespace fxctl
