"""A KV-cache store on a raw fxblk volume (or a file), shaped like LMCache's
storage backends: blocks of up to block_bytes keyed by a hash (any
hashable: the chunk hash LMCache computes, bytes of a digest, an int),
contains / put / get, and batched put / get that hand a whole batch to
libfxio at once (fxio.File.read_batch / write_batch).

Layout: block i of the volume is bytes [i * block_bytes, (i + 1) *
block_bytes); a value shorter than a block (the last chunk of a sequence)
takes the start of its block and keeps its true length. The index (key ->
block, length, metadata) lives in memory only, as in LMCache's local disk
backend: a new KVCacheStore starts empty.

Concurrency (any number of threads): a key is a hit only once its block's
write has completed (and, with durable=True, been synced): while it is
written it is a put in flight (exists_in_put_tasks) and a miss. A block
being read (get, batched_get, an Entry from acquire) or pinned (pin) is
never evicted or written: a put of the same key again writes another block
and switches the key to it when that write completed, and the old block is
reused only after its last reader let go. When every block is in use, a
put evicts the least recently used key that nobody reads or pins; when
there is none, the put stores nothing (batched_put says which were stored).
"""

import collections
import threading

from . import File, buffer_span

__all__ = ["KVCacheStore", "Entry"]

_Rec = collections.namedtuple("_Rec", "block nbytes meta")


