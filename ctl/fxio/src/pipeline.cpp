#include "pipeline.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

namespace fxio {
namespace {

std::uint64_t align_down(std::uint64_t v, std::uint64_t a) { return v / a * a; }
std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

struct Chunk {
	std::uint64_t pos;  // device offset of the slot's first byte
	std::size_t len;    // whole blocks
};

// The slots a pipeline holds and the copies in flight on them (tag =
// slot index, unique while the slot is held). The first error of the
// request, disk or copy, is kept here.
class Inflight {
public:
	Inflight(BouncePool &pool, CopyStream &stream) : pool_(pool), stream_(stream) {}
	~Inflight() { drain(); }

	std::size_t count() const { return copies_.size(); }
	int error() const { return err_; }
	void fail(int err)
	{
		if (!err_)
			err_ = err;
	}

	int submit(int s, const Chunk &ch, void *dst, const void *src, std::size_t n, CopyDir d)
	{
		int r = stream_.submit(static_cast<std::uint64_t>(s), dst, src, n, d);
		if (r) {
			fail(r);
			pool_.release(s);
			return r;
		}
		copies_.emplace(s, ch);
		return 0;
	}

	// Collects finished copies; a successful one goes to @done(slot,
	// chunk), which owns the slot from then on; a failed one's slot is
	// returned here.
	template <class Done> void reap(bool block, Done &&done)
	{
		done_.clear();
		int r = stream_.reap(done_, block && !copies_.empty());
		if (r)
			fail(r);
		for (const CopyDone &d : done_) {
			auto it = copies_.find(static_cast<int>(d.tag));
			if (it == copies_.end()) {
				fail(-EPROTO);  // an engine completed a copy it never got
				continue;
			}
			Chunk ch = it->second;
			copies_.erase(it);
			if (d.status) {
				fail(d.status);
				pool_.release(static_cast<int>(d.tag));
			} else {
				done(static_cast<int>(d.tag), ch);
			}
		}
	}

	// Waits for every copy in flight and returns their slots.
	void drain()
	{
		auto give_back = [&](int s, const Chunk &) { pool_.release(s); };
		while (!copies_.empty()) {
			std::size_t before = copies_.size();
			reap(true, give_back);
			if (copies_.size() == before) {
				// A stream that reports nothing while copies are pending:
				// keep waiting would hang; its slots stay lost, say so.
				fail(-EIO);
				break;
			}
		}
	}

private:
	BouncePool &pool_;
	CopyStream &stream_;
	std::map<int, Chunk> copies_;
	std::vector<CopyDone> done_;
	int err_ = 0;
};

// The disk I/Os in flight on slots (tag = slot index); errors go to the
// request's Inflight.
class DiskFlight {
public:
	DiskFlight(BouncePool &pool, DiskQueue &q, Inflight &fl) : pool_(pool), q_(q), fl_(fl) {}
	~DiskFlight() { drain(); }

	std::size_t count() const { return ios_.size(); }
	bool full() const { return ios_.size() >= q_.depth(); }

	// 0, or -errno with the slot returned and the request failed.
	int submit(int s, const Chunk &ch, bool write)
	{
		int r = q_.submit(static_cast<std::uint64_t>(s), write, pool_.slot(s), ch.len, ch.pos);
		if (r) {
			fl_.fail(r);
			pool_.release(s);
			return r;
		}
		ios_.emplace(s, ch);
		return 0;
	}

	// Finished I/Os go to @done(slot, chunk, result), which owns the slot.
	template <class Done> void reap(bool block, Done &&done)
	{
		done_.clear();
		if (int r = q_.reap(done_, block && !ios_.empty()); r)
			fl_.fail(r);
		for (const DiskDone &d : done_) {
			auto it = ios_.find(static_cast<int>(d.tag));
			if (it == ios_.end()) {
				fl_.fail(-EPROTO);  // a queue completed an I/O it never got
				continue;
			}
			Chunk ch = it->second;
			ios_.erase(it);
			done(static_cast<int>(d.tag), ch, d.result);
		}
	}

