"""The KV-cache store over a file: put/get/contains, batches, LRU eviction,
block contents byte for byte at the block's place on the disk."""
import hashlib

import numpy as np
import pytest

from fxio.kvcache import KVCacheStore
from conftest import contents

BLOCK = 64 << 10


def key(i):
    return hashlib.sha256(b"chunk-%d" % i).digest()


def block(i):
    return np.random.default_rng(i).integers(0, 256, BLOCK, dtype=np.uint8)


def test_put_get_contains_and_layout(disk):
    path, _ = disk
    with KVCacheStore(path, BLOCK) as kv:
        assert kv.capacity == (8 << 20) // BLOCK
        assert not kv.contains(key(1))
        kv.put(key(1), block(1))
        assert kv.contains(key(1))
        out = np.zeros(BLOCK, dtype=np.uint8)
        assert kv.get(key(1), out)
        assert np.array_equal(out, block(1))
        assert not kv.get(key(2), out)
        assert kv.stats["hits"] == 1 and kv.stats["misses"] == 1
    # the first block of an empty store is block 0 of the disk
    assert np.array_equal(contents(path)[:BLOCK], block(1))


def test_batches_and_lru_eviction(disk):
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=8) as kv:
        kv.batched_put([(key(i), block(i)) for i in range(8)])
        assert len(kv) == 8
        outs = [np.zeros(BLOCK, dtype=np.uint8) for _ in range(8)]
        assert kv.batched_get([key(i) for i in range(8)], outs) == [True] * 8
        for i, o in enumerate(outs):
            assert np.array_equal(o, block(i))
        kv.get(key(0), outs[0])  # 0 is now the most recently used
        kv.batched_put([(key(100), block(100)), (key(101), block(101))])
        assert kv.stats["evictions"] == 2
        assert not kv.contains(key(1)) and not kv.contains(key(2))  # the two LRU
        assert kv.contains(key(0))
        hits = kv.batched_get([key(0), key(1), key(100)], outs[:3])
        assert hits == [True, False, True]
        assert np.array_equal(outs[0], block(0))
        assert np.array_equal(outs[2], block(100))
        assert kv.remove(key(0)) and not kv.remove(key(0))
        assert kv.io_stats()["errors"] == 0


def test_wrong_block_size_is_refused(disk):
    path, _ = disk
    with pytest.raises(ValueError, match="multiple of 4096"):
        KVCacheStore(path, 1000)
    with KVCacheStore(path, BLOCK) as kv:
        with pytest.raises(ValueError, match="not %d" % (BLOCK + 1)):
            kv.put(key(1), np.zeros(BLOCK + 1, dtype=np.uint8))
        with pytest.raises(ValueError, match="not 0"):
            kv.put(key(1), np.zeros(0, dtype=np.uint8))
        with pytest.raises(ValueError, match="twice"):
            kv.batched_put([(key(1), block(1)), (key(1), block(2))])
        assert len(kv) == 0


def test_short_last_chunk_and_metadata(disk):
    """A value shorter than a block (a sequence's last chunk: 10000 bytes,
    not a multiple of the 4096-byte disk block, so libfxio bounces it) is
    stored with its length and the metadata put was given; the rest of
    the reader's buffer is left alone, a buffer too short is refused."""
    path, _ = disk
    short = block(7)[:10000]
    meta = {"shape": (2, 5000), "dtype": "uint8", "fmt": "KV_2LTD"}
    with KVCacheStore(path, BLOCK) as kv:
        assert kv.batched_put([(key(1), block(1)), (key(2), short, meta)]) == [True, True]
        assert kv.info(key(2)) == (10000, meta) and kv.info(key(1)) == (BLOCK, None)
        assert kv.info(key(3)) is None
        out = np.full(BLOCK, 0xAA, dtype=np.uint8)
        assert kv.get(key(2), out)
        assert np.array_equal(out[:10000], short) and (out[10000:] == 0xAA).all()
        small = np.zeros(10000, dtype=np.uint8)
        assert kv.get(key(2), small) and np.array_equal(small, short)
        with pytest.raises(ValueError, match="buffer of 9999 bytes for a value of 10000"):
            kv.get(key(2), np.zeros(9999, dtype=np.uint8))
        with kv.acquire(key(2)) as e:
            assert (e.nbytes, e.meta) == (10000, meta)
            got = np.zeros(e.nbytes, dtype=np.uint8)
            assert e.read_into(got) == 10000 and np.array_equal(got, short)
        assert kv.acquire(key(3)) is None
    # the block after it on the disk (key 1's, block 0) is intact
    assert np.array_equal(contents(path)[:BLOCK], block(1))
    assert np.array_equal(contents(path)[BLOCK:BLOCK + 10000], short)


