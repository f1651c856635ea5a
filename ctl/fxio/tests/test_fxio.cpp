// libfxio: the staged pipeline against a fake engine that completes copies
// out of order and late, byte for byte over unaligned ranges that cross
// slots and exceed the pool; error injection (short read, engine error,
// write error) with no slot or copy left behind; path choice (direct,
// staged, posix) with a fake kernel; async submit/poll; the C API on a
// file.
#include <doctest/doctest.h>

#include "fxio.h"
#include "library.hpp"
#include "pipeline.hpp"
#include "temp_disk.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace fxio;

namespace {

// ---- fakes ------------------------------------------------------------------

// A disk in memory that enforces O_DIRECT's alignment (EINVAL otherwise),
// with a little latency so copies overlap it, and injectable faults.
class MemDev final : public BlockDev {
public:
	MemDev(std::size_t size, std::uint32_t bs) : data(size), bs_(bs)
	{
		for (std::size_t i = 0; i < size; ++i)
			data[i] = static_cast<char>(i * 31 + (i >> 11));
	}
	ssize_t pread(void *buf, std::size_t n, std::uint64_t off) override
	{
		Busy busy(*this);
		if (int e = check(buf, n, off, false))
			return e;
		int nth = ++reads;
		if (read_error && nth == read_error)
			return -EIO;
		std::size_t m = std::min<std::size_t>(n, data.size() - off);
		if (short_read_at && off <= short_read_at && short_read_at < off + m)
			m = short_read_at - off;  // the disk "ends" early
		std::memcpy(buf, data.data() + off, m);
		return static_cast<ssize_t>(m);
	}
	ssize_t pwrite(const void *buf, std::size_t n, std::uint64_t off) override
	{
		Busy busy(*this);
		if (int e = check(buf, n, off, true))
			return e;
		int nth = ++writes;
		if (write_error && nth == write_error)
			return -ENOSPC;
		std::memcpy(data.data() + off, buf, n);
		return static_cast<ssize_t>(n);
	}
	std::uint64_t size() const override { return data.size(); }
	std::uint32_t block_size() const override { return bs_; }
	int fd() const override { return fake_fd; }
	int sync() override
	{
		++syncs;
		return sync_error;
	}

	std::vector<char> data;
	int syncs = 0, sync_error = 0;
	std::uint64_t short_read_at = 0;
	int read_error = 0, write_error = 0;  // fail the Nth call
	int fake_fd = -1;
	std::atomic<int> reads{0}, writes{0};
	std::atomic<int> busy{0}, max_busy{0};  // I/Os running at once
	std::atomic<int> held{0};               // I/Os waiting at the closed gate
	std::chrono::microseconds latency{200};
	// An I/O that covers this byte fails with EIO (a bad block).
	std::uint64_t bad_byte = UINT64_MAX;
	// While closed, every I/O (or only every write: a read-modify-write's
	// reads then pass) waits at its start, counted in busy and held.
	void close_gate(bool writes_only = false)
	{
		std::lock_guard lk(gate_mu_);
		gate_closed_ = true;
		gate_writes_only_ = writes_only;
	}
	void open_gate()
	{
		std::lock_guard lk(gate_mu_);
		gate_closed_ = false;
		gate_cv_.notify_all();
	}

private:
	struct Busy {
		explicit Busy(MemDev &d) : d_(d)
		{
			int n = ++d_.busy;
			int m = d_.max_busy.load();
			while (n > m && !d_.max_busy.compare_exchange_weak(m, n)) {
			}
		}
		~Busy() { --d_.busy; }
		MemDev &d_;
	};
	int check(const void *buf, std::size_t n, std::uint64_t off, bool write)
	{
		{
			std::unique_lock lk(gate_mu_);
			auto open = [&] { return !gate_closed_ || (gate_writes_only_ && !write); };
			if (!open()) {
				++held;
				gate_cv_.wait(lk, open);
				--held;
			}
		}
		std::this_thread::sleep_for(latency);
		if (reinterpret_cast<std::uintptr_t>(buf) % bs_ || n % bs_ || off % bs_)
			return -EINVAL;  // as O_DIRECT
		if (off > data.size())
			return -EINVAL;
		if (off <= bad_byte && bad_byte - off < n)
			return -EIO;
		return 0;
	}
	std::uint32_t bs_;
	std::mutex gate_mu_;
	std::condition_variable gate_cv_;
	bool gate_closed_ = false;
	bool gate_writes_only_ = false;
};

// A copy engine that runs each copy on its own timer: completions come
// back out of order, after 0.1-2 ms. Copy number fail_nth fails with EIO;
// seen_fail is how many copies had been submitted when reap handed that
// failure to the caller (-1: not yet).
struct FakeEngineState {
	std::atomic<int> streams{0}, submitted{0}, max_pending{0};
	int fail_nth = 0;
	int seen_fail = -1;
	bool lose_completions = false;  // never completes anything (a broken engine)
	// FXIO_BUF_AUTO: the ranges the fake runtime calls its device memory,
	// as hipPointerGetAttributes (ROCm 6) answers hipMemoryTypeDevice for a
	// pointer inside a hipMalloc allocation and hipMemoryTypeUnregistered
	// (success, not device) for any other.
	std::vector<std::pair<const char *, std::size_t>> device;
};

class FakeStream final : public CopyStream {
public:
	explicit FakeStream(FakeEngineState &st) : st_(st) { ++st_.streams; }
	~FakeStream() override
	{
		for (auto &t : timers_)
			t.join();
		--st_.streams;
	}
	int submit(std::uint64_t tag, void *dst, const void *src, std::size_t n, CopyDir) override
	{
		int nth = ++st_.submitted;
		std::lock_guard lk(mu_);
		++pending_;
		st_.max_pending = std::max(st_.max_pending.load(), pending_);
		if (st_.lose_completions)
			return 0;
		std::uniform_int_distribution<int> d(100, 2000);
		auto delay = std::chrono::microseconds(d(rng_));
		bool fail = nth == st_.fail_nth;
		timers_.emplace_back([=, this] {
			std::this_thread::sleep_for(delay);
			if (!fail)
				std::memcpy(dst, src, n);
			std::lock_guard lk2(mu_);
			done_.push_back({tag, fail ? -EIO : 0});
			cv_.notify_all();
		});
		return 0;
	}
	int reap(std::vector<CopyDone> &out, bool block) override
	{
		std::unique_lock lk(mu_);
		// A real engine's blocking reap (hipEventSynchronize) returns
		// when a copy is done, however long the host takes to run it: no
		// time limit here either (a 2 s one failed a loaded CI host). A
		// broken engine's reap returns with nothing.
		if (block && pending_ && !st_.lose_completions)
			cv_.wait(lk, [&] { return !done_.empty(); });
		pending_ -= static_cast<int>(done_.size());
		for (const CopyDone &d : done_)
			if (d.status < 0 && st_.seen_fail < 0)
				st_.seen_fail = st_.submitted.load();
		out.insert(out.end(), done_.begin(), done_.end());
		done_.clear();
		return 0;
	}

private:
	FakeEngineState &st_;
	std::mutex mu_;
	std::condition_variable cv_;
	std::vector<CopyDone> done_;
	std::vector<std::thread> timers_;
	int pending_ = 0;
	std::mt19937 rng_{1234};
};

class FakeEngine final : public CopyEngine {
public:
	explicit FakeEngine(FakeEngineState &st) : st_(st) {}
	const char *name() const override { return "fake"; }
	std::unique_ptr<CopyStream> stream() override { return std::make_unique<FakeStream>(st_); }
	int device_memory(const void *p) override
	{
		auto c = static_cast<const char *>(p);
		for (auto [base, len] : st_.device)
			if (c >= base && c < base + len)
				return 1;
		return 0;
	}

private:
	FakeEngineState &st_;
};

// The control node: registrations with configurable capability, RW that
// moves data on the MemDev (or fails with rw_error).
struct FakeKernelState {
	bool direct = true;
	bool peerq = false;  // device memory: FXBLK_PEER_F_PEERQ (amd_rdma v2)
	int register_error = 0, rw_error = 0;
	MemDev *dev = nullptr;
	std::map<std::uint64_t, std::uint64_t> handles;  // handle -> base
	std::map<int, char *> dmabufs;                    // "dma-buf" fd -> its memory
	std::uint64_t next = 1;
	int rws = 0;
};

class FakeKernel final : public PeerKernel {
public:
	explicit FakeKernel(FakeKernelState &st) : st_(st) {}
	int providers(std::vector<KernelProvider> &out) override
	{
		out.push_back({"host", true, true, "", 0, st_.handles.size()});
		// the GPU providers as the kernel lists them: present, direct
		// only where the fake says so
		const char *why = st_.direct ? "" : "direct: no - DMA addresses only";
		out.push_back({"rocm", true, st_.direct, why, 0, 0, st_.peerq});
		out.push_back({"ascend", true, st_.direct, why, 0, 0, st_.peerq});
		return 0;
	}
	int register_buffer(const void *addr, std::uint64_t, bool device, KernelRegistration &out,
			    std::string &why) override
	{
		if (st_.register_error) {
			why = "fake refusal";
			return st_.register_error;
		}
		out.handle = st_.next++;
		out.base = reinterpret_cast<std::uint64_t>(addr);
		out.provider = device ? "rocm" : "host";
		out.struct_page = st_.direct;
		out.direct = st_.direct;
		out.peerq = device && st_.peerq;
		out.reason = st_.direct ? "" : "rocm: amd_rdma gives DMA addresses only";
		st_.handles[out.handle] = out.base;
		return 0;
	}
	// as the kernel: the 4 KiB pages holding the range, DMA-only, moved
	// over the peer queues where the fake says so
	int register_dmabuf(int fd, std::uint64_t offset, std::uint64_t len, KernelRegistration &out,
			    std::string &why) override
	{
		auto it = st_.dmabufs.find(fd);
		if (it == st_.dmabufs.end()) {
			why = "not a dma-buf";
			return -EBADF;
		}
		std::uint64_t lo = offset / 4096 * 4096;
		(void)len;
		out.handle = st_.next++;
		out.base = lo;
		out.provider = "dmabuf";
		out.peerq = st_.peerq;
		out.reason = "direct: only over fxblk's peer queues";
		st_.handles[out.handle] = reinterpret_cast<std::uint64_t>(it->second + lo);
		return 0;
	}
	int deregister(std::uint64_t h) override { return st_.handles.erase(h) ? 0 : -ENOENT; }
	int rw(std::uint64_t h, bool write, int, std::uint64_t buf_off, std::uint64_t dev_off,
	       std::uint64_t len) override
	{
		++st_.rws;
		if (st_.rw_error)
			return st_.rw_error;
		auto it = st_.handles.find(h);
		if (it == st_.handles.end())
			return -ENOENT;
		char *p = reinterpret_cast<char *>(it->second) + buf_off;
		ssize_t r = write ? st_.dev->pwrite(p, len, dev_off) : st_.dev->pread(p, len, dev_off);
		return r < 0 ? static_cast<int>(r) : 0;
	}
	int abi() const override { return 1; }

private:
	FakeKernelState &st_;
};

// A buffer aligned to 4 KiB (and so never to more than the test asks).
struct Buffer {
	explicit Buffer(std::size_t n)
		: p(static_cast<char *>(std::aligned_alloc(4096, (n + 8191) / 4096 * 4096)))
	{
		std::memset(p, 0x5a, n + 4096);
	}
	~Buffer() { std::free(p); }
	Buffer(const Buffer &) = delete;
	Buffer &operator=(const Buffer &) = delete;
	char *p;
};

// The ranges the pipeline must get right (pool: 4 slots of 8 KiB).
struct Range {
	std::uint64_t dev_off;
	std::size_t size;
};
const Range ranges[] = {
	{0, 512},              // one block
	{0, 8192},             // one slot exactly
	{100, 1},              // one byte inside a block
	{511, 2},              // straddles two blocks
	{4095, 8194},          // unaligned, three slots
	{8192 - 7, 40000},     // crosses many slots, larger than the pool (32 KiB)
	{12345, 100000},       // unaligned both ends, 3x the pool
	{3 * 8192, 8192 * 9},  // aligned, larger than the pool
	{1 << 20, 513},        // far out
	{4096, 6 * 8192 + 1},  // the whole pool and one byte more
};

// A pool of 6 slots of 8 KiB, a disk queue of 4 threads.
struct Rig {
	Rig(std::uint32_t bs = 512, unsigned depth = 4)
		: dev(2 << 20, bs), pool(6, 8192), engine(st), q(make_thread_queue(dev, depth))
	{
	}
	MemDev dev;
	BouncePool pool;
	FakeEngineState st;
	FakeEngine engine;
	std::unique_ptr<DiskQueue> q;
};

// Waits until @n I/Os are held at the disk's closed gate (up to 30 s: a
// loaded host may be slow to start the queue's threads); how many are.
int wait_held(MemDev &d, int n)
{
	for (int i = 0; i < 30000 && d.held.load() < n; ++i)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	return d.held.load();
}

}  // namespace

