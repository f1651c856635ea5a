// Test doubles for fxctl's seams: the netlink client, member devices and
// the clock. They record what fxctl asked for and answer from fixed data.
#pragma once

#include "cli.hpp"
#include "error.hpp"

#include <functional>
#include <map>
#include <sys/stat.h>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fxtest {
using namespace fxctl;

inline bool has(const std::string &s, const std::string &what)
{
	return s.find(what) != std::string::npos;
}

inline Volume fixed_volume(unsigned members = 4, bool stats = false)
{
	Volume v;
	v.index = 0;
	v.name = "vol1";
	v.disk = "fx0";
	v.chunk_sectors = 1024;
	v.capacity = members * 2086912ULL;
	v.logical_block_size = 512;
	v.open_count = 0;
	for (unsigned i = 0; i < members; ++i) {
		Member m;
		m.index = i;
		m.major = 259;
		m.minor = i;
		m.disk = "nvme" + std::to_string(i) + "n1";
		m.data_offset = 8192;
		m.data_sectors = 2086912;
		if (stats) {
			MemberStats st;
			st.read.ios = 100 * (i + 1);
			st.read.sectors = 800 * (i + 1);
			st.read.lat_hist[6] = 90;   // 64..127 us
			st.read.lat_hist[10] = 10;  // 1..2 ms
			st.write.ios = 10;
			st.write.sectors = 80;
			st.write.fua = 3;
			st.flush.ios = 2;
			m.stats = st;
		}
		v.members.push_back(m);
	}
	return v;
}

// Hands out queued events; waits by advancing the fake clock; with nothing
// queued and no timeout, the module "goes away" (ModuleNotLoaded).
struct FakeEvents final : EventSource {
	std::vector<Event> &queue;
	std::vector<bool> &lost_flags;  // per next() call, front first
	std::function<void(double)> &wait;
	FakeEvents(std::vector<Event> &q, std::vector<bool> &l, std::function<void(double)> &w)
		: queue(q), lost_flags(l), wait(w) {}
	bool lost_now = false;

	std::optional<Event> next(std::optional<double> timeout) override
	{
		if (!lost_flags.empty()) {
			lost_now = lost_flags.front();
			lost_flags.erase(lost_flags.begin());
		}
		if (!queue.empty()) {
			Event ev = queue.front();
			queue.erase(queue.begin());
			if (wait)
				wait(0.25);
			return ev;
		}
		if (!timeout)
			throw ModuleNotLoaded("the fxblk module was unloaded; no more events");
		if (wait)
			wait(*timeout);
		return std::nullopt;
	}
	bool lost() override { return std::exchange(lost_now, false); }
};

struct FakeClient final : Client {
	// Shared with the test across connect() calls.
	struct State {
		std::vector<CreateRequest> creates;
		std::vector<VolumeRef> destroys, gets, stats;
		std::vector<bool> forces;
		std::function<void()> on_stats;  // e.g. advance the fake clock
		int list_calls = 0;
		std::optional<KernelError> fail_create, fail_destroy, fail_get, fail_stats;
		std::vector<Volume> volumes{fixed_volume()};
		std::uint64_t stats_tick = 0;  // advances counters per STATS call
		std::vector<Event> events;     // for monitor
		std::vector<bool> events_lost;
		std::function<void(double)> on_wait;  // advances the fake clock
		int subscribes = 0;
		bool no_event_group = false;   // an older module
		// create adds the volume it made to @volumes (members with the
		// request's dev_t), as the kernel lists it afterwards
		bool remember_creates = false;
		ModuleStatus module{"0.1.0", 1,
				    FXBLK_FEAT_STRIPE | FXBLK_FEAT_STATS | FXBLK_FEAT_EVENTS |
					    FXBLK_FEAT_NOWAIT,
				    {}};
	};
	State &st;
	explicit FakeClient(State &s) : st(s) {}

