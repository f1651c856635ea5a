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
#include <map>
#include <memory>
#include <random>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>

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

json peer_bench_doc(const std::string &device, const BenchSpec &spec,
		    const std::vector<BenchResult> &r)
{
	json doc = {{"schema_version", schema_version}, {"device", device}, {"rw", spec.rw},
		    {"block_bytes", spec.block}, {"depth", spec.depth}, {"threads", spec.threads},
		    {"engine", "host"}};
	double posix = 0;
	for (const auto &x : r)
		if (x.path == "posix" && x.ran && x.seconds > 0)
			posix = static_cast<double>(x.bytes) / x.seconds;
	json rows = json::array();
	for (const auto &x : r) {
		json row = {{"path", x.path}, {"ran", x.ran}, {"reason", x.reason}};
		if (x.ran) {
			double bw = x.seconds > 0 ? static_cast<double>(x.bytes) / x.seconds : 0;
			double gib = static_cast<double>(x.bytes) / (1ULL << 30);
			row["bytes"] = x.bytes;
			row["ios"] = x.ios;
			row["seconds"] = x.seconds;
			row["bytes_per_second"] = bw;
			row["ratio_to_posix"] = posix > 0 ? json(bw / posix) : json();
			row["overlapped_slots"] = x.overlapped_slots;
			row["cpu_seconds"] = x.cpu_seconds;
			row["cpu_seconds_per_gib"] = gib > 0 ? json(x.cpu_seconds / gib) : json();
			row["latency_us"] = {{"p50", x.lat_p50_us}, {"p99", x.lat_p99_us},
					     {"max", x.lat_max_us}};
		}
		rows.push_back(row);
	}
	doc["results"] = rows;
	return doc;
}

// --rw's modes, and what the text output calls them
static const std::map<std::string, std::string> bench_modes = {
	{"read", "sequential reads"}, {"write", "sequential writes"},
	{"randread", "random reads"}, {"randwrite", "random writes"}};

std::string text_peer_bench(const json &doc)
{
	std::string s = fmt::format(
		"{}: {} of {} at depth {} x {} thread{}, host engine\n\n",
		doc["device"].get<std::string>(), bench_modes.at(doc["rw"].get<std::string>()),
		format_size(doc["block_bytes"].get<std::uint64_t>()), doc["depth"].get<unsigned>(),
		doc["threads"].get<unsigned>(), doc["threads"].get<unsigned>() == 1 ? "" : "s");
	s += fmt::format("{:<7} {:>9} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9}  {}\n", "PATH", "MiB/s",
			 "x POSIX", "I/Os", "OVERLAP", "CPU s/GiB", "p50 us", "p99 us", "NOTE");
	for (const auto &r : doc["results"]) {
		if (!r["ran"].get<bool>()) {
			s += fmt::format("{:<7} {:>9} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9}  not run: {}\n",
					 r["path"].get<std::string>(), "-", "-", "-", "-", "-", "-",
					 "-", r["reason"].get<std::string>());
			continue;
		}
		auto opt = [](const json &v) {
			return v.is_null() ? std::string("-") : fmt::format("{:.2f}", v.get<double>());
		};
		s += fmt::format("{:<7} {:>9.1f} {:>7} {:>7} {:>8} {:>9} {:>9.0f} {:>9.0f}  {}\n",
				 r["path"].get<std::string>(),
				 r["bytes_per_second"].get<double>() / (1 << 20),
				 opt(r["ratio_to_posix"]), r["ios"].get<std::uint64_t>(),
				 r["overlapped_slots"].get<std::uint64_t>(),
				 opt(r["cpu_seconds_per_gib"]), r["latency_us"]["p50"].get<double>(),
				 r["latency_us"]["p99"].get<double>(), r["reason"].get<std::string>());
	}
	return trimmed(s);
}

