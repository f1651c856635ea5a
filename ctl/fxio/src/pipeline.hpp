// The staged path: O_DIRECT between the disk and bounce-pool slots,
// pipelined with a copy stream between the slots and the user's buffer.
//
// read:  pread slot k+1 while slot k is copied out to the buffer;
// write: copy the buffer into slots ahead, pwrite each slot once its copy
//        completed while later copies run.
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
};

struct StagedIo {
	BlockDev &dev;
	BouncePool &pool;
	CopyStream &stream;
	char *buf;  // user buffer (already + buf_off)
	std::size_t size;
	std::uint64_t dev_off;
};

// @size bytes or -errno. The caller keeps [dev_off, dev_off + size) inside
// the device (a growable file may be written past its end).
ssize_t staged_read(const StagedIo &io, PipeCounters &c);
ssize_t staged_write(const StagedIo &io, PipeCounters &c);

}  // namespace fxio