// ---- the pipeline ------------------------------------------------------------

TEST_CASE("staged read: out-of-order copies, unaligned ranges, byte for byte, overlap")
{
	Rig r;
	auto s = r.engine.stream();
	PipeCounters c;
	for (const Range &rg : ranges) {
		CAPTURE(rg.dev_off);
		CAPTURE(rg.size);
		Buffer b(rg.size + 3);
		char *dst = b.p + 3;  // the user buffer need not be aligned either
		StagedIo io{r.dev, r.pool, *s, *r.q, dst, rg.size, rg.dev_off};
		REQUIRE(staged_read(io, c) == static_cast<ssize_t>(rg.size));
		CHECK(std::memcmp(dst, r.dev.data.data() + rg.dev_off, rg.size) == 0);
		CHECK(b.p[0] == 0x5a);  // nothing written before the range
		CHECK(dst[rg.size] == 0x5a);  // nor after it
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	CHECK(c.overlapped > 0);  // reads ran while copies did
	CHECK(r.st.max_pending.load() > 1);
}

TEST_CASE("staged write: read-modify-write of partial blocks, neighbours untouched")
{
	Rig r;
	auto s = r.engine.stream();
	PipeCounters c;
	for (const Range &rg : ranges) {
		CAPTURE(rg.dev_off);
		CAPTURE(rg.size);
		std::vector<char> before = r.dev.data;
		Buffer b(rg.size + 1);
		char *src = b.p + 1;
		for (std::size_t i = 0; i < rg.size; ++i)
			src[i] = static_cast<char>(i * 7 + rg.size);
		StagedIo io{r.dev, r.pool, *s, *r.q, src, rg.size, rg.dev_off};
		REQUIRE(staged_write(io, c) == static_cast<ssize_t>(rg.size));
		CHECK(std::memcmp(r.dev.data.data() + rg.dev_off, src, rg.size) == 0);
		CHECK(std::equal(before.begin(), before.begin() + rg.dev_off, r.dev.data.begin()));
		CHECK(std::equal(before.begin() + rg.dev_off + rg.size, before.end(),
				 r.dev.data.begin() + rg.dev_off + rg.size));
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	CHECK(c.overlapped > 0);  // writes ran while later copies did
}

TEST_CASE("staged path on 4 KiB blocks")
{
	Rig r(4096);
	auto s = r.engine.stream();
	PipeCounters c;
	Buffer b(70000);
	StagedIo w{r.dev, r.pool, *s, *r.q, b.p, 70000, 4096 * 3 + 17};
	for (int i = 0; i < 70000; ++i)
		b.p[i] = static_cast<char>(i ^ 0x33);
	REQUIRE(staged_write(w, c) == 70000);
	Buffer back(70000);
	StagedIo rd{r.dev, r.pool, *s, *r.q, back.p, 70000, 4096 * 3 + 17};
	REQUIRE(staged_read(rd, c) == 70000);
	CHECK(std::memcmp(back.p, b.p, 70000) == 0);
}

TEST_CASE("errors: short read, engine error, write error give -errno and leak nothing")
{
	SUBCASE("short read in the middle of a long read")
	{
		Rig r;
		r.dev.short_read_at = 40000;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(100000);
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 100000, 1000};
		CHECK(staged_read(io, c) == -EIO);
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	SUBCASE("the disk fails the third read")
	{
		Rig r;
		r.dev.read_error = 3;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(100000);
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 100000, 0};
		CHECK(staged_read(io, c) == -EIO);
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	SUBCASE("the engine fails the second copy of a read")
	{
		Rig r;
		r.st.fail_nth = 2;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(100000);
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 100000, 77};
		CHECK(staged_read(io, c) == -EIO);
		CHECK(r.pool.free_slots() == r.pool.slots());
		// no copy starts once the failure has been seen (how many ran
		// before depends on the timers: copy 2 may finish last)
		REQUIRE(r.st.seen_fail >= 2);
		CHECK(r.st.submitted.load() == r.st.seen_fail);
	}
	SUBCASE("the engine fails a copy of a write: nothing of it reaches the disk")
	{
		Rig r;
		r.st.fail_nth = 1;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(8192);
		std::memset(b.p, 0x11, 8192);
		std::vector<char> before = r.dev.data;
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 8192, 0};
		CHECK(staged_write(io, c) == -EIO);
		CHECK(r.dev.data == before);
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	SUBCASE("the disk fails a write")
	{
		Rig r;
		r.dev.write_error = 2;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(60000);
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 60000, 0};
		CHECK(staged_write(io, c) == -ENOSPC);
		CHECK(r.pool.free_slots() == r.pool.slots());
	}
	SUBCASE("an engine that never completes: -EIO, not a hang")
	{
		Rig r;
		r.st.lose_completions = true;
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(20000);
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 20000, 0};
		CHECK(staged_read(io, c) == -EIO);
	}
}

TEST_CASE("the host engine: real overlap of memcpy with the disk")
{
	MemDev dev(4 << 20, 512);
	dev.latency = std::chrono::microseconds(500);
	BouncePool pool(4, 64 << 10);
	auto e = make_host_engine();
	auto s = e->stream();
	auto q = make_thread_queue(dev, 2);
	PipeCounters c;
	Buffer b(1 << 20);
	StagedIo io{dev, pool, *s, *q, b.p, 1 << 20, 4096};
	REQUIRE(staged_read(io, c) == 1 << 20);
	CHECK(std::memcmp(b.p, dev.data.data() + 4096, 1 << 20) == 0);
	CHECK(c.chunks == 16);
	CHECK(pool.free_slots() == 4);
}

// ---- paths through Library/File --------------------------------------------