	ModuleStatus status() override { return st.module; }
	Volume create(const CreateRequest &req) override
	{
		st.creates.push_back(req);
		if (st.fail_create)
			throw *st.fail_create;
		// as strict validation in a module without FXBLK_FEAT_UUID
		if (req.uuid && !(st.module.features & FXBLK_FEAT_UUID))
			throw KernelError(EINVAL, "Unknown attribute type", "invalid");
		Volume v = fixed_volume(static_cast<unsigned>(req.members.size()));
		v.name = req.name;
		v.chunk_sectors = req.chunk_sectors;
		v.uuid = req.uuid;
		if (st.remember_creates) {
			v.index = static_cast<std::uint32_t>(st.volumes.size());
			v.disk = "fx" + std::to_string(v.index);
			// named as the kernel would: the disk of that dev_t, which
			// for Harness's devices is nvme<minor>n1
			for (std::size_t i = 0; i < v.members.size(); ++i) {
				v.members[i].major = req.members[i].major;
				v.members[i].minor = req.members[i].minor;
				v.members[i].disk =
					"nvme" + std::to_string(req.members[i].minor) + "n1";
			}
			st.volumes.push_back(v);
		}
		return v;
	}
	void destroy(const VolumeRef &ref, bool force) override
	{
		st.destroys.push_back(ref);
		st.forces.push_back(force);
		if (st.fail_destroy)
			throw *st.fail_destroy;
	}
	Volume get(const VolumeRef &ref) override
	{
		st.gets.push_back(ref);
		if (st.fail_get)
			throw *st.fail_get;
		return find(ref);
	}
	std::vector<Volume> list() override
	{
		++st.list_calls;
		return st.volumes;
	}
	Volume stats(const VolumeRef &ref) override
	{
		st.stats.push_back(ref);
		if (st.fail_stats)
			throw *st.fail_stats;
		if (st.on_stats)
			st.on_stats();
		Volume v = fixed_volume(find(ref).members.size(), true);
		for (auto &m : v.members) {
			m.stats->read.ios += 1000 * st.stats_tick;
			m.stats->read.sectors += 2048 * 1000 * st.stats_tick;
		}
		++st.stats_tick;
		return v;
	}

	std::unique_ptr<EventSource> subscribe() override
	{
		++st.subscribes;
		if (st.no_event_group)
			throw Error("the loaded fxblk module has no 'events' multicast group",
				    errno_error(EOPNOTSUPP));
		return std::make_unique<FakeEvents>(st.events, st.events_lost, st.on_wait);
	}

private:
	Volume find(const VolumeRef &ref)
	{
		for (const auto &v : st.volumes)
			if (ref.index ? v.index == *ref.index : v.name == ref.name)
				return v;
		throw KernelError(ENOENT, "no volume named \"" + ref.name + "\"", "not found");
	}
};

// Block devices (@devs) and other paths (@others: path -> S_IFMT type, a
// character device, directory, file) as stat(2) sees them; any other path
// does not exist (ENOENT). @links: a path that resolves to a device path
// (/dev/disk/by-id/...). The disks present are the whole disks among @devs.
struct FakeDevices final : BlockDevices {
	std::map<std::string, BlockDevice> devs;
	std::map<std::string, unsigned> others;
	std::map<std::string, std::string> links;
	std::string canonical(const std::string &path) override
	{
		if (auto l = links.find(path); l != links.end())
			return l->second;
		if (devs.count(path) || others.count(path))
			return path;
		throw Error("cannot access " + path + ": No such file or directory",
			    errno_error(ENOENT));
	}
	std::vector<std::string> present_disks() override
	{
		std::vector<std::string> names;
		for (const auto &[path, d] : devs)
			if (!d.partition)
				names.push_back(d.name);
		return names;
	}
	// As SystemBlockDevices::probe: the shared check first.
	BlockDevice probe(const std::string &path) override
	{
		require_block_device(*this, path);
		return devs.at(path);
	}
	PathStat stat(const std::string &path) override
	{
		PathStat ps;
		if (auto l = links.find(path); l != links.end())
			return stat(l->second);
		if (auto it = devs.find(path); it != devs.end()) {
			ps.type = S_IFBLK;
			ps.major = it->second.major;
			ps.minor = it->second.minor;
		} else if (auto o = others.find(path); o != others.end()) {
			ps.type = o->second;
		} else {
			ps.error = ENOENT;
		}
		return ps;
	}
	// A 1 GiB NVMe namespace, minor @minor.
	void add(const std::string &path, std::uint32_t minor,
		 std::uint64_t sectors = 2097152, std::uint32_t lbs = 512)
	{
		BlockDevice d;
		d.path = path;
		d.name = path.substr(path.rfind('/') + 1);
		d.major = 259;
		d.minor = minor;
		d.size_sectors = sectors;
		d.logical_block_size = lbs;
		devs[path] = d;
	}
};

// Member labels and signatures in memory.
struct FakeMemberIO final : MemberIO {
	std::map<std::string, std::vector<Signature>> sigs;
	std::map<std::string, label::MemberLabel> labels;  // absent: blank
	std::vector<std::string> writes, wipes, erased;
	std::map<std::string, label::Label> written;
	std::string fail_write;  // path whose label write fails
	bool udev = false;
	bool persist = false;  // read_label sees what write_label wrote
	int link_after_checks = 0;  // exists() true after this many calls
	int exists_calls = 0;

