#include "library.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace fxio {

// ---- configuration -------------------------------------------------------

namespace {

std::size_t env_size(const char *name, std::size_t def, std::size_t lo, std::size_t hi)
{
	const char *s = std::getenv(name);
	if (!s || !*s)
		return def;
	char *end = nullptr;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (*end || v < lo || v > hi)
		return def;
	return static_cast<std::size_t>(v);
}

}  // namespace

// Why DMA-only memory the kernel can move over peer queues was staged.
const char *const no_peer_queues =
	"memory has no struct page and this disk has no peer queues that move it "
	"(fxblk peer_queues=0, a member not NVMe-oF/RDMA, or its NIC cannot map it)";

Config Config::from_env()
{
	Config c;
	c.pool_slots = env_size("FXIO_POOL_SLOTS", c.pool_slots, 2, 256);
	c.slot_bytes = env_size("FXIO_SLOT_KIB", c.slot_bytes >> 10, 4, 64 * 1024) << 10;
	c.workers = static_cast<unsigned>(env_size("FXIO_WORKERS", c.workers, 1, 64));
	c.depth = static_cast<unsigned>(env_size("FXIO_DEPTH", c.depth, 1, 64));
	return c;
}

// ---- Library: engines, the control node, registrations ---------------------

std::unique_ptr<CopyEngine> Library::load_engine(unsigned kind, std::string &why)
{
	switch (kind) {
	case FXIO_BUF_HOST:
	case FXIO_BUF_EMULATED:
		return make_host_engine();
	case FXIO_BUF_HIP:
		return load_hip_engine(why);
	case FXIO_BUF_ACL:
		return load_acl_engine(why);
	}
	why = "unknown memory kind";
	return nullptr;
}

Library::Library(Config cfg, KernelOpener k, EngineLoader e)
	: cfg_(cfg), open_kernel_(std::move(k)), load_engine_(std::move(e))
{
	// Slots must hold whole blocks of any disk (4 KiB covers them all).
	cfg_.slot_bytes = std::max<std::size_t>(4096, cfg_.slot_bytes / 4096 * 4096);
	cfg_.pool_slots = std::max<std::size_t>(2, cfg_.pool_slots);
}

Library::~Library()
{
	for (auto &[base, r] : regs_)
		if (r.kernel && kernel_)
			kernel_->deregister(r.kernel->handle);
}

CopyEngine *Library::engine(unsigned kind, std::string &why)
{
	std::lock_guard lk(mu_);
	unsigned key = kind == FXIO_BUF_EMULATED ? FXIO_BUF_HOST : kind;
	auto it = engines_.find(key);
	if (it != engines_.end())
		return it->second.get();
	auto e = load_engine_(key, why);
	if (!e)
		return nullptr;
	return engines_.emplace(key, std::move(e)).first->second.get();
}

unsigned Library::detect_kind(const void *p)
{
	for (unsigned kind : {FXIO_BUF_HIP, FXIO_BUF_ACL}) {
		CopyEngine *e = nullptr;
		{
			std::lock_guard lk(mu_);
			auto it = engines_.find(kind);
			if (it != engines_.end())
				e = it->second.get();
		}
		std::string why;
		if (!e && runtime_in_process(kind))
			e = engine(kind, why);
		if (e && e->device_memory(p) == 1)
			return kind;
	}
	return FXIO_BUF_HOST;
}

const char *Library::intern(const std::string &s)
{
	std::lock_guard lk(mu_);
	return texts_.insert(s).first->c_str();
}

PeerKernel *Library::kernel(std::string &why)
{
	std::lock_guard lk(mu_);
	if (!kernel_)
		kernel_ = open_kernel_(kernel_why_);
	why = kernel_why_;
	return kernel_.get();
}