namespace {

struct LibRig {
	explicit LibRig(bool with_kernel = true)
		: lib(Config{4, 8192, 3},
		      [this, with_kernel](std::string &why) -> std::unique_ptr<PeerKernel> {
			      if (!with_kernel) {
				      why = "/dev/fxblk-peer absent (test)";
				      return nullptr;
			      }
			      return std::make_unique<FakeKernel>(k);
		      },
		      [this](unsigned kind, std::string &why) -> std::unique_ptr<CopyEngine> {
			      if (kind == FXIO_BUF_ACL) {
				      why = "libascendcl.so not loadable (test)";
				      return nullptr;
			      }
			      return std::make_unique<FakeEngine>(st);
		      })
	{
		auto d = std::make_unique<MemDev>(2 << 20, 512);
		dev = d.get();
		k.dev = dev;
		file = std::make_unique<File>(lib, std::move(d));
	}
	FakeKernelState k;
	FakeEngineState st;
	Library lib;
	MemDev *dev;
	std::unique_ptr<File> file;
};

}  // namespace

TEST_CASE("posix path: a buffer never registered works, aligned or not")
{
	LibRig r(false);
	Buffer b(65536);
	Outcome o;
	CHECK(r.file->read(b.p, 65536, 8192, 0, o) == 65536);
	CHECK(o.path == FXIO_PATH_POSIX);
	CHECK(o.reason == FXIO_REASON_NOT_REGISTERED);
	CHECK(std::memcmp(b.p, r.dev->data.data() + 8192, 65536) == 0);
	CHECK(r.st.submitted.load() == 0);  // plain O_DIRECT: no copy at all

	CHECK(r.file->read(b.p, 1000, 77, 5, o) == 1000);  // unaligned: bounced
	CHECK(o.path == FXIO_PATH_POSIX);
	CHECK(std::memcmp(b.p + 5, r.dev->data.data() + 77, 1000) == 0);

	std::memset(b.p, 0x42, 3000);
	CHECK(r.file->write(b.p, 3000, 1001, 0, o) == 3000);
	CHECK(std::all_of(r.dev->data.begin() + 1001, r.dev->data.begin() + 4001,
			  [](char ch) { return ch == 0x42; }));
	fxio_stats st = r.file->stats();
	CHECK(st.ios[FXIO_PATH_POSIX] == 3);
	CHECK(st.bytes[FXIO_PATH_POSIX] == 65536 + 1000 + 3000);
	CHECK(st.fallbacks[FXIO_REASON_NOT_REGISTERED] == 3);

	// reads past the end are short, as pread; writes are refused
	CHECK(r.file->read(b.p, 4096, (2 << 20) - 512, 0, o) == 512);
	CHECK(r.file->read(b.p, 4096, 2 << 20, 0, o) == 0);
	CHECK(r.file->write(b.p, 4096, (2 << 20) - 512, 0, o) == -ENOSPC);
}

TEST_CASE("sync: File::sync is the disk's, its error returned as is")
{
	LibRig r;
	Buffer b(65536);
	Outcome o;
	REQUIRE(r.file->write(b.p, 8192, 4096, 0, o) == 8192);
	CHECK(r.dev->syncs == 0);  // a write alone never syncs
	CHECK(r.file->sync() == 0);
	CHECK(r.dev->syncs == 1);
	r.dev->sync_error = -EIO;
	CHECK(r.file->sync() == -EIO);
	CHECK(r.dev->syncs == 2);
}

TEST_CASE("direct path with a fake kernel: RW on the registered pages")
{
	LibRig r;
	r.dev->fake_fd = 100;  // an "fxblk disk" for the fake kernel's RW
	Buffer b(65536);
	REQUIRE(r.lib.buf_register(b.p, 65536, FXIO_BUF_HOST) == 0);
	Outcome o;
	CHECK(r.file->read(b.p, 16384, 4096, 8192, o) == 16384);
	CHECK(o.path == FXIO_PATH_DIRECT);
	CHECK(o.reason == FXIO_REASON_NONE);
	CHECK(r.k.rws == 1);
	CHECK(r.st.submitted.load() == 0);  // zero CPU copies
	CHECK(std::memcmp(b.p + 8192, r.dev->data.data() + 4096, 16384) == 0);

	SUBCASE("unaligned I/O on a direct-capable buffer is staged, saying why")
	{
		CHECK(r.file->read(b.p, 100, 3, 1, o) == 100);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(o.reason == FXIO_REASON_UNALIGNED);
		CHECK(std::memcmp(b.p + 1, r.dev->data.data() + 3, 100) == 0);
	}
	SUBCASE("the disk refuses the pages (EREMOTEIO): staged instead, counted")
	{
		r.k.rw_error = -EREMOTEIO;
		std::memset(b.p, 0, 65536);
		CHECK(r.file->read(b.p, 16384, 4096, 0, o) == 16384);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(o.reason == FXIO_REASON_P2PDMA_REFUSED);
		CHECK(std::memcmp(b.p, r.dev->data.data() + 4096, 16384) == 0);
		CHECK(r.file->stats().fallbacks[FXIO_REASON_P2PDMA_REFUSED] == 1);
	}
	SUBCASE("another RW error is the I/O's error")
	{
		r.k.rw_error = -ENXIO;  // revoked
		CHECK(r.file->read(b.p, 4096, 0, 0, o) == -ENXIO);
		CHECK(r.file->stats().errors == 1);
	}
	SUBCASE("not an fxblk disk: the same buffer through O_DIRECT")
	{
		r.dev->fake_fd = -1;
		CHECK(r.file->write(b.p, 4096, 0, 0, o) == 4096);
		CHECK(o.path == FXIO_PATH_DIRECT);
		CHECK(r.k.rws == 1);
	}
	CHECK(r.lib.buf_deregister(b.p) == 0);
	CHECK(r.lib.buf_deregister(b.p) == -ENOENT);
	CHECK(r.k.handles.empty());
}

TEST_CASE("device memory: DMA-address-only is staged with the kernel's reason")
{
	LibRig r;
	r.k.direct = false;
	Buffer b(100000);
	REQUIRE(r.lib.buf_register(b.p, 100000, FXIO_BUF_HIP) == 0);
	// the kernel could not move it: not registered there (no pin)
	CHECK(r.k.handles.empty());
	Outcome o;
	CHECK(r.file->read(b.p, 100000, 512, 0, o) == 100000);
	CHECK(o.path == FXIO_PATH_STAGED);
	CHECK(o.reason == FXIO_REASON_NO_STRUCT_PAGE);
	CHECK(std::memcmp(b.p, r.dev->data.data() + 512, 100000) == 0);
	CHECK(r.file->stats().overlapped_slots > 0);
	auto reg = r.lib.find(b.p + 10, 10);
	REQUIRE(reg);
	CHECK(reg->why.find("DMA addresses only") != std::string::npos);
	CHECK(reg->why.find("not registered with the kernel") != std::string::npos);
	CHECK_FALSE(r.lib.find(b.p + 99995, 10));  // runs past the registration
	CHECK(r.lib.buf_deregister(b.p) == 0);
	CHECK(r.k.rws == 0);
}

TEST_CASE("device memory: registered with the kernel only where it moves it")
{
	LibRig r;  // the fake's providers say rocm moves device memory
	Buffer b(8192);
	REQUIRE(r.lib.buf_register(b.p, 8192, FXIO_BUF_HIP) == 0);
	CHECK(r.k.handles.size() == 1);
	Outcome o;
	CHECK(r.file->read(b.p, 8192, 0, 0, o) == 8192);
	CHECK(o.path == FXIO_PATH_DIRECT);
	CHECK(r.lib.buf_deregister(b.p) == 0);
	CHECK(r.k.handles.empty());
}

TEST_CASE("device memory over the peer queues: direct, staged where the disk has none, no runtime needed")
{
	LibRig r;
	r.k.direct = false;  // DMA addresses only ...
	r.k.peerq = true;    // ... that the kernel's peer queues move
	r.dev->fake_fd = 100;
	Buffer b(65536);
	REQUIRE(r.lib.buf_register(b.p, 65536, FXIO_BUF_HIP) == 0);
	CHECK(r.k.handles.size() == 1);
	Outcome o;
	CHECK(r.file->read(b.p, 16384, 4096, 8192, o) == 16384);
	CHECK(o.path == FXIO_PATH_DIRECT);
	CHECK(o.reason == FXIO_REASON_NONE);
	CHECK(r.k.rws == 1);
	CHECK(r.st.submitted.load() == 0);  // no copy engine
	CHECK(std::memcmp(b.p + 8192, r.dev->data.data() + 4096, 16384) == 0);

	SUBCASE("the disk has no peer queues (EREMOTEIO): staged, saying so")
	{
		r.k.rw_error = -EREMOTEIO;
		std::memset(b.p, 0, 65536);
		CHECK(r.file->read(b.p, 16384, 4096, 0, o) == 16384);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(o.reason == FXIO_REASON_NO_STRUCT_PAGE);
		CHECK(std::string(o.why).find("no peer queues") != std::string::npos);
		CHECK(std::memcmp(b.p, r.dev->data.data() + 4096, 16384) == 0);
		CHECK(r.st.submitted.load() > 0);
	}
	SUBCASE("not an fxblk disk: staged, never O_DIRECT into device memory")
	{
		r.dev->fake_fd = -1;
		CHECK(r.file->write(b.p, 4096, 0, 0, o) == 4096);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(r.st.submitted.load() > 0);
	}
	SUBCASE("without its runtime (ACL here) it goes direct, and fails where it cannot")
	{
		Buffer c(8192);
		REQUIRE(r.lib.buf_register(c.p, 8192, FXIO_BUF_ACL) == 0);
		CHECK(r.file->read(c.p, 8192, 0, 0, o) == 8192);
		CHECK(o.path == FXIO_PATH_DIRECT);
		r.k.rw_error = -EREMOTEIO;
		CHECK(r.file->read(c.p, 8192, 0, 0, o) == -ENODEV);
		CHECK(o.reason == FXIO_REASON_NO_STRUCT_PAGE);
		CHECK(r.file->read(c.p + 1, 100, 0, 0, o) == -ENODEV);  // unaligned
		CHECK(r.lib.buf_deregister(c.p) == 0);
	}
	SUBCASE("without its runtime and without the kernel's peer queues: refused, nothing pinned")
	{
		r.k.peerq = false;
		Buffer c(8192);
		CHECK(r.lib.buf_register(c.p, 8192, FXIO_BUF_ACL) == -ENODEV);
		CHECK(r.k.handles.size() == 1);  // only b's
	}
	CHECK(r.lib.buf_deregister(b.p) == 0);
	CHECK(r.k.handles.empty());
}