	std::vector<Signature> signatures(const std::string &path) override { return sigs[path]; }
	void erase_signatures(const std::string &path) override
	{
		erased.push_back(path);
		sigs.erase(path);
	}
	std::function<void(const std::string &)> on_read;  // e.g. note when
	label::MemberLabel read_label(const std::string &path) override
	{
		if (on_read)
			on_read(path);
		auto it = labels.find(path);
		if (it != labels.end())
			return it->second;
		label::MemberLabel ml;
		if (auto w = written.find(path); persist && w != written.end()) {
			ml.label = w->second;
			return ml;
		}
		ml.primary_blank = ml.backup_blank = true;
		ml.primary_reason = ml.backup_reason = "no fxblk label (magic not found)";
		return ml;
	}
	void write_label(const std::string &path, const label::Label &l) override
	{
		if (path == fail_write)
			throw Error("cannot write the label of " + path + ": Input/output error",
				    errno_error(EIO));
		writes.push_back(path);
		written[path] = l;
	}
	void wipe_label(const std::string &path) override
	{
		wipes.push_back(path);
		written.erase(path);
	}
	// What label::identity_of reads from sysfs. The kernel shows the
	// namespace head's ids on every disk of a namespace, and the NGUID as
	// "uuid" when the namespace has no UUID (torvalds/linux
	// drivers/nvme/host/sysfs.c, v6.12: nguid_show, uuid_show, eui_show
	// read dev_to_ns_head(dev)->ids). Default: each name its own
	// namespace (its own subsystem, NGUID from the name), as the lab's
	// nvmet gives; @ids overrides, e.g. two paths to one namespace.
	std::map<std::string, label::MemberId> ids;
	label::MemberId identity(const std::string &name) override
	{
		if (auto it = ids.find(name); it != ids.end())
			return it->second;
		label::MemberId id;
		id.subsys_nqn = "nqn.2026-12.org.example:" + name;
		id.nsid = 1;
		for (std::size_t i = 0; i < name.size() && i < id.nguid.size(); i++)
			id.nguid[id.nguid.size() - 1 - i] =
				static_cast<std::uint8_t>(name[name.size() - 1 - i]);
		id.uuid = id.nguid;
		return id;
	}
	std::array<std::uint8_t, 16> new_uuid() override
	{
		return *label::uuid_from_string("0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0");
	}
	bool udev_running() override { return udev; }
	bool exists(const std::string &) override { return ++exists_calls > link_after_checks; }
	std::vector<std::string> locked;
	std::shared_ptr<void> lock(const std::string &path) override
	{
		locked.push_back(path);
		return nullptr;
	}
};

// One fxctl invocation against the fakes.
struct Harness {
	FakeClient::State state;
	FakeDevices devices;
	FakeMemberIO members;
	std::ostringstream out, err;
	std::vector<double> sleeps;
	double now = 1000.0;  // fake monotonic clock, advanced by sleep
	bool module_loaded = true;
	std::function<std::unique_ptr<NvmeLookup>()> nvme;
	std::function<std::unique_ptr<Fabric>(bool)> fabric;        // NVMe-oF commands
	std::function<DoctorFacts(Env &, bool)> doctor_facts;       // doctor
	std::function<PeerFacts(Env &)> peer_facts;                 // peer status
	int connects = 0;
	// This host (ownership.hpp), not the build machine's /etc/nvme/hostnqn.
	HostPolicy policy = [] {
		HostPolicy p;
		p.host_nqn = "nqn.2014-08.org.nvmexpress:uuid:host-a";
		return p;
	}();
	// The answer to a confirmation question; nullopt: no terminal.
	std::optional<bool> answer;
	std::vector<std::string> questions;

	Harness()
	{
		for (unsigned i = 0; i < 4; ++i)
			devices.add("/dev/nvme" + std::to_string(i) + "n1", i);
	}

	// A refused create touched nothing: no label written, no signature
	// erased, no CREATE sent.
	bool wrote_nothing() const
	{
		return members.writes.empty() && members.erased.empty() && state.creates.empty();
	}

	int run(std::vector<std::string> args)
	{
		out.str("");
		err.str("");
		Env env(out, err);
		env.connect = [this]() -> std::unique_ptr<Client> {
			++connects;
			if (!module_loaded)
				throw ModuleNotLoaded();
			return std::make_unique<FakeClient>(state);
		};
		env.blockdevs = [this]() -> BlockDevices & { return devices; };
		env.members = [this]() -> MemberIO & { return members; };
		env.sleep = [this](double s) {
			sleeps.push_back(s);
			now += s;
		};
		env.clock = [this] { return now; };
		state.on_wait = [this](double s) { now += s; };
		env.wall_clock = [this] { return 1764585000.0 + now; };
		env.nvme = nvme;
		if (fabric)
			env.fabric = fabric;
		if (doctor_facts)
			env.doctor_facts = doctor_facts;
		if (peer_facts)
			env.peer_facts = peer_facts;
		env.host_policy = [this] { return policy; };
		env.confirm = [this](const std::string &q) {
			questions.push_back(q);
			return answer;
		};
		return fxctl::run(args, env);
	}
};

}  // namespace fxtest
