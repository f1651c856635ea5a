// NVMe-oF connections: targets, the host's live controllers, connecting
// through libnvme, and turning a failed connect into its real cause. The
// system side (libnvme, sysfs, /dev/kmsg) sits behind class Fabric so the
// commands (fabric_cmds.cpp) and the doctor are tested with fakes; the
// decisions (matching, error causes, back-off) are pure functions here.
#pragma once

#include <map>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

inline constexpr const char *discovery_nqn = "nqn.2014-08.org.nvmexpress.discovery";

// Connect tuning; unset fields keep the kernel's/libnvme's defaults.
struct FabricTuning {
	std::optional<int> ctrl_loss_tmo, fast_io_fail_tmo, reconnect_delay, nr_io_queues,
		nr_poll_queues, keep_alive_tmo, tos;
	bool operator==(const FabricTuning &) const = default;
};

// One subsystem reached through one transport address, as a host.
struct FabricTarget {
	std::string transport;  // rdma, tcp, fc, loop
	std::string traddr, trsvcid, host_traddr, host_iface;
	std::string subsysnqn;
	std::string hostnqn, hostid;  // empty: the host's default
	FabricTuning tuning;
	// The libnvme JSON configuration this target comes from (empty: the
	// command line). connect() reads it into libnvme's tree and hands the
	// matching port's own settings to nvmf_add_ctrl: DH-CHAP keys (host
	// and port), digests, TLS, queue_size, nr_*_queues, tos... as libnvme
	// parsed them; @tuning (the command line, and the keys libnvme 1.3
	// drops) wins over them.
	std::string config;
	bool discovery() const { return subsysnqn == discovery_nqn; }
	// "nqn... via rdma 10.0.0.1:4420", then " from 10.0.1.1" (host_traddr)
	// and " through eth1" (host_iface) when set
	std::string display() const;
	bool operator==(const FabricTarget &) const = default;
};

// A controller the kernel has (/sys/class/nvme/nvmeX).
struct Controller {
	std::string name;  // nvme2
	std::string transport, traddr, trsvcid, subsysnqn, hostnqn, state;
	// from the address: host_traddr= (src_addr= for TCP), host_iface=
	std::string host_traddr, host_iface;
	// sysfs values as written there ("off" = -1); absent on older kernels.
	std::optional<int> ctrl_loss_tmo, fast_io_fail_tmo, reconnect_delay;
	bool operator==(const Controller &) const = default;
};

// A discovery log entry.
struct DiscoveryEntry {
	std::string transport, traddr, trsvcid, subsysnqn, subtype;  // subtype: nvme, discovery
	int portid = 0;
};

// A connect the kernel refused: errno (or libnvme's ENVME_CONNECT_* code)
// and the nvme lines the kernel logged meanwhile (the cause is often only
// there).
class ConnectFailed : public std::runtime_error {
public:
	ConnectFailed(int err, std::vector<std::string> klog, const std::string &what)
		: std::runtime_error(what), err_(err), klog_(std::move(klog)) {}
	int err() const noexcept { return err_; }
	const std::vector<std::string> &kernel_log() const noexcept { return klog_; }

private:
	int err_;
	std::vector<std::string> klog_;
};

// What connect/connect-all did for one target.
struct ConnectResult {
	FabricTarget target;
	// connected, already-connected, failed; "discovered" (a discovery port
	// whose log was read) only inside connect-all
	std::string status;
	std::string controller, state, error;
	int err = 0;  // errno of the cause when failed
	unsigned attempts = 0;
};

class Fabric {
public:
	virtual ~Fabric() = default;
	virtual std::vector<Controller> controllers() = 0;
	// Connects; returns the new controller's name. Throws ConnectFailed.
	// @t's host NQN and ID as take_host (fabric_cmds.cpp) defaulted them.
	virtual std::string connect(const FabricTarget &t) = 0;
	// Connects to a discovery controller, reads its log, disconnects.
	virtual std::vector<DiscoveryEntry> discover(const FabricTarget &t) = 0;
	virtual void disconnect(const std::string &ctrl) = 0;
	// libnvme's JSON configuration (hosts -> subsystems -> ports).
	virtual std::vector<FabricTarget> read_config(const std::string &path) = 0;
	virtual bool module_loaded(const std::string &name) = 0;
	// errno of a route lookup to @traddr (ENETUNREACH...), 0 when routable.
	virtual int route_error(const std::string &traddr) = 0;
	// /etc/nvme/hostnqn and hostid, trimmed; empty when missing.
	virtual std::string default_hostnqn() = 0;
	virtual std::string default_hostid() = 0;
	// What fxctl connected (connect, connect-all), recorded in
	// /run/fxblk/connected/<controller> with the controller's identity
	// (controller_identity), so that 'disconnect --config' touches only
	// those: a controller name the kernel reused since does not match.
	virtual void record_connected(const Controller &c) = 0;
	virtual bool connected_by_fxctl(const Controller &c) = 0;
	virtual void forget_connected(const std::string &ctrl) = 0;
	// What uses the namespaces of controller @ctrl: "nvme0n1 held by dm-0",
	// "nvme0n1p1 mounted on /mnt" (holders, mounts; a namespace with native
	// multipath counts by its head, nvmeXnY).
	virtual std::vector<std::string> namespace_users(const std::string &ctrl) = 0;
	// The block devices (nvmeXnY: the namespace heads) of @ctrl's namespaces.
	virtual std::vector<std::string> namespace_disks(const std::string &ctrl) = 0;
};