TEST_CASE("dma-buf: direct over the peer queues at its offset, staged through @base elsewhere")
{
	LibRig r;
	r.k.direct = false;
	r.k.peerq = true;
	r.dev->fake_fd = 100;
	Buffer mem(65536), name(32768);  // the buffer's pages; what I/O calls name it
	r.k.dmabufs[7] = mem.p;
	const std::uint64_t off = 4096 + 512;  // not page aligned, as an export may be
	REQUIRE(r.lib.buf_register_dmabuf(7, off, 16384, name.p, FXIO_BUF_HOST) == 0);
	CHECK(r.k.handles.size() == 1);
	Outcome o;
	CHECK(r.file->read(name.p + 1024, 8192, 4096, 0, o) == 8192);
	CHECK(o.path == FXIO_PATH_DIRECT);
	CHECK(r.st.submitted.load() == 0);
	// the kernel moved it into the dma-buf, at its offset + the I/O's
	CHECK(std::memcmp(mem.p + off + 1024, r.dev->data.data() + 4096, 8192) == 0);

	SUBCASE("no peer queues on the disk: staged to and from @base")
	{
		r.k.rw_error = -EREMOTEIO;
		CHECK(r.file->read(name.p, 4096, 8192, 0, o) == 4096);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(std::memcmp(name.p, r.dev->data.data() + 8192, 4096) == 0);
	}
	SUBCASE("refused: bad arguments, overlaps, an unknown fd")
	{
		Buffer other(8192);
		CHECK(r.lib.buf_register_dmabuf(-1, 0, 4096, other.p, FXIO_BUF_HOST) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(7, 0, 4096, nullptr, FXIO_BUF_HOST) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(7, 0, 0, other.p, FXIO_BUF_HOST) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(7, 0, 4096, other.p, FXIO_BUF_EMULATED) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(7, 0, 4096, other.p, FXIO_BUF_NO_KERNEL) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(7, 0, 4096, name.p + 8192, FXIO_BUF_HOST) == -EEXIST);
		// the kernel refuses it, the host engine can still stage it
		CHECK(r.lib.buf_register_dmabuf(9, 0, 8192, other.p, FXIO_BUF_HOST) == 0);
		CHECK(r.file->read(other.p, 4096, 0, 0, o) == 4096);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(o.reason == FXIO_REASON_KERNEL_REFUSED);
		CHECK(r.lib.buf_deregister(other.p) == 0);
	}
	SUBCASE("device memory without its runtime, no peer queues in the kernel: refused")
	{
		r.k.peerq = false;
		Buffer other(8192);
		CHECK(r.lib.buf_register_dmabuf(7, 32768, 8192, other.p, FXIO_BUF_ACL) == -ENODEV);
		CHECK(r.k.handles.size() == 1);  // only the first one's
	}
	CHECK(r.lib.buf_deregister(name.p) == 0);
	CHECK(r.k.handles.empty());
}

TEST_CASE("FXIO_BUF_AUTO: the loaded runtime's answer; host without one")
{
	LibRig r;  // the fake engine stands for HIP; ACL's runtime is absent
	r.k.direct = false;  // rocm's provider cannot move device memory here
	Buffer host(8192), dev(100000);
	r.st.device.push_back({dev.p, 100000});
	std::string why;

	SUBCASE("no runtime in the process: host, even for device memory")
	{
		// neither engine loaded, neither library mapped: nothing is started
		REQUIRE(r.lib.buf_register(dev.p, 100000, FXIO_BUF_AUTO) == 0);
		auto reg = r.lib.find(dev.p, 1);
		REQUIRE(reg);
		CHECK(reg->kind == FXIO_BUF_HOST);
		CHECK(r.lib.buf_deregister(dev.p) == 0);
	}
	SUBCASE("the runtime loaded: its device memory is HIP (staged), host stays host")
	{
		REQUIRE(r.lib.engine(FXIO_BUF_HIP, why));  // the application used HIP
		REQUIRE(r.lib.buf_register(dev.p + 4096, 65536, FXIO_BUF_AUTO) == 0);
		auto reg = r.lib.find(dev.p + 4096, 1);
		REQUIRE(reg);
		CHECK(reg->kind == FXIO_BUF_HIP);
		CHECK(r.k.handles.empty());  // device memory the kernel cannot move: no pin
		Outcome o;
		CHECK(r.file->read(dev.p + 4096, 65536, 512, 0, o) == 65536);
		CHECK(o.path == FXIO_PATH_STAGED);
		CHECK(o.reason == FXIO_REASON_NO_STRUCT_PAGE);
		CHECK(std::memcmp(dev.p + 4096, r.dev->data.data() + 512, 65536) == 0);

		REQUIRE(r.lib.buf_register(host.p, 8192, FXIO_BUF_AUTO) == 0);
		reg = r.lib.find(host.p, 1);
		REQUIRE(reg);
		CHECK(reg->kind == FXIO_BUF_HOST);
		CHECK(r.k.handles.size() == 1);  // host memory goes to the kernel
		CHECK(r.file->read(host.p, 8192, 0, 0, o) == 8192);
		CHECK(o.path == FXIO_PATH_POSIX);  // host: the kernel said not direct, never staged
		CHECK(r.lib.buf_deregister(host.p) == 0);
		CHECK(r.lib.buf_deregister(dev.p + 4096) == 0);
	}
	SUBCASE("unknown flags and dma-bufs: auto is for fxio_buf_register only")
	{
		CHECK(r.lib.buf_register(host.p, 8192, FXIO_BUF_AUTO + 1) == -EINVAL);
		CHECK(r.lib.buf_register_dmabuf(3, 0, 8192, host.p, FXIO_BUF_AUTO) == -EINVAL);
	}
}

TEST_CASE("registration: no kernel, refusals, overlaps, missing engine")
{
	LibRig r(false);
	Buffer b(8192);
	REQUIRE(r.lib.buf_register(b.p, 8192, FXIO_BUF_HOST) == 0);
	CHECK(r.lib.buf_register(b.p + 4096, 100, FXIO_BUF_HOST) == -EEXIST);
	auto reg = r.lib.find(b.p, 8192);
	REQUIRE(reg);
	CHECK(reg->reason == FXIO_REASON_NO_CONTROL_NODE);
	CHECK(reg->why == "/dev/fxblk-peer absent (test)");
	Outcome o;
	CHECK(r.file->read(b.p, 8192, 0, 0, o) == 8192);
	CHECK(o.path == FXIO_PATH_POSIX);  // host memory without the kernel
	CHECK(o.reason == FXIO_REASON_NO_CONTROL_NODE);
	CHECK(r.lib.buf_register(b.p + 8192, 10, FXIO_BUF_ACL) == -ENODEV);
	CHECK(r.lib.buf_register(nullptr, 10, 0) == -EINVAL);
	CHECK(r.lib.buf_register(b.p + 8192, 10, 0x80) == -EINVAL);

	LibRig k;
	k.k.register_error = -ENOMEM;
	REQUIRE(k.lib.buf_register(b.p, 8192, FXIO_BUF_HIP) == 0);
	reg = k.lib.find(b.p, 1);
	CHECK(reg->reason == FXIO_REASON_KERNEL_REFUSED);
	CHECK(reg->why.find("fake refusal") != std::string::npos);
}

TEST_CASE("async: submit many, poll them all, in any order")
{
	LibRig r;
	r.k.direct = false;
	Buffer b(32 * 5000);
	REQUIRE(r.lib.buf_register(b.p, 32 * 5000, FXIO_BUF_HIP) == 0);
	std::set<std::int64_t> ids;
	for (int i = 0; i < 32; ++i) {
		auto id = r.file->submit(false, b.p, 5000, 1000u * i + 3, 5000u * i, 1000 + i);
		REQUIRE(id >= 0);
		ids.insert(id);
	}
	CHECK(ids.size() == 32);
	std::set<std::uint64_t> seen;
	fxio_event ev[8];
	while (seen.size() < 32) {
		int n = r.file->poll(ev, 8, 5000);
		REQUIRE(n > 0);
		for (int i = 0; i < n; ++i) {
			CHECK(ev[i].result == 5000);
			CHECK(ev[i].path == FXIO_PATH_STAGED);
			seen.insert(ev[i].user_data);
		}
	}
	for (int i = 0; i < 32; ++i)
		CHECK(std::memcmp(b.p + 5000 * i, r.dev->data.data() + 1000 * i + 3, 5000) == 0);
	CHECK(r.file->poll(ev, 8, -1) == 0);  // nothing outstanding: no wait
	CHECK(r.file->poll(ev, 0, 0) == -EINVAL);
}

// ---- the C API on a real file (O_DIRECT on the build tree's file system) --------