void peer_options(po::options_description &opts, po::options_description &hidden,
		  po::positional_options_description &pos)
{
	opts.add_options()
		("size", po::value<std::string>()->default_value("256M")->value_name("SIZE"),
		 "bench: bytes moved per path, in the first SIZE of the volume or file")
		("block", po::value<std::string>()->default_value("4M")->value_name("SIZE"),
		 "bench: size of one I/O, a multiple of 4K")
		("depth", po::value<unsigned>()->default_value(4)->value_name("N"),
		 "bench: I/Os in flight per thread (1..64)")
		("rw", po::value<std::string>()->default_value("read")->value_name("MODE"),
		 "bench: read, write, randread or randwrite")
		("threads", po::value<unsigned>()->default_value(1)->value_name("N"),
		 "bench: threads, each with its own handle (1..64)")
		("yes", po::bool_switch(), "bench: a write mode may overwrite a block device")
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

// One bench thread's share: its I/Os (sequential: its own stretch of the
// first @spec.total bytes; random: block-aligned offsets anywhere in it,
// from a generator seeded by the thread's number, so runs repeat) with one
// buffer slot per I/O in flight. Latencies (us) appended to @lat. -errno of
// the first failed I/O, else 0.
int bench_thread(fxio::File &f, char *buf, const BenchSpec &spec, unsigned t,
		 std::vector<double> &lat)
{
	const std::uint64_t n = spec.total / spec.block;
	const std::uint64_t first = n * t / spec.threads, count = n * (t + 1) / spec.threads - first;
	std::mt19937_64 rng(0x5eedULL + t);
	using clock = std::chrono::steady_clock;
	std::vector<clock::time_point> since(spec.depth);
	std::uint64_t next = 0, done = 0;
	unsigned inflight = 0;
	std::vector<unsigned> free_slots;
	for (unsigned i = spec.depth; i-- > 0;)
		free_slots.push_back(i);
	fxio_event ev[64];
	int err = 0;
	while (done < count) {
		while (!err && next < count && !free_slots.empty()) {
			unsigned slot = free_slots.back();
			free_slots.pop_back();
			std::uint64_t blk = spec.random() ? rng() % n : first + next;
			since[slot] = clock::now();
			auto id = f.submit(spec.write(), buf, spec.block, blk * spec.block,
					   slot * spec.block, slot);
			if (id < 0) {
				err = static_cast<int>(id);
				free_slots.push_back(slot);
				break;
			}
			++next;
			++inflight;
		}
		if (!inflight)
			break;
		int got = f.poll(ev, 64, -1);
		auto now = clock::now();
		for (int i = 0; i < got; ++i) {
			auto slot = static_cast<unsigned>(ev[i].user_data);
			lat.push_back(std::chrono::duration<double, std::micro>(now - since[slot]).count());
			--inflight;
			++done;
			free_slots.push_back(slot);
			if (ev[i].result < 0 && !err)
				err = static_cast<int>(ev[i].result);
		}
	}
	return err;
}

double cpu_seconds()
{
	rusage u{};
	getrusage(RUSAGE_SELF, &u);
	auto sec = [](const timeval &tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
	return sec(u.ru_utime) + sec(u.ru_stime);
}

// Runs one path of the bench: a handle, a buffer of @depth slots and (but
// for posix) its registration per thread. @r.reason: why direct did not
// run, or (staged) why the I/O was not direct. -errno, else 0.
int bench_path(fxio::Library &lib, const std::string &dev, const BenchSpec &spec,
	       BenchResult &r)
{
	struct Worker {
		std::unique_ptr<fxio::File> file;
		std::unique_ptr<HostBuffer> buf;
		std::vector<double> lat;
		fxio_stats before{};
		int err = 0;
	};
	std::vector<Worker> ws(spec.threads);
	const std::size_t bytes = spec.block * spec.depth;
	const unsigned flags = r.path == "staged" ? FXIO_BUF_EMULATED : FXIO_BUF_HOST;
	auto deregister = [&] {
		if (r.path != "posix")
			for (auto &w : ws)
				if (w.buf)
					lib.buf_deregister(w.buf->p);
	};
	for (auto &w : ws) {
		std::unique_ptr<fxio::BlockDev> bd;
		if (int e = fxio::open_blockdev(dev, spec.write() ? O_RDWR : O_RDONLY, bd); e) {
			deregister();
			return e;
		}
		w.file = std::make_unique<fxio::File>(lib, std::move(bd));
		w.buf = std::make_unique<HostBuffer>(bytes);
		if (spec.write())  // not zeros, which a device may treat apart
			for (std::size_t k = 0; k < bytes; k += 8)
				std::memcpy(w.buf->p + k, &k, 8);
		if (r.path == "posix") {
			r.reason = fxio_reason_str(FXIO_REASON_NOT_REGISTERED);
			continue;
		}
		if (int e = lib.buf_register(w.buf->p, bytes, flags); e) {
			w.buf.reset();  // not registered: nothing to undo
			deregister();
			throw Error(fmt::format("cannot register the bench buffer: {}", std::strerror(-e)),
				    errno_error(-e));
		}
		auto reg = lib.find(w.buf->p, bytes);
		if (r.path == "direct" && reg && reg->reason != FXIO_REASON_NONE) {
			r.reason = reg->why;
			deregister();
			return 0;  // not run
		}
		if (r.path == "staged" && reg)
			r.reason = fxio_reason_str(reg->reason);
	}
	for (auto &w : ws)
		w.before = w.file->stats();
	double cpu0 = cpu_seconds();
	auto t0 = std::chrono::steady_clock::now();
	{
		std::vector<std::thread> th;
		for (unsigned t = 0; t < spec.threads; ++t)
			th.emplace_back([&, t] {
				ws[t].err = bench_thread(*ws[t].file, ws[t].buf->p, spec, t, ws[t].lat);
			});
		for (auto &x : th)
			x.join();
	}
	r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	r.cpu_seconds = cpu_seconds() - cpu0;
	std::vector<double> lat;
	int err = 0;
	for (auto &w : ws) {
		fxio_stats after = w.file->stats();
		for (int p = 0; p < 4; ++p) {
			r.bytes += after.bytes[p] - w.before.bytes[p];
			r.ios += after.ios[p] - w.before.ios[p];
		}
		r.overlapped_slots += after.overlapped_slots - w.before.overlapped_slots;
		lat.insert(lat.end(), w.lat.begin(), w.lat.end());
		if (w.err && !err)
			err = w.err;
	}
	deregister();
	if (!lat.empty()) {
		std::sort(lat.begin(), lat.end());
		r.lat_p50_us = lat[lat.size() / 2];
		r.lat_p99_us = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
		r.lat_max_us = lat.back();
	}
	r.ran = !err;
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
	BenchSpec spec;
	spec.total = parse_size(ctx.vm["size"].as<std::string>(), "--size");
	spec.block = parse_size(ctx.vm["block"].as<std::string>(), "--block");
	spec.depth = ctx.vm["depth"].as<unsigned>();
	spec.threads = ctx.vm["threads"].as<unsigned>();
	spec.rw = ctx.vm["rw"].as<std::string>();
	if (spec.block == 0 || spec.block % 4096 || spec.block > (256ULL << 20))
		throw UsageError("peer bench: --block must be a multiple of 4K, at most 256M");
	if (spec.depth == 0 || spec.depth > 64)
		throw UsageError("peer bench: --depth must be 1..64");
	if (spec.threads == 0 || spec.threads > 64)
		throw UsageError("peer bench: --threads must be 1..64");
	if (!bench_modes.count(spec.rw))
		throw UsageError(fmt::format("peer bench: unknown --rw '{}' (read, write, randread, "
					     "randwrite)", spec.rw));
	if (spec.total < spec.block)
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
	struct stat st{};
	if (spec.write() && stat(dev.c_str(), &st) == 0 && S_ISBLK(st.st_mode) &&
	    !ctx.vm["yes"].as<bool>())
		throw Error(fmt::format("not benchmarking: --rw {} overwrites the first {} of {}, "
					"whose data is then lost; add --yes to do that, or bench a "
					"file on a file system on it",
					spec.rw, format_size(spec.total), dev),
			    errno_error(EPERM));

	fxio::Config cfg = fxio::Config::from_env();
	cfg.workers = spec.depth;
	fxio::Library lib(cfg);
	{
		std::unique_ptr<fxio::BlockDev> bd;
		if (int e = fxio::open_blockdev(dev, spec.write() ? O_RDWR : O_RDONLY, bd); e)
			throw Error(fmt::format("cannot open {} with O_DIRECT{}: {}", dev,
						spec.write() ? " for writing" : "", std::strerror(-e)),
				    errno_error(-e));
		spec.total = std::min<std::uint64_t>(spec.total, bd->size()) / spec.block * spec.block;
	}
	if (spec.total / spec.block < spec.threads)
		throw Error(fmt::format("{} holds fewer --block pieces than --threads", dev),
			    errno_error(EINVAL));

	std::vector<BenchResult> results;
	for (const auto &path : paths) {
		BenchResult r;
		r.path = path;
		if (int e = bench_path(lib, dev, spec, r); e)
			throw Error(fmt::format("{} {} of {} failed: {}", path, spec.rw, dev,
						std::strerror(-e)), errno_error(-e));
		results.push_back(r);
	}
	json doc = peer_bench_doc(dev, spec, results);
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