void Library::properties(fxio_properties &p)
{
	p = {};
	p.size = sizeof(p);
	p.version_major = FXIO_VERSION_MAJOR;
	p.version_minor = FXIO_VERSION_MINOR;
	std::string why;
	std::vector<KernelProvider> ps;
	PeerKernel *k = kernel(why);
	if (k) {
		if (int e = k->providers(ps); e) {
			why = std::string("listing the kernel's providers failed: ") + std::strerror(-e);
			ps.clear();
		} else {
			p.kernel_abi = static_cast<std::uint32_t>(k->abi());
			p.max_direct_io = k->max_rw();
		}
	}
	p.kernel_reason = intern(p.kernel_abi ? "" : why);
	for (const KernelProvider &kp : ps) {
		if (p.nproviders == FXIO_MAX_PROVIDERS)
			break;
		fxio_provider_info &i = p.providers[p.nproviders++];
		i.name = intern(kp.name);
		i.flags = (kp.present ? FXIO_PROVIDER_PRESENT : 0) |
			  (kp.direct ? FXIO_PROVIDER_DIRECT : 0) | (kp.peerq ? FXIO_PROVIDER_PEERQ : 0);
		i.reason = intern(kp.reason);
	}
	static const char *const engine_names[] = {"host", "hip", "acl"};
	for (unsigned kind : {FXIO_BUF_HOST, FXIO_BUF_HIP, FXIO_BUF_ACL}) {
		std::string ewhy;
		fxio_engine_info &e = p.engines[kind];
		e.name = engine_names[kind];
		e.present = engine(kind, ewhy) != nullptr;
		e.reason = intern(e.present ? "" : ewhy);
	}
	p.pool_slots = cfg_.pool_slots;
	p.pool_slot_bytes = cfg_.slot_bytes;
	p.queue_depth = cfg_.depth;
	p.async_workers = cfg_.workers;
}

namespace {

// Device memory goes to the kernel only when its provider there can move
// it (FXBLK_PEER_F_DIRECT, or FXBLK_PEER_F_PEERQ: over fxblk's peer queues):
// a registration that cannot serve the data path would only pin the memory
// (VRAM held after hipFree, dma-bufs moved).
// False with @why saying what the kernel lacks.
bool kernel_moves(PeerKernel &k, unsigned kind, std::string &why)
{
	const char *name = kind == FXIO_BUF_HIP ? "rocm" : "ascend";
	std::vector<KernelProvider> ps;
	if (int e = k.providers(ps); e) {
		why = std::string("kernel providers unknown: ") + std::strerror(-e);
		return false;
	}
	for (const KernelProvider &p : ps) {
		if (p.name != name)
			continue;
		if (p.present && (p.direct || p.peerq))
			return true;
		why = "provider " + p.name + (p.present ? "" : " absent") + ": " +
		      (p.reason.empty() ? "memory has no struct page" : p.reason) +
		      "; not registered with the kernel (it would only pin it)";
		return false;
	}
	why = std::string("the kernel has no provider ") + name +
	      "; not registered with the kernel";
	return false;
}

// The kernel's registration of @r, and why no RW of it moves it directly
// (neither pages a bio carries nor memory its peer queues map), if so.
void take_kernel(Registration &r, const KernelRegistration &kr)
{
	r.kernel = kr;
	if (!kr.direct && !kr.peerq) {
		r.reason = kr.struct_page ? FXIO_REASON_KERNEL_REFUSED : FXIO_REASON_NO_STRUCT_PAGE;
		r.why = "provider " + kr.provider + ": " +
			(kr.reason.empty() ? "memory has no struct page" : kr.reason);
	}
}

}  // namespace