TEST_CASE("C API: open a file, write and read back, path and stats")
{
	char path[] = "fxio-test-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, 1 << 20) == 0);
	close(fd);
	fxio_handle_t h = nullptr;
	int r = fxio_open(path, O_RDWR, &h);
	if (r == -EINVAL) {
		unlink(path);
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	REQUIRE(r == 0);
	CHECK(std::string(fxio_last_path(h)) == "none");
	Buffer w(20000), rd(20000);
	for (int i = 0; i < 20000; ++i)
		w.p[i] = static_cast<char>(i * 13);
	CHECK(fxio_write(h, w.p, 20000, 999, 0) == 20000);
	CHECK(std::string(fxio_last_path(h)) == "posix");
	CHECK(fxio_read(h, rd.p, 20000, 999, 0) == 20000);
	CHECK(std::memcmp(w.p, rd.p, 20000) == 0);
	REQUIRE(fxio_buf_register(rd.p, 20000, FXIO_BUF_EMULATED) == 0);
	std::memset(rd.p, 0, 20000);
	CHECK(fxio_read(h, rd.p, 16384, 4096, 0) == 16384);
	CHECK(std::string(fxio_last_path(h)) == "staged");
	CHECK(std::string(fxio_last_reason(h)) == "emulated device memory (host engine, never direct)");
	CHECK(std::memcmp(w.p + 4096 - 999, rd.p, 16384) == 0);
	fxio_stats st{};
	CHECK(fxio_get_stats(h, &st) == 0);
	CHECK(st.ios[FXIO_PATH_POSIX] == 2);
	CHECK(st.ios[FXIO_PATH_STAGED] == 1);
	CHECK(st.pool_slots >= 2);
	CHECK(fxio_buf_deregister(rd.p) == 0);
	CHECK(fxio_buf_deregister(rd.p) == -ENOENT);
	CHECK(fxio_sync(h) == 0);  // fdatasync of the file
	CHECK(fxio_sync(nullptr) == -EBADF);
	CHECK(fxio_read(nullptr, rd.p, 1, 0, 0) == -EBADF);
	CHECK(fxio_read(h, rd.p, 1, -1, 0) == -EINVAL);
	CHECK(fxio_close(h) == 0);
	CHECK(fxio_open("/nonexistent/fx0", O_RDONLY, &h) == -ENOENT);
	CHECK(fxio_open(path, O_RDONLY | O_TRUNC, &h) == -EINVAL);
	unlink(path);
}

// ---- an fd the caller opened (fxio_open_fd) ----------------------------------

namespace {

bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

// Writes 20000 bytes at 999 through @h (posix, unaligned: through the
// pool), reads them back aligned and not, and checks them with pread on @fd.
void roundtrip_through(fxio_handle_t h, int fd)
{
	Buffer w(20000), rd(20000);
	for (int i = 0; i < 20000; ++i)
		w.p[i] = static_cast<char>(i * 7 + 3);
	CHECK(fxio_write(h, w.p, 20000, 999, 0) == 20000);
	CHECK(std::string(fxio_last_path(h)) == "posix");
	CHECK(fxio_read(h, rd.p, 20000, 999, 0) == 20000);
	CHECK(std::memcmp(w.p, rd.p, 20000) == 0);
	CHECK(fxio_read(h, rd.p, 16384, 4096, 0) == 16384);  // aligned: plain pread
	CHECK(std::string(fxio_last_path(h)) == "posix");
	CHECK(std::memcmp(w.p + 4096 - 999, rd.p, 16384) == 0);
	Buffer seen(24576);  // aligned: @fd may have O_DIRECT
	CHECK(pread(fd, seen.p, 24576, 0) == 24576);  // the caller's fd sees the bytes
	CHECK(std::memcmp(w.p, seen.p + 999, 20000) == 0);
}

}  // namespace

TEST_CASE("C API: fxio_open_fd uses the caller's fd, closes it only when owned")
{
	char path[] = "fxio-test-XXXXXX";
	int tmp = mkstemp(path);
	REQUIRE(tmp >= 0);
	REQUIRE(ftruncate(tmp, 1 << 20) == 0);
	close(tmp);
	int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		unlink(path);
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	REQUIRE(fd >= 0);
	fxio_handle_t h = nullptr;

	SUBCASE("a regular file opened with O_DIRECT, not owned: open after close")
	{
		REQUIRE(fxio_open_fd(fd, 0, &h) == 0);
		CHECK(std::string(fxio_last_path(h)) == "none");
		roundtrip_through(h, fd);
		CHECK(fxio_sync(h) == 0);
		CHECK(fxio_close(h) == 0);
		CHECK(fd_open(fd));
		CHECK(close(fd) == 0);
	}
	SUBCASE("owned (FXIO_OPEN_FD_OWN): fxio_close closes it")
	{
		REQUIRE(fxio_open_fd(fd, FXIO_OPEN_FD_OWN, &h) == 0);
		roundtrip_through(h, fd);
		CHECK(fxio_close(h) == 0);
		CHECK_FALSE(fd_open(fd));
		CHECK(errno == EBADF);
	}
	SUBCASE("the fd's access mode holds: a write through O_RDONLY fails EBADF")
	{
		int ro = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		REQUIRE(ro >= 0);
		REQUIRE(fxio_open_fd(ro, 0, &h) == 0);
		Buffer b(4096);
		CHECK(fxio_read(h, b.p, 4096, 0, 0) == 4096);
		CHECK(fxio_write(h, b.p, 4096, 0, 0) == -EBADF);
		CHECK(fxio_close(h) == 0);
		CHECK(fd_open(ro));
		close(ro);
		close(fd);
	}
	unlink(path);
}

TEST_CASE("C API: fxio_open_fd on a file with no path and no O_DIRECT (memfd)")
{
	// What a caller may hold instead of /dev/fxN: an fd with no name, on
	// which O_DIRECT cannot be set; both posix branches (plain and pool) work.
	int fd = memfd_create("fxio-test", MFD_CLOEXEC);
	REQUIRE(fd >= 0);
	REQUIRE(ftruncate(fd, 1 << 20) == 0);
	fxio_handle_t h = nullptr;
	REQUIRE(fxio_open_fd(fd, 0, &h) == 0);
	roundtrip_through(h, fd);
	CHECK(fxio_close(h) == 0);
	CHECK(fd_open(fd));
	close(fd);
}

TEST_CASE("C API: fxio_open_fd refuses a bad fd (EBADF), a non-disk, unknown flags")
{
	fxio_handle_t h = nullptr;
	CHECK(fxio_open_fd(-1, 0, &h) == -EBADF);
	int fd = memfd_create("fxio-test", MFD_CLOEXEC);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK(fxio_open_fd(fd, 0, &h) == -EBADF);  // closed
	int p = open(".", O_PATH | O_CLOEXEC);
	REQUIRE(p >= 0);
	CHECK(fxio_open_fd(p, 0, &h) == -EBADF);   // no I/O through O_PATH
	CHECK(fd_open(p));
	close(p);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	REQUIRE(null >= 0);
	// a failed call never closes the fd, owned or not
	CHECK(fxio_open_fd(null, FXIO_OPEN_FD_OWN, &h) == -ENOTBLK);
	CHECK(fd_open(null));
	CHECK(fxio_open_fd(null, 0x2, &h) == -EINVAL);
	int app = memfd_create("fxio-test", MFD_CLOEXEC);
	REQUIRE(app >= 0);
	REQUIRE(fcntl(app, F_SETFL, O_APPEND) == 0);
	CHECK(fxio_open_fd(app, 0, &h) == -EINVAL);  // pwrite would ignore the offset
	close(app);
	CHECK(fxio_open_fd(null, 0, nullptr) == -EINVAL);
	close(null);
	CHECK(h == nullptr);
}

// ---- honest reporting: per calling thread, the precise text, every event ------

TEST_CASE("C API: FXIO_BUF_AUTO with no GPU runtime in the process is host memory")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	Buffer b(8192);
	REQUIRE(fxio_buf_register(b.p, 8192, FXIO_BUF_AUTO) == 0);
	CHECK(fxio_read(d.h, b.p, 8192, 0, 0) == 8192);
	// host memory: direct where the kernel took it, else posix; never staged
	CHECK(std::string(fxio_last_path(d.h)) != "staged");
	CHECK(fxio_buf_deregister(b.p) == 0);
}