	// Waits for every I/O in flight and returns their slots.
	void drain()
	{
		auto give_back = [&](int s, const Chunk &, ssize_t) { pool_.release(s); };
		while (!ios_.empty()) {
			std::size_t before = ios_.size();
			reap(true, give_back);
			if (ios_.size() == before) {
				fl_.fail(-EIO);  // a queue that never completes: do not hang
				break;
			}
		}
	}

private:
	BouncePool &pool_;
	DiskQueue &q_;
	Inflight &fl_;
	std::map<int, Chunk> ios_;
	std::vector<DiskDone> done_;
};

// The device-side window: whole blocks covering [dev_off, dev_off + size).
struct Window {
	std::uint64_t start, end, lo, hi;  // lo/hi: the caller's bytes
	explicit Window(const StagedIo &io)
		: start(align_down(io.dev_off, io.dev.block_size())),
		  end(align_up(io.dev_off + io.size, io.dev.block_size())), lo(io.dev_off),
		  hi(io.dev_off + io.size)
	{
	}
};

// Reads one whole block for a read-modify-write; past the end of a growable
// file, zeroes.
int read_block(const StagedIo &io, char *dst, std::uint64_t pos)
{
	std::size_t bs = io.dev.block_size();
	ssize_t r = io.dev.pread(dst, bs, pos);
	if (r < 0)
		return static_cast<int>(r);
	if (static_cast<std::size_t>(r) < bs) {
		if (!io.dev.growable())
			return -EIO;
		std::memset(dst + r, 0, bs - static_cast<std::size_t>(r));
	}
	return 0;
}

// A slot for the next disk I/O: a free one at once; when none is free,
// wait for another user of the pool only if this request holds none
// (else it waits for its own I/O and copies first: no request waits for
// slots while holding some, so two requests cannot deadlock). -1: none now.
int next_slot(BouncePool &pool, bool holding)
{
	int s = pool.try_acquire();
	if (s < 0 && !holding)
		s = pool.acquire();
	return s;
}

void note_depth(PipeCounters &c, const DiskFlight &dk)
{
	c.max_inflight = std::max<std::uint64_t>(c.max_inflight, dk.count());
}

}  // namespace

ssize_t staged_read(const StagedIo &io, PipeCounters &c)
{
	if (io.size == 0)
		return 0;
	const Window w(io);
	const std::uint64_t slot_bytes = io.pool.slot_bytes();
	Inflight fl(io.pool, io.stream);
	DiskFlight dk(io.pool, io.disk, fl);
	auto copied = [&](int s, const Chunk &) { io.pool.release(s); };
	// A finished read: its slot is copied out while the other reads run.
	auto read_done = [&](int s, const Chunk &ch, ssize_t r) {
		std::uint64_t from = std::max(ch.pos, w.lo), to = std::min(ch.pos + ch.len, w.hi);
		if (r < 0 || static_cast<std::uint64_t>(r) < to - ch.pos)
			fl.fail(r < 0 ? static_cast<int>(r) : -EIO);  // short: the disk ended early
		if (fl.error()) {
			io.pool.release(s);
			return;
		}
		if (!fl.submit(s, ch, io.buf + (from - w.lo), io.pool.slot(s) + (from - ch.pos),
			       to - from, CopyDir::to_buffer))
			++c.chunks;
	};

	std::uint64_t pos = w.start;
	while (!fl.error() && (pos < w.end || dk.count())) {
		while (pos < w.end && !dk.full() && !fl.error()) {
			int s = next_slot(io.pool, dk.count() || fl.count());
			if (s < 0)
				break;
			Chunk ch{pos, static_cast<std::size_t>(std::min(slot_bytes, w.end - pos))};
			fl.reap(false, copied);  // is a copy still running while we read?
			if (fl.count())
				++c.overlapped;
			if (dk.submit(s, ch, false))
				break;
			pos += ch.len;
		}
		note_depth(c, dk);
		if (fl.error())
			break;
		if (dk.count()) {
			dk.reap(true, read_done);
		} else if (std::size_t n = fl.count(); n) {
			fl.reap(true, copied);  // every slot we could get is being copied
			if (fl.count() == n)
				fl.fail(-EIO);  // an engine that completes nothing: no hang
		}
		fl.reap(false, copied);
	}
	dk.drain();
	fl.drain();
	return fl.error() ? fl.error() : static_cast<ssize_t>(io.size);
}

ssize_t staged_write(const StagedIo &io, PipeCounters &c)
{
	if (io.size == 0)
		return 0;
	const Window w(io);
	const std::uint64_t bs = io.dev.block_size();
	const std::uint64_t slot_bytes = io.pool.slot_bytes();
	Inflight fl(io.pool, io.stream);
	DiskFlight dk(io.pool, io.disk, fl);
	std::vector<std::pair<int, Chunk>> ready;  // copied in, to be written
	auto copied = [&](int s, const Chunk &ch) { ready.emplace_back(s, ch); };
	auto written = [&](int s, const Chunk &ch, ssize_t r) {
		if (r < 0 || static_cast<std::size_t>(r) != ch.len)
			fl.fail(r < 0 ? static_cast<int>(r) : -EIO);
		else
			++c.chunks;
		io.pool.release(s);
	};
	// Starts the writes of copied slots, as many as the queue takes.
	auto write_ready = [&] {
		while (!ready.empty() && !dk.full() && !fl.error()) {
			auto [s, ch] = ready.front();
			ready.erase(ready.begin());
			if (fl.count())
				++c.overlapped;
			dk.submit(s, ch, true);
		}
		note_depth(c, dk);
	};

	std::uint64_t pos = w.start;
	while (!fl.error() && (pos < w.end || fl.count() || dk.count() || !ready.empty())) {
		// Fill: start copies into every slot we can get without waiting;
		// when we hold none, wait for one.
		while (pos < w.end && !fl.error()) {
			int s = next_slot(io.pool, fl.count() || dk.count() || !ready.empty());
			if (s < 0)
				break;
			Chunk ch{pos, static_cast<std::size_t>(std::min(slot_bytes, w.end - pos))};
			char *slot = io.pool.slot(s);
			std::uint64_t from = std::max(pos, w.lo), to = std::min(pos + ch.len, w.hi);
			int r = 0;
			if (from > pos)  // partial first block
				r = read_block(io, slot, pos);
			if (!r && to < pos + ch.len &&  // partial last block, unless just read
			    !(from > pos && pos + ch.len - bs == pos))
				r = read_block(io, slot + ch.len - bs, pos + ch.len - bs);
			if (r) {
				fl.fail(r);
				io.pool.release(s);
				break;
			}
			if (fl.submit(s, ch, slot + (from - pos), io.buf + (from - w.lo), to - from,
				      CopyDir::from_buffer))
				break;
			pos += ch.len;
		}
		write_ready();
		if (fl.error())
			break;
		// Wait for whatever frees the next step: a copy (more to write)
		// unless the disk queue is full or no copy runs.
		if (std::size_t n = fl.count(); n && !dk.full()) {
			fl.reap(true, copied);
			if (fl.count() == n && !dk.count())
				fl.fail(-EIO);  // an engine that completes nothing: no hang
		} else if (dk.count())
			dk.reap(true, written);
		fl.reap(false, copied);
		dk.reap(false, written);
		write_ready();
	}
	dk.drain();
	fl.drain();
	for (auto &[s, ch] : ready)  // copied, never written (an error came first)
		io.pool.release(s);
	return fl.error() ? fl.error() : static_cast<ssize_t>(io.size);
}

}  // namespace fxio