int Library::buf_register(const void *base, std::size_t len, unsigned flags)
{
	unsigned kind = flags & FXIO_BUF_KIND_MASK;
	if (!base || !len || kind > FXIO_BUF_AUTO ||
	    (flags & ~(FXIO_BUF_KIND_MASK | FXIO_BUF_NO_KERNEL)))
		return -EINVAL;
	if (kind == FXIO_BUF_AUTO)
		kind = detect_kind(base);
	auto b = reinterpret_cast<std::uintptr_t>(base);
	if (b + len < b)
		return -EOVERFLOW;
	Registration r;
	r.base = static_cast<const char *>(base);
	r.len = len;
	r.kind = kind;
	std::string why;
	r.engine = engine(kind, why);
	// Without its runtime, device memory is usable only where the kernel
	// moves it (checked below): nothing could stage it.
	bool device = kind == FXIO_BUF_HIP || kind == FXIO_BUF_ACL;
	if (!r.engine && !device)
		return -ENODEV;
	{
		std::lock_guard lk(mu_);
		if (overlaps(r.base, len))
			return -EEXIST;
	}
	if (kind == FXIO_BUF_EMULATED) {
		r.reason = FXIO_REASON_EMULATED;
		r.why = "emulated device memory (host engine, never direct)";
	} else if (flags & FXIO_BUF_NO_KERNEL) {
		r.reason = FXIO_REASON_NO_KERNEL_FLAG;
		r.why = "registered with FXIO_BUF_NO_KERNEL";
	} else if (PeerKernel *k = kernel(why); !k) {
		r.reason = FXIO_REASON_NO_CONTROL_NODE;
		r.why = why;
	} else if (kind != FXIO_BUF_HOST && !kernel_moves(*k, kind, why)) {
		r.reason = FXIO_REASON_NO_STRUCT_PAGE;
		r.why = why;
	} else {
		KernelRegistration kr;
		std::string kwhy;
		int e = k->register_buffer(base, len, kind != FXIO_BUF_HOST, kr, kwhy);
		if (e) {
			r.reason = FXIO_REASON_KERNEL_REFUSED;
			r.why = "kernel refused the registration: " + std::string(std::strerror(-e)) +
				(kwhy.empty() ? "" : " (" + kwhy + ")");
		} else {
			take_kernel(r, kr);
		}
	}
	return add(std::move(r));
}

// Overlapping registrations would make find() ambiguous.
bool Library::overlaps(const char *base, std::size_t len)
{
	auto it = regs_.upper_bound(base);
	if (it != regs_.end() && it->first < base + len)
		return true;
	if (it != regs_.begin()) {
		auto p = std::prev(it);
		if (p->first + p->second.len > base)
			return true;
	}
	return false;
}

int Library::add(Registration &&r)
{
	std::string why;
	if (!r.engine && r.reason != FXIO_REASON_NONE) {
		if (r.kernel)
			kernel(why)->deregister(r.kernel->handle);
		return -ENODEV;  // no runtime and no kernel path: nothing can move it
	}
	r.why_text = r.why.empty() ? fxio_reason_str(r.reason) : intern(r.why);
	std::optional<std::uint64_t> undo;
	{
		std::lock_guard lk(mu_);
		if (!overlaps(r.base, r.len)) {
			const char *base = r.base;
			regs_.emplace(base, std::move(r));
			return 0;
		}
		if (r.kernel)  // registered meanwhile by another thread
			undo = r.kernel->handle;
	}
	if (undo)
		kernel(why)->deregister(*undo);
	return -EEXIST;
}

/*
 * A dma-buf: its pages move only over fxblk's peer queues (the kernel
 * attaches it for the members' NICs); elsewhere the staged path copies
 * to and from @base with the engine of @flags' kind, so @base must be what
 * that engine copies (a HIP device pointer the buffer was exported from, a
 * host mapping of it for FXIO_BUF_HOST).
 */
int Library::buf_register_dmabuf(int fd, std::uint64_t offset, std::size_t len,
				 const void *base, unsigned flags)
{
	unsigned kind = flags & FXIO_BUF_KIND_MASK;
	if (fd < 0 || !base || !len || kind > FXIO_BUF_ACL || (flags & ~FXIO_BUF_KIND_MASK))
		return -EINVAL;
	auto b = reinterpret_cast<std::uintptr_t>(base);
	if (b + len < b || offset + len < offset)
		return -EOVERFLOW;
	Registration r;
	r.base = static_cast<const char *>(base);
	r.len = len;
	r.kind = kind;
	r.dmabuf = true;
	std::string why;
	r.engine = engine(kind, why);
	{
		std::lock_guard lk(mu_);
		if (overlaps(r.base, len))
			return -EEXIST;
	}
	KernelRegistration kr;
	std::string kwhy;
	if (PeerKernel *k = kernel(why); !k) {
		r.reason = FXIO_REASON_NO_CONTROL_NODE;
		r.why = why;
	} else if (int e = k->register_dmabuf(fd, offset, len, kr, kwhy); e) {
		r.reason = FXIO_REASON_KERNEL_REFUSED;
		r.why = "kernel refused the dma-buf: " + std::string(std::strerror(-e)) +
			(kwhy.empty() ? "" : " (" + kwhy + ")");
	} else {
		// RW offsets count from the registration's start in the buffer
		kr.base = b - (offset - kr.base);
		take_kernel(r, kr);
	}
	return add(std::move(r));
}