TEST_CASE("C API: fxio_last_path is per calling thread; async I/O never changes it")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	Buffer plain(8192), emu(8192);
	REQUIRE(fxio_buf_register(emu.p, 8192, FXIO_BUF_EMULATED) == 0);
	// Strict turns: the main thread's I/O (posix), then the other thread's
	// (staged), then each looks at its own result.
	std::mutex mu;
	std::condition_variable cv;
	int turn = 0;
	std::string other_path, other_reason;
	auto wait_turn = [&](int t) {
		std::unique_lock lk(mu);
		cv.wait(lk, [&] { return turn == t; });
	};
	auto next_turn = [&] {
		std::lock_guard lk(mu);
		++turn;
		cv.notify_all();
	};
	std::thread other([&] {
		CHECK(std::string(fxio_last_path(d.h)) == "none");  // nothing on this thread yet
		wait_turn(1);
		CHECK(fxio_read(d.h, emu.p, 4096, 0, 0) == 4096);
		next_turn();
		wait_turn(3);
		other_path = fxio_last_path(d.h);
		other_reason = fxio_last_reason(d.h);
	});
	wait_turn(0);
	CHECK(fxio_read(d.h, plain.p, 4096, 0, 0) == 4096);
	next_turn();
	wait_turn(2);
	CHECK(std::string(fxio_last_path(d.h)) == "posix");  // not the other thread's staged
	CHECK(std::string(fxio_last_reason(d.h)) == fxio_reason_str(FXIO_REASON_NOT_REGISTERED));
	next_turn();
	other.join();
	CHECK(other_path == "staged");
	CHECK(other_reason == "emulated device memory (host engine, never direct)");

	// An async staged I/O completes on a worker: this thread's result stays.
	REQUIRE(fxio_submit_read(d.h, emu.p, 4096, 4096, 0, 7) >= 0);
	fxio_event ev[2];
	REQUIRE(fxio_poll(d.h, ev, 2, 5000) == 1);
	CHECK(ev[0].path == FXIO_PATH_STAGED);
	CHECK(std::string(fxio_last_path(d.h)) == "posix");

	// Results are per handle too: a second handle of this thread is "none".
	fxio_handle_t h2 = nullptr;
	REQUIRE(fxio_open(d.path.c_str(), O_RDONLY, &h2) == 0);
	CHECK(std::string(fxio_last_path(h2)) == "none");
	CHECK(std::string(fxio_last_reason(h2)).empty());
	CHECK(fxio_close(h2) == 0);
	CHECK(fxio_buf_deregister(emu.p) == 0);
}

TEST_CASE("C API: completions carry the precise reason; last_reason is the kernel's text")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	Buffer b(16384);
	// Host memory: the unit tests' host has no /dev/fxblk-peer (or one a
	// test user cannot open): the text names the node, not the enum's words.
	REQUIRE(fxio_buf_register(b.p, 16384, FXIO_BUF_HOST) == 0);
	CHECK(fxio_read(d.h, b.p, 4096, 0, 0) == 4096);
	std::string sync_why = fxio_last_reason(d.h);
	if (std::string(fxio_last_path(d.h)) == "posix") {
		CHECK(sync_why.find("/dev/fxblk-peer") != std::string::npos);
		CHECK(sync_why != fxio_reason_str(FXIO_REASON_NO_CONTROL_NODE));
	}
	REQUIRE(fxio_submit_read(d.h, b.p, 4096, 8192, 4096, 1) >= 0);
	REQUIRE(fxio_submit_read(d.h, b.p, 100, 3, 8192, 2) >= 0);  // unaligned
	fxio_completion c[4];
	int got = 0;
	std::map<std::uint64_t, fxio_completion> by;
	while (got < 2) {
		int n = fxio_poll_completions(d.h, c, 4, 5000);
		REQUIRE(n > 0);
		for (int i = 0; i < n; ++i)
			by[c[i].user_data] = c[i];
		got += n;
	}
	REQUIRE(by.size() == 2);
	CHECK(by[1].result == 4096);
	CHECK(std::string(by[1].why) == sync_why);  // the same I/O kind, the same text
	CHECK(by[2].result == 100);
	CHECK(std::string(by[2].why) == (by[2].reason == FXIO_REASON_NONE ? "" : sync_why));
	CHECK(fxio_poll_completions(d.h, c, 4, 0) == 0);
	CHECK(fxio_poll_completions(nullptr, c, 4, 0) == -EBADF);
	CHECK(std::string(fxio_path_str(FXIO_PATH_STAGED)) == "staged");
	CHECK(fxio_buf_deregister(b.p) == 0);
}

TEST_CASE("the kernel's reason text reaches the I/O's outcome and its async event")
{
	LibRig r;
	r.k.direct = false;  // rocm: "DMA addresses only" in the provider list
	Buffer b(65536);
	REQUIRE(r.lib.buf_register(b.p, 65536, FXIO_BUF_HIP) == 0);
	Outcome o;
	CHECK(r.file->read(b.p, 8192, 0, 0, o) == 8192);
	CHECK(o.path == FXIO_PATH_STAGED);
	CHECK(o.reason == FXIO_REASON_NO_STRUCT_PAGE);
	std::string why = o.why;
	CHECK(why.find("provider rocm: direct: no - DMA addresses only") == 0);

	REQUIRE(r.file->submit(false, b.p, 8192, 512, 8192, 9) >= 0);
	Completion c[2];
	REQUIRE(r.file->poll(c, 2, 5000) == 1);
	CHECK(c[0].user_data == 9);
	CHECK(c[0].path == FXIO_PATH_STAGED);
	CHECK(std::string(c[0].why) == why);

	// unaligned on a direct-capable buffer: the generic text, which is exact
	LibRig d;
	Buffer h(8192);
	REQUIRE(d.lib.buf_register(h.p, 8192, FXIO_BUF_HOST) == 0);
	CHECK(d.file->read(h.p, 100, 3, 0, o) == 100);
	CHECK(o.reason == FXIO_REASON_UNALIGNED);
	CHECK(std::string(o.why) == fxio_reason_str(FXIO_REASON_UNALIGNED));
	CHECK(d.file->read(h.p, 4096, 0, 0, o) == 4096);
	CHECK(o.path == FXIO_PATH_DIRECT);
	CHECK(std::string(o.why).empty());
}

// ---- the staged path at full depth -----------------------------------------------

TEST_CASE("staged path: several disk I/Os in flight per request, byte for byte")
{
	for (bool write : {false, true}) {
		CAPTURE(write);
		Rig r(512, 4);
		r.dev.latency = std::chrono::microseconds(2000);
		auto s = r.engine.stream();
		PipeCounters c;
		Buffer b(200000);
		for (int i = 0; i < 200000; ++i)
			b.p[i] = static_cast<char>(i * 11 + 5);
		std::vector<char> before = r.dev.data;
		StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 200000, 3000};
		// One request, four disk I/Os at once (the old pipeline: one):
		// they meet at the closed gate, whatever the host's scheduling.
		// Writes only: the read-modify-write's reads run at once.
		r.dev.close_gate(write);
		ssize_t got = 0;
		std::thread t([&] { got = write ? staged_write(io, c) : staged_read(io, c); });
		CHECK(wait_held(r.dev, 4) == 4);
		r.dev.open_gate();
		t.join();
		REQUIRE(got == 200000);
		if (write) {
			CHECK(std::memcmp(r.dev.data.data() + 3000, b.p, 200000) == 0);
			CHECK(std::equal(before.begin(), before.begin() + 3000, r.dev.data.begin()));
			CHECK(std::equal(before.begin() + 203000, before.end(),
					 r.dev.data.begin() + 203000));
		} else {
			CHECK(std::memcmp(b.p, r.dev.data.data() + 3000, 200000) == 0);
		}
		CHECK(r.pool.free_slots() == r.pool.slots());
		CHECK(c.max_inflight == 4);
		if (write)  // a read-modify-write's read may run beside them
			CHECK(r.dev.max_busy.load() >= 4);
		else
			CHECK(r.dev.max_busy.load() == 4);
		CHECK(c.overlapped > 0);
	}
}

TEST_CASE("staged path: depth 1 still works (FXIO_DEPTH=1)")
{
	Rig r(512, 1);
	auto s = r.engine.stream();
	PipeCounters c;
	Buffer b(70000);
	StagedIo io{r.dev, r.pool, *s, *r.q, b.p, 70000, 77};
	REQUIRE(staged_read(io, c) == 70000);
	CHECK(std::memcmp(b.p, r.dev.data.data() + 77, 70000) == 0);
	CHECK(c.max_inflight == 1);
	CHECK(r.dev.max_busy.load() == 1);
}

TEST_CASE("staged path: two requests share a small pool without deadlock")
{
	Rig r(512, 4);
	BouncePool small(3, 8192);  // fewer slots than one request's depth
	auto q2 = make_thread_queue(r.dev, 4);
	Buffer a(150000), b(150000);
	std::thread t([&] {
		auto s = r.engine.stream();
		PipeCounters c;
		StagedIo io{r.dev, small, *s, *q2, a.p, 150000, 100};
		CHECK(staged_read(io, c) == 150000);
	});
	auto s = r.engine.stream();
	PipeCounters c;
	StagedIo io{r.dev, small, *s, *r.q, b.p, 150000, 9000};
	CHECK(staged_read(io, c) == 150000);
	t.join();
	CHECK(std::memcmp(a.p, r.dev.data.data() + 100, 150000) == 0);
	CHECK(std::memcmp(b.p, r.dev.data.data() + 9000, 150000) == 0);
	CHECK(small.free_slots() == 3);
}

TEST_CASE("auto_depth: two I/Os in flight per member, 4 to 32")
{
	CHECK(auto_depth({}, 1 << 20) == 4);                   // geometry unknown
	CHECK(auto_depth({1 << 20, 4}, 1 << 20) == 8);         // 4 members x 1 MiB chunks
	CHECK(auto_depth({512 << 10, 4}, 1 << 20) == 4);       // 2 x 2 MiB stripe / 1 MiB
	CHECK(auto_depth({1 << 20, 8}, 1 << 20) == 16);
	CHECK(auto_depth({16 << 20, 32}, 1 << 20) == 32);      // capped
	CHECK(auto_depth({64 << 10, 2}, 1 << 20) == 4);        // at least 4
}

