#include "peer.hpp"

#include "cli.hpp"
#include "command.hpp"
#include "error.hpp"
#include "library.hpp"
#include "render.hpp"
#include "units.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <memory>

namespace fxctl {
namespace {

const fxio::KernelProvider *provider(const PeerFacts &f, const std::string &name)
{
	for (const auto &p : f.providers)
		if (p.name == name)
			return &p;
	return nullptr;
}

const fxio::EngineInfo *engine(const PeerFacts &f, const std::string &name)
{
	for (const auto &e : f.engines)
		if (e.name == name)
			return &e;
	return nullptr;
}

// The path an aligned I/O from @memory would take, and why not direct.
json path_verdict(const PeerFacts &f, const std::string &memory, const std::string &prov,
		  const std::string &eng)
{
	json v = {{"memory", memory}};
	const fxio::KernelProvider *p = f.node_usable ? provider(f, prov) : nullptr;
	std::string why = !f.node_usable ? f.node_reason
			  : !p		 ? fmt::format("the kernel has no provider '{}'", prov)
			  : !p->present	 ? fmt::format("provider {} absent: {}", prov, p->reason)
					 : p->reason;
	if (p && p->present && p->direct) {
		v["path"] = "direct";
		v["reason"] = "";
		return v;
	}
	if (memory == "host") {
		v["path"] = "posix";  // plain O_DIRECT into the buffer, no kernel registration
		v["reason"] = why;
		return v;
	}
	const fxio::EngineInfo *e = engine(f, eng);
	if (e && e->present) {
		v["path"] = "staged";
		v["reason"] = why;
	} else {
		v["path"] = "unavailable";
		v["reason"] = e ? e->reason : "no copy engine";
	}
	return v;
}

}  // namespace

namespace {

std::string peerq_state_name(std::uint32_t s)
{
	switch (s) {
	case FXBLK_PEERQ_NONE:
		return "none";
	case FXBLK_PEERQ_OPENING:
		return "opening";
	case FXBLK_PEERQ_LIVE:
		return "live";
	case FXBLK_PEERQ_FAILED:
		return "failed";
	case FXBLK_PEERQ_DOWN:
		return "down";
	}
	return fmt::format("unknown ({})", s);
}

}  // namespace

std::optional<std::vector<PeerQueue>> peer_queues(const Volume &v)
{
	std::vector<PeerQueue> q;
	for (const Member &m : v.members) {
		if (!m.peerq_state)
			return std::nullopt;
		q.push_back({m.disk, peerq_state_name(*m.peerq_state), m.peerq_nic});
	}
	return q;
}

PeerFacts collect_peer_facts(Env &env)
{
	PeerFacts f;
	f.node = fxio::peer_node;
	auto k = fxio::open_peer_kernel(f.node_reason);
	if (k) {
		int e = k->providers(f.providers);
		f.node_usable = e == 0;
		if (e)
			f.node_reason = fmt::format("listing providers failed: {}", std::strerror(-e));
	}
	f.engines = fxio::probe_engines();
	f.topology = read_topology("/sys");
	try {
		auto c = env.connect();
		std::vector<PeerVolume> vols;
		for (const Volume &v : c->list()) {
			// the direct path for device memory exposed as P2PDMA pages
			json p = p2pdma_json(v);
			PeerVolume pv{v.name, v.disk, std::nullopt, "", peer_queues(v)};
			if (p["capable"].is_boolean())
				pv.p2pdma = p["capable"].get<bool>();
			if (p["reason"].is_string())
				pv.p2pdma_reason = p["reason"].get<std::string>();
			vols.push_back(std::move(pv));
		}
		f.volumes = std::move(vols);
	} catch (const ModuleNotLoaded &) {
	} catch (const KernelError &) {  // volumes unknown: leave them out
	} catch (const Error &) {
	}
	return f;
}

json peer_status_doc(const PeerFacts &f)
{
	json doc = {{"schema_version", schema_version}};
	doc["control_node"] = {{"path", f.node}, {"usable", f.node_usable},
			       {"reason", f.node_usable ? "" : f.node_reason}};
	json provs = json::array();
	for (const auto &p : f.providers)
		provs.push_back({{"name", p.name}, {"present", p.present}, {"direct", p.direct},
				 {"peer_queues", p.peerq}, {"reason", p.reason},
				 {"pinned_bytes", p.pinned_bytes},
				 {"registrations", p.registrations}});
	doc["providers"] = provs;
	json engs = json::array();
	for (const auto &e : f.engines)
		engs.push_back({{"name", e.name}, {"library", e.library}, {"present", e.present},
				{"reason", e.reason}});
	doc["engines"] = engs;
	if (f.volumes) {
		json vols = json::array();
		for (const auto &v : *f.volumes) {
			json pq;  // null: unknown
			if (v.peer_queues) {
				pq = json::array();
				for (const auto &q : *v.peer_queues)
					pq.push_back({{"member", q.member}, {"state", q.state},
						      {"nic", q.nic}});
			}
			vols.push_back({{"name", v.name}, {"disk", v.disk},
					{"p2pdma", v.p2pdma ? json(*v.p2pdma) : json()},
					{"p2pdma_reason", v.p2pdma_reason}, {"peer_queues", pq}});
		}
		doc["volumes"] = vols;
	} else {
		doc["volumes"] = nullptr;
	}
	doc["paths"] = {path_verdict(f, "host", "host", "host"),
			path_verdict(f, "rocm", "rocm", "hip"),
			path_verdict(f, "ascend", "ascend", "acl")};
	doc["topology"] = f.topology ? topology_doc(*f.topology) : json();
	return doc;
}

namespace {

std::string yes_no(const json &b)
{
	return b.get<bool>() ? "yes" : "no";
}

// "nvme0n1 live on rxe0, nvme1n1 none"
std::string peer_queues_text(const json &qs)
{
	std::string s;
	for (const auto &q : qs) {
		s += (s.empty() ? "" : ", ") + q["member"].get<std::string>() + " " +
		     q["state"].get<std::string>();
		if (!q["nic"].get<std::string>().empty())
			s += " on " + q["nic"].get<std::string>();
	}
	return s.empty() ? "no members" : s;
}

}  // namespace

namespace {

// Table rows end at their last column: no trailing blanks.
std::string trimmed(std::string s)
{
	std::string out;
	std::size_t start = 0;
	while (start < s.size()) {
		std::size_t nl = s.find('\n', start);
		std::string line = s.substr(start, nl == std::string::npos ? nl : nl - start);
		line.erase(line.find_last_not_of(' ') + 1);
		out += line;
		if (nl == std::string::npos)
			break;
		out += '\n';
		start = nl + 1;
	}
	return out;
}

}  // namespace

std::string text_peer_status(const json &doc)
{
	std::string s;
	const json &n = doc["control_node"];
	s += fmt::format("control node {}: {}\n", n["path"].get<std::string>(),
			 n["usable"].get<bool>() ? "usable"
						 : "not usable: " + n["reason"].get<std::string>());
	if (!doc["providers"].empty()) {
		s += fmt::format("\n{:<8} {:<7} {:<6} {:>12} {:>5}  {}\n", "PROVIDER", "PRESENT",
				 "DIRECT", "PINNED", "REGS", "WHY NOT");
		for (const auto &p : doc["providers"])
			s += fmt::format("{:<8} {:<7} {:<6} {:>12} {:>5}  {}\n",
					 p["name"].get<std::string>(), yes_no(p["present"]),
					 yes_no(p["direct"]),
					 format_size(p["pinned_bytes"].get<std::uint64_t>()),
					 p["registrations"].get<std::uint64_t>(),
					 p["reason"].get<std::string>());
	}
	s += fmt::format("\n{:<8} {:<7} {:<16} {}\n", "ENGINE", "PRESENT", "LIBRARY", "WHY NOT");
	for (const auto &e : doc["engines"])
		s += fmt::format("{:<8} {:<7} {:<16} {}\n", e["name"].get<std::string>(),
				 yes_no(e["present"]),
				 e["library"].get<std::string>().empty() ? "(built in)"
									 : e["library"].get<std::string>(),
				 e["reason"].get<std::string>());
	s += "\n";
	if (doc["volumes"].is_null()) {
		s += "volumes: fxblk not loaded\n";
	} else {
		for (const auto &v : doc["volumes"]) {
			s += fmt::format("volume {} ({}): PCI P2PDMA {}{}\n", v["name"].get<std::string>(),
					 v["disk"].get<std::string>(),
					 v["p2pdma"].is_null() ? "unknown" : yes_no(v["p2pdma"]),
					 v["p2pdma_reason"].get<std::string>().empty()
						 ? ""
						 : ", " + v["p2pdma_reason"].get<std::string>());
			if (v["peer_queues"].is_array())
				s += "  peer queues: " + peer_queues_text(v["peer_queues"]) + "\n";
		}
		if (doc["volumes"].empty())
			s += "volumes: none\n";
	}
	s += fmt::format("\n{:<8} {:<12} {}\n", "MEMORY", "PATH", "WHY NOT DIRECT");
	for (const auto &p : doc["paths"])
		s += fmt::format("{:<8} {:<12} {}\n", p["memory"].get<std::string>(),
				 p["path"].get<std::string>(), p["reason"].get<std::string>());
	if (doc.contains("topology") && doc["topology"].is_object())
		s += "\n" + text_topology(doc["topology"]);
	return trimmed(s);
}

json peer_bench_doc(const std::string &device, std::uint64_t block, unsigned depth,
		    const std::vector<BenchResult> &r)
{
	json doc = {{"schema_version", schema_version}, {"device", device},
		    {"block_bytes", block}, {"depth", depth}, {"engine", "host"}};
	double posix = 0;
	for (const auto &x : r)
		if (x.path == "posix" && x.ran && x.seconds > 0)
			posix = static_cast<double>(x.bytes) / x.seconds;
	json rows = json::array();
	for (const auto &x : r) {
		json row = {{"path", x.path}, {"ran", x.ran}, {"reason", x.reason}};
		if (x.ran) {
			double bw = x.seconds > 0 ? static_cast<double>(x.bytes) / x.seconds : 0;
			row["bytes"] = x.bytes;
			row["ios"] = x.ios;
			row["seconds"] = x.seconds;
			row["bytes_per_second"] = bw;
			row["ratio_to_posix"] = posix > 0 ? json(bw / posix) : json();
			row["overlapped_slots"] = x.overlapped_slots;
		}
		rows.push_back(row);
	}
	doc["results"] = rows;
	return doc;
}

std::string text_peer_bench(const json &doc)
{
	std::string s = fmt::format("{}: sequential reads of {} at depth {}, host engine\n\n",
				    doc["device"].get<std::string>(),
				    format_size(doc["block_bytes"].get<std::uint64_t>()),
				    doc["depth"].get<unsigned>());
	s += fmt::format("{:<7} {:>10} {:>8} {:>8} {:>10}  {}\n", "PATH", "MiB/s", "x POSIX",
			 "I/Os", "OVERLAP", "NOTE");
	for (const auto &r : doc["results"]) {
		if (!r["ran"].get<bool>()) {
			s += fmt::format("{:<7} {:>10} {:>8} {:>8} {:>10}  not run: {}\n",
					 r["path"].get<std::string>(), "-", "-", "-", "-",
					 r["reason"].get<std::string>());
			continue;
		}
		s += fmt::format("{:<7} {:>10.1f} {:>8} {:>8} {:>10}  {}\n",
				 r["path"].get<std::string>(),
				 r["bytes_per_second"].get<double>() / (1 << 20),
				 r["ratio_to_posix"].is_null()
					 ? std::string("-")
					 : fmt::format("{:.2f}", r["ratio_to_posix"].get<double>()),
				 r["ios"].get<std::uint64_t>(),
				 r["overlapped_slots"].get<std::uint64_t>(), r["reason"].get<std::string>());
	}
	return trimmed(s);
}

void peer_options(po::options_description &opts, po::options_description &hidden,
		  po::positional_options_description &pos)
{
	opts.add_options()
		("size", po::value<std::string>()->default_value("256M")->value_name("SIZE"),
		 "bench: bytes read per path (from the start of the volume)")
		("block", po::value<std::string>()->default_value("4M")->value_name("SIZE"),
		 "bench: size of one read, a multiple of 4K")
		("depth", po::value<unsigned>()->default_value(4)->value_name("N"),
		 "bench: reads in flight (1..64)")
		("paths", po::value<std::string>()->default_value("posix,staged,direct")
				  ->value_name("LIST"),
		 "bench: which paths to measure, in order");
	hidden.add_options()
		("action", po::value<std::string>(), "status or bench")
		("device", po::value<std::string>(), "volume");
	pos.add("action", 1).add("device", 1);
}

namespace {

// A page-aligned host buffer, freed on scope exit.
struct HostBuffer {
	explicit HostBuffer(std::size_t n) : p(static_cast<char *>(std::aligned_alloc(4096, n)))
	{
		if (!p)
			throw Error("cannot allocate the bench buffer", errno_error(ENOMEM));
		std::memset(p, 0, n);
	}
	~HostBuffer() { std::free(p); }
	HostBuffer(const HostBuffer &) = delete;
	HostBuffer &operator=(const HostBuffer &) = delete;
	char *p;
};

// Reads [0, total) in @block pieces, @depth at a time, with one buffer
// slot per read in flight. -errno of the first failed read, else 0.
int bench_reads(fxio::File &f, char *buf, std::uint64_t total, std::uint64_t block,
		unsigned depth, BenchResult &r)
{
	auto t0 = std::chrono::steady_clock::now();
	fxio_stats before = f.stats();
	std::uint64_t next = 0, done = 0, n = total / block;
	unsigned inflight = 0;
	std::vector<unsigned> free_slots;
	for (unsigned i = depth; i-- > 0;)
		free_slots.push_back(i);
	fxio_event ev[64];
	int err = 0;
	while (done < n) {
		while (!err && next < n && !free_slots.empty()) {
			unsigned slot = free_slots.back();
			free_slots.pop_back();
			auto id = f.submit(false, buf, block, next * block, slot * block, slot);
			if (id < 0) {
				err = static_cast<int>(id);
				break;
			}
			++next;
			++inflight;
		}
		if (!inflight)
			break;
		int got = f.poll(ev, 64, -1);
		for (int i = 0; i < got; ++i) {
			--inflight;
			++done;
			free_slots.push_back(static_cast<unsigned>(ev[i].user_data));
			if (ev[i].result < 0 && !err)
				err = static_cast<int>(ev[i].result);
			else if (ev[i].path != FXIO_PATH_NONE && ev[i].reason && r.reason.empty())
				r.reason = fxio_reason_str(ev[i].reason);
		}
	}
	r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	fxio_stats after = f.stats();
	for (int p = 0; p < 4; ++p) {
		r.bytes += after.bytes[p] - before.bytes[p];
		r.ios += after.ios[p] - before.ios[p];
	}
	r.overlapped_slots = after.overlapped_slots - before.overlapped_slots;
	return err;
}

std::string resolve_device(Ctx &ctx, const std::string &arg)
{
	if (arg.find('/') != std::string::npos && arg.rfind("/dev/fx", 0) != 0)
		return arg;  // a device or file path (fxN and /dev/fxN are volumes)
	VolumeRef ref = VolumeRef::parse(arg);
	try {
		return "/dev/" + ctx.env.connect()->get(ref).disk;
	} catch (const KernelError &e) {
		fail_kernel(e, "benchmark", "peer", arg);
	}
}

int cmd_peer_bench(Ctx &ctx)
{
	if (!ctx.vm.count("device"))
		throw UsageError("peer bench: missing volume NAME (a name, fxN or /dev/fxN)");
	std::uint64_t total = parse_size(ctx.vm["size"].as<std::string>(), "--size");
	std::uint64_t block = parse_size(ctx.vm["block"].as<std::string>(), "--block");
	unsigned depth = ctx.vm["depth"].as<unsigned>();
	if (block == 0 || block % 4096 || block > (256ULL << 20))
		throw UsageError("peer bench: --block must be a multiple of 4K, at most 256M");
	if (depth == 0 || depth > 64)
		throw UsageError("peer bench: --depth must be 1..64");
	if (total < block)
		throw UsageError("peer bench: --size must be at least one --block");
	std::vector<std::string> paths;
	{
		std::string list = ctx.vm["paths"].as<std::string>();
		for (std::size_t p = 0; p <= list.size();) {
			std::size_t q = std::min(list.find(',', p), list.size());
			std::string x = list.substr(p, q - p);
			if (x != "posix" && x != "staged" && x != "direct")
				throw UsageError(fmt::format("peer bench: unknown path '{}' in --paths "
							     "(posix, staged, direct)", x));
			paths.push_back(x);
			p = q + 1;
		}
	}
	std::string dev = resolve_device(ctx, ctx.vm["device"].as<std::string>());

	fxio::Config cfg = fxio::Config::from_env();
	cfg.workers = depth;
	fxio::Library lib(cfg);
	std::unique_ptr<fxio::BlockDev> bd;
	if (int e = fxio::open_blockdev(dev, O_RDONLY, bd); e)
		throw Error(fmt::format("cannot open {} with O_DIRECT: {}", dev, std::strerror(-e)),
			    errno_error(-e));
	total = std::min<std::uint64_t>(total, bd->size()) / block * block;
	if (total == 0)
		throw Error(fmt::format("{} is smaller than one --block", dev), errno_error(EINVAL));
	fxio::File file(lib, std::move(bd));

	std::vector<BenchResult> results;
	for (const auto &path : paths) {
		BenchResult r;
		r.path = path;
		HostBuffer buf(block * depth);
		unsigned flags = path == "staged" ? FXIO_BUF_EMULATED : FXIO_BUF_HOST;
		if (path != "posix") {
			int e = lib.buf_register(buf.p, block * depth, flags);
			if (e)
				throw Error(fmt::format("cannot register the bench buffer: {}",
							std::strerror(-e)), errno_error(-e));
			auto reg = lib.find(buf.p, block * depth);
			if (path == "direct" && reg && reg->reason != FXIO_REASON_NONE) {
				r.reason = reg->why;
				lib.buf_deregister(buf.p);
				results.push_back(r);
				continue;
			}
		}
		int e = bench_reads(file, buf.p, total, block, depth, r);
		if (path != "posix")
			lib.buf_deregister(buf.p);
		if (e)
			throw Error(fmt::format("{} reads from {} failed: {}", path, dev,
						std::strerror(-e)), errno_error(-e));
		r.ran = true;
		if (path == "direct")
			r.reason.clear();
		results.push_back(r);
	}
	json doc = peer_bench_doc(dev, block, depth, results);
	ctx.print(doc, text_peer_bench(doc));
	return exit_ok;
}

}  // namespace

int cmd_peer(Ctx &ctx)
{
	std::string action = ctx.vm.count("action") ? ctx.vm["action"].as<std::string>() : "status";
	if (action == "status") {
		if (ctx.vm.count("device"))
			throw UsageError("peer status takes no further argument");
		json doc = peer_status_doc(ctx.env.peer_facts(ctx.env));
		ctx.print(doc, text_peer_status(doc));
		return exit_ok;
	}
	if (action == "bench")
		return cmd_peer_bench(ctx);
	throw UsageError(fmt::format("unknown peer action '{}': status or bench", action));
}

}  // namespace fxctl