int Library::buf_deregister(const void *base)
{
	std::unique_lock lk(mu_);
	auto it = regs_.find(static_cast<const char *>(base));
	if (it == regs_.end())
		return -ENOENT;
	std::optional<KernelRegistration> kr = it->second.kernel;
	regs_.erase(it);
	if (kr && kernel_)
		return kernel_->deregister(kr->handle);
	return 0;
}

std::optional<Registration> Library::find(const char *p, std::size_t n)
{
	std::lock_guard lk(mu_);
	auto it = regs_.upper_bound(p);
	if (it == regs_.begin())
		return std::nullopt;
	--it;
	const Registration &r = it->second;
	if (p < r.base || static_cast<std::size_t>(p - r.base) > r.len ||
	    n > r.len - static_cast<std::size_t>(p - r.base))
		return std::nullopt;
	return r;
}

std::size_t Library::registrations()
{
	std::lock_guard lk(mu_);
	return regs_.size();
}

// ---- File: one disk, a path per I/O ----------------------------------------

struct File::Lane {
	std::unique_ptr<DiskQueue> disk;  // made on first staged I/O
	std::map<CopyEngine *, std::unique_ptr<CopyStream>> streams;
	CopyStream *stream(CopyEngine *e)
	{
		auto &s = streams[e];
		if (!s)
			s = e->stream();
		return s.get();
	}
};

File::File(Library &lib, std::unique_ptr<BlockDev> dev) : lib_(lib), dev_(std::move(dev))
{
	const Config &c = lib_.config();
	depth_ = c.depth ? c.depth : auto_depth(dev_->geometry(), c.slot_bytes);
	st_.pool_numa_node = -1;
	st_.queue_depth = static_cast<std::int32_t>(depth_);
}

std::string File::disk_queue()
{
	std::lock_guard lk(mu_);
	return queue_name_;
}

File::~File()
{
	{
		std::lock_guard lk(mu_);
		stopping_ = true;
	}
	job_cv_.notify_all();
	for (auto &t : workers_)
		t.join();
}

BouncePool *File::pool()
{
	std::lock_guard lk(mu_);
	if (!pool_ && !pool_failed_) {
		auto &c = lib_.config();
		std::size_t slot = std::max<std::size_t>(c.slot_bytes / dev_->block_size(), 1) *
				   dev_->block_size();
		// Room for a full queue of disk I/Os and the copies behind them.
		pool_ = std::make_unique<BouncePool>(std::max<std::size_t>(c.pool_slots, depth_ + 2),
						     slot);
		if (!pool_->ok()) {
			pool_.reset();
			pool_failed_ = true;
		} else {
			st_.pool_slots = pool_->slots();
			st_.pool_slot_bytes = pool_->slot_bytes();
			st_.pool_locked = pool_->locked();
			st_.pool_numa_node = pool_->numa_node();
		}
	}
	return pool_.get();
}

std::unique_ptr<File::Lane> File::take_lane()
{
	std::lock_guard lk(mu_);
	if (lanes_.empty())
		return std::make_unique<Lane>();
	auto l = std::move(lanes_.back());
	lanes_.pop_back();
	return l;
}

void File::give_lane(std::unique_ptr<Lane> l)
{
	std::lock_guard lk(mu_);
	lanes_.push_back(std::move(l));
}

bool File::aligned(const char *buf, std::size_t size, std::uint64_t dev_off) const
{
	std::uint64_t bs = dev_->block_size();
	return reinterpret_cast<std::uintptr_t>(buf) % bs == 0 && size % bs == 0 &&
	       dev_off % bs == 0;
}

ssize_t File::run_plain(bool write, char *buf, std::size_t size, std::uint64_t dev_off)
{
	std::size_t done = 0;
	while (done < size) {
		ssize_t r = write ? dev_->pwrite(buf + done, size - done, dev_off + done)
				  : dev_->pread(buf + done, size - done, dev_off + done);
		if (r < 0)
			return r;
		if (r == 0)
			return -EIO;  // the disk ended inside a range we checked
		done += static_cast<std::size_t>(r);
	}
	return static_cast<ssize_t>(size);
}

