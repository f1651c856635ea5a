// JSON shape of every command's output, from fixed decoded data: the
// contract the lab tests and users script against (schema_version 2).
#include <doctest/doctest.h>

#include "fakes.hpp"
#include "render.hpp"

#include <nlohmann/json.hpp>

using namespace fxtest;
using json = nlohmann::ordered_json;  // what fxctl prints: order kept

namespace {

json run_json(Harness &h, std::vector<std::string> args)
{
	args.insert(args.begin(), {"-o", "json"});
	int rc = h.run(args);
	INFO(h.err.str());
	REQUIRE(rc == 0);
	json doc = json::parse(h.out.str());
	CHECK(doc.at("schema_version") == 2);
	return doc;
}

void check_keys(const json &obj, std::initializer_list<const char *> keys)
{
	REQUIRE(obj.is_object());
	for (const char *k : keys) {
		INFO("key " << k);
		CHECK(obj.contains(k));
	}
}

void check_stat(const json &s, bool write)
{
	check_keys(s, {"ios", "bytes", "errors", "inflight", "p50_us", "p99_us",
		       "latency_us_log2"});
	CHECK_FALSE(s.contains("sectors"));
	for (const char *k : {"ios", "bytes", "errors", "inflight"})
		CHECK(s.at(k).is_number_unsigned());
	REQUIRE(s.at("latency_us_log2").is_array());
	CHECK(s.at("latency_us_log2").size() == FXBLK_LAT_BUCKETS);
	CHECK(s.contains("fua") == write);
}

void check_volume(const json &v, unsigned members, bool stats)
{
	check_keys(v, {"name", "index", "disk", "device", "uuid", "state", "flags", "chunk_bytes",
		       "capacity_bytes", "logical_block_size", "open_count", "p2pdma",
		       "members"});
	// Identity first, health next, members last: a stable, meaningful order.
	std::vector<std::string> keys;
	for (const auto &[k, val] : v.items())
		keys.push_back(k);
	CHECK(keys == std::vector<std::string>{"name", "index", "disk", "device", "uuid",
					       "state", "flags", "chunk_bytes", "capacity_bytes",
					       "logical_block_size", "open_count", "p2pdma",
					       "members"});
	// one shape: the labels' UUID as text, or null when the module has none
	CHECK((v.at("uuid").is_null() || v.at("uuid").is_string()));
	check_keys(v.at("p2pdma"), {"capable", "reason"});
	CHECK(v.at("name").is_string());
	CHECK(v.at("index").is_number_unsigned());
	CHECK(v.at("device") == "/dev/" + v.at("disk").get<std::string>());
	CHECK(v.at("chunk_bytes") == 512 * 1024);          // sectors -> bytes
	CHECK(v.at("capacity_bytes") == members * 2086912ULL * 512);
	CHECK(v.at("logical_block_size") == 512);
	REQUIRE(v.at("members").size() == members);
	for (unsigned i = 0; i < members; ++i) {
		const json &m = v.at("members")[i];
		check_keys(m, {"index", "disk", "device", "major", "minor", "state", "errors",
			       "data_offset_bytes", "data_bytes", "pci_p2pdma"});
		CHECK(m.at("index") == i);
		CHECK(m.at("disk") == "nvme" + std::to_string(i) + "n1");
		CHECK(m.at("device") == "/dev/nvme" + std::to_string(i) + "n1");
		CHECK(m.at("major") == 259);
		CHECK(m.at("minor") == i);
		CHECK(m.at("data_offset_bytes") == 4 * 1024 * 1024);
		CHECK(m.at("data_bytes") == 2086912ULL * 512);
		for (const char *op : {"read", "write", "discard", "flush"})
			CHECK(m.contains(op) == stats);
		if (stats) {
			check_stat(m.at("read"), false);
			check_stat(m.at("write"), true);
			check_stat(m.at("discard"), false);
			check_stat(m.at("flush"), false);
			CHECK(m.at("read").at("ios") == 100 * (i + 1));
			CHECK(m.at("read").at("bytes") == 800 * (i + 1) * 512);
			CHECK(m.at("read").at("latency_us_log2")[6] == 90);
			CHECK(m.at("write").at("fua") == 3);
		}
	}
}

}  // namespace

