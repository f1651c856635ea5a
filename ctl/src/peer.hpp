// fxctl peer: GPU peer memory. "status" answers which path an I/O from
// host, ROCm or Ascend memory takes and why not direct (as gdscheck -p);
// "bench" measures posix, staged and direct reads on a volume (as gdsio).
// Facts come from libfxio (the control node's providers, the copy engines'
// runtimes) and from the module (volumes), collected once; the document
// and its text are pure functions of them.
#pragma once

#include "engine.hpp"
#include "peer_kernel.hpp"
#include "render.hpp"
#include "topology.hpp"

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

struct Env;

// A member's peer queues (fxblk's own NVMe-oF/RDMA queues to it).
struct PeerQueue {
	std::string member;  // its disk, "nvme0n1"
	std::string state;   // none, opening, live, failed, down
	std::string nic;     // the RDMA device they use, "" if none
};

struct PeerVolume {
	std::string name, disk;
	std::optional<bool> p2pdma;  // PCI P2PDMA; absent: the module does not say
	std::string p2pdma_reason;   // why not (names the refusing members)
	// absent: the module does not say (older than the peer-queue attributes)
	std::optional<std::vector<PeerQueue>> peer_queues;
};

struct PeerFacts {
	std::string node;           // /dev/fxblk-peer
	bool node_usable = false;
	std::string node_reason;    // why not usable
	std::vector<fxio::KernelProvider> providers;
	std::vector<fxio::EngineInfo> engines;
	std::optional<std::vector<PeerVolume>> volumes;  // absent: fxblk not loaded
	std::optional<Topology> topology;  // absent: not read
};

PeerFacts collect_peer_facts(Env &env);
// Each member's peer queues from the kernel's reply, or nothing when the
// module does not say (older than FXBLK_MEMBER_ATTR_PEERQ_STATE).
std::optional<std::vector<PeerQueue>> peer_queues(const Volume &v);

// "peer status" -o json: schema_version, control_node {path, usable,
// reason}, providers [{name, present, direct, peer_queues (DMA-only memory
// fxblk's peer queues move), reason, pinned_bytes, registrations}],
// engines [{name, library, present, reason}], volumes [{name, disk, p2pdma
// (null: unknown), p2pdma_reason, peer_queues [{member, state (none,
// opening, live, failed, down), nic}] (null: unknown)}] or null, paths
// [{memory (host, rocm, ascend), path (direct, staged, posix, unavailable),
// reason}], topology (topology.hpp's topology_doc; null: not read).
json peer_status_doc(const PeerFacts &f);
std::string text_peer_status(const json &doc);

// What "peer bench" runs (as gdsio's -x/-I/-w/-d/-s/-i): @rw read,
// write, randread or randwrite; @threads workers, each with its own handle
// and @depth I/Os of @block in flight; @total bytes per path in all.
struct BenchSpec {
	std::string rw = "read";
	std::uint64_t total = 0, block = 0;
	unsigned depth = 1, threads = 1;
	bool write() const { return rw == "write" || rw == "randwrite"; }
	bool random() const { return rw == "randread" || rw == "randwrite"; }
};
struct BenchResult {
	std::string path;  // posix, staged, direct
	bool ran = false;
	std::string reason;  // why it did not run, or why not direct
	std::uint64_t bytes = 0, ios = 0, overlapped_slots = 0;
	double seconds = 0;
	double cpu_seconds = 0;  // user + system of the whole process (libfxio's workers too)
	double lat_p50_us = 0, lat_p99_us = 0, lat_max_us = 0;  // submit to completion
};
// -o json: schema_version, device, rw, block_bytes, depth, threads, engine,
// results [{path, ran, reason, bytes, ios, seconds, bytes_per_second,
// ratio_to_posix, overlapped_slots, cpu_seconds, cpu_seconds_per_gib,
// latency_us {p50, p99, max}}]
json peer_bench_doc(const std::string &device, const BenchSpec &spec,
		    const std::vector<BenchResult> &r);
std::string text_peer_bench(const json &doc);

namespace po = boost::program_options;
struct Ctx;
void peer_options(po::options_description &, po::options_description &,
		  po::positional_options_description &);
int cmd_peer(Ctx &ctx);

}  // namespace fxctl