// The kernel's RW moves the registered pages into bios on fxN; a disk that
// is not an fxblk volume (a file in the tests) takes the same buffer
// through O_DIRECT, which is what RW does inside.
ssize_t File::run_direct(bool write, const Registration &reg, char *buf, std::size_t size,
			 std::uint64_t dev_off)
{
	std::string why;
	PeerKernel *k = lib_.kernel(why);
	if (k && reg.kernel && dev_->fd() >= 0) {
		std::uint64_t off = reinterpret_cast<std::uint64_t>(buf) - reg.kernel->base;
		int e = k->rw(reg.kernel->handle, write, dev_->fd(), off, dev_off, size);
		if (e != -ENOTBLK)
			return e ? e : static_cast<ssize_t>(size);
	}
	// Not an fxblk disk: O_DIRECT needs struct pages, DMA-only memory has none.
	if (reg.kernel && !reg.kernel->struct_page)
		return -EREMOTEIO;
	return run_plain(write, buf, size, dev_off);
}

ssize_t File::run_staged(bool write, char *buf, std::size_t size, std::uint64_t dev_off,
			 CopyEngine *engine)
{
	BouncePool *p = pool();
	if (!p)
		return -ENOMEM;
	auto lane = take_lane();
	CopyStream *s = lane->stream(engine);
	if (!lane->disk) {
		std::string why;
		lane->disk = dev_->queue(depth_, why);
		std::lock_guard lk(mu_);
		if (queue_name_.empty())
			queue_name_ = lane->disk->name() + (why.empty() ? "" : " (" + why + ")");
	}
	if (!s || !lane->disk) {
		give_lane(std::move(lane));
		return -ENOMEM;
	}
	PipeCounters c;
	StagedIo io{*dev_, *p, *s, *lane->disk, buf, size, dev_off};
	ssize_t r = write ? staged_write(io, c) : staged_read(io, c);
	give_lane(std::move(lane));
	std::lock_guard lk(mu_);
	st_.overlapped_slots += c.overlapped;
	st_.staged_chunks += c.chunks;
	return r;
}

ssize_t File::io(bool write, char *buf, std::size_t size, std::uint64_t dev_off, Outcome &o)
{
	o = {};
	if (!buf)
		return -EFAULT;
	std::uint64_t dsize = dev_->size();
	if (dev_off > static_cast<std::uint64_t>(INT64_MAX) ||
	    size > static_cast<std::size_t>(SSIZE_MAX) || dev_off + size < dev_off)
		return -EINVAL;
	// A staged write past the end of a file moves whole blocks: it leaves
	// the file at a block boundary beyond the write; cut it back below.
	const std::uint64_t old_size = write && dev_->growable() ? dsize : 0;
	if (!dev_->growable() || !write) {
		if (dev_off >= dsize)
			return write ? -ENOSPC : 0;
		if (size > dsize - dev_off) {
			if (write)
				return -ENOSPC;
			size = static_cast<std::size_t>(dsize - dev_off);  // as pread: short at the end
		}
	}
	if (size == 0)
		return 0;

	std::optional<Registration> reg = lib_.find(buf, size);
	std::string why;
	ssize_t r;
	if (!reg) {
		// Compat mode: plain O_DIRECT, or through the pool with memcpy.
		o = {FXIO_PATH_POSIX, FXIO_REASON_NOT_REGISTERED,
		     fxio_reason_str(FXIO_REASON_NOT_REGISTERED)};
		if (aligned(buf, size, dev_off)) {
			r = run_plain(write, buf, size, dev_off);
		} else {
			CopyEngine *e = lib_.engine(FXIO_BUF_HOST, why);
			r = e ? run_staged(write, buf, size, dev_off, e) : -ENODEV;
		}
	} else if (reg->reason == FXIO_REASON_NONE && aligned(buf, size, dev_off)) {
		o = {FXIO_PATH_DIRECT, FXIO_REASON_NONE, ""};
		r = run_direct(write, *reg, buf, size, dev_off);
		if (r == -EREMOTEIO && reg->kernel && reg->kernel->peerq) {
			// DMA-only memory: this disk has no peer queue that moves it.
			o = {FXIO_PATH_STAGED, FXIO_REASON_NO_STRUCT_PAGE, no_peer_queues};
			r = reg->engine ? run_staged(write, buf, size, dev_off, reg->engine) : -ENODEV;
		} else if (r == -EREMOTEIO) {
			// The disk cannot DMA to these pages (fxN without P2PDMA).
			o = {FXIO_PATH_STAGED, FXIO_REASON_P2PDMA_REFUSED,
			     fxio_reason_str(FXIO_REASON_P2PDMA_REFUSED)};
			r = run_staged(write, buf, size, dev_off, reg->engine);
		}
	} else {
		// Host memory the kernel did not take stays "posix"; device memory,
		// and direct-capable memory that is not block aligned, is staged.
		int reason = reg->reason == FXIO_REASON_NONE ? FXIO_REASON_UNALIGNED : reg->reason;
		bool host = reg->kind == FXIO_BUF_HOST && !reg->dmabuf &&
			    reg->reason != FXIO_REASON_NONE;
		o = {host ? FXIO_PATH_POSIX : FXIO_PATH_STAGED, reason,
		     reason == FXIO_REASON_UNALIGNED ? fxio_reason_str(reason) : reg->why_text};
		if (host && aligned(buf, size, dev_off))
			r = run_plain(write, buf, size, dev_off);
		else
			r = reg->engine ? run_staged(write, buf, size, dev_off, reg->engine) : -ENODEV;
	}
	if (old_size && r > 0)
		trim_after_write(old_size, dev_off + size);
	account(o, r, size);
	return r;
}

