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
        with pytest.raises(ValueError, match="not 100"):
            kv.put(key(1), np.zeros(100, dtype=np.uint8))


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
