// libfxio's core, in C++: the process-wide buffer registry (Library) and
// one open disk (File) that picks a path per I/O, runs it, counts it and
// remembers why. fxio.cpp is the C API over one global Library; the unit
// tests build their own with a fake kernel, engines and disks.
#pragma once

#include "disk.hpp"
#include "engine.hpp"
#include "fxio.h"
#include "peer_kernel.hpp"
#include "pipeline.hpp"
#include "pool.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace fxio {

struct Registration {
	const char *base = nullptr;
	std::size_t len = 0;
	unsigned kind = FXIO_BUF_HOST;
	bool dmabuf = false;                // a dma-buf named by @base: never plain O_DIRECT
	CopyEngine *engine = nullptr;       // for the staged path
	std::optional<KernelRegistration> kernel;  // registered with the kernel
	int reason = FXIO_REASON_NONE;      // why not direct (NONE: it can be)
	std::string why;                    // the same, in words (kernel's reason)
	const char *why_text = "";          // @why interned by the Library (see intern())
};

struct Config {
	std::size_t pool_slots = 8;
	std::size_t slot_bytes = 1 << 20;
	unsigned workers = 4;  // async submissions run on this many threads
	unsigned depth = 0;    // staged disk I/Os in flight per request; 0: auto_depth()
	// FXIO_POOL_SLOTS, FXIO_SLOT_KIB, FXIO_WORKERS, FXIO_DEPTH override the
	// defaults (FXIO_NO_URING=1: the thread queue instead of io_uring).
	static Config from_env();
};

class Library {
public:
	using KernelOpener = std::function<std::unique_ptr<PeerKernel>(std::string &why)>;
	using EngineLoader = std::function<std::unique_ptr<CopyEngine>(unsigned kind, std::string &why)>;
	static std::unique_ptr<CopyEngine> load_engine(unsigned kind, std::string &why);

	explicit Library(Config cfg = Config::from_env(), KernelOpener k = open_peer_kernel,
			 EngineLoader e = load_engine);
	~Library();

	int buf_register(const void *base, std::size_t len, unsigned flags);
	// [@offset, @offset + @len) of a dma-buf, named @base by the I/O calls.
	int buf_register_dmabuf(int fd, std::uint64_t offset, std::size_t len, const void *base,
				unsigned flags);
	int buf_deregister(const void *base);
	// The registration holding [p, p + n), if any (a copy).
	std::optional<Registration> find(const char *p, std::size_t n);
	std::size_t registrations();
	CopyEngine *engine(unsigned kind, std::string &why);
	// FXIO_BUF_AUTO: FXIO_BUF_HIP or _ACL when that runtime (an engine
	// loaded already, or its library mapped in the process) says @p is its
	// device memory, else FXIO_BUF_HOST.
	unsigned detect_kind(const void *p);
	// The control node, opened on first use; null and @why when unusable.
	PeerKernel *kernel(std::string &why);
	const Config &config() const { return cfg_; }
	// A copy of @s that lives as long as the Library: the reason texts
	// I/O outcomes point at (few distinct ones: one per registration
	// failure text, plus the fixed ones).
	const char *intern(const std::string &s);
	// fxio_get_properties: the kernel's providers, the engines that load,
	// the pool and queue configuration (fills all of @out).
	void properties(fxio_properties &out);

private:
	bool overlaps(const char *base, std::size_t len);  // under mu_
	int add(Registration &&r);  // the last step of both registrations
	Config cfg_;
	KernelOpener open_kernel_;
	EngineLoader load_engine_;
	std::mutex mu_;
	std::unique_ptr<PeerKernel> kernel_;
	std::string kernel_why_;
	std::map<unsigned, std::unique_ptr<CopyEngine>> engines_;
	std::map<const char *, Registration> regs_;  // by base
	std::set<std::string> texts_;                // intern()ed, never erased
};

// What one I/O did: its path, why not direct (enum), and the precise
// reason text ("" when direct; the kernel's or the provider's own words
// where they gave one), interned by the Library.
struct Outcome {
	int path = FXIO_PATH_NONE;
	int reason = FXIO_REASON_NONE;
	const char *why = "";
};

// One async completion with its reason text (fxio_completion in fxio.h).
using Completion = fxio_completion;

class Batch;

class File {
public:
	File(Library &lib, std::unique_ptr<BlockDev> dev);
	~File();
	File(const File &) = delete;
	File &operator=(const File &) = delete;