// The file grew to the block boundary after @end (a staged write's last
// block): back to max(@old_size, @end), unless something else changed its
// size meanwhile (a concurrent writer further out).
void File::trim_after_write(std::uint64_t old_size, std::uint64_t end)
{
	std::uint64_t bs = dev_->block_size(), now = dev_->size();
	std::uint64_t want = std::max(old_size, end);
	if (now > want && now == (end + bs - 1) / bs * bs)
		dev_->truncate(want);
}

void File::account(const Outcome &o, ssize_t r, std::size_t)
{
	std::lock_guard lk(mu_);
	if (r < 0) {
		++st_.errors;
		return;
	}
	++st_.ios[o.path];
	st_.bytes[o.path] += static_cast<std::uint64_t>(r);
	if (o.reason != FXIO_REASON_NONE)
		++st_.fallbacks[o.reason];
}

ssize_t File::read(void *base, std::size_t size, std::uint64_t dev_off, std::uint64_t buf_off,
		   Outcome &o)
{
	if (!base)
		return -EFAULT;
	return io(false, static_cast<char *>(base) + buf_off, size, dev_off, o);
}

ssize_t File::write(const void *base, std::size_t size, std::uint64_t dev_off,
		    std::uint64_t buf_off, Outcome &o)
{
	if (!base)
		return -EFAULT;
	// The write path only reads the buffer; the pipeline's type is shared.
	return io(true, const_cast<char *>(static_cast<const char *>(base)) + buf_off, size,
		  dev_off, o);
}

fxio_stats File::stats()
{
	std::lock_guard lk(mu_);
	return st_;
}

// ---- async: a few worker threads run submissions, completions queue up ----

std::int64_t File::submit(bool write, void *base, std::size_t size, std::uint64_t dev_off,
			  std::uint64_t buf_off, std::uint64_t user_data)
{
	if (!base)
		return -EFAULT;
	std::lock_guard lk(mu_);
	start_workers();
	std::int64_t id = next_id_++;
	++outstanding_;
	jobs_.push_back({id, write, static_cast<char *>(base) + buf_off, size, dev_off, user_data});
	job_cv_.notify_one();
	return id;
}

void File::start_workers()
{
	if (workers_.empty())
		for (unsigned i = 0; i < lib_.config().workers; ++i)
			workers_.emplace_back([this] { worker(); });
}

void File::worker()
{
	std::unique_lock lk(mu_);
	for (;;) {
		job_cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
		if (jobs_.empty())
			return;  // stopping, and nothing left to run
		Job j = jobs_.front();
		jobs_.pop_front();
		if (j.batch)
			++j.batch->running_;  // from here on, cancel cannot take it back
		lk.unlock();
		Outcome o;
		ssize_t r = io(j.write, j.buf, j.size, j.dev_off, o);
		lk.lock();
		if (j.batch) {
			--j.batch->running_;
			j.batch->end(j.user_data, r < 0 ? FXIO_BATCH_FAILED : FXIO_BATCH_DONE, r, o);
		} else {
			done_.push_back({j.id, j.user_data, r, o.path, o.reason, o.why});
		}
		done_cv_.notify_all();
	}
}

