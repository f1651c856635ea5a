"""A KV-cache store on a raw fxblk volume (or a file), shaped like LMCache's
storage backends: blocks of up to block_bytes keyed by a hash (any
hashable: the chunk hash LMCache computes, bytes of a digest, an int),
contains / put / get, and batched put / get that hand a whole batch to
libfxio at once (fxio.File.read_batch / write_batch).

Layout: block i of the volume is bytes [i * block_bytes, (i + 1) *
block_bytes); a value shorter than a block (the last chunk of a sequence)
takes the start of its block and keeps its true length. The index (key ->
block, length, metadata) lives in memory only, as in LMCache's local disk
backend: a new KVCacheStore starts empty, unless it is persistent.

Persistent (persistent=True, opt-in; issue 35): the index also lives on the
volume, so a store reopened after a restart or a crash keeps its keys.
Opt-in because a plain store's layout (block i at i * block_bytes, nothing
else written) is what existing volumes and LMCache users expect of a cache
that forgets, and because a persistent put hashes each value on the host.
On the volume, every unit 4096 bytes and written whole, little-endian:

  [0, 4096)           header: "FXKVHDR1", version 1, block_bytes,
                      capacity (blocks), data offset, a random format id;
                      SHA-256 (first 16 bytes) of bytes [0, 4080) at 4080
  [4096 * (1 + i), +4096)  record of block i: "FXKVREC1", format id,
                      sequence number, block i, nbytes, SHA-256/16 of the
                      value's nbytes bytes, key type (1 bytes, 2 str as
                      UTF-8, 3 int as decimal), key length, meta length,
                      the key, meta as JSON; SHA-256/16 of [0, 4080) at 4080
  [data + i * block_bytes, +block_bytes)  block i's value, data being the
                      end of the records rounded up to block_bytes (so
                      blocks keep the volume's chunk alignment)

Keys of a persistent store are bytes, str or int (LMCache's CacheEngineKey
goes in as its to_string(), fxio.lmcache); meta is what JSON holds (None,
bool, int, float, str, lists, dicts with str keys: a tuple comes back a
list); key and meta take at most 4011 bytes together. Others are refused
(ValueError) at put.

Update rule: a put writes the value and its record in one batch (with
durable=True then File.sync) and publishes the key when both completed;
remove, and a put of a key already stored, write the old block's record
zeroed before that block can be reused. No order between the value and the
record is relied on: after a crash a record may be new while its value is
old or torn, or a record old while its block holds a newer value. So the
value's hash is the proof: a record loaded at open is trusted only for its
key, length and meta, and its value is checked against the hash the first
time it is read (get, batched_get, acquire, or verify() for all of them),
a mismatch dropping the key (a miss, its record zeroed), never serving it.
Open reads the header and every record: a record whose own hash, magic,
format id or block number is wrong is dropped; of two valid records of one
key the higher sequence number wins (the other is zeroed). A header whose
hash fails means no store: the volume is formatted empty (as a plain store
would overwrite it too); a valid header of another block_bytes or capacity
is refused (ValueError) unless reformat=True, which always starts empty.
The LRU order after open is the records' sequence order.

Concurrency (any number of threads): a key is a hit only once its block's
write has completed (and, with durable=True, been synced): while it is
written it is a put in flight (exists_in_put_tasks) and a miss. A block
being read (get, batched_get, an Entry from acquire) or pinned (pin) is
never evicted or written: a put of the same key again writes another block
and switches the key to it when that write completed, and the old block is
reused only after its last reader let go. When every block is in use, a
put evicts the least recently used key that nobody reads or pins; when
there is none, the put stores nothing (batched_put says which were stored).
A persistent store keeps these promises; a loaded key not yet checked is a
hit for contains() and may turn out a miss when read.
"""

import collections
import ctypes
import hashlib
import json
import os
import struct
import threading

from . import File, _classify, buffer_span

__all__ = ["KVCacheStore", "Entry"]