// "rdma 10.0.0.1 4420 host_traddr= host_iface= nqn... hostnqn...": what a
// record of a connected controller must match.
std::string controller_identity(const Controller &c);
// The namespace head of a namespace block device of a controller:
// "nvme0c1n1" (a path, native multipath) -> "nvme0n1"; others as they are.
std::string namespace_head(const std::string &disk);

std::unique_ptr<Fabric> make_libnvme_fabric(bool verbose);

// The settings connect() hands nvmf_add_ctrl for a target of a config
// file: its port in @t.config as libnvme read it (nvme_read_config), keys
// and all, with @t.tuning over it. found: false when the file has no such
// port (a subsystem a discovery controller listed); then only the host's
// key applies. Reads the file; no connection is made.
struct ConfigPort {
	bool found = false;
	std::string host_key;       // the host's dhchap_key
	std::string port_host_key;  // the port's dhchap_key
	std::string ctrl_key;       // the port's dhchap_ctrl_key (bidirectional)
	std::string host_traddr, host_iface;
	int nr_io_queues = 0, nr_write_queues = 0, nr_poll_queues = 0, queue_size = 0,
	    keep_alive_tmo = 0, reconnect_delay = 0, ctrl_loss_tmo = 0, fast_io_fail_tmo = 0,
	    tos = -1;
	bool hdr_digest = false, data_digest = false, tls = false, disable_sqflow = false;
};
ConfigPort config_port(const FabricTarget &t);

// ---- pure decisions ---------------------------------------------------

// "rdma" -> "nvme_rdma"; empty for unknown transports.
std::string transport_module(const std::string &transport);
// The port a target listens on when none is given (4420; 8009 for TCP
// discovery).
std::string default_trsvcid(const FabricTarget &t);
// "traddr=10.0.0.1,trsvcid=4420,src_addr=..." -> key/value pairs.
std::map<std::string, std::string> parse_address(const std::string &address);
// A sysfs timeout value: "600" -> 600, "off" -> -1; none if unparsable.
std::optional<int> parse_tmo(const std::string &text);
// The live-or-recovering controller for @t (same transport, address,
// service, subsystem and, when @t names them, host NQN, host address and
// host interface: a second path through another interface is another
// controller); none if there is none. Deleting/dead controllers do not
// count.
std::optional<Controller> find_controller(const std::vector<Controller> &ctrls,
					  const FabricTarget &t);

struct ConnectCause {
	std::string message;  // the cause and the fix
	bool transient;       // worth retrying (target down, refused, timed out)
	int err;              // errno for the exit status
};
// Why a connect to @t failed: from @err (errno or ENVME_CONNECT_*), the
// kernel's nvme log lines, whether the transport module is loaded
// afterwards, and a route lookup result (errno, 0 if routable).
ConnectCause explain_connect_failure(const FabricTarget &t, int err,
				     const std::vector<std::string> &klog, bool transport_loaded,
				     int route_err);
// Seconds to wait before retry @attempt (1-based): 1, 2, 4, 8, 8, ...
double backoff_seconds(unsigned attempt);

// The host ID to connect as host NQN @nqn when none was given: one per
// host NQN, as the kernel requires since 6.x (nvmf_host_add() in
// drivers/nvme/host/fabrics.c refuses a known ID with another NQN, and a
// known NQN with another ID). /etc/nvme/hostid (@file_id) belongs to
// /etc/nvme/hostnqn (@file_nqn) only, and to an empty @nqn (libnvme's
// default host); another NQN gets the UUID of its "uuid:" form, as
// libnvme derives it (nvme_hostid_from_hostnqn in tree.c), or else a UUID
// computed from the NQN (version 8, the same one at every run).
std::string host_id_for(const std::string &nqn, const std::string &file_nqn,
			const std::string &file_id);

}  // namespace fxctl