	ssize_t read(void *base, std::size_t size, std::uint64_t dev_off, std::uint64_t buf_off,
		     Outcome &o);
	ssize_t write(const void *base, std::size_t size, std::uint64_t dev_off,
		      std::uint64_t buf_off, Outcome &o);
	std::int64_t submit(bool write, void *base, std::size_t size, std::uint64_t dev_off,
			    std::uint64_t buf_off, std::uint64_t user_data);
	int poll(fxio_event *ev, int max, int timeout_ms);
	int poll(Completion *c, int max, int timeout_ms);
	// Batches alive on this File; it must not be destroyed while any is
	// (fxio_close answers -EBUSY).
	std::size_t batches();

	fxio_stats stats();
	// The disk's fdatasync: every write completed on it (any path) durable.
	int sync() { return dev_->sync(); }
	BouncePool *pool();  // created on first staged I/O; null if mmap failed
	BlockDev &dev() { return *dev_; }
	// Disk I/Os in flight per staged request, and what runs them
	// ("io_uring", or "threads (why not io_uring)"; "" before the first
	// staged I/O).
	unsigned depth() const { return depth_; }
	std::string disk_queue();

private:
	friend class Batch;
	struct Lane;  // one copy stream per engine, used by one I/O at a time
	struct Job {
		std::int64_t id;
		bool write;
		char *buf;
		std::size_t size;
		std::uint64_t dev_off;
		std::uint64_t user_data;  // a batch entry's cookie
		Batch *batch = nullptr;   // ends in this batch, not in done_
	};

	ssize_t io(bool write, char *buf, std::size_t size, std::uint64_t dev_off, Outcome &o);
	ssize_t run_staged(bool write, char *buf, std::size_t size, std::uint64_t dev_off,
			   CopyEngine *engine);
	ssize_t run_direct(bool write, const Registration &reg, char *buf, std::size_t size,
			   std::uint64_t dev_off);
	ssize_t run_plain(bool write, char *buf, std::size_t size, std::uint64_t dev_off);
	bool aligned(const char *buf, std::size_t size, std::uint64_t dev_off) const;
	void account(const Outcome &o, ssize_t r, std::size_t size);
	void trim_after_write(std::uint64_t old_size, std::uint64_t end);
	std::unique_ptr<Lane> take_lane();
	void give_lane(std::unique_ptr<Lane> l);
	void worker();
	void start_workers();  // under mu_

	Library &lib_;
	std::unique_ptr<BlockDev> dev_;
	unsigned depth_;
	std::mutex mu_;  // everything below
	std::string queue_name_;
	std::unique_ptr<BouncePool> pool_;
	bool pool_failed_ = false;
	std::vector<std::unique_ptr<Lane>> lanes_;
	fxio_stats st_{};

	// async
	std::condition_variable job_cv_, done_cv_;
	std::deque<Job> jobs_;
	std::deque<Completion> done_;
	std::vector<std::thread> workers_;
	std::int64_t next_id_ = 0;
	std::size_t outstanding_ = 0;  // submitted, not yet returned by poll
	bool stopping_ = false;
	std::size_t batches_ = 0;
};

// A batch of reads and writes on one File (fxio_batch_* in fxio.h). Its
// entries are the File's async jobs tagged with the batch: they run on the
// File's workers and end in the batch's queue instead of poll()'s. All of
// its state is guarded by the File's mutex, which a worker holds when it
// takes a job from the queue and when it records the job's end, so a
// cancel sees every entry either still queued (it removes it) or taken.
class Batch {
public:
	Batch(File &f, unsigned max_entries);
	// Cancels what has not started and waits for the entries running:
	// they use the caller's buffers until they end.
	~Batch();
	Batch(const Batch &) = delete;
	Batch &operator=(const Batch &) = delete;

	unsigned capacity() const { return max_; }
	int submit(const fxio_batch_io *ios, unsigned n);
	int status(fxio_batch_event *ev, unsigned min_nr, unsigned max, int timeout_ms);
	int cancel();

private:
	friend class File;
	// Both under f_.mu_.
	void end(std::uint64_t cookie, int status, std::int64_t result, const Outcome &o);
	int cancel_queued();

	File &f_;
	const unsigned max_;
	std::size_t outstanding_ = 0;  // submitted, not yet returned by status()
	std::size_t running_ = 0;      // taken by a worker, not yet ended
	std::deque<fxio_batch_event> ended_;
};

}  // namespace fxio
