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
// slot index, unique while the slot is held).
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

	// A slot: a free one at once, else after one of ours finished copying
	// (its chunk handed to @done), else whenever another user frees one.
	template <class Done> int slot(Done &&done)
	{
		for (;;) {
			int s = pool_.try_acquire();
			if (s >= 0)
				return s;
			if (copies_.empty())
				return pool_.acquire();
			reap(true, done);
		}
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

	BouncePool &pool() { return pool_; }

private:
	BouncePool &pool_;
	CopyStream &stream_;
	std::map<int, Chunk> copies_;
	std::vector<CopyDone> done_;
	int err_ = 0;
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

}  // namespace

ssize_t staged_read(const StagedIo &io, PipeCounters &c)
{
	if (io.size == 0)
		return 0;
	const Window w(io);
	const std::uint64_t slot_bytes = io.pool.slot_bytes();
	Inflight fl(io.pool, io.stream);
	auto copied = [&](int s, const Chunk &) { io.pool.release(s); };

	for (std::uint64_t pos = w.start; pos < w.end && !fl.error();) {
		int s = fl.slot(copied);
		if (fl.error()) {
			io.pool.release(s);
			break;
		}
		Chunk ch{pos, static_cast<std::size_t>(std::min(slot_bytes, w.end - pos))};
		fl.reap(false, copied);  // is a copy still running while we read?
		if (fl.count())
			++c.overlapped;
		ssize_t r = io.dev.pread(io.pool.slot(s), ch.len, pos);
		std::uint64_t from = std::max(pos, w.lo), to = std::min(pos + ch.len, w.hi);
		if (r < 0 || static_cast<std::uint64_t>(r) < to - pos) {
			fl.fail(r < 0 ? static_cast<int>(r) : -EIO);  // short read: the disk ended early
			io.pool.release(s);
			break;
		}
		if (fl.submit(s, ch, io.buf + (from - w.lo), io.pool.slot(s) + (from - pos),
			      to - from, CopyDir::to_buffer))
			break;
		++c.chunks;
		pos += ch.len;
	}
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
	std::vector<std::pair<int, Chunk>> ready;  // copied in, to be written
	auto copied = [&](int s, const Chunk &ch) { ready.emplace_back(s, ch); };

	auto write_ready = [&] {
		for (auto &[s, ch] : ready) {
			if (!fl.error()) {
				if (fl.count())
					++c.overlapped;
				ssize_t r = io.dev.pwrite(io.pool.slot(s), ch.len, ch.pos);
				if (r < 0 || static_cast<std::size_t>(r) != ch.len)
					fl.fail(r < 0 ? static_cast<int>(r) : -EIO);
				else
					++c.chunks;
			}
			io.pool.release(s);
		}
		ready.clear();
	};

	std::uint64_t pos = w.start;
	while (!fl.error() && (pos < w.end || fl.count())) {
		// Fill: start copies into every slot we can get without waiting;
		// when we hold none, wait for one.
		while (pos < w.end && !fl.error()) {
			int s = fl.count() ? io.pool.try_acquire() : fl.slot(copied);
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
		fl.reap(true, copied);
		write_ready();
	}
	fl.drain();
	write_ready();  // slots drained copies handed over
	return fl.error() ? fl.error() : static_cast<ssize_t>(io.size);
}

}  // namespace fxio
