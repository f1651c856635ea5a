"""KVCacheStore under concurrency (issue 35, review 2026-12-06-fxio C1): a
key is never a hit before its block is written, a block being read is never
evicted or rewritten, and every hit carries the key's own bytes.

Every block's content is derived from its key (content()), so a hit is
checked byte for byte against the key that was asked for, and a wrong hit
says whose bytes it returned. MemFile is a file= double with fxio.File's
batch interface (read_batch / write_batch returning one Completion per
item, ctl/fxio/python/fxio/__init__.py) whose reads and writes can be held
in the middle, so the two races of the review are deterministic; the
stress test runs the real libfxio File over a file."""
import hashlib
import random
import threading

import numpy as np
import pytest

from fxio import Completion
from fxio import kvcache
from fxio.kvcache import KVCacheStore

BLOCK = 64 << 10


def key(i):
    return hashlib.sha256(b"chunk-%d" % i).digest()


def content(k, nbytes=BLOCK):
    """The bytes stored under key @k: a pattern seeded by the key's hash."""
    seed = int.from_bytes(hashlib.sha256(b"content" + k).digest()[:8], "little")
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def whose(out, keys):
    """Which of @keys' contents @out holds (for the failure message)."""
    for i in keys:
        if np.array_equal(out, content(key(i), out.size)):
            return "key %d's bytes" % i
    return "bytes of no key"


class MemFile:
    """KVCacheStore's file= double: fxio.File's read_batch / write_batch
    (items (buf, off) or (buf, off, size); a Completion each) over a
    bytearray. hold("read"|"write") stops the next such batch after it
    started and before its bytes move (a read copies at its end, as a DMA
    still running sees a rewrite); release() lets it go on."""

    def __init__(self, size):
        self.data = bytearray(size)
        self.entered = {"read": threading.Event(), "write": threading.Event()}
        self.gate = {}
        self.syncs = []

    def hold(self, kind):
        self.entered[kind].clear()
        self.gate[kind] = threading.Event()

    def release(self, kind):
        self.gate.pop(kind).set()

    def _wait(self, kind):
        gate = self.gate.get(kind)
        if gate is not None:
            self.entered[kind].set()
            assert gate.wait(10), "MemFile: held %s never released" % kind

    def _batch(self, items, write):
        self._wait("write" if write else "read")
        res = []
        for it in items:
            buf, off = it[0], it[1]
            mv = memoryview(buf).cast("B")
            n = it[2] if len(it) > 2 else mv.nbytes
            if write:
                self.data[off:off + n] = mv[:n]
            else:
                mv[:n] = self.data[off:off + n]
            res.append(Completion(n, "posix", ""))
        return res

    def read_batch(self, items):
        return self._batch(items, False)

    def write_batch(self, items):
        return self._batch(items, True)

    def sync(self):
        self.syncs.append(True)

    def stats(self):
        return {}

    def close(self):
        pass


def mem_store(blocks, **kw):
    """A store of @blocks over a MemFile (room for a persistent store's
    header and records too)."""
    f = MemFile(blocks * BLOCK + kvcache._data_offset(blocks, BLOCK))
    return KVCacheStore("<mem>", BLOCK, capacity_blocks=blocks, file=f, **kw), f


# each race, close and the stress test, on a store in memory only and a persistent one
both = pytest.mark.parametrize("persistent", [False, True], ids=["memory", "persistent"])


@both
def test_key_is_no_hit_while_its_block_is_written(persistent):
    """Review C1's first race: thread A's put of key 2 must evict key 1 and
    is held inside its write; a get of key 2 then must miss (before the fix
    it hit, with key 1's bytes)."""
    kv, f = mem_store(1, persistent=persistent)
    kv.put(key(1), content(key(1)))
    f.hold("write")
    t = threading.Thread(target=kv.put, args=(key(2), content(key(2))))
    t.start()
    try:
        assert f.entered["write"].wait(10)
        out = np.zeros(BLOCK, dtype=np.uint8)
        hit = kv.get(key(2), out)
        assert not hit, "get(key 2) hit during its put, returning %s" % whose(out, (1, 2))
        assert kv.exists_in_put_tasks(key(2)) and not kv.contains(key(2))
        assert not kv.exists_in_put_tasks(key(1))
    finally:
        f.release("write")
        t.join()
    out = np.zeros(BLOCK, dtype=np.uint8)
    assert kv.get(key(2), out) and np.array_equal(out, content(key(2)))
    assert not kv.exists_in_put_tasks(key(2))


@both
def test_block_being_read_is_not_evicted_or_rewritten(persistent):
    """Review C1's second race: a get of key 1 is held inside its read of
    the store's only block; a put of key 2 must not evict key 1 and rewrite
    that block under it (before the fix the get returned True with key 2's
    bytes). With every block pinned the put stores nothing."""
    kv, f = mem_store(1, persistent=persistent)
    kv.put(key(1), content(key(1)))
    f.hold("read")
    out = np.zeros(BLOCK, dtype=np.uint8)
    res = {}
    t = threading.Thread(target=lambda: res.update(hit=kv.get(key(1), out)))
    t.start()
    try:
        assert f.entered["read"].wait(10)
        stored = kv.batched_put([(key(2), content(key(2)))])
    finally:
        f.release("read")
        t.join()
    assert res["hit"], "get(key 1) missed"
    assert np.array_equal(out, content(key(1))), "get(key 1) returned %s" % whose(out, (1, 2))
    assert stored == [False] and not kv.contains(key(2)) and kv.contains(key(1))
    assert kv.stats["evictions"] == 0


