// fxctl's command line: the command table, each command's options, help
// and completion generated from the table, and the dispatch that maps
// errors to exit codes. The commands themselves live in their own files
// (command.hpp lists them).
#include "cli.hpp"

#include "assemble.hpp"
#include "command.hpp"
#include "completion.hpp"
#include "doctor.hpp"
#include "error.hpp"
#include "fabric_cmds.hpp"
#include "label_cmds.hpp"
#include "member_cmds.hpp"
#include "peer.hpp"
#include "render.hpp"
#include "volume_cmds.hpp"
#include "volume_ops.hpp"

#include <boost/program_options.hpp>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <ostream>
#include <unistd.h>
#include <sstream>

namespace fxctl {
namespace po = boost::program_options;
namespace {

// ---- option tables ------------------------------------------------------

void no_options(po::options_description &, po::options_description &,
		po::positional_options_description &)
{
}

void name_only(po::options_description &, po::options_description &hidden,
	       po::positional_options_description &pos)
{
	hidden.add_options()("name", po::value<std::string>(), "volume");
	pos.add("name", 1);
}

void create_options(po::options_description &opts, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	opts.add_options()
		("chunk,c", po::value<std::string>()->default_value("512K")->value_name("SIZE"),
		 "stripe chunk: power of two, 4K..16M")
		("data-offset", po::value<std::string>()->value_name("SIZE"),
		 "start of data on each member, a multiple of 4K, at least 4M "
		 "(default: max(4M, chunk))")
		("force,f", po::bool_switch(),
		 "use members that carry a file system, partition table, another volume's "
		 "label or any other signature: erase those signatures (as wipefs -a)")
		("no-owner", po::bool_switch(),
		 "record no owner in the labels (as mdadm --homehost=<none>): any host that "
		 "sees the members may start the volume by itself (AUTO +unowned)");
	hidden.add_options()
		("name", po::value<std::string>(), "volume name")
		("members", po::value<std::vector<std::string>>(), "member devices");
	pos.add("name", 1).add("members", -1);
}

void remove_options(po::options_description &opts, po::options_description &hidden,
		    po::positional_options_description &pos)
{
	opts.add_options()
		("force,f", po::bool_switch(),
		 "remove even while open: its I/O fails with EIO at once, the name is free "
		 "again, /dev/fxN goes away at its last close");
	name_only(opts, hidden, pos);
}

void examine_options(po::options_description &opts, po::options_description &hidden,
		     po::positional_options_description &pos)
{
	opts.add_options()
		("export", po::bool_switch(),
		 "print KEY=VALUE lines for udev's IMPORT{program}; nothing (exit 0) for a "
		 "device that is not a member");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
}

void stats_options(po::options_description &opts, po::options_description &hidden,
		   po::positional_options_description &pos)
{
	// A string: Boost hands an implicit-value option the next word, which
	// may be the volume name (see stats_args in volume_cmds.cpp).
	opts.add_options()
		("watch,w", po::value<std::string>()->implicit_value("1")->value_name("SECONDS"),
		 "repeat every SECONDS (0.1..86400, default 1), showing rates and latency "
		 "over the interval measured between samples")
		("count", po::value<unsigned>()->value_name("N"),
		 "with --watch: stop after N samples (N >= 1; default: until interrupted)");
	name_only(opts, hidden, pos);
}

void wipe_options(po::options_description &opts, po::options_description &hidden,
		  po::positional_options_description &pos)
{
	opts.add_options()("yes,y", po::bool_switch(), "wipe without asking (for scripts)");
	hidden.add_options()("device", po::value<std::string>(), "member device");
	pos.add("device", 1);
}

void monitor_options(po::options_description &opts, po::options_description &,
		     po::positional_options_description &)
{
	opts.add_options()
		("count", po::value<unsigned>()->value_name("N"),
		 "exit after N events (N >= 1; default: until interrupted)")
		("timeout", po::value<std::string>()->value_name("SECONDS"),
		 "exit (status 0) after SECONDS (0.1..86400), however many events came");
}

const Command commands[] = {
	{"version", "version", "Show fxctl's and the module's versions.",
	 "Show fxctl's version and the loaded module's version, API version, features "
	 "and live volume count. Without the module, prints fxctl's version and says "
	 "that the module is not loaded (JSON: \"module\": null). Exits 0 either way, as "
	 "fxctl --version does.", no_options, cmd_version},
	{"create", "create NAME [--chunk SIZE] [--data-offset SIZE] [--force] [--no-owner] "
	 "MEMBER...",
	 "Create a striped volume over block devices and label them.",
	 "Create striped volume NAME (/dev/fxN, /dev/fx/NAME) over the MEMBER block "
	 "devices, in order. SIZE takes K/M/G/T suffixes (binary) or plain bytes. NAME is "
	 "1-31 of [A-Za-z0-9._-] (the kernel's rule).\n"
	 "Members carrying a file system, partition table, another volume's fxblk label "
	 "or any other signature libblkid knows are refused, naming what was found, "
	 "unless --force (which erases those signatures). Two members that are one "
	 "namespace (the same NGUID, UUID or EUI-64: two paths without native NVMe "
	 "multipath) are refused, even with --force, and so is a partition: give the "
	 "whole namespace. Members whose sizes differ by "
	 "more than 1% get a warning saying how much space is lost.\n"
	 "The labels record this host's NQN (HOSTNQN in /etc/fxblk/fxblk.conf, else "
	 "/etc/nvme/hostnqn) as the volume's owner, so that other hosts leave it alone; "
	 "a host without one is refused, nothing written (create it: 'nvme gen-hostnqn > "
	 "/etc/nvme/hostnqn'), unless --no-owner, which records no owner: then every host "
	 "whose AUTO allows unowned volumes (the default) starts it by itself.\n"
	 "Writes a label (docs/on-disk-format.md) on every member, a primary copy at 4 KiB "
	 "and a backup in the last 1 MiB, then creates the volume; if that fails, the "
	 "labels are wiped again. The data area starts at max(4M, chunk) (--data-offset) "
	 "and stops 1 MiB before the member end. When a udev daemon runs, create returns "
	 "once /dev/fx/NAME exists (at most 10 s).\n\n"
	 "Example: fxctl create vol1 --chunk 512K /dev/nvme0n1 /dev/nvme1n1",
	 create_options, cmd_create},
	{"examine", "examine [--export] DEVICE", "Show the fxblk label on a member device.",
	 "Read both label copies on DEVICE and show the volume it belongs to: volume name "
	 "and UUID, this member's index and the member count, generation, geometry and "
	 "the NVMe identity of every member in stripe order. Says which copy was used "
	 "(primary, or backup when the primary is damaged) and why a copy was refused. "
	 "Exits 3 if DEVICE carries no valid label.\n"
	 "--export prints KEY=VALUE lines for udev's IMPORT{program}: FXBLK_MEMBER=1, "
	 "FXBLK_UUID, FXBLK_NAME, FXBLK_INDEX, FXBLK_COUNT, FXBLK_GENERATION, "
	 "FXBLK_LABEL=primary|backup; for a device that is not a member it prints nothing "
	 "and exits 0.\n\nExample: fxctl examine -o json /dev/nvme0n1",
	 examine_options, cmd_examine},
	{"wipe", "wipe [--yes] DEVICE", "Remove the fxblk label from a device.",
	 "Zero both copies of the fxblk label on DEVICE (wipefs cannot: libblkid has no "
	 "fxblk prober), like mdadm --zero-superblock: for a disk that is no longer a "
	 "member, e.g. one reused by mkfs whose backup label at the end survived. Only "
	 "copies carrying the fxblk magic are zeroed: whatever now lives where the "
	 "primary copy was stays. Refused on a member of a running volume (exit 4). Asks "
	 "first on a terminal; without one, --yes is needed. A device without an fxblk "
	 "label: nothing to do, exit 0.\n\nExample: fxctl wipe --yes /dev/nvme3n1",
	 wipe_options, cmd_wipe},
	{"remove", "remove [--force] NAME", "Remove a volume.",
	 "Remove a volume (NAME, fxN or /dev/fxN). Refused while it is open (exit 4), "
	 "unless --force: then its I/O fails with EIO at once, the name is free again and "
	 "/dev/fxN disappears at its last close (for a volume whose member is gone). The "
	 "volume's labels on the members are wiped; their data area is not touched.", remove_options, cmd_remove},
	{"assemble", "assemble [--force] [--import] NAME|UUID | --all | --scan",
	 "Start volumes from their members' labels.",
	 "Find the members of volume NAME (or UUID) by their labels among the block devices "
	 "present, check them and create the volume with the labels' geometry, members in "
	 "stripe order whatever their nvmeXnY names are now. Refused, naming the device or "
	 "the member, when a member is missing (exit 3), foreign (its identity is not the "
	 "one the labels record for its index), has a stale label (an older generation "
	 "than the others), was reused (libblkid finds another signature on it, e.g. from "
	 "mkfs or a partition table, or its primary label is gone and only the backup is "
	 "left) or when two devices claim the same index: never a partial volume. A volume "
	 "owned by another host (its labels record that host's NQN) is refused unless the "
	 "AUTO line of /etc/fxblk/fxblk.conf allows it. A volume already running over the "
	 "same devices is reported (exit 0).\n"
	 "--force takes reused and stale members as the members their labels name: the "
	 "other signatures are erased and every member's label is rewritten at the next "
	 "generation. --import takes over a volume owned by another host (or one without "
	 "an owner): every label is rewritten with this host's NQN as the owner, at the next "
	 "generation. --all assembles every complete volume the auto-assembly policy "
	 "allows on this host (as udev would) and reports the others as skipped. --scan "
	 "changes nothing (as mdadm --examine --scan): it lists every volume whose "
	 "labelled members are present, with its state (running, stopped: every member "
	 "present and assemble would start it, incomplete: members missing, refused: "
	 "assemble would refuse it, each reason listed, not-auto: kept by the "
	 "auto-assembly policy) and what starts it; exit 0.\n\n"
	 "Example: fxctl assemble kv-cache",
	 assemble_options, cmd_assemble},
	{"stop", "stop NAME|--all", "Stop a volume; its labels stay.",
	 "Remove the volume from the kernel without touching its members or their labels "
	 "(like mdadm --stop): 'fxctl assemble' starts it again, and so does udev when its "
	 "members appear again (an \"add\" event: connect, boot; not a \"change\" event). "
	 "Refused while the volume is open (exit 4). --all stops every volume that is not "
	 "open and reports the others.", stop_options, cmd_stop},
	{"rename", "rename NAME|UUID NEW", "Rename a stopped volume in its labels.",
	 "Give volume NAME (or UUID) the name NEW in every member's label, both copies, at "
	 "the next generation (like mdadm --assemble --update=name or vgrename); its UUID, "
	 "geometry and data stay. The volume must be stopped ('fxctl stop NAME' first; "
	 "exit 4 while it runs) and every member present with labels that agree (as "
	 "assemble checks; exit 3 when a member is missing). NEW follows create's name rule "
	 "and must not be the name of another volume whose members are present or that "
	 "runs (exit 5 is not used: exit 1). Runs under the volume's lock, as assemble and "
	 "incremental. A member that misses the rewrite (an I/O error, or it was away) has "
	 "an older generation and is refused by assemble; 'fxctl assemble --force NEW' "
	 "takes it back.\n\n"
	 "Example: fxctl stop kv && fxctl rename kv kv-old && fxctl assemble kv-old",
	 rename_options, cmd_rename},
	{"update", "update --identity [--volume NAME] [--yes] DEVICE... | --volume NAME",
	 "Re-record members' NVMe identities after a target migration.",
	 "--identity: DEVICE carries the label of a member whose recorded NVMe identity "
	 "(subsystem NQN, NSID, NGUID, UUID, EUI-64) is not the one of the namespace it is "
	 "on now (the target moved, was renamed or regenerated the namespace UUID), so "
	 "assemble refuses it as foreign. update records DEVICE's identity as that member's "
	 "in every member's label, at the next generation (older copies are then refused "
	 "as stale), after showing the old and new identity and asking (on a terminal; "
	 "without one, --yes is needed). Refused, nothing written, when DEVICE carries no "
	 "label, when the recorded namespace is itself present (DEVICE is a copy), when "
	 "DEVICE is another member's namespace, when the volume runs (exit 4), when a "
	 "member is missing (exit 3) or the labels disagree. --volume NAME refuses unless "
	 "DEVICE belongs to volume NAME (or UUID). Nothing to do (exit 0) when the "
	 "identity is already the recorded one.\n"
	 "Several DEVICEs (members that moved together: an nvmet restart that "
	 "regenerated every namespace UUID, a subsystem NQN rename, a DR array) are "
	 "re-recorded in one rewrite, at one generation; --volume NAME without DEVICE "
	 "takes every device carrying a label of NAME. Two devices with the label of one "
	 "member (a copy) are refused.\n\n"
	 "Example: fxctl update --identity --volume kv /dev/nvme4n1",
	 update_options, cmd_update},
	{"incremental", "incremental DEVICE | --defer DEVICE | --uuid UUID",
	 "Add one member as it appears (for udev).",
	 "Called by the udev rule when a block device carrying an fxblk label appears (an "
	 "\"add\" event): records DEVICE under /run/fxblk/<volume uuid>/ and, once every "
	 "member of its volume is there, assembles the volume. Says what it is waiting for "
	 "until then. With systemd the rule runs 'incremental --defer DEVICE', which only "
	 "records and prints FXBLK_COMPLETE=1 once the records show every member; the rule "
	 "then pulls in fxblk-assemble@UUID.service, whose 'incremental --uuid UUID' "
	 "starts the volume outside the udev worker. Nothing is recorded or started (exit "
	 "0, saying why) when fxblk.auto=0 is on the kernel command line, when DEVICE was "
	 "reused (see assemble), or when the auto-assembly policy does not allow the volume "
	 "on this host (by default: only volumes owned by this host, or without an owner). "
	 "Safe to run concurrently for several members (one at a time per volume, under a "
	 "lock on /run/fxblk/<uuid>.lock: a member that stalls its volume's assembly delays "
	 "no other volume) and again (a running volume is reported, exit 0). A device "
	 "without a label: nothing to do, exit 0. Refused like assemble (exit 1) for "
	 "foreign, stale or duplicated members.",
	 incremental_options, cmd_incremental},
	{"list", "list", "List all volumes with their state.",
	 "List all volumes: disk, name, state (live, failing, gone), capacity, chunk, "
	 "members, open count and flags (read-only, nowait, removed).", no_options,
	 cmd_list},
	{"show", "show NAME", "Show a volume's health, geometry and members.",
	 "Show a volume's state and flags, geometry, and each member's state, error count "
	 "and data area; for NVMe-oF members the subsystem and every path (controller, "
	 "transport, address, state: live, reconnecting, resetting, deleting).", name_only,
	 cmd_show},
	{"stats", "stats NAME [--watch [SECONDS]] [--count N]",
	 "Show per-member I/O counters and latency.",
	 "Show per-member I/O counters (bytes), errors, in-flight I/O and p50/p99 latency "
	 "for reads, writes, discards and flushes. --watch repeats and shows rates and "
	 "latency over the interval measured between samples; with -o json, one document "
	 "per line.\n\nExample: fxctl stats vol1 --watch 2 --count 10", stats_options,
	 cmd_stats},
	{"monitor", "monitor [--count N] [--timeout SECONDS]",
	 "Print the module's events as they happen.",
	 "Print the module's events as they happen, one line each: volume created or "
	 "destroyed, member I/O error (at most one a second per member, with the errno) "
	 "and member state change (live, failing, gone). With -o json, one compact JSON "
	 "object per line (JSON Lines) with schema_version, timestamp (seconds since the "
	 "epoch), event (created, destroyed, member_error, member_state), volume {name, "
	 "index, disk} and, for member events, member {index, disk, state, errors, errno, "
	 "errno_name}. Output is flushed after every event. Needs no privileges. Runs "
	 "until interrupted, --count events or --timeout seconds (exit 0); exits 5 if the "
	 "module is not loaded or is unloaded meanwhile.\n\n"
	 "Example: fxctl -o json monitor --count 1 --timeout 60", monitor_options,
	 cmd_monitor},
	{"discover", "discover -t TR -a ADDR [-s PORT]",
	 "List the subsystems an NVMe-oF discovery controller offers.",
	 "Connect to the discovery controller at ADDR (through libnvme), print its log "
	 "page (subsystem NQN, transport, address, service, port ID) and disconnect.\n\n"
	 "Example: fxctl discover -t rdma -a 10.0.0.1", discover_options, cmd_discover},
	{"connect", "connect -t TR -a ADDR [-s PORT] -n NQN [OPTIONS]",
	 "Connect one NVMe-oF subsystem (idempotent, with retries).",
	 "Connect subsystem NQN at ADDR through libnvme. If a controller to the same "
	 "transport, address, service, subsystem and host NQN exists, it is reported "
	 "(\"already connected as nvme2\") and none is added. A target that is down "
	 "(refused, timed out, no route) is retried --retries times within --timeout "
	 "seconds, waiting 1, 2, 4, 8, 8... s; each retry is reported on stderr. "
	 "Failures name their cause from the errno and the kernel log: transport "
	 "module not loaded, no route, connection refused, host NQN rejected, unknown "
	 "subsystem. The host NQN and ID default to /etc/nvme/hostnqn and hostid.\n\n"
	 "Example: fxctl connect -t rdma -a 10.0.0.1 -n nqn.2026-11.io.example:vol1 "
	 "--ctrl-loss-tmo 600 --fast-io-fail-tmo 5", connect_options, cmd_connect},
	{"connect-all", "connect-all [--config FILE] [OPTIONS]",
	 "Connect every subsystem of libnvme's /etc/nvme/config.json.",
	 "Connect every subsystem port listed in libnvme's JSON configuration "
	 "(/etc/nvme/config.json, the file nvme-cli reads; --config overrides), as "
	 "'connect' does each one: existing controllers are reported, unreachable "
	 "targets retried. A port of the discovery subsystem "
	 "(nqn.2014-08.org.nvmexpress.discovery) is asked for its log page and every "
	 "NVMe subsystem it lists is connected; its referrals are followed (each "
	 "address once, at most 16). Each port is connected with what "
	 "libnvme read for it from the file: the host's and the port's dhchap_key, "
	 "dhchap_ctrl_key, host_traddr, host_iface, nr_io_queues, nr_write_queues, "
	 "nr_poll_queues, queue_size, keep_alive_tmo, reconnect_delay, fast_io_fail_tmo, "
	 "disable_sqflow and, for TCP, hdr_digest, data_digest and tls; ctrl_loss_tmo and "
	 "tos, which libnvme 1.3 drops, are read by fxctl. Command-line options override "
	 "the file. A host without hostid gets /etc/nvme/hostid. A port with its own "
	 "host_traddr or host_iface is its own path: a controller through another "
	 "interface is not taken for it. A refused DH-CHAP key fails at once, naming "
	 "the target. What fxctl connects is recorded in /run/fxblk/connected for "
	 "'disconnect --config'. Exits 0 when every target is connected, 7 when some "
	 "are and others are not (each named), else 1 (one target: the code of its error). "
	 "Run at boot by fxblk-connect.service.", connect_all_options, cmd_connect_all},
	{"disconnect", "disconnect nvmeX... | -n NQN | --config [FILE]",
	 "Disconnect NVMe-oF controllers.",
	 "Disconnect the named controllers, every controller of subsystem NQN, or (--config) "
	 "the controllers of the subsystem ports in libnvme's JSON configuration that fxctl "
	 "connected (recorded in /run/fxblk/connected; others are left and named; none "
	 "connected is not an error). --config never disconnects a controller whose "
	 "namespace is in use (held, e.g. by an fx volume or dm, mounted, or a member of a "
	 "running fx volume): it names the controller and the user and exits 4 after "
	 "disconnecting the others. The named and -n forms do not check: a volume over "
	 "their namespaces loses those members; stop it first.", disconnect_options,
	 cmd_disconnect},
	{"doctor", "doctor", "Check RDMA, modules, host NQN, controllers, volumes and boot setup.",
	 "Check the host for what fxblk over NVMe-oF needs: RDMA devices, their ports "
	 "and RoCEv2 GIDs with the netdev MTU; loaded modules (fxblk, nvme_fabrics, "
	 "nvme_rdma, RDMA drivers); /etc/nvme/hostnqn present, valid and not a shared "
	 "default; each NVMe-oF controller's state, ctrl_loss_tmo and fast_io_fail_tmo "
	 "and nvme_core multipath; each volume's member states and completeness; every "
	 "volume whose labelled members are present but that does not run, with the "
	 "reason (stopped or failed, members missing, members that cannot be assembled, "
	 "kept by the ownership policy); volumes whose labels record no owner host; fxblk's "
	 "udev rules installed and the fxctl they run executable; with systemd, "
	 "fxblk-connect.service enabled (when /etc/nvme/config.json exists) and not together "
	 "with nvmf-autoconnect.service; /etc/fstab mounts of file systems on fxN without "
	 "_netdev. fxblk and nvme_fabrics not loaded are only info (fxblk loads itself when "
	 "fxctl needs it; nvme_fabrics is loaded before the first connect). Every "
	 "finding has a severity (error, warning, info), a message and a fix. With -o "
	 "json: summary, findings and the facts. Exits 0 without error findings, 1 "
	 "with.", doctor_options, cmd_doctor},
	{"peer", "peer status | peer bench NAME [--rw MODE] [--size SIZE] [--block SIZE] [--depth N] "
		 "[--threads N] [--paths LIST] [--yes]",
	 "GPU peer memory: which path I/O takes, and its bandwidth.",
	 "peer status (the default) answers which path an I/O between a volume and host, "
	 "ROCm or Ascend memory takes, and why not direct (as gdscheck -p): the kernel's "
	 "control node /dev/fxblk-peer, each memory provider (host, rocm, ascend, dmabuf: "
	 "present, can serve direct I/O, why not, pinned bytes, registrations), the copy "
	 "engines libfxio can load (host built in; hip: libamdhip64.so, acl: "
	 "libascendcl.so), the volumes, and per memory kind the path: direct (O_DIRECT "
	 "into the registered pages, no CPU copy), staged (through a pinned host bounce "
	 "pool, pipelined with the accelerator's copy engine), posix (plain O_DIRECT, "
	 "compat mode) or unavailable; and the PCI topology: for each AMD or Huawei "
	 "accelerator and each RDMA device, whether the NIC can reach its memory (ok, maybe, "
	 "no): under one PCIe switch, through the root complex, across host bridges, or a "
	 "software device; ACS redirect on the switch's ports, the IOMMU mode, a BAR smaller "
	 "than the memory. Needs no privileges (ACS is read from config space by root "
	 "only); exits 0.\n"
	 "peer bench NAME (a volume, fxN, /dev/fxN or any block device or file path) moves "
	 "--size bytes within the first --size of it (--rw read, write, randread or "
	 "randwrite; random offsets are block-aligned, seeded per thread, so runs repeat) "
	 "in --block I/Os, --depth in flight in each of --threads threads (each its own "
	 "handle), once per path of --paths, through libfxio with the host engine, and "
	 "prints MiB/s, the ratio to the posix path, I/Os, overlapped slots of the staged "
	 "pipeline, CPU seconds per GiB (user + system of the process) and the p50/p99 "
	 "latency from submit to completion (as gdsio). A write mode on a block device "
	 "overwrites its data and needs --yes; a file is written within its size. The "
	 "direct row runs when the kernel registers host memory "
	 "for direct I/O, else it says why not. The bounce pool follows FXIO_POOL_SLOTS and "
	 "FXIO_SLOT_KIB.\n\nExample: fxctl peer bench vol1 --size 1G --block 4M --rw randread --threads 8",
	 peer_options, cmd_peer},
};

po::options_description global_options()
{
	po::options_description g("Global options (anywhere on the command line)");
	g.add_options()
		("output,o", po::value<std::string>()->default_value("normal")->value_name("FORMAT"),
		 "output format: normal or json")
		("verbose,v", po::bool_switch(), "explain what is being done")
		("help,h", po::bool_switch(), "show help")
		("version,V", po::bool_switch(), "show fxctl's version (and the module's if loaded)");
	return g;
}

const char exit_status_help[] =
	"Exit status: 0 ok, 1 failed, 2 usage error, 3 not found, 4 busy (open or in use),\n"
	"5 module not loaded, 6 permission denied, 7 connect-all connected some targets\n"
	"and not others (each named). With -o json, errors are printed on\n"
	"stdout as {\"error\": {\"message\", \"code\", \"errno\", \"errno_name\"}}.\n";

std::string main_help()
{
	std::ostringstream s;
	s << "Usage: fxctl [OPTIONS] COMMAND [ARGS]\n\n"
	     "Manage fxblk striped volumes over NVMe-oF namespaces.\n\nCommands:\n";
	for (const auto &c : commands)
		s << fmt::format("  {:<12} {}\n", c.name, c.summary);
	s << '\n' << global_options()
	  << "\nRun 'fxctl help COMMAND' or 'fxctl COMMAND --help' for a command's options.\n"
	  << exit_status_help;
	return s.str();
}

// Wraps @text at @width columns, keeping its paragraphs.
std::string wrap(const std::string &text, std::size_t width = 78)
{
	std::string out, line;
	std::istringstream paras(text);
	for (std::string para; std::getline(paras, para);) {
		std::istringstream words(para);
		line.clear();
		for (std::string w; words >> w;) {
			if (!line.empty() && line.size() + 1 + w.size() > width) {
				out += line + '\n';
				line.clear();
			}
			line += (line.empty() ? "" : " ") + w;
		}
		out += line + '\n';
	}
	return out;
}

std::string command_help(const Command &c)
{
	po::options_description opts(fmt::format("Options for {}", c.name)), hidden;
	po::positional_options_description pos;
	c.options(opts, hidden, pos);
	std::ostringstream s;
	s << "Usage: fxctl " << c.synopsis << "\n\n" << wrap(c.help) << '\n';
	if (!opts.options().empty())
		s << opts << '\n';
	s << global_options() << '\n' << exit_status_help;
	return s.str();
}

// The command table as completion sees it: names, options, value sets.
std::vector<OptionSpec> option_specs(const po::options_description &desc)
{
	std::vector<OptionSpec> v;
	for (const auto &o : desc.options()) {
		OptionSpec spec{o->long_name(), "", o->semantic()->min_tokens() > 0, {}};
		auto s = o->canonical_display_name(po::command_line_style::allow_dash_for_short);
		if (s.size() == 2 && s[0] == '-')
			spec.short_name = s.substr(1);
		if (spec.long_name == "output")
			spec.values = {"normal", "json"};
		v.push_back(std::move(spec));
	}
	return v;
}

std::string completion_script(const std::string &shell)
{
	if (shell != "bash")
		throw UsageError(fmt::format("no completion for shell '{}': only bash", shell));
	std::vector<CommandSpec> cmds;
	for (const auto &c : commands) {
		po::options_description opts, hidden;
		po::positional_options_description pos;
		c.options(opts, hidden, pos);
		cmds.push_back({c.name, option_specs(opts)});
	}
	return bash_completion(cmds, option_specs(global_options()));
}

const Command *find_command(const std::string &name)
{
	for (const auto &c : commands)
		if (name == c.name)
			return &c;
	throw UsageError(fmt::format("unknown command '{}'", name));
}

constexpr auto style = po::command_line_style::unix_style ^ po::command_line_style::allow_guessing;

int dispatch(const std::vector<std::string> &args, Env &env, bool &as_json)
{
	// Pass 1 (Boost's subcommand idiom): global options wherever they are,
	// the command, and the rest left unrecognized for the command's parser.
	po::options_description first = global_options();
	first.add_options()
		("command", po::value<std::string>(), "command")
		("args", po::value<std::vector<std::string>>(), "arguments")
		// hidden: the build generates the installed completion script with it
		("completion", po::value<std::string>(), "print a shell completion script");
	po::positional_options_description cmdpos;
	cmdpos.add("command", 1).add("args", -1);
	po::variables_map g;
	std::vector<std::string> rest;
	try {
		po::parsed_options parsed = po::command_line_parser(args)
						    .options(first)
						    .positional(cmdpos)
						    .allow_unregistered()
						    .style(style)
						    .run();
		po::store(parsed, g);
		po::notify(g);
		rest = po::collect_unrecognized(parsed.options, po::include_positional);
	} catch (const po::error &e) {
		throw UsageError(e.what());
	}
	if (g.count("completion")) {
		env.out << completion_script(g["completion"].as<std::string>());
		return exit_ok;
	}
	auto output = g["output"].as<std::string>();
	if (output != "normal" && output != "json")
		throw UsageError(fmt::format("invalid output format '{}': use normal or json",
					     output));
	as_json = output == "json";

	Ctx ctx{env, {}, po::parsed_options(nullptr), as_json, g["verbose"].as<bool>()};
	const Command *cmd = nullptr;
	if (g.count("command")) {
		rest.erase(rest.begin());  // the command itself
		std::string name = g["command"].as<std::string>();
		if (name == "help") {
			if (rest.size() > 1)
				throw UsageError("help takes at most one COMMAND");
			env.out << (rest.empty() ? main_help() : command_help(*find_command(rest[0])));
			return exit_ok;
		}
		cmd = find_command(name);
	}
	if (g["help"].as<bool>()) {
		env.out << (cmd ? command_help(*cmd) : main_help());
		return exit_ok;
	}
	if (g["version"].as<bool>()) {
		cmd_version(ctx);
		return exit_ok;
	}
	if (!cmd)
		throw UsageError("no command given");

	// Pass 2: the command's own options and arguments.
	po::options_description opts, hidden;
	po::positional_options_description positional;
	cmd->options(opts, hidden, positional);
	po::options_description all;
	all.add(opts).add(hidden);
	try {
		ctx.parsed = po::command_line_parser(rest)
				     .options(all)
				     .positional(positional)
				     .style(style)
				     .run();
		po::store(ctx.parsed, ctx.vm);
		po::notify(ctx.vm);
	} catch (const po::error &e) {
		throw UsageError(fmt::format("{}: {}", cmd->name, e.what()));
	}
	return cmd->handler(ctx);
}

}  // namespace

std::optional<bool> ask_terminal(const std::string &question)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return std::nullopt;
	std::cerr << "fxctl: " << question << " [y/N] " << std::flush;
	std::string answer;
	if (!std::getline(std::cin, answer))
		return false;
	return answer == "y" || answer == "Y" || answer == "yes";
}

double monotonic_seconds()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

double epoch_seconds()
{
	return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
		.count();
}

int run(const std::vector<std::string> &args, Env &env)
{
	bool as_json = false;
	auto report = [&](const std::string &msg, int code, int err, const char *hint = "") {
		env.err << "fxctl: " << msg << '\n' << hint;
		if (as_json)
			env.out << error_doc(msg, code, err).dump(2) << '\n';
		return code;
	};
	try {
		return dispatch(args, env, as_json);
	} catch (const UsageError &e) {
		return report(e.what(), exit_usage, 0, "Run 'fxctl --help' for usage.\n");
	} catch (const ModuleNotLoaded &e) {
		return report(e.what(), exit_no_module, 0);
	} catch (const KernelError &e) {
		return report(e.what(), exit_code_for_errno(e.err()), e.err());
	} catch (const Error &e) {
		int err = e.code().category() == std::generic_category() ? e.code().value() : 0;
		return report(e.what(), err ? exit_code_for_errno(err) : exit_runtime, err);
	} catch (const std::exception &e) {
		return report(e.what(), exit_runtime, 0);
	}
}

}  // namespace fxctl
