// fxctl peer: status verdicts over fake facts (text and JSON from one
// document), and bench through libfxio on a file.
#include <algorithm>
#include <doctest/doctest.h>

#include "fakes.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace fxtest;

namespace {

PeerFacts no_kernel()
{
	PeerFacts f;
	f.node = "/dev/fxblk-peer";
	f.node_reason = "/dev/fxblk-peer absent (fxblk not loaded, or built without peer memory)";
	f.engines = {{"host", "", true, -1, ""},
		     {"hip", "libamdhip64.so", false, -1, "libamdhip64.so not loadable: no file"},
		     {"acl", "libascendcl.so", false, -1, "libascendcl.so not loadable: no file"}};
	return f;
}

PeerFacts rocm_host()
{
	PeerFacts f = no_kernel();
	f.node_usable = true;
	f.node_reason.clear();
	f.providers = {{"host", true, true, "", 1 << 20, 1},
		       {"rocm", true, false, "amd_rdma v2 gives DMA addresses only", 0, 0},
		       {"ascend", false, false, "hal_kernel_p2p_get_pages not exported", 0, 0},
		       {"dmabuf", true, false, "dma-buf attachments have no struct page", 0, 0}};
	f.engines[1] = {"hip", "libamdhip64.so", true, 2, ""};
	f.volumes = std::vector<PeerVolume>{
		{"kv", "fx0", false, "member nvme1n1 (nvme-rdma) does not support PCI P2PDMA",
		 std::vector<PeerQueue>{{"nvme0n1", "live", "rxe0"}, {"nvme1n1", "none", ""}}},
		{"old", "fx1", std::nullopt, "the fxblk module does not report PCI P2PDMA (an older release)",
		 std::nullopt}};
	return f;
}

}  // namespace

