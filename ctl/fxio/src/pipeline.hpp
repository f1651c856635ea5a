// The staged path: O_DIRECT between the disk and bounce-pool slots,
// pipelined with a copy stream between the slots and the user's buffer.
// Up to the disk queue's depth of disk I/Os are in flight per request
// (io_uring, or threads), and copies run while they do.
//
// read:  keep depth reads in flight into free slots; each finished read's
//        slot is copied out to the buffer while the next reads run;
// write: copy the buffer into slots ahead, pwrite each slot once its copy
//        completed (up to depth writes in flight) while later copies run.
// Device offsets and sizes need no alignment: the disk side always moves
// whole blocks (the pool's slots are block aligned); a write's partial
// first and last blocks are read first (read-modify-write; not atomic
// against another writer of the same block). Copies may complete in any
// order. On an error nothing more is started, every copy in flight is
// waited for and every slot returned before the -errno comes back.
#pragma once

#include "disk.hpp"
#include "engine.hpp"
#include "pool.hpp"

#include <cstdint>
#include <sys/types.h>

namespace fxio {

struct PipeCounters {
	std::uint64_t overlapped = 0;  // disk I/O started while a copy was in flight
	std::uint64_t chunks = 0;      // slots moved
	std::uint64_t max_inflight = 0;  // most disk I/Os in flight at once
};

struct StagedIo {
	BlockDev &dev;
	BouncePool &pool;
	CopyStream &stream;
	DiskQueue &disk;
	char *buf;  // user buffer (already + buf_off)
	std::size_t size;
	std::uint64_t dev_off;
};

// @size bytes or -errno. The caller keeps [dev_off, dev_off + size) inside
// the device (a growable file may be written past its end).
ssize_t staged_read(const StagedIo &io, PipeCounters &c);
ssize_t staged_write(const StagedIo &io, PipeCounters &c);

}  // namespace fxio