def test_pins_keep_blocks_from_eviction(disk):
    """pin(key) and an acquired Entry keep their block: eviction takes
    the least recently used unpinned key instead, and with every block
    pinned a put stores nothing; remove() of a pinned key frees its block
    only when the pin goes."""
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=2) as kv:
        kv.batched_put([(key(1), block(1)), (key(2), block(2))])
        assert kv.pin(key(1)) and not kv.pin(key(9))
        assert kv.put(key(3), block(3))  # evicts 2, not the older but pinned 1
        assert kv.contains(key(1)) and not kv.contains(key(2))
        e = kv.acquire(key(3))
        assert not kv.put(key(4), block(4)) and kv.stats["put_skipped"] == 1
        assert kv.remove(key(1)) and not kv.contains(key(1))
        assert not kv.put(key(4), block(4))  # key 1's block is still pinned
        assert kv.unpin(key(1)) and not kv.unpin(key(1))
        assert kv.put(key(4), block(4))  # into key 1's old block
        out = np.zeros(BLOCK, dtype=np.uint8)
        assert e.read_into(out) and np.array_equal(out, block(3))
        e.release()
        assert kv.put(key(5), block(5)) and not kv.contains(key(3))
        assert kv.contains(key(1), pin=True) is False and kv.contains(key(5), pin=True)
        assert kv.unpin(key(5))


class _Failing:
    """File double whose writes fail with EIO for the offsets in @bad."""

    def __init__(self, bad):
        self.bad, self.synced, self.kv = bad, [], None

    def write_batch(self, items):
        from fxio import Completion
        return [Completion(-5 if it[1] in self.bad else memoryview(it[0]).nbytes, "posix", "")
                for it in items]

    def sync(self):
        self.synced.append(self.kv.contains(key(2)))  # a hit before the sync?

    def close(self):
        pass


def test_failed_write_stores_nothing_and_durable_syncs():
    """A write that failed leaves its key a miss and its block free (the
    others of the batch are stored); durable=True syncs the file after the
    writes, before the keys are hits."""
    f = _Failing({0})
    kv = KVCacheStore("<double>", BLOCK, capacity_blocks=2, file=f, durable=True)
    f.kv = kv
    with pytest.raises(OSError, match="1 block writes failed"):
        kv.batched_put([(key(1), block(1)), (key(2), block(2))])
    assert not kv.contains(key(1)) and kv.contains(key(2)) and f.synced == [False]
    assert not kv.exists_in_put_tasks(key(1))
    f.bad = set()
    assert kv.put(key(3), block(3)) and kv.stats["evictions"] == 0  # block 0 came back
    kv.close()
    with pytest.raises(ValueError, match="closed"):
        kv.put(key(4), block(4))


def test_trace_example_fxio_and_pread_agree(disk):
    """examples/kvcache_trace.py on its stored trace: the fxio batches and
    the pread baseline see the same hits, misses and evictions (the same
    store logic), move the same bytes, and the baseline's blocks land where
    the store's layout puts them."""
    import importlib.util
    import os
    import json
    path, _ = disk
    ex = os.path.join(os.path.dirname(__file__), "..", "examples", "kvcache_trace.py")
    spec = importlib.util.spec_from_file_location("kvcache_trace", ex)
    kt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kt)
    trace = kt.read_trace(kt.DEFAULT_TRACE)
    assert len(trace) == 200 and kt.synthetic(1) == trace  # the stored file is the seeded one
    base = kt.play(str(path), trace, BLOCK, 32, "pread")
    # the baseline wrote pool block i % 16 for each request's misses over
    # the disk's random pattern: each block now holds one constant byte
    data = contents(path)[:32 * BLOCK].reshape(32, BLOCK)
    assert (data == data[:, :1]).all()
    fx = kt.play(str(path), trace, BLOCK, 32, "fxio")
    keys = ("lookups", "hits", "misses", "puts", "evictions", "bytes")
    assert [fx[k] for k in keys] == [base[k] for k in keys]
    assert fx["hits"] > 0 and fx["evictions"] > 0
    assert base["ios"] == {"pread": base["hits"] + base["puts"]}
    assert sum(fx["ios"].values()) == fx["hits"] + fx["puts"]
    json.dumps([fx, base])  # the --json output is serializable