# vhash: the value's hash (a persistent store's), else None
_Rec = collections.namedtuple("_Rec", "block nbytes meta vhash")

# The persistent layout (module docstring): 4096-byte units, each sealed by
# the first 16 bytes of SHA-256 over its first 4080 bytes.
_UNIT = 4096
_HASH = 16
_SUM_AT = _UNIT - _HASH
_VERSION = 1
_HDR_MAGIC, _REC_MAGIC = b"FXKVHDR1", b"FXKVREC1"
# magic, version, 0, block_bytes, capacity, data offset, format id
_HDR = struct.Struct("<8sIIQQQ16s")
# magic, format id, sequence, block, nbytes, value hash, key type, key and meta lengths
_REC = struct.Struct("<8s16sQQQ16sBHH")
_KEY_META_MAX = _SUM_AT - _REC.size  # 4011
_ZERO = bytes(_UNIT)
_LOAD_RECS = 1024  # records read per batch at open
_CHECK_BYTES = 64 << 20  # values read per batch by verify()


def _digest(buf):
    return hashlib.sha256(buf).digest()[:_HASH]


def _sealed(body):
    """@body in a 4096-byte unit, its hash at the end."""
    unit = bytearray(_UNIT)
    unit[:len(body)] = body
    unit[_SUM_AT:] = _digest(memoryview(unit)[:_SUM_AT])
    return unit


def _intact(unit):
    """Whether the hash at the end of the 4096-byte @unit holds."""
    mv = memoryview(unit)
    return _digest(mv[:_SUM_AT]) == bytes(mv[_SUM_AT:])


def _encode_key(key):
    if isinstance(key, bytes):
        return 1, key
    if isinstance(key, str):
        return 2, key.encode("utf-8")
    if isinstance(key, int):
        return 3, str(int(key)).encode()
    raise ValueError("kvcache: a persistent store keeps bytes, str or int keys, not %s"
                     % type(key).__name__)


def _decode_key(kind, raw):
    if kind == 1:
        return bytes(raw)
    if kind == 2:
        return bytes(raw).decode("utf-8")
    if kind == 3:
        return int(bytes(raw).decode())
    raise ValueError("kvcache: key type %d" % kind)