TEST_CASE("peer status without the control node: posix for host, no engine for GPUs")
{
	Harness h;
	PeerFacts f = no_kernel();
	h.peer_facts = [&](Env &) { return f; };
	CHECK(h.run({"-o", "json", "peer", "status"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["control_node"]["usable"] == false);
	CHECK(doc["volumes"].is_null());
	CHECK(doc["paths"][0]["memory"] == "host");
	CHECK(doc["paths"][0]["path"] == "posix");
	CHECK(doc["paths"][0]["reason"] == f.node_reason);
	CHECK(doc["paths"][1]["path"] == "unavailable");
	CHECK(doc["paths"][1]["reason"] == "libamdhip64.so not loadable: no file");
	CHECK(h.run({"peer"}) == 0);  // status is the default
	CHECK(h.out.str().find("control node /dev/fxblk-peer: not usable: /dev/fxblk-peer absent")
	      != std::string::npos);
	CHECK(h.out.str().find("volumes: fxblk not loaded") != std::string::npos);
}

TEST_CASE("peer status on a ROCm host: host direct, GPU staged with the kernel's reason")
{
	Harness h;
	PeerFacts f = rocm_host();
	h.peer_facts = [&](Env &) { return f; };
	CHECK(h.run({"-o", "json", "peer", "status"}) == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["providers"][0]["pinned_bytes"] == 1 << 20);
	CHECK(doc["paths"][0]["path"] == "direct");
	CHECK(doc["paths"][1]["path"] == "staged");
	CHECK(doc["paths"][1]["reason"] == "amd_rdma v2 gives DMA addresses only");
	CHECK(doc["paths"][2]["path"] == "unavailable");
	CHECK(doc["volumes"][0]["p2pdma"] == false);
	CHECK(doc["volumes"][0]["p2pdma_reason"] == "member nvme1n1 (nvme-rdma) does not support PCI P2PDMA");
	CHECK(doc["volumes"][1]["p2pdma"].is_null());
	CHECK(doc["volumes"][0]["peer_queues"].dump() ==
	      R"([{"member":"nvme0n1","nic":"rxe0","state":"live"},)"
	      R"({"member":"nvme1n1","nic":"","state":"none"}])");
	CHECK(doc["volumes"][1]["peer_queues"].is_null());
	CHECK(h.run({"peer", "status"}) == 0);
	const std::string out = h.out.str();
	CHECK(out.find("rocm     yes     no              0 B     0  amd_rdma v2 gives DMA addresses only\n") != std::string::npos);
	CHECK(out.find("rocm     staged       amd_rdma v2") != std::string::npos);
	CHECK(out.find("host     direct") != std::string::npos);
	CHECK(out.find("volume kv (fx0): PCI P2PDMA no, member nvme1n1 (nvme-rdma) does not support "
		       "PCI P2PDMA\n") != std::string::npos);
	CHECK(out.find("  peer queues: nvme0n1 live on rxe0, nvme1n1 none\n") != std::string::npos);
	CHECK(out.find("volume fx1") == std::string::npos);
	CHECK(out.find("volume old (fx1): PCI P2PDMA unknown, the fxblk module does not report")
	      != std::string::npos);
}

TEST_CASE("peer queues of a volume from the kernel's member attributes")
{
	Volume v;
	v.members.resize(3);
	v.members[0].disk = "nvme0n1";
	v.members[1].disk = "nvme1n1";
	v.members[2].disk = "nvme2n1";
	CHECK_FALSE(peer_queues(v));  // an older module: unknown
	v.members[0].peerq_state = FXBLK_PEERQ_LIVE;
	v.members[0].peerq_nic = "mlx5_0";
	v.members[1].peerq_state = FXBLK_PEERQ_FAILED;
	CHECK_FALSE(peer_queues(v));  // one member unknown: all unknown
	v.members[2].peerq_state = 99;
	auto q = peer_queues(v);
	REQUIRE(q);
	REQUIRE(q->size() == 3);
	CHECK((*q)[0].state == "live");
	CHECK((*q)[0].nic == "mlx5_0");
	CHECK((*q)[1].state == "failed");
	CHECK((*q)[1].nic.empty());
	CHECK((*q)[2].state == "unknown (99)");
}

TEST_CASE("peer: usage errors")
{
	Harness h;
	CHECK(h.run({"peer", "frob"}) == 2);
	CHECK(h.run({"peer", "bench"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--block", "1000"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--paths", "posix,fast"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--depth", "0"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--rw", "trim"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--threads", "0"}) == 2);
	CHECK(h.run({"peer", "bench", "/x", "--threads", "65"}) == 2);
	CHECK(h.run({"peer", "status", "extra"}) == 2);
}

// A directory whose file system takes O_DIRECT (the bench opens its file
// with it): the build tree, else $TMPDIR, /var/tmp, /tmp (tmpfs takes
// O_DIRECT from Linux 6.6). None: the test fails and says so, it does not
// pass without having run.
static std::string odirect_dir()
{
	std::vector<std::string> dirs;
	char cwd[4096];
	if (getcwd(cwd, sizeof(cwd)))
		dirs.emplace_back(cwd);
	if (const char *t = std::getenv("TMPDIR"))
		dirs.emplace_back(t);
	dirs.emplace_back("/var/tmp");
	dirs.emplace_back("/tmp");
	for (const auto &d : dirs) {
		std::string tmpl = d + "/fxctl-odirect-XXXXXX";
		std::vector<char> p(tmpl.begin(), tmpl.end());
		p.push_back('\0');
		int fd = mkstemp(p.data());
		if (fd < 0)
			continue;
		close(fd);
		fd = open(p.data(), O_RDWR | O_DIRECT);
		unlink(p.data());
		if (fd >= 0) {
			close(fd);
			return d;
		}
	}
	return {};
}

// An 8 MiB file of zeros in odirect_dir(), removed with the object. No
// such directory: the test fails and says so.
struct BenchFile {
	BenchFile()
	{
		dir = odirect_dir();
		if (dir.empty())
			FAIL("no directory here (build tree, $TMPDIR, /var/tmp, /tmp) takes "
			     "O_DIRECT: set TMPDIR to a disk file system to run this test");
		std::string tmpl = dir + "/fxctl-peer-bench-XXXXXX";
		std::vector<char> p(tmpl.begin(), tmpl.end());
		p.push_back('\0');
		fd = mkstemp(p.data());
		REQUIRE(fd >= 0);
		path = p.data();
		REQUIRE(ftruncate(fd, 8 << 20) == 0);
	}
	~BenchFile()
	{
		if (fd >= 0)
			close(fd);
		if (!path.empty())
			unlink(path.c_str());
	}
	BenchFile(const BenchFile &) = delete;
	BenchFile &operator=(const BenchFile &) = delete;
	std::string dir, path;
	int fd = -1;
};

TEST_CASE("peer bench on a file: posix and staged rows, direct says why not")
{
	BenchFile f;
	Harness h;
	int rc = h.run({"-o", "json", "peer", "bench", f.path, "--size", "8M", "--block", "2M",
			"--depth", "2"});
	INFO("fxctl peer bench in ", f.dir, ": ", h.err.str());
	REQUIRE(rc == 0);
	auto doc = nlohmann::json::parse(h.out.str());
	REQUIRE(doc["results"].size() == 3);
	CHECK(doc["results"][0]["path"] == "posix");
	CHECK(doc["results"][0]["bytes"] == 8 << 20);
	CHECK(doc["results"][0]["ratio_to_posix"] == 1.0);
	CHECK(doc["results"][1]["path"] == "staged");
	CHECK(doc["results"][1]["bytes"] == 8 << 20);
	CHECK(doc["results"][1]["ios"] == 4);
	CHECK(doc["results"][2]["path"] == "direct");
	if (doc["results"][2]["ran"] == false)  // no /dev/fxblk-peer here
		CHECK(!doc["results"][2]["reason"].get<std::string>().empty());
}

TEST_CASE("peer bench: random writes from several threads, CPU and latency per row")
{
	BenchFile f;  // zeros
	Harness h;
	int rc = h.run({"-o", "json", "peer", "bench", f.path, "--size", "16M", "--block", "1M",
			"--depth", "2", "--threads", "3", "--rw", "randwrite", "--paths",
			"posix,staged"});
	// what was written: the bench's pattern (not zeros) somewhere in the file
	std::vector<char> back(8 << 20);
	REQUIRE(pread(f.fd, back.data(), back.size(), 0) == static_cast<ssize_t>(back.size()));
	INFO("fxctl peer bench in ", f.dir, ": ", h.err.str());
	REQUIRE(rc == 0);
	CHECK(std::any_of(back.begin(), back.end(), [](char c) { return c != 0; }));
	auto doc = nlohmann::json::parse(h.out.str());
	CHECK(doc["rw"] == "randwrite");
	CHECK(doc["threads"] == 3);
	REQUIRE(doc["results"].size() == 2);
	for (const auto &r : doc["results"]) {
		INFO(r.dump());
		CHECK(r["ran"] == true);
		CHECK(r["bytes"] == 8 << 20);  // --size is cut to the file's 8 MiB
		CHECK(r["ios"] == 8);          // 8 blocks shared by 3 threads: 2, 3, 3
		CHECK(r["latency_us"]["p50"].get<double>() > 0);
		CHECK(r["latency_us"]["p99"].get<double>() >= r["latency_us"]["p50"].get<double>());
		CHECK(r["cpu_seconds_per_gib"].is_number());
	}
}

// ---- topology: a fake /sys with a PCIe switch, a second root port and a
// second host bridge -----------------------------------------------------------

namespace {

namespace fs = std::filesystem;

struct FakeSys {
	FakeSys()
	{
		char tmpl[] = "/tmp/fxctl-sysfs-XXXXXX";
		REQUIRE(mkdtemp(tmpl));
		root = tmpl;
		fs::create_directories(root / "class/infiniband/rxe0");  // software: no device
		fs::create_directories(root / "class/iommu/dmar0");
		group(7, "identity");
		// root port 00:01.0 -> switch 01:00.0 -> downstream 02:00.0 (GPU), 02:01.0 (NIC)
		func("pci0000:00/0000:00:01.0", 0x8086, 0x060400);
		func("pci0000:00/0000:00:01.0/0000:01:00.0", 0x10b5, 0x060400);
		bridge("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0", 0);
		bridge("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0", 0);
		gpu = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
		func(gpu, 0x1002, 0x038000, 256ULL << 30, 192ULL << 30, 7);
		nic("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0");
		// another root port of the same host bridge; another host bridge
		func("pci0000:00/0000:00:02.0", 0x8086, 0x060400);
		nic("mlx5_1", "pci0000:00/0000:00:02.0/0000:05:00.0");
		func("pci0000:80/0000:80:01.0", 0x8086, 0x060400);
		nic("mlx5_2", "pci0000:80/0000:80:01.0/0000:81:00.0");
	}
	~FakeSys() { fs::remove_all(root); }
	static void put(const fs::path &p, const std::string &s)
	{
		fs::create_directories(p.parent_path());
		std::ofstream(p, std::ios::binary) << s;
	}
	void group(int n, const std::string &type)
	{
		put(root / "kernel/iommu_groups" / std::to_string(n) / "type", type + "\n");
	}
	void func(const std::string &path, unsigned vendor, unsigned cls, std::uint64_t bar = 0,
		  std::uint64_t vram = 0, int iommu_group = -1, std::string config = std::string(64, '\0'))
	{
		fs::path d = root / "devices" / path;
		fs::create_directories(d);
		std::string bdf = d.filename().string();
		put(d / "vendor", fmt::format("0x{:04x}\n", vendor));
		put(d / "class", fmt::format("0x{:06x}\n", cls));
		std::string res;
		for (int i = 0; i < 6; ++i)
			res += i == 0 && bar ? fmt::format("0x0000002000000000 0x{:016x} 0x000000000014220c\n",
							   0x2000000000ULL + bar - 1)
					     : "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
		put(d / "resource", res);
		if (vram)
			put(d / "mem_info_vram_total", std::to_string(vram) + "\n");
		put(d / "config", config);
		if (iommu_group >= 0)
			fs::create_directory_symlink(root / "kernel/iommu_groups" / std::to_string(iommu_group),
						     d / "iommu_group");
		fs::create_directories(root / "bus/pci/devices");
		fs::create_directory_symlink(d, root / "bus/pci/devices" / bdf);
	}
	// a switch downstream port with an ACS capability at 0x100 (control @ctrl)
	void bridge(const std::string &path, unsigned ctrl)
	{
		std::string c(4096, '\0');
		c[0x100] = 0x0d;   // PCI_EXT_CAP_ID_ACS, version 1, next 0
		c[0x102] = 0x01;
		c[0x104] = 0x5f;   // capabilities
		c[0x106] = static_cast<char>(ctrl & 0xff);
		func(path, 0x10b5, 0x060400, 0, 0, -1, c);
	}
	void set_acs(const std::string &bdf, unsigned ctrl)
	{
		fs::path cfg = fs::canonical(root / "bus/pci/devices" / bdf) / "config";
		std::string c(4096, '\0');
		c[0x100] = 0x0d;
		c[0x102] = 0x01;
		c[0x104] = 0x5f;
		c[0x106] = static_cast<char>(ctrl & 0xff);
		put(cfg, c);
	}
	void nic(const std::string &name, const std::string &path)
	{
		func(path, 0x15b3, 0x020000, 32 << 20, 0, 7);
		fs::create_directories(root / "class/infiniband" / name);
		fs::create_directory_symlink(root / "devices" / path, root / "class/infiniband" / name / "device");
	}
	nlohmann::json pair(const nlohmann::json &doc, const std::string &nic,
			    const std::string &acc = "0000:03:00.0")
	{
		for (const auto &p : doc["pairs"])
			if (p["nic"] == nic && p["accelerator"] == acc)
				return p;
		FAIL("no pair with ", nic);
		return {};
	}
	fs::path root;
	std::string gpu;
};

}  // namespace

TEST_CASE("topology: verdicts by PCI distance, ACS, IOMMU and BAR")
{
	FakeSys s;
	auto doc = topology_doc(read_topology(s.root.string()));
	INFO(doc.dump(1));
	CHECK(doc["iommu"] == true);
	REQUIRE(doc["accelerators"].size() == 1);
	CHECK(doc["accelerators"][0]["pci"] == "0000:03:00.0");
	CHECK(doc["accelerators"][0]["kind"] == "rocm");
	CHECK(doc["accelerators"][0]["bar_bytes"] == 256ULL << 30);
	CHECK(doc["accelerators"][0]["iommu"] == "identity");
	REQUIRE(doc["nics"].size() == 4);
	CHECK(doc["nics"][3]["name"] == "rxe0");
	CHECK(doc["nics"][3]["pci"].is_null());
	REQUIRE(doc["pairs"].size() == 4);

	auto p = s.pair(doc, "mlx5_0");  // same switch, ACS off, passthrough
	CHECK(p["distance"] == "switch");
	CHECK(p["via"] == "0000:01:00.0");
	CHECK(p["verdict"] == "ok");
	CHECK(p["reasons"].empty());
	p = s.pair(doc, "mlx5_1");  // another root port
	CHECK(p["distance"] == "host_bridge");
	CHECK(p["via"] == "pci0000:00");
	CHECK(p["verdict"] == "maybe");
	p = s.pair(doc, "mlx5_2");  // another host bridge
	CHECK(p["distance"] == "cross_host_bridge");
	CHECK(p["verdict"] == "no");
	p = s.pair(doc, "rxe0");
	CHECK(p["distance"] == "none");
	CHECK(p["verdict"] == "no");
	CHECK(p["reasons"][0].get<std::string>().find("software RDMA device") != std::string::npos);

	std::string text = text_topology(doc);
	CHECK(text.find("0000:03:00.0 <-> mlx5_0: ok (switch 0000:01:00.0)") != std::string::npos);
	CHECK(text.find("RDMA rxe0: software device") != std::string::npos);

	SUBCASE("ACS P2P redirect on the NIC's downstream port")
	{
		s.set_acs("0000:02:01.0", 0x0c);  // request and completion redirect
		p = s.pair(topology_doc(read_topology(s.root.string())), "mlx5_0");
		CHECK(p["verdict"] == "maybe");
		REQUIRE(p["reasons"].size() == 1);
		CHECK(p["reasons"][0].get<std::string>().find("ACS on 0000:02:01.0 redirects") !=
		      std::string::npos);
	}
	SUBCASE("config space read without root: ACS unknown")
	{
		FakeSys::put(fs::canonical(s.root / "bus/pci/devices/0000:02:00.0") / "config",
			     std::string(64, '\0'));
		p = s.pair(topology_doc(read_topology(s.root.string())), "mlx5_0");
		CHECK(p["verdict"] == "maybe");
		CHECK(p["reasons"][0].get<std::string>().find("ACS of 0000:02:00.0 unknown") !=
		      std::string::npos);
	}
	SUBCASE("the IOMMU translates")
	{
		s.group(7, "DMA-FQ");
		p = s.pair(topology_doc(read_topology(s.root.string())), "mlx5_0");
		CHECK(p["verdict"] == "maybe");
		CHECK(p["reasons"][0].get<std::string>().find("iommu=pt") != std::string::npos);
	}
	SUBCASE("a BAR smaller than the memory")
	{
		FakeSys::put(s.root / "devices" / s.gpu / "mem_info_vram_total",
			     std::to_string(512ULL << 30) + "\n");
		p = s.pair(topology_doc(read_topology(s.root.string())), "mlx5_0");
		CHECK(p["verdict"] == "maybe");
		CHECK(p["reasons"][0].get<std::string>().find("BAR") != std::string::npos);
	}
	SUBCASE("an Ascend NPU is an accelerator; AMD audio is not")
	{
		s.func("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.1", 0x1002,
		       0x040300);
		s.func("pci0000:00/0000:00:02.0/0000:06:00.0", 0x19e5, 0x120000, 64ULL << 30);
		doc = topology_doc(read_topology(s.root.string()));
		REQUIRE(doc["accelerators"].size() == 2);
		CHECK(doc["accelerators"][1]["kind"] == "ascend");
		CHECK(doc["pairs"].size() == 8);
		p = s.pair(doc, "mlx5_1", "0000:06:00.0");
		CHECK(p["distance"] == "switch");  // both below root port 00:02.0
		CHECK(p["via"] == "0000:00:02.0");
		CHECK(p["verdict"] == "ok");
	}
}

TEST_CASE("topology: none without accelerators; in peer status's document and text")
{
	FakeSys s;
	fs::remove_all(s.root / "devices" / s.gpu);
	fs::remove(s.root / "bus/pci/devices/0000:03:00.0");
	Topology t = read_topology(s.root.string());
	CHECK(t.accelerators.empty());
	PeerFacts f = no_kernel();
	f.topology = t;
	auto doc = peer_status_doc(f);
	CHECK(doc["topology"]["pairs"].empty());
	CHECK(text_peer_status(doc).find("no AMD or Huawei accelerator on the PCI bus") !=
	      std::string::npos);
	CHECK(peer_status_doc(no_kernel())["topology"].is_null());
	CHECK(read_topology("/nonexistent").nics.empty());
}