TEST_CASE("version")
{
	Harness h;
	json d = run_json(h, {"version"});
	check_keys(d, {"schema_version", "fxctl", "module"});
	CHECK(d.begin().key() == "schema_version");
	CHECK(d.at("fxctl").at("version") == FXCTL_VERSION);
	check_keys(d.at("module"), {"version", "api_version", "features"});
	CHECK(d.at("module").at("api_version") == 1);
	CHECK(d.at("module").at("features") ==
	      json::array({"stripe", "stats", "events", "nowait"}));
	CHECK(d.size() == 3);
	CHECK_FALSE(d.at("module").contains("live_volumes"));  // older module: absent

	h.state.module.live_volumes = 2;
	d = run_json(h, {"version"});
	CHECK(d.at("module").at("live_volumes") == 2);
	CHECK(d.at("module").dump() == "{\"version\":\"0.1.0\",\"api_version\":1,\"features\":"
				       "[\"stripe\",\"stats\",\"events\",\"nowait\"],\"live_volumes\":2}");
	h.run({"version"});
	CHECK(h.out.str().find("live volumes: 2\n") != std::string::npos);
}

TEST_CASE("create and show")
{
	Harness h;
	json d = run_json(h, {"create", "vol1", "/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1",
			      "/dev/nvme3n1"});
	CHECK(d.size() == 2);
	check_volume(d.at("volume"), 4, false);
	d = run_json(h, {"show", "vol1"});
	CHECK(d.size() == 2);
	check_volume(d.at("volume"), 4, false);
}

TEST_CASE("list")
{
	Harness h;
	h.state.volumes.clear();
	json d = run_json(h, {"list"});
	REQUIRE(d.at("volumes").is_array());
	CHECK(d.at("volumes").empty());
	h.state.volumes = {fixed_volume(4), fixed_volume(2)};
	h.state.volumes[1].index = 1;
	h.state.volumes[1].disk = "fx1";
	h.state.volumes[1].name = "vol2";
	d = run_json(h, {"list"});
	REQUIRE(d.at("volumes").size() == 2);
	check_volume(d.at("volumes")[0], 4, false);
	check_volume(d.at("volumes")[1], 2, false);
	CHECK(d.at("volumes")[1].at("device") == "/dev/fx1");
}

TEST_CASE("stats")
{
	Harness h;
	json d = run_json(h, {"stats", "fx0"});
	check_volume(d.at("volume"), 4, true);
	CHECK(d.at("timestamp").is_number_float());
	std::vector<std::string> keys;
	for (const auto &[k, val] : d.items())
		keys.push_back(k);
	CHECK(keys == std::vector<std::string>{"schema_version", "timestamp", "volume"});
}

TEST_CASE("remove")
{
	Harness h;
	json d = run_json(h, {"remove", "vol1"});
	check_volume(d.at("volume"), 4, false);
}

TEST_CASE("text is rendered from the same document")
{
	json doc = volume_doc(fixed_volume(4, true));
	std::string show = text_volume(doc);
	CHECK(show.find("fx0 \"vol1\"  /dev/fx0") == 0);
	CHECK(show.find("4 members, chunk 512 KiB, 3.98 GiB") != std::string::npos);
	CHECK(show.find("259:3") != std::string::npos);
	// Change the document, not the volume: the text follows.
	doc["volume"]["name"] = "renamed";
	CHECK(text_created(doc) == "created fx0 \"renamed\": 4 members, chunk 512 KiB, 3.98 GiB\n");
	CHECK(text_list(list_doc({})) == "no volumes\n");
	CHECK(feature_names(FXBLK_FEAT_STATS | (1ULL << 9)) ==
	      std::vector<std::string>{"stats", "bit9"});
}