TEST_CASE("a real file: the fd's queue (io_uring here) moves every byte, I/Os overlap")
{
	char path[] = "fxio-uring-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	std::vector<char> pattern(4 << 20);
	for (std::size_t i = 0; i < pattern.size(); ++i)
		pattern[i] = static_cast<char>(i * 29 + (i >> 12));
	REQUIRE(::write(fd, pattern.data(), pattern.size()) == static_cast<ssize_t>(pattern.size()));
	close(fd);
	std::unique_ptr<BlockDev> dev;
	int e = open_blockdev(path, O_RDWR, dev);
	if (e == -EINVAL) {
		unlink(path);
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	REQUIRE(e == 0);
	std::string why;
	auto q = dev->queue(8, why);
	REQUIRE(q);
	CHECK(q->depth() == 8);
#ifdef FXIO_HAVE_LIBURING
	INFO("why not io_uring: " << why);
	CHECK(std::string(q->name()) == "io_uring");  // the host the tests run on has io_uring
#else
	CHECK(std::string(q->name()) == "threads");
#endif
	BouncePool pool(10, 64 << 10);
	auto eng = make_host_engine();
	auto s = eng->stream();
	PipeCounters c;
	const Range big[] = {{0, 4 << 20}, {4095, 3 << 20}, {1234567, 100}, {65536, 65536 * 3}};
	for (const Range &rg : big) {
		CAPTURE(rg.dev_off);
		Buffer b(rg.size);
		StagedIo io{*dev, pool, *s, *q, b.p, rg.size, rg.dev_off};
		REQUIRE(staged_read(io, c) == static_cast<ssize_t>(rg.size));
		CHECK(std::memcmp(b.p, pattern.data() + rg.dev_off, rg.size) == 0);
	}
	CHECK(c.max_inflight == 8);  // 4 MiB in 64 KiB slots: the queue was full
	// writes: a new pattern over an unaligned range, read back
	Buffer w(1 << 20);
	for (int i = 0; i < 1 << 20; ++i)
		w.p[i] = static_cast<char>(i ^ 0x5c);
	StagedIo wio{*dev, pool, *s, *q, w.p, 1 << 20, 333333};
	REQUIRE(staged_write(wio, c) == 1 << 20);
	std::memcpy(pattern.data() + 333333, w.p, 1 << 20);
	Buffer back(4 << 20);
	StagedIo rio{*dev, pool, *s, *q, back.p, 4 << 20, 0};
	REQUIRE(staged_read(rio, c) == 4 << 20);
	CHECK(std::memcmp(back.p, pattern.data(), 4 << 20) == 0);
	CHECK(pool.free_slots() == 10);
	// a read past the end of the file: short, so the request fails cleanly
	Buffer past(8192);
	StagedIo pio{*dev, pool, *s, *q, past.p, 8192, (4 << 20) - 4096};
	CHECK(staged_read(pio, c) == -EIO);
	CHECK(pool.free_slots() == 10);
	unlink(path);
}

TEST_CASE("C API: stats and fxio_disk_queue report the depth and the queue")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	CHECK(std::string(fxio_disk_queue(d.h)).empty());  // before any staged I/O
	Buffer b(300000);
	CHECK(fxio_read(d.h, b.p, 300000, 3, 1) == 300000);  // unaligned: staged
	fxio_stats st{};
	REQUIRE(fxio_get_stats(d.h, &st) == 0);
	CHECK(st.queue_depth >= 4);  // a file on a disk that is not striped: 4
	CHECK(st.pool_slots >= static_cast<std::uint64_t>(st.queue_depth) + 2);
	std::string q = fxio_disk_queue(d.h);
#ifdef FXIO_HAVE_LIBURING
	CHECK(q == "io_uring");
#else
	CHECK(q.rfind("threads (", 0) == 0);
#endif
	CHECK(std::string(fxio_disk_queue(nullptr)).empty());
}

// ---- batches ---------------------------------------------------------------------

namespace {

fxio_batch_io batch_read(char *base, std::size_t size, off_t dev_off, std::uint64_t cookie)
{
	return {FXIO_BATCH_READ, 0, base, size, dev_off, 0, cookie};
}

// Every event of @n entries, by cookie (fails the test on a timeout).
std::map<std::uint64_t, fxio_batch_event> collect(Batch &b, std::size_t n)
{
	std::map<std::uint64_t, fxio_batch_event> by;
	std::vector<fxio_batch_event> ev(n);
	while (by.size() < n) {
		int got = b.status(ev.data(), 1, static_cast<unsigned>(ev.size()), 5000);
		REQUIRE(got > 0);
		for (int i = 0; i < got; ++i)
			by[ev[i].cookie] = ev[i];
	}
	return by;
}

}  // namespace

TEST_CASE("batch: every entry ends done with its cookie, path and reason; poll never sees them")
{
	LibRig r;
	r.k.direct = false;  // HIP memory the kernel cannot move: staged, with its reason
	const int n = 16;
	Buffer b(n * 5000);
	REQUIRE(r.lib.buf_register(b.p, n * 5000, FXIO_BUF_HIP) == 0);
	Batch batch(*r.file, n);
	std::vector<fxio_batch_io> ios;
	for (int i = 0; i < n; ++i) {
		ios.push_back(batch_read(b.p, 5000, 6000 * i + 3, 100 + i));
		ios.back().buf_off = 5000 * i;
	}
	// a write among the reads (no range overlaps another)
	ios[5].op = FXIO_BATCH_WRITE;
	std::memset(b.p + 5000 * 5, 0x77, 5000);
	REQUIRE(batch.submit(ios.data(), n) == n);
	auto by = collect(batch, n);
	REQUIRE(by.size() == n);
	for (int i = 0; i < n; ++i) {
		CAPTURE(i);
		const fxio_batch_event &e = by[100 + i];
		CHECK(e.status == FXIO_BATCH_DONE);
		CHECK(e.result == 5000);
		CHECK(e.path == FXIO_PATH_STAGED);
		CHECK(e.reason == FXIO_REASON_NO_STRUCT_PAGE);
		CHECK(std::string(e.why).find("provider rocm: direct: no") == 0);
		if (i != 5)
			CHECK(std::memcmp(b.p + 5000 * i, r.dev->data.data() + 6000 * i + 3, 5000) == 0);
	}
	CHECK(std::all_of(r.dev->data.begin() + 30003, r.dev->data.begin() + 35003,
			  [](char c) { return c == 0x77; }));
	fxio_batch_event ev[2];
	CHECK(batch.status(ev, 1, 2, -1) == 0);  // nothing outstanding: no wait
	Completion c[2];
	CHECK(r.file->poll(c, 2, 0) == 0);  // batch entries never reach poll
	CHECK(r.lib.buf_deregister(b.p) == 0);
}

TEST_CASE("batch: a bad entry fails alone with its errno, the others complete")
{
	LibRig r(false);
	// inside entry 1's range: it fails among the first three entries the
	// workers take, while the later ones still wait in the queue
	r.dev->bad_byte = 1 * 4096 + 17;
	r.dev->latency = std::chrono::microseconds(2000);
	const int n = 16;
	Buffer b(n * 4096);
	Batch batch(*r.file, n + 2);
	std::vector<fxio_batch_io> ios;
	for (int i = 0; i < n; ++i)
		ios.push_back({FXIO_BATCH_READ, 0, b.p, 4096, 4096 * i, 4096 * i,
			       static_cast<std::uint64_t>(i)});
	ios[14].dev_off = -1;              // refused for its arguments, never run
	ios[15].op = 9;                    // no such op
	fxio_batch_io past = {FXIO_BATCH_WRITE, 0, b.p, 4096, (2 << 20) - 512, 0, 50};
	ios.push_back(past);                // past the end of the disk
	REQUIRE(batch.submit(ios.data(), n + 1) == n + 1);
	auto by = collect(batch, n + 1);
	for (int i = 0; i < 14; ++i) {
		if (i == 1)
			continue;
		CAPTURE(i);
		CHECK(by[i].status == FXIO_BATCH_DONE);
		CHECK(by[i].result == 4096);
		CHECK(by[i].path == FXIO_PATH_POSIX);
		CHECK(std::memcmp(b.p + 4096 * i, r.dev->data.data() + 4096 * i, 4096) == 0);
	}
	CHECK(by[1].status == FXIO_BATCH_FAILED);
	CHECK(by[1].result == -EIO);
	CHECK(by[1].path == FXIO_PATH_POSIX);  // it ran, on the path it took
	CHECK(std::string(by[1].why) == fxio_reason_str(FXIO_REASON_NOT_REGISTERED));
	CHECK(by[14].status == FXIO_BATCH_FAILED);
	CHECK(by[14].result == -EINVAL);
	CHECK(by[14].path == FXIO_PATH_NONE);
	CHECK(by[15].result == -EINVAL);
	CHECK(by[50].status == FXIO_BATCH_FAILED);
	CHECK(by[50].result == -ENOSPC);
	CHECK(by[50].path == FXIO_PATH_NONE);  // refused before a path was chosen
	CHECK(r.file->stats().errors == 1);  // the one that ran and failed

	// capacity: more than the batch holds, or than fit beside uncollected entries
	CHECK(batch.submit(ios.data(), n + 3) == -EINVAL);
	REQUIRE(batch.submit(ios.data(), 2) == 2);
	CHECK(batch.submit(ios.data(), n + 1) == -EAGAIN);
	collect(batch, 2);
	fxio_batch_event ev[1];
	CHECK(batch.status(nullptr, 1, 1, 0) == -EINVAL);
	CHECK(batch.status(ev, 1, 0, 0) == -EINVAL);
}

