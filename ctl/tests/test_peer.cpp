// fxctl peer: status verdicts over fake facts (text and JSON from one
// document), and bench through libfxio on a file.
#include <doctest/doctest.h>

#include "fakes.hpp"

#include <cstdlib>
#include <fcntl.h>
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

TEST_CASE("peer bench on a file: posix and staged rows, direct says why not")
{
	std::string dir = odirect_dir();
	if (dir.empty())
		FAIL("no directory here (build tree, $TMPDIR, /var/tmp, /tmp) takes O_DIRECT: "
		     "set TMPDIR to a disk file system to run this test");
	std::string tmpl = dir + "/fxctl-peer-bench-XXXXXX";
	std::vector<char> path(tmpl.begin(), tmpl.end());
	path.push_back('\0');
	int fd = mkstemp(path.data());
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, 8 << 20) == 0);
	close(fd);
	Harness h;
	int rc = h.run({"-o", "json", "peer", "bench", std::string(path.data()), "--size", "8M",
			"--block", "2M", "--depth", "2"});
	unlink(path.data());
	INFO("fxctl peer bench in ", dir, ": ", h.err.str());
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