class Entry:
    """One key's stored value, its block pinned until release(): nbytes,
    meta (what put was given), read_into(buf). A context manager. Not
    released by the garbage collector (a finalizer taking the store's lock
    could run inside it): an Entry never released keeps its block."""

    def __init__(self, store, key, rec):
        self._store, self.key, self._rec = store, key, rec
        self.nbytes, self.meta = rec.nbytes, rec.meta

    def read_into(self, buf):
        """Reads the value into the first nbytes of @buf; returns nbytes."""
        if self._rec is None:
            raise ValueError("kvcache: read of a released entry")
        self._store._read([self._rec], [buf])
        return self.nbytes

    def release(self):
        rec, self._rec = self._rec, None
        if rec is not None:
            self._store._unpin([rec.block])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class KVCacheStore:
    def __init__(self, path, block_bytes, capacity_blocks=None, file=None, durable=False):
        """@path: /dev/fxN or a file (its size sets the capacity unless
        @capacity_blocks is given); @block_bytes: a multiple of 4096.
        @file: what does the I/O instead of an fxio.File of @path (an object
        with read_batch, write_batch, stats, close and, for @durable, sync
        as File has: a baseline to compare with, or a test double); closed
        with the store. @durable: a put syncs the file (File.sync: fdatasync,
        on fxN also fxblk's peer queues) before its keys become hits."""
        if block_bytes <= 0 or block_bytes % 4096:
            raise ValueError("kvcache: block_bytes must be a positive multiple of 4096")
        self.block_bytes = block_bytes
        self.durable = durable
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
        self._idle = threading.Condition(self._lock)  # _io reached 0
        self._index = collections.OrderedDict()  # key -> _Rec, LRU first
        self._puts = {}  # key -> block: a put in flight
        self._pins = [0] * capacity_blocks  # readers and pin()s per block
        self._detached = set()  # blocks no key owns any more, still pinned
        self._key_pins = {}  # key -> [block] pinned by pin(key)
        self._free = list(range(capacity_blocks - 1, -1, -1))
        self._io = 0  # batched_get/put and Entry reads in flight
        self._closed = False
        self.stats = {"hits": 0, "misses": 0, "puts": 0, "evictions": 0, "put_skipped": 0}

    # -- blocks (all under the lock) ------------------------------------
    def _take_block(self):
        """A block for a new value: a free one, else the least recently
        used key's that nobody reads or pins (that key is evicted); None
        when every block is pinned or being written."""
        if self._free:
            return self._free.pop()
        for k, rec in self._index.items():
            if not self._pins[rec.block]:
                del self._index[k]
                self.stats["evictions"] += 1
                return rec.block
        return None

    def _drop_block(self, block):
        """@block's key no longer owns it: free now, or when unpinned."""
        if self._pins[block]:
            self._detached.add(block)
        else:
            self._free.append(block)

    def _unpin(self, blocks):
        with self._lock:
            for b in blocks:
                self._pins[b] -= 1
                if not self._pins[b] and b in self._detached:
                    self._detached.remove(b)
                    self._free.append(b)

    def _begin_io(self):
        if self._closed:
            raise ValueError("kvcache: the store is closed")
        self._io += 1

    def _end_io(self):
        with self._lock:
            self._io -= 1
            if not self._io:
                self._idle.notify_all()

    # -- lookups --------------------------------------------------------
    def contains(self, key, pin=False):
        """Whether @key is a hit now (a put in flight is not); @pin: also
        pin it, as pin(key) (LMCache's contains(key, pin))."""
        with self._lock:
            rec = self._index.get(key)
            if rec is not None and pin:
                self._pins[rec.block] += 1
                self._key_pins.setdefault(key, []).append(rec.block)
            return rec is not None

    def exists_in_put_tasks(self, key):
        """Whether a put of @key is being written (LMCache's name)."""
        with self._lock:
            return key in self._puts

    def info(self, key):
        """(nbytes, meta) of @key, or None on a miss."""
        with self._lock:
            rec = self._index.get(key)
            return None if rec is None else (rec.nbytes, rec.meta)

    def __len__(self):
        with self._lock:
            return len(self._index)

    def pin(self, key):
        """Keeps @key's current block from eviction and reuse until
        unpin(key); False on a miss."""
        return self.contains(key, pin=True)

    def unpin(self, key):
        with self._lock:
            blocks = self._key_pins.get(key)
            if not blocks:
                return False
            b = blocks.pop()
            if not blocks:
                del self._key_pins[key]
        self._unpin([b])
        return True

    # -- puts -----------------------------------------------------------
    def put(self, key, buf, meta=None):
        """Stores @buf (at most block_bytes) under @key; False if no block
        could be had (see batched_put)."""
        return self.batched_put([(key, buf, meta)])[0]

    def batched_put(self, items):
        """[(key, buffer) or (key, buffer, meta)], each buffer at most
        block_bytes, meta anything (LMCache: shape, dtype, format), all
        written in one batch; the keys become hits when it completed.
        Returns a bool per item: stored. Not stored: a put of the key is
        already in flight, or every block is read, pinned or written.
        Raises OSError if a write failed (its key is not stored, the
        others are), ValueError for a key twice in @items."""
        sizes = []
        for it in items:
            _, nbytes, _ = buffer_span(it[1], False)
            if not 0 < nbytes <= self.block_bytes:
                raise ValueError("kvcache: a value is 1 to %d bytes, not %d"
                                 % (self.block_bytes, nbytes))
            sizes.append(nbytes)
        if len({it[0] for it in items}) != len(items):
            raise ValueError("kvcache: a key appears twice in one batched_put")
        todo = []  # (item index, block)
        with self._lock:
            self._begin_io()
            for i, it in enumerate(items):
                block = None if it[0] in self._puts else self._take_block()
                if block is None:
                    self.stats["put_skipped"] += 1
                    continue
                self._puts[it[0]] = block
                todo.append((i, block))
        res = None
        try:
            res = self._write([(items[i][1], b, sizes[i]) for i, b in todo])
        finally:
            stored, failed = self._commit(items, sizes, todo, res)
            self._end_io()
        if failed:
            raise OSError(failed[0], "kvcache: %d block writes failed" % len(failed))
        return stored

    def _write(self, writes):
        if not writes:
            return []
        bb = self.block_bytes
        res = self._f.write_batch([(buf, b * bb) if n == bb else (buf, b * bb, n)
                                   for buf, b, n in writes])
        res = [r.result for r in res]
        if self.durable and any(r > 0 for r in res):
            try:
                self._f.sync()
            except OSError as e:
                res = [-(e.errno or 5)] * len(res)
        return res

    def _commit(self, items, sizes, todo, res):
        """Publishes the puts whose write completed whole; frees the rest.
        Returns (stored per item, errno of each failed write)."""
        stored = [False] * len(items)
        failed = []
        with self._lock:
            for j, (i, block) in enumerate(todo):
                key = items[i][0]
                del self._puts[key]
                r = res[j] if res is not None else -5
                if r != sizes[i]:
                    failed.append(-r if r < 0 else 5)
                    self._drop_block(block)
                    continue
                old = self._index.pop(key, None)
                if old is not None:
                    self._drop_block(old.block)
                self._index[key] = _Rec(block, sizes[i], items[i][2] if len(items[i]) > 2 else None)
                self.stats["puts"] += 1
                stored[i] = True
        return stored, failed

    # -- gets -----------------------------------------------------------
    def acquire(self, key):
        """@key's Entry, its block pinned until Entry.release(); None on a
        miss. For a reader that needs the length or metadata first (to
        allocate the buffer) and the same value when it reads."""
        with self._lock:
            rec = self._lookup(key)
            if rec is None:
                return None
            self._pins[rec.block] += 1
        return Entry(self, key, rec)

    def read_entries(self, entries, outs):
        """Reads each acquired (not yet released) Entry of @entries into
        the start of its buffer of @outs, all in one batch (a reader that
        acquired the entries first, to size its buffers by their nbytes and
        meta). Raises OSError if a read failed."""
        recs = [e._rec for e in entries]
        if any(r is None for r in recs):
            raise ValueError("kvcache: read of a released entry")
        self._read(recs, outs)

    def _lookup(self, key):
        rec = self._index.get(key)
        if rec is None:
            self.stats["misses"] += 1
        else:
            self._index.move_to_end(key)
            self.stats["hits"] += 1
        return rec

    def get(self, key, out):
        """Reads @key's value into the start of @out (at least its nbytes);
        False on a miss."""
        return self.batched_get([key], [out])[0]

    def batched_get(self, keys, outs):
        """Reads every hit at once into its buffer of @outs (each at least
        the value's nbytes); returns a bool per key (hit). The blocks read
        are pinned until the batch ended, so none is evicted or rewritten
        under it."""
        room = [buffer_span(o, True)[1] for o in outs]
        with self._lock:
            recs = []
            for k, n in zip(keys, room):
                rec = self._index.get(k)
                if rec is not None and rec.nbytes > n:
                    raise ValueError("kvcache: a buffer of %d bytes for a value of %d" %
                                     (n, rec.nbytes))
            for k in keys:
                rec = self._lookup(k)
                if rec is not None:
                    self._pins[rec.block] += 1
                recs.append(rec)
        hits = [(r, o) for r, o in zip(recs, outs) if r is not None]
        try:
            self._read([r for r, _ in hits], [o for _, o in hits])
        finally:
            self._unpin([r.block for r, _ in hits])
        return [r is not None for r in recs]

    def _read(self, recs, outs):
        """Reads pinned @recs into @outs."""
        if not recs:
            return
        with self._lock:
            self._begin_io()
        try:
            bb = self.block_bytes
            res = self._f.read_batch([(o, r.block * bb) if buffer_span(o, True)[1] == r.nbytes
                                      else (o, r.block * bb, r.nbytes)
                                      for r, o in zip(recs, outs)])
        finally:
            self._end_io()
        bad = [c.result for c, r in zip(res, recs) if c.result != r.nbytes]
        if bad:
            raise OSError(-bad[0] if bad[0] < 0 else 5,
                          "kvcache: %d block reads failed" % len(bad))

    def remove(self, key):
        """Forgets @key (a put of it in flight still lands); its block is
        reused once nobody reads or pins it."""
        with self._lock:
            rec = self._index.pop(key, None)
            if rec is not None:
                self._drop_block(rec.block)
            return rec is not None

    def io_stats(self):
        return self._f.stats()

    def close(self):
        """Waits for the puts and gets in flight, then closes the file;
        later calls raise ValueError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while self._io:
                self._idle.wait()
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