@both
def test_reput_while_read_keeps_the_reader_on_the_old_block(persistent):
    """A key put again while a get of it reads its block: the new bytes go
    to another block, the reader gets the old value whole, later gets the
    new one; the old block is free again once the read let go of it."""
    kv, f = mem_store(2, persistent=persistent)
    old, new = content(key(1)), content(key(2))  # two values for key 1
    kv.put(key(1), old)
    f.hold("read")
    out = np.zeros(BLOCK, dtype=np.uint8)
    t = threading.Thread(target=kv.get, args=(key(1), out))
    t.start()
    try:
        assert f.entered["read"].wait(10)
        stored = kv.batched_put([(key(1), new)])
    finally:
        f.release("read")
        t.join()
    assert np.array_equal(out, old), "the get of key 1 returned %s" % (
        "its new value" if np.array_equal(out, new) else "bytes of neither value")
    assert stored == [True]
    assert kv.get(key(1), out) and np.array_equal(out, new)
    # the old block came back: two more keys fit without an eviction of key 1
    kv.put(key(3), content(key(3)))
    assert kv.contains(key(1)) and kv.stats["evictions"] == 0


@both
def test_stress_every_hit_is_the_keys_own_bytes(disk, persistent):
    """4 writers and 4 readers over the real libfxio File on a file: 8
    blocks for 48 keys (constant eviction), readers asking mostly for the
    keys just submitted for a put. Every hit is compared with its key's
    content; before the fix wrong hits showed up in every run. A persistent
    store, reopened after, serves every key it kept with its own bytes."""
    path, _ = disk
    nkeys, blocks, rounds = 48, 16, 150
    contents_ = {i: content(key(i)) for i in range(nkeys)}
    wrong, errors = [], []
    recent = []
    writing = threading.Event()  # set while the writers run
    lock = threading.Lock()
    with KVCacheStore(path, BLOCK, capacity_blocks=blocks, persistent=persistent) as kv:
        def writer(seed):
            rng = random.Random(seed)
            try:
                for _ in range(rounds):
                    batch = rng.sample(range(nkeys), 2)
                    with lock:
                        recent.extend(batch)
                        del recent[:-16]
                    kv.batched_put([(key(i), contents_[i]) for i in batch])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        def reader(seed):
            rng = random.Random(seed)
            outs = [np.zeros(BLOCK, dtype=np.uint8) for _ in range(2)]
            try:
                # a miss does no I/O: go on as long as the writers do
                n = 0
                while n < rounds or writing.is_set():
                    n += 1
                    with lock:
                        pool = list(recent) or [0]
                    ids = [rng.choice(pool) if rng.random() < 0.8 else rng.randrange(nkeys)
                           for _ in outs]
                    if ids[0] == ids[1]:
                        ids = ids[:1]
                    for i, hit, o in zip(ids, kv.batched_get([key(i) for i in ids],
                                                             outs[:len(ids)]), outs):
                        if hit and not np.array_equal(o, contents_[i]):
                            wrong.append("key %d: %s" % (i, whose(o, range(nkeys))))
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        writers = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
        readers = [threading.Thread(target=reader, args=(100 + s,)) for s in range(4)]
        writing.set()
        for t in writers + readers:
            t.start()
        for t in writers:
            t.join()
        writing.clear()
        for t in readers:
            t.join()
        hits = kv.stats["hits"]
        assert not errors, errors[:3]
        assert not wrong, "%d wrong hits of %d, e.g. %s" % (len(wrong), hits, wrong[:5])
        assert hits > 0 and kv.stats["evictions"] > 0
        assert len(kv) <= blocks
        kept = len(kv)
    if not persistent:
        return
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert len(kv) == kept and kv.stats["torn"] == 0
        out = np.zeros(BLOCK, dtype=np.uint8)
        for i in range(nkeys):
            if kv.get(key(i), out):
                assert np.array_equal(out, contents_[i]), "key %d after the reopen: %s" % (
                    i, whose(out, range(nkeys)))
                kept -= 1
        assert kept == 0


@both
def test_close_waits_for_a_get_in_flight(persistent):
    """close() while a get is held inside its read returns only after that
    read ended, and closes the file after it; later calls raise. (If
    close did not wait it would return at once; the 1 s join below can
    only miss that, never fail a store that waits.)"""
    kv, f = mem_store(1, persistent=persistent)
    kv.put(key(1), content(key(1)))
    closed_during_read = []
    f.close = lambda: closed_during_read.append(f.entered["read"].is_set() and "read" in f.gate)
    f.hold("read")
    out = np.zeros(BLOCK, dtype=np.uint8)
    getter = threading.Thread(target=kv.get, args=(key(1), out))
    getter.start()
    assert f.entered["read"].wait(10)
    closer = threading.Thread(target=kv.close)
    closer.start()
    closer.join(1)
    still_waiting = closer.is_alive()
    f.release("read")
    getter.join()
    closer.join()
    assert still_waiting and closed_during_read == [False]
    assert np.array_equal(out, content(key(1)))
    with pytest.raises(ValueError, match="closed"):
        kv.get(key(1), out)