def _data_offset(capacity, block_bytes):
    """Where block 0 of a persistent store of @capacity blocks starts."""
    return -(-_UNIT * (1 + capacity) // block_bytes) * block_bytes


def _fit(size, block_bytes):
    """The most blocks a persistent store of @block_bytes has in @size bytes."""
    c = max(0, (size - _UNIT) // (block_bytes + _UNIT))
    while c > 0 and _data_offset(c, block_bytes) + c * block_bytes > size:
        c -= 1
    return c


def _size(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def _value_hash(buf, nbytes):
    """The hash of @buf's first @nbytes bytes, which must be host memory."""
    addr, _, kind, keep = _classify(buf, False)
    if kind != "host":
        raise ValueError("kvcache: a persistent store hashes each value on the host; "
                         "this is %s memory" % kind)
    h = _digest((ctypes.c_ubyte * nbytes).from_address(addr))
    del keep
    return h


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
    def __init__(self, path, block_bytes, capacity_blocks=None, file=None, durable=False,
                 persistent=False, reformat=False):
        """@path: /dev/fxN or a file (its size sets the capacity unless
        @capacity_blocks is given); @block_bytes: a multiple of 4096.
        @file: what does the I/O instead of an fxio.File of @path (an object
        with read_batch, write_batch, stats, close and, for @durable or
        @persistent, sync as File has: a baseline to compare with, or a test
        double); closed with the store. @durable: a put syncs the file
        (File.sync: fdatasync, on fxN also fxblk's peer queues) before its
        keys become hits. @persistent: the index lives on the volume too
        (module docstring): the keys a store of the same block_bytes and
        capacity left there are loaded; @reformat: start a persistent store
        empty even if the volume holds one (of any geometry)."""
        if block_bytes <= 0 or block_bytes % 4096:
            raise ValueError("kvcache: block_bytes must be a positive multiple of 4096")
        self.block_bytes = block_bytes
        self.durable = durable
        self.persistent = persistent
        self.stats = {"hits": 0, "misses": 0, "puts": 0, "evictions": 0, "put_skipped": 0,
                      "loaded": 0, "torn": 0}
        self._data = 0  # where block 0 starts
        self._seq = 0  # the last record's sequence number
        self._fmt_id = None
        self._f = File(path, "rw") if file is None else file
        loaded = []
        try:
            if persistent:
                capacity_blocks, loaded = self._open_index(path, capacity_blocks, reformat)
            elif capacity_blocks is None:
                capacity_blocks = _size(path) // block_bytes
            if capacity_blocks < 1:
                raise ValueError("kvcache: %s holds no block of %d bytes" % (path, block_bytes))
        except BaseException:
            self._f.close()
            raise
        self.capacity = capacity_blocks
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # _io reached 0
        self._index = collections.OrderedDict()  # key -> _Rec, LRU first
        self._puts = {}  # key -> block: a put in flight
        self._pins = [0] * capacity_blocks  # readers and pin()s per block
        self._detached = set()  # blocks no key owns any more, still pinned
        self._key_pins = {}  # key -> [block] pinned by pin(key)
        self._io = 0  # batched_get/put and Entry reads in flight
        self._closed = False
        for k, rec in loaded:  # oldest first: LRU order
            self._index[k] = rec
        used = {rec.block for _, rec in loaded}
        self._unchecked = set(used)  # loaded blocks whose value was not yet hashed
        self._free = [b for b in range(capacity_blocks - 1, -1, -1) if b not in used]
        self.stats["loaded"] = len(loaded)

    # -- the index on the volume (persistent only) ----------------------
    def _open_index(self, path, capacity, reformat):
        """(capacity, [(key, _Rec)] oldest first) of the store on the
        volume, which is formatted empty if it holds none (or @reformat)."""
        bb = self.block_bytes
        size = _size(path) if capacity is None else None
        hdr = None if reformat else self._read_header(path)
        if hdr is not None:
            hbb, hcap, hdata, fmt_id = hdr
            fits = size is None or hdata + hcap * hbb <= size
            if hbb != bb or capacity not in (None, hcap) or not fits \
                    or hdata != _data_offset(hcap, hbb):
                raise ValueError("kvcache: %s holds a persistent store of %d blocks of %d bytes%s,"
                                 " not this one; reformat=True starts it empty"
                                 % (path, hcap, hbb, "" if fits else " (larger than it)"))
            self._fmt_id, self._data = fmt_id, hdata
            return hcap, self._load(hcap)
        if capacity is None:
            capacity = _fit(size, bb)
        if capacity >= 1:
            self._format(capacity)
        return capacity, []

    def _read_header(self, path):
        """(block_bytes, capacity, data offset, format id) of a valid
        header; None if there is none (never written, torn, too short)."""
        unit = bytearray(_UNIT)
        if self._f.read_batch([(unit, 0)])[0].result != _UNIT or not _intact(unit):
            return None
        magic, version, _, bb, cap, data, fmt_id = _HDR.unpack_from(unit)
        if magic != _HDR_MAGIC:
            return None
        if version != _VERSION:
            raise ValueError("kvcache: %s holds a persistent store of version %d, not %d; "
                             "reformat=True starts it empty" % (path, version, _VERSION))
        return bb, cap, data, fmt_id

    def _format(self, capacity):
        """A new empty store: a header with a new format id (the records of
        an earlier one no longer count), synced before any put."""
        self._fmt_id = os.urandom(16)
        self._data = _data_offset(capacity, self.block_bytes)
        self._write_units([(_sealed(_HDR.pack(_HDR_MAGIC, _VERSION, 0, self.block_bytes,
                                              capacity, self._data, self._fmt_id)), 0)])
        self._sync()

    def _load(self, capacity):
        """The valid records' keys, oldest first; a key's older records
        are zeroed."""
        best = {}  # key -> (seq, _Rec)
        older = []
        buf = bytearray(_UNIT * min(capacity, _LOAD_RECS))
        for first in range(0, capacity, _LOAD_RECS):
            n = min(_LOAD_RECS, capacity - first)
            mv = memoryview(buf)[:n * _UNIT]
            got = self._f.read_batch([(mv, _UNIT * (1 + first))])[0].result
            if got != n * _UNIT:
                raise OSError(-got if got < 0 else 5, "kvcache: a read of the records failed")
            for j in range(n):
                unit = mv[j * _UNIT:(j + 1) * _UNIT]
                if unit[:8] != _REC_MAGIC:
                    continue  # never written, or zeroed
                rec = self._parse(unit, first + j)
                if rec is None:
                    continue
                key, seq, rec = rec
                self._seq = max(self._seq, seq)
                old = best.get(key)
                if old is not None and old[0] > seq:
                    older.append(rec.block)
                    continue
                if old is not None:
                    older.append(old[1].block)
                best[key] = (seq, rec)
        if older:
            self._write_units([(_ZERO, _UNIT * (1 + b)) for b in older])
        return [(k, rec) for k, (_, rec) in sorted(best.items(), key=lambda kv: kv[1][0])]

    def _parse(self, unit, block):
        """(key, seq, _Rec) of record @unit of @block; None for one of an
        earlier format, or torn (counted)."""
        if not _intact(unit):
            self.stats["torn"] += 1
            return None
        _, fmt_id, seq, blk, nbytes, vhash, kt, kl, ml = _REC.unpack_from(unit)
        if fmt_id != self._fmt_id:
            return None
        try:
            if blk != block or not 0 < nbytes <= self.block_bytes or kl + ml > _KEY_META_MAX:
                raise ValueError("record fields")
            o = _REC.size
            key = _decode_key(kt, unit[o:o + kl])
            meta = json.loads(bytes(unit[o + kl:o + kl + ml]).decode("utf-8"))
        except (ValueError, RecursionError):  # sealed, but not by this code
            self.stats["torn"] += 1
            return None
        return key, seq, _Rec(block, nbytes, meta, vhash)

    def _record(self, block, nbytes, seq, form):
        kt, kraw, mraw, vhash = form
        return _sealed(_REC.pack(_REC_MAGIC, self._fmt_id, seq, block, nbytes, vhash, kt,
                                 len(kraw), len(mraw)) + kraw + mraw)

    def _form(self, item, nbytes):
        """(key type, key, meta, value hash) of a persistent put's @item."""
        kt, kraw = _encode_key(item[0])
        try:
            mraw = json.dumps(item[2] if len(item) > 2 else None,
                              separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise ValueError("kvcache: a persistent store keeps meta that JSON holds: %s"
                             % e) from None
        if len(kraw) + len(mraw) > _KEY_META_MAX:
            raise ValueError("kvcache: key and meta take %d bytes, more than %d"
                             % (len(kraw) + len(mraw), _KEY_META_MAX))
        return kt, kraw, mraw, _value_hash(item[1], nbytes)

    def _write_units(self, units):
        """Writes [(4096-byte unit, offset)]; OSError if one failed."""
        res = [c.result for c in self._f.write_batch(units)]
        bad = [r for r in res if r != _UNIT]
        if bad:
            raise OSError(-bad[0] if bad[0] < 0 else 5,
                          "kvcache: %d record writes failed" % len(bad))

    def _sync(self):
        if hasattr(self._f, "sync"):
            self._f.sync()

    def _zero_records(self, blocks):
        """Zeroes the records of @blocks (which the caller pins, so no put
        writes them meanwhile, and counts in _io); synced with durable."""
        self._write_units([(_ZERO, _UNIT * (1 + b)) for b in blocks])
        if self.durable:
            self._sync()

    def _checked(self, keys, recs, counted=True):
        """@recs (pinned; None: a miss) with those whose value fails the
        hash of their record turned None: dropped, their record zeroed.
        Only values loaded at open and not yet checked are read."""
        with self._lock:
            todo = [(i, r) for i, r in enumerate(recs)
                    if r is not None and r.block in self._unchecked]
        if not todo:
            return recs
        bufs = [bytearray(r.nbytes) for _, r in todo]
        with self._lock:
            self._begin_io()
        try:
            res = self._f.read_batch([(b, self._off(r.block)) for b, (_, r) in zip(bufs, todo)])
        finally:
            self._end_io()
        bad = [c.result for c, (_, r) in zip(res, todo) if c.result != r.nbytes]
        if bad:
            raise OSError(-bad[0] if bad[0] < 0 else 5,
                          "kvcache: %d block reads failed" % len(bad))
        good = [_digest(b) == r.vhash for b, (_, r) in zip(bufs, todo)]
        out, torn = list(recs), []
        with self._lock:
            for ok, (i, r) in zip(good, todo):
                self._unchecked.discard(r.block)
                if ok:
                    continue
                out[i] = None
                self.stats["torn"] += 1
                if counted:
                    self.stats["hits"] -= 1
                    self.stats["misses"] += 1
                if self._index.get(keys[i]) is r:
                    del self._index[keys[i]]
                    self._drop_block(r.block)
                    torn.append(r.block)
        if torn:
            try:
                with self._lock:
                    self._begin_io()
                try:
                    self._zero_records(torn)
                finally:
                    self._end_io()
            except (OSError, ValueError):  # it fails the hash again at the next open
                pass
        return out

    def verify(self):
        """Reads and checks now every value loaded at open and not yet
        read (a persistent store checks each when first read); drops those
        whose hash fails. Returns how many it dropped."""
        with self._lock:
            todo = [(k, r) for k, r in self._index.items() if r.block in self._unchecked]
            for _, r in todo:
                self._pins[r.block] += 1
        dropped = 0
        try:
            i = 0
            while i < len(todo):
                j, nbytes = i, 0
                while j < len(todo) and (j == i or nbytes + todo[j][1].nbytes <= _CHECK_BYTES):
                    nbytes += todo[j][1].nbytes
                    j += 1
                part = todo[i:j]
                out = self._checked([k for k, _ in part], [r for _, r in part], counted=False)
                dropped += sum(1 for r in out if r is None)
                i = j
        finally:
            self._unpin([r.block for _, r in todo])
        return dropped

    def _off(self, block):
        return self._data + block * self.block_bytes

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
        forms = [self._form(it, n) for it, n in zip(items, sizes)] if self.persistent else None
        todo = []  # (item index, block, sequence number)
        with self._lock:
            self._begin_io()
            for i, it in enumerate(items):
                block = None if it[0] in self._puts else self._take_block()
                if block is None:
                    self.stats["put_skipped"] += 1
                    continue
                self._puts[it[0]] = block
                self._seq += 1
                todo.append((i, block, self._seq))
        res, old = None, []
        try:
            res = self._write([(items[i][1], b, sizes[i]) for i, b, _ in todo],
                              [(self._record(b, sizes[i], seq, forms[i]), b)
                               for i, b, seq in todo] if forms else ())
        finally:
            stored, failed, old = self._commit(items, sizes, todo, res, forms)
            try:
                if old:  # a key put again: its old record must not outlive remove()
                    self._zero_records(old)
            except (OSError, ValueError):  # the new record's higher sequence wins at open
                pass
            finally:
                self._unpin(old)
                self._end_io()
        if failed:
            raise OSError(failed[0], "kvcache: %d block writes failed" % len(failed))
        return stored

    def _write(self, writes, records=()):
        """Writes [(buffer, block, nbytes)] and [(record unit, block)] in one
        batch; a result per write, failed if its record's failed."""
        if not writes:
            return []
        bb = self.block_bytes
        res = self._f.write_batch([(buf, self._off(b)) if n == bb else (buf, self._off(b), n)
                                   for buf, b, n in writes] +
                                  [(u, _UNIT * (1 + b)) for u, b in records])
        res = [r.result for r in res]
        if records:
            n = len(writes)
            res = [v if r == _UNIT else (r if r < 0 else -5) for v, r in zip(res[:n], res[n:])]
        if self.durable and any(r > 0 for r in res):
            try:
                self._f.sync()
            except OSError as e:
                res = [-(e.errno or 5)] * len(res)
        return res

    def _commit(self, items, sizes, todo, res, forms):
        """Publishes the puts whose write completed whole; frees the rest.
        Returns (stored per item, errno of each failed write, the blocks a
        persistent store's keys put again left: pinned, to zero their
        records and unpin)."""
        stored = [False] * len(items)
        failed, moved = [], []
        with self._lock:
            for j, (i, block, _) in enumerate(todo):
                key = items[i][0]
                del self._puts[key]
                r = res[j] if res is not None else -5
                if r != sizes[i]:
                    failed.append(-r if r < 0 else 5)
                    self._drop_block(block)
                    continue
                old = self._index.pop(key, None)
                if old is not None:
                    if forms:
                        self._pins[old.block] += 1
                        moved.append(old.block)
                    self._drop_block(old.block)
                if forms:  # the meta a reader sees after a restart, from now on
                    meta, vhash = json.loads(forms[i][2].decode("utf-8")), forms[i][3]
                else:
                    meta, vhash = (items[i][2] if len(items[i]) > 2 else None), None
                self._unchecked.discard(block)
                self._index[key] = _Rec(block, sizes[i], meta, vhash)
                self.stats["puts"] += 1
                stored[i] = True
        return stored, failed, moved

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
        if self.persistent:
            try:
                ok = self._checked([key], [rec])[0] is not None
            except BaseException:
                self._unpin([rec.block])
                raise
            if not ok:
                self._unpin([rec.block])
                return None
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
        pinned = [r.block for r in recs if r is not None]
        try:
            if self.persistent:
                recs = self._checked(keys, recs)
            hits = [(r, o) for r, o in zip(recs, outs) if r is not None]
            self._read([r for r, _ in hits], [o for _, o in hits])
        finally:
            self._unpin(pinned)
        return [r is not None for r in recs]

    def _read(self, recs, outs):
        """Reads pinned @recs into @outs."""
        if not recs:
            return
        with self._lock:
            self._begin_io()
        try:
            res = self._f.read_batch([(o, self._off(r.block))
                                      if buffer_span(o, True)[1] == r.nbytes
                                      else (o, self._off(r.block), r.nbytes)
                                      for r, o in zip(recs, outs)])
        finally:
            self._end_io()
        bad = [c.result for c, r in zip(res, recs) if c.result != r.nbytes]
        if bad:
            raise OSError(-bad[0] if bad[0] < 0 else 5,
                          "kvcache: %d block reads failed" % len(bad))

    def remove(self, key):
        """Forgets @key (a put of it in flight still lands); its block is
        reused once nobody reads or pins it. A persistent store zeroes its
        record first (synced with durable; OSError if that failed)."""
        with self._lock:
            if self.persistent and key in self._index:
                self._begin_io()
            rec = self._index.pop(key, None)
            if rec is None:
                return False
            if self.persistent:
                self._pins[rec.block] += 1
            self._drop_block(rec.block)
        if self.persistent:
            try:
                self._zero_records([rec.block])
            finally:
                self._unpin([rec.block])
                self._end_io()
        return True

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
        try:
            if self.persistent:
                self._sync()
        finally:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