TEST_CASE("batch: cancel takes back every entry not started; the running ones finish")
{
	LibRig r(false);  // three async workers (LibRig's Config)
	const int n = 12;
	Buffer b(n * 4096);
	std::memset(b.p, 0x5a, n * 4096);
	Batch batch(*r.file, n);
	std::vector<fxio_batch_io> ios;
	for (int i = 0; i < n; ++i)
		ios.push_back({FXIO_BATCH_READ, 0, b.p, 4096, 8192 * i, 4096 * i,
			       static_cast<std::uint64_t>(i)});
	r.dev->close_gate();
	REQUIRE(batch.submit(ios.data(), n) == n);
	REQUIRE(wait_held(*r.dev, 3) == 3);  // three entries started, held at the disk
	CHECK(batch.cancel() == n - 3);
	CHECK(batch.cancel() == 0);
	r.dev->open_gate();
	auto by = collect(batch, n);
	int done = 0, canceled = 0;
	for (auto &[cookie, e] : by) {
		CAPTURE(cookie);
		char *dst = b.p + 4096 * cookie;
		if (e.status == FXIO_BATCH_DONE) {
			++done;
			CHECK(e.result == 4096);
			CHECK(std::memcmp(dst, r.dev->data.data() + 8192 * cookie, 4096) == 0);
		} else {
			++canceled;
			CHECK(e.status == FXIO_BATCH_CANCELED);
			CHECK(e.result == -ECANCELED);
			CHECK(e.path == FXIO_PATH_NONE);
			CHECK(std::all_of(dst, dst + 4096, [](char c) { return c == 0x5a; }));
		}
	}
	CHECK(done == 3);
	CHECK(canceled == n - 3);
	CHECK(r.dev->reads.load() == 3);  // the canceled ones never reached the disk
}

TEST_CASE("batch: destroy with entries in flight waits for the running ones, cancels the rest")
{
	LibRig r(false);
	const int n = 12;
	Buffer b(n * 4096);
	std::memset(b.p, 0x5a, n * 4096);
	auto batch = std::make_unique<Batch>(*r.file, n);
	CHECK(r.file->batches() == 1);
	std::vector<fxio_batch_io> ios;
	for (int i = 0; i < n; ++i)
		ios.push_back({FXIO_BATCH_READ, 0, b.p, 4096, 4096 * i, 4096 * i,
			       static_cast<std::uint64_t>(i)});
	r.dev->close_gate();
	REQUIRE(batch->submit(ios.data(), n) == n);
	REQUIRE(wait_held(*r.dev, 3) == 3);
	std::atomic<bool> destroyed{false};
	std::thread t([&] {
		batch.reset();
		destroyed = true;
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	CHECK_FALSE(destroyed.load());  // three entries still write into b
	r.dev->open_gate();
	t.join();
	CHECK(destroyed.load());
	CHECK(r.file->batches() == 0);
	CHECK(r.dev->reads.load() == 3);
	int landed = 0;
	for (int i = 0; i < n; ++i)
		landed += std::memcmp(b.p + 4096 * i, r.dev->data.data() + 4096 * i, 4096) == 0;
	CHECK(landed == 3);
	// the File's workers carry on: an async I/O after it completes as before
	REQUIRE(r.file->submit(false, b.p, 4096, 0, 0, 7) >= 0);
	Completion c[2];
	REQUIRE(r.file->poll(c, 2, 5000) == 1);
	CHECK(c[0].user_data == 7);
	CHECK(c[0].result == 4096);
}

TEST_CASE("C API: a batch on a file; fxio_close refuses while it exists")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	fxio_batch_t b = nullptr;
	CHECK(fxio_batch_setup(d.h, 0, &b) == -EINVAL);
	CHECK(fxio_batch_setup(nullptr, 4, &b) == -EBADF);
	REQUIRE(fxio_batch_setup(d.h, 4, &b) == 0);
	Buffer w(8192), rd(8192);
	for (int i = 0; i < 8192; ++i)
		w.p[i] = static_cast<char>(i * 5 + 1);
	fxio_batch_io wios[2] = {{FXIO_BATCH_WRITE, 0, w.p, 4096, 4096, 0, 1},
				 {FXIO_BATCH_WRITE, 0, w.p, 4096, 9000, 4096, 2}};  // unaligned
	CHECK(fxio_batch_submit(b, wios, 2, 1) == -EINVAL);  // flags
	REQUIRE(fxio_batch_submit(b, wios, 2, 0) == 2);
	fxio_batch_event ev[4];
	int got = 0;
	while (got < 2) {
		int k = fxio_batch_status(b, ev + got, 2 - got, 4 - got, 5000);
		REQUIRE(k > 0);
		got += k;
	}
	for (int i = 0; i < 2; ++i) {
		CHECK(ev[i].status == FXIO_BATCH_DONE);
		CHECK(ev[i].result == 4096);
		CHECK(ev[i].path == FXIO_PATH_POSIX);
	}
	CHECK(fxio_close(d.h) == -EBUSY);
	fxio_batch_io rios[2] = {{FXIO_BATCH_READ, 0, rd.p, 4096, 4096, 0, 3},
				 {FXIO_BATCH_READ, 0, rd.p, 4096, 9000, 4096, 4}};
	REQUIRE(fxio_batch_submit(b, rios, 2, 0) == 2);
	REQUIRE(fxio_batch_status(b, ev, 2, 4, 5000) == 2);
	CHECK(ev[0].result == 4096);
	CHECK(ev[1].result == 4096);
	CHECK(std::memcmp(rd.p, w.p, 8192) == 0);
	CHECK(std::string(fxio_last_path(d.h)) == "none");  // batches leave it alone
	CHECK(fxio_batch_cancel(b) == 0);
	CHECK(fxio_batch_destroy(b) == 0);
	CHECK(fxio_batch_destroy(nullptr) == -EBADF);
	CHECK(fxio_batch_status(nullptr, ev, 1, 1, 0) == -EBADF);
	CHECK(fxio_close(d.h) == 0);
	d.h = nullptr;
}

// ---- properties ----------------------------------------------------------------

TEST_CASE("properties: the kernel's providers, the engines that load, the configuration")
{
	LibRig r;
	r.k.peerq = true;
	fxio_properties p;
	std::memset(&p, 0xee, sizeof(p));
	r.lib.properties(p);
	CHECK(p.size == sizeof(p));
	CHECK(p.version_major == FXIO_VERSION_MAJOR);
	CHECK(p.version_minor == 3);
	CHECK(p.kernel_abi == 1);
	CHECK(std::string(p.kernel_reason).empty());
	CHECK(p.max_direct_io == 64ull << 20);
	REQUIRE(p.nproviders == 3);
	CHECK(std::string(p.providers[0].name) == "host");
	CHECK(p.providers[0].flags == (FXIO_PROVIDER_PRESENT | FXIO_PROVIDER_DIRECT));
	CHECK(std::string(p.providers[1].name) == "rocm");
	CHECK(p.providers[1].flags ==
	      (FXIO_PROVIDER_PRESENT | FXIO_PROVIDER_DIRECT | FXIO_PROVIDER_PEERQ));
	r.k.direct = false;
	r.lib.properties(p);
	CHECK(p.providers[2].flags == (FXIO_PROVIDER_PRESENT | FXIO_PROVIDER_PEERQ));
	CHECK(std::string(p.providers[2].reason) == "direct: no - DMA addresses only");
	CHECK(std::string(p.engines[FXIO_BUF_HOST].name) == "host");
	CHECK(p.engines[FXIO_BUF_HOST].present == 1);
	CHECK(p.engines[FXIO_BUF_HIP].present == 1);  // the fake engine
	CHECK(std::string(p.engines[FXIO_BUF_ACL].name) == "acl");
	CHECK(p.engines[FXIO_BUF_ACL].present == 0);
	CHECK(std::string(p.engines[FXIO_BUF_ACL].reason) == "libascendcl.so not loadable (test)");
	CHECK(p.pool_slots == 4);
	CHECK(p.pool_slot_bytes == 8192);
	CHECK(p.queue_depth == 0);  // automatic, per disk
	CHECK(p.async_workers == 3);

	LibRig none(false);
	none.lib.properties(p);
	CHECK(p.kernel_abi == 0);
	CHECK(p.nproviders == 0);
	CHECK(p.max_direct_io == 0);
	CHECK(std::string(p.kernel_reason) == "/dev/fxblk-peer absent (test)");
	CHECK(p.engines[FXIO_BUF_HOST].present == 1);
}

TEST_CASE("C API: fxio_get_properties fills what the caller's struct holds")
{
	fxio_properties p;
	std::memset(&p, 0xee, sizeof(p));
	REQUIRE(fxio_get_properties(&p, sizeof(p)) == 0);
	CHECK(p.size == sizeof(p));
	CHECK(p.version_major == FXIO_VERSION_MAJOR);
	CHECK(p.version_minor == FXIO_VERSION_MINOR);
	CHECK(p.engines[FXIO_BUF_HOST].present == 1);
	CHECK(p.pool_slots >= 2);
	CHECK(p.async_workers >= 1);
	if (p.kernel_abi == 0)  // the unit tests' host: no usable /dev/fxblk-peer
		CHECK(std::string(p.kernel_reason).find("/dev/fxblk-peer") != std::string::npos);
	// an older caller's shorter struct: only its bytes are written
	fxio_properties old;
	std::memset(&old, 0xee, sizeof(old));
	REQUIRE(fxio_get_properties(&old, 8) == 0);
	CHECK(old.size == 8);
	CHECK(old.version_minor == FXIO_VERSION_MINOR);
	CHECK(old.kernel_abi == 0xeeeeeeeeu);
	CHECK(fxio_get_properties(nullptr, sizeof(p)) == -EINVAL);
	CHECK(fxio_get_properties(&p, 4) == -EINVAL);
}
