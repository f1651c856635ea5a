"""A KV-cache store on a raw fxblk volume (or a file), shaped like LMCache's
storage backends: fixed-size blocks keyed by a hash (any hashable: the
chunk hash LMCache computes, bytes of a digest, an int), contains / put /
get, and batched put / get that keep every block's I/O in flight at once
through libfxio.

Layout: block i of the volume is bytes [i * block_bytes, (i + 1) *
block_bytes). The index (key -> block) lives in memory only, as in LMCache's
local disk backend: a new KVCacheStore starts empty. When every block is in
use, put() evicts the least recently used key.
"""

import collections
import threading

from . import File, buffer_span

__all__ = ["KVCacheStore"]


class KVCacheStore:
    def __init__(self, path, block_bytes, capacity_blocks=None, file=None):
        """@path: /dev/fxN or a file (its size sets the capacity unless
        @capacity_blocks is given); @block_bytes: a multiple of 4096.
        @file: what does the I/O instead of an fxio.File of @path (an object
        with read_batch, write_batch, stats and close as File has: a
        baseline to compare with, or a test double); closed with the store."""
        if block_bytes <= 0 or block_bytes % 4096:
            raise ValueError("kvcache: block_bytes must be a positive multiple of 4096")
        self.block_bytes = block_bytes
        self._f = File(path, "rw") if file is None else file
        if capacity_blocks is None:
            import os
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                size = os.lseek(fd, 0, os.SEEK_END)
            finally:
                os.close(fd)
            capacity_blocks = size // block_bytes
        if capacity_blocks < 1:
            raise ValueError("kvcache: %s holds no block of %d bytes" % (path, block_bytes))
        self.capacity = capacity_blocks
        self._lock = threading.Lock()
        self._index = collections.OrderedDict()  # key -> block, LRU first
        self._free = list(range(capacity_blocks - 1, -1, -1))
        self.stats = {"hits": 0, "misses": 0, "puts": 0, "evictions": 0}

    def _check(self, buf):
        _, nbytes, _ = buffer_span(buf, False)
        if nbytes != self.block_bytes:
            raise ValueError("kvcache: a block is %d bytes, not %d" % (self.block_bytes, nbytes))

    def _slot_for(self, key):
        """(block, evicted key or None) for writing @key; under the lock."""
        if key in self._index:
            self._index.move_to_end(key)
            return self._index[key], None
        evicted = None
        if self._free:
            block = self._free.pop()
        else:
            evicted, block = self._index.popitem(last=False)
            self.stats["evictions"] += 1
        self._index[key] = block
        return block, evicted

    def contains(self, key):
        with self._lock:
            return key in self._index

    def __len__(self):
        with self._lock:
            return len(self._index)

    def put(self, key, buf):
        self.batched_put([(key, buf)])

    def batched_put(self, items):
        """[(key, block buffer)]: all written at once; a key's block is
        visible to get() once this returns. OSError if a write failed (its
        key is dropped)."""
        for _, buf in items:
            self._check(buf)
        with self._lock:
            slots = [self._slot_for(k)[0] for k, _ in items]
            self.stats["puts"] += len(items)
        res = self._f.write_batch([(buf, b * self.block_bytes) for (_, buf), b in zip(items, slots)])
        failed = [(k, r) for (k, _), r in zip(items, res) if r.result != self.block_bytes]
        if failed:
            with self._lock:
                for k, _ in failed:
                    b = self._index.pop(k, None)
                    if b is not None:
                        self._free.append(b)
            raise OSError(-failed[0][1].result if failed[0][1].result < 0 else 5,
                          "kvcache: %d block writes failed" % len(failed))
        return res

    def get(self, key, out):
        """Reads @key's block into @out (block_bytes); False on a miss."""
        return self.batched_get([key], [out])[0]

    def batched_get(self, keys, outs):
        """Reads every hit at once into its buffer of @outs; returns a
        bool per key (hit). A block evicted and rewritten while being read
        is the caller's race, as with any cache without pinning."""
        for buf in outs:
            self._check(buf)
        with self._lock:
            blocks = []
            for k in keys:
                b = self._index.get(k)
                if b is None:
                    self.stats["misses"] += 1
                else:
                    self._index.move_to_end(k)
                    self.stats["hits"] += 1
                blocks.append(b)
        todo = [(o, b * self.block_bytes) for o, b in zip(outs, blocks) if b is not None]
        res = self._f.read_batch(todo) if todo else []
        bad = [r for r in res if r.result != self.block_bytes]
        if bad:
            raise OSError(-bad[0].result if bad[0].result < 0 else 5,
                          "kvcache: %d block reads failed" % len(bad))
        return [b is not None for b in blocks]

    def remove(self, key):
        with self._lock:
            b = self._index.pop(key, None)
            if b is not None:
                self._free.append(b)
            return b is not None

    def io_stats(self):
        return self._f.stats()

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