std::size_t File::batches()
{
	std::lock_guard lk(mu_);
	return batches_;
}

int File::poll(fxio_event *ev, int max, int timeout_ms)
{
	if (!ev || max <= 0)
		return -EINVAL;
	std::vector<Completion> c(static_cast<std::size_t>(max));
	int n = poll(c.data(), max, timeout_ms);
	for (int i = 0; i < n; ++i)
		ev[i] = {c[i].id, c[i].user_data, c[i].result, c[i].path, c[i].reason};
	return n;
}

int File::poll(Completion *ev, int max, int timeout_ms)
{
	if (!ev || max <= 0)
		return -EINVAL;
	std::unique_lock lk(mu_);
	// Nothing submitted and not yet collected: nothing to wait for.
	auto ready = [&] { return !done_.empty() || outstanding_ == 0; };
	if (timeout_ms < 0)
		done_cv_.wait(lk, ready);
	else
		done_cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), ready);
	int n = 0;
	while (n < max && !done_.empty()) {
		ev[n++] = done_.front();
		done_.pop_front();
		--outstanding_;
	}
	return n;
}

// ---- batches: the async jobs of File, ending in their batch -----------------

Batch::Batch(File &f, unsigned max_entries) : f_(f), max_(max_entries)
{
	std::lock_guard lk(f_.mu_);
	++f_.batches_;
}

Batch::~Batch()
{
	std::unique_lock lk(f_.mu_);
	cancel_queued();
	f_.done_cv_.wait(lk, [&] { return running_ == 0; });
	--f_.batches_;
}

void Batch::end(std::uint64_t cookie, int status, std::int64_t result, const Outcome &o)
{
	ended_.push_back({cookie, result, status, o.path, o.reason, 0, o.why});
}

int Batch::submit(const fxio_batch_io *ios, unsigned n)
{
	if ((!ios && n) || n > max_)
		return -EINVAL;
	std::lock_guard lk(f_.mu_);
	if (outstanding_ + n > max_)
		return -EAGAIN;  // collect ended entries first
	f_.start_workers();
	for (const fxio_batch_io *io = ios; io != ios + n; ++io) {
		bool write = io->op == FXIO_BATCH_WRITE;
		if ((!write && io->op != FXIO_BATCH_READ) || io->dev_off < 0 || io->buf_off < 0 ||
		    !io->base) {
			end(io->cookie, FXIO_BATCH_FAILED, io->base ? -EINVAL : -EFAULT, Outcome{});
			continue;
		}
		f_.jobs_.push_back({-1, write, static_cast<char *>(io->base) + io->buf_off, io->size,
				    static_cast<std::uint64_t>(io->dev_off), io->cookie, this});
	}
	outstanding_ += n;
	f_.job_cv_.notify_all();
	f_.done_cv_.notify_all();  // entries refused above have ended
	return static_cast<int>(n);
}

int Batch::status(fxio_batch_event *ev, unsigned min_nr, unsigned max, int timeout_ms)
{
	if (!ev || max == 0)
		return -EINVAL;
	std::unique_lock lk(f_.mu_);
	std::size_t want = std::min<std::size_t>({min_nr, max, outstanding_});
	auto ready = [&] { return ended_.size() >= want; };
	if (timeout_ms < 0)
		f_.done_cv_.wait(lk, ready);
	else
		f_.done_cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), ready);
	unsigned n = 0;
	while (n < max && !ended_.empty()) {
		ev[n++] = ended_.front();
		ended_.pop_front();
		--outstanding_;
	}
	return static_cast<int>(n);
}

int Batch::cancel_queued()
{
	int n = 0;
	auto &jobs = f_.jobs_;
	for (auto it = jobs.begin(); it != jobs.end();) {
		if (it->batch != this) {
			++it;
			continue;
		}
		end(it->user_data, FXIO_BATCH_CANCELED, -ECANCELED, Outcome{});
		it = jobs.erase(it);
		++n;
	}
	return n;
}

int Batch::cancel()
{
	std::lock_guard lk(f_.mu_);
	int n = cancel_queued();
	f_.done_cv_.notify_all();
	return n;
}

}  // namespace fxio
