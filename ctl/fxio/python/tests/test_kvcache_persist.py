"""KVCacheStore(persistent=True) (issue 35): the index on the volume, kept
across a close and reopen, across a process killed in the middle of its
puts, and never serving a torn record or value (fxio/kvcache.py's module
docstring has the layout and the update rule). Keys, values and meta come
from kvcrash.py: each derived from its key's number, so every hit
is checked byte for byte against what was put under that key."""
import os
import random
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fxio.kvcache import KVCacheStore
from kvcrash import BLOCK, RUN, content, key, meta, size

UNIT = 4096
CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kvcrash.py")


def put(kv, nums):
    return kv.batched_put([(key(i), content(i), meta(i)) for i in nums])


def exact(kv, i):
    """Whether key @i is a hit; a hit must hold key @i's bytes and meta."""
    out = np.full(BLOCK, 0xEE, dtype=np.uint8)
    if not kv.get(key(i), out):
        return False
    assert np.array_equal(out[:size(i)], content(i)), "key %d: not its bytes" % i
    assert kv.info(key(i)) == (size(i), meta(i)), "key %d: not its meta" % i
    return True


def patch(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def peek(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def test_reopen_keeps_every_key_byte_exact_with_meta(disk):
    """100 keys (bytes, str and int; sizes from 1 byte to a block) put in
    batches, the store closed and reopened: every key a hit with its bytes
    and meta, in the layout the module docstring gives."""
    path, _ = disk
    rnd = random.Random(1)
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        # 8 MiB: a header, 120 records, 120 blocks from 512 KiB
        assert kv.capacity == 120 and kv.stats["loaded"] == 0
        i = 0
        while i < 100:
            n = min(rnd.randint(1, 5), 100 - i)
            assert put(kv, range(i, i + n)) == [True] * n
            i += n
        first = kv._index[key(0)].block
    assert peek(path, 0, 8) == b"FXKVHDR1" and peek(path, UNIT * (1 + first), 8) == b"FXKVREC1"
    assert np.array_equal(np.frombuffer(peek(path, (512 << 10) + first * BLOCK, size(0)),
                                        dtype=np.uint8), content(0))
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert kv.capacity == 120 and len(kv) == 100 and kv.stats["loaded"] == 100
        assert all(exact(kv, i) for i in range(100))
        assert kv.stats["torn"] == 0 and kv.verify() == 0
        assert put(kv, [100]) == [True]  # the sequence goes on after the loaded ones
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert len(kv) == 101 and all(exact(kv, i) for i in range(101))


def test_evictions_puts_again_and_removes_survive_reopen(disk):
    """With 8 blocks: what was evicted, removed or put again before the
    close is so after the reopen (a key put again has its new value; its
    old record was zeroed, so a remove after it is not undone by the
    older record), and the LRU order is the order of the puts."""
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=8, persistent=True) as kv:
        # 8 stored, 2 skipped: every block is being written in this batch
        assert put(kv, range(10)) == [True] * 8 + [False] * 2
        assert put(kv, [10, 11]) == [True, True]  # evicts 0 and 1
        assert kv.remove(key(4)) and not kv.remove(key(4))
        assert kv.put(key(2), content(20), meta(20))  # into 4's block, 20's value
        assert kv.put(key(3), content(30), meta(30))  # into 2's old block
        assert kv.remove(key(3))  # 3's first record must not bring it back
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert kv.capacity == 8 and len(kv) == 6
        assert not any(kv.contains(key(i)) for i in (0, 1, 3, 4, 8, 9))
        # LRU by the puts' order: 5 6 7 10 11 2; 2 free blocks, then 5 goes
        assert put(kv, [12, 13, 14]) == [True] * 3
        assert not kv.contains(key(5)) and kv.contains(key(6))
        out = np.zeros(BLOCK, dtype=np.uint8)
        assert kv.get(key(2), out) and np.array_equal(out[:size(20)], content(20))
        assert kv.info(key(2)) == (size(20), meta(20))
        assert all(exact(kv, i) for i in (6, 7, 10, 11, 12, 13, 14))



def test_of_two_records_of_a_key_the_newer_wins(disk):
    """A crash between a put of a key again and the zeroing of its old
    record leaves two valid records of the key, each with its own value:
    the higher sequence number wins at open, and the other is zeroed."""
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=4, persistent=True) as kv:
        assert kv.put(key(1), content(1), meta(1))
        old = kv._index[key(1)].block
        saved = peek(path, UNIT * (1 + old), UNIT)
        assert kv.put(key(1), content(20), meta(20))
    assert peek(path, UNIT * (1 + old), UNIT) == bytes(UNIT)
    patch(path, UNIT * (1 + old), saved)  # as if the zeroing never landed
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert kv.stats["loaded"] == 1
        out = np.zeros(BLOCK, dtype=np.uint8)
        assert kv.get(key(1), out) and np.array_equal(out[:size(20)], content(20))
    assert peek(path, UNIT * (1 + old), UNIT) == bytes(UNIT)

def test_other_geometry_refused_unless_reformat(disk):
    """A volume holding a store of another block size or capacity is
    refused; reformat=True starts it empty, and so does a torn header."""
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=16, persistent=True) as kv:
        put(kv, range(4))
    with pytest.raises(ValueError, match="16 blocks of 65536 bytes"):
        KVCacheStore(path, 2 * BLOCK, persistent=True)
    with pytest.raises(ValueError, match="reformat=True"):
        KVCacheStore(path, BLOCK, capacity_blocks=32, persistent=True)
    with KVCacheStore(path, BLOCK, persistent=True) as kv:  # the header's capacity
        assert kv.capacity == 16 and all(exact(kv, i) for i in range(4))
    with KVCacheStore(path, BLOCK, capacity_blocks=16, persistent=True, reformat=True) as kv:
        assert len(kv) == 0 and not kv.contains(key(0))
        put(kv, range(4, 6))
    patch(path, 100, bytes([peek(path, 100, 1)[0] ^ 1]))  # one bit of the header
    with KVCacheStore(path, BLOCK, capacity_blocks=16, persistent=True) as kv:
        assert len(kv) == 0 and not any(exact(kv, i) for i in range(6))


def test_keys_and_meta_a_persistent_store_refuses(disk):
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=4, persistent=True) as kv:
        with pytest.raises(ValueError, match="bytes, str or int keys, not tuple"):
            kv.put(("a", 1), content(1))
        with pytest.raises(ValueError, match="meta that JSON holds"):
            kv.put(key(1), content(1), object())
        with pytest.raises(ValueError, match="more than 4011"):
            kv.put("k" * 4000, content(1), "m" * 20)
        assert len(kv) == 0 and kv.stats["put_skipped"] == 0
        assert kv.put(key(1), content(1), (1, [2.5, None], {"a": True}))
        assert kv.info(key(1)) == (size(1), [1, [2.5, None], {"a": True}])  # as after a restart


def test_torn_records_and_values_are_dropped_never_served(disk):
    """Records and values damaged as a crash or the disk leaves them: a
    record whose hash fails (one bit, a torn 512-byte sector from another
    record, a write cut after 2 KiB, a whole record copied to another
    block) is dropped at open; a value that no longer matches its record
    (one bit, its second half another write's, wholly the next occupant's
    after an eviction whose record never landed) is a hit for contains()
    only until it is read: get, acquire and verify() each find it, drop
    it and zero its record. Every other key is served byte for byte."""
    path, _ = disk
    with KVCacheStore(path, BLOCK, capacity_blocks=16, persistent=True) as kv:
        put(kv, range(12))
        blk = {i: kv._index[key(i)].block for i in range(12)}
        data = kv._data
        free = kv._free[-1]

    def rec(i):
        return UNIT * (1 + blk[i])

    def val(i):
        return data + blk[i] * BLOCK

    patch(path, rec(0) + 80, bytes([peek(path, rec(0) + 80, 1)[0] ^ 0x10]))
    patch(path, rec(1), peek(path, rec(2), 512))
    patch(path, rec(3) + 2048, bytes(2048))
    patch(path, UNIT * (1 + free), peek(path, rec(8), UNIT))
    patch(path, val(4) + size(4) // 2, bytes([peek(path, val(4) + size(4) // 2, 1)[0] ^ 1]))
    patch(path, val(5) + size(5) // 2, b"\xa5" * (size(5) - size(5) // 2))
    patch(path, val(6), content(7).tobytes())
    assert size(5) > 1 and size(4) > 1
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert kv.stats["torn"] == 4 and kv.stats["loaded"] == 9
        assert not any(kv.contains(key(i)) for i in (0, 1, 3))
        assert all(kv.contains(key(i)) for i in (4, 5, 6))  # not read yet
        out = np.zeros(BLOCK, dtype=np.uint8)
        assert not kv.get(key(4), out) and not kv.contains(key(4))
        assert kv.acquire(key(5)) is None and not kv.contains(key(5))
        assert kv.verify() == 1 and not kv.contains(key(6))
        assert kv.stats["torn"] == 7
        assert all(exact(kv, i) for i in (2, 7, 8, 9, 10, 11))
    for i in (4, 5, 6):
        assert peek(path, rec(i), UNIT) == bytes(UNIT)  # zeroed when found
    with KVCacheStore(path, BLOCK, persistent=True) as kv:
        assert kv.stats["loaded"] == 6 and kv.stats["torn"] == 4
        assert all(exact(kv, i) for i in (2, 7, 8, 9, 10, 11))
        assert not any(exact(kv, i) for i in (0, 1, 3, 4, 5, 6))


def _spawn(path, capacity, first, seed):
    child = subprocess.Popen([sys.executable, CHILD, "put", str(path), "--capacity", str(capacity),
                              "--first", str(first), "--seed", str(seed)], stdout=subprocess.PIPE)
    ready, _, _ = select.select([child.stdout], [], [], 60)
    assert ready and child.stdout.readline().startswith(b"ready"), "the child did not open the store"
    return child


def test_sigkill_during_puts_never_serves_a_wrong_byte(disk):
    """A child putting keys (1-4 a batch, sizes of 1 byte to a block, 24
    blocks: evictions all the time) is SIGKILLed at a random point, 24
    times (FXIO_KV_CRASH_RUNS for more) on the same store; after each, the
    store reopened serves every key of every run that is a hit with that
    key's bytes and meta (misses allowed), and keeps keys across kills."""
    path, _ = disk
    runs = int(os.environ.get("FXIO_KV_CRASH_RUNS", "24"))
    rnd = random.Random(int(os.environ.get("FXIO_KV_CRASH_SEED", "35")))
    KVCacheStore(path, BLOCK, capacity_blocks=24, persistent=True, reformat=True).close()
    loaded = torn = 0
    for run in range(runs):
        child = _spawn(path, 24, run * RUN, rnd.randrange(1 << 30))
        time.sleep(rnd.uniform(0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        with KVCacheStore(path, BLOCK, persistent=True) as kv:
            loaded += kv.stats["loaded"]
            hits = [i for i in range((run + 1) * RUN) if kv.contains(key(i))]
            assert len(hits) <= 24
            for i in hits:
                exact(kv, i)
            torn += kv.stats["torn"]
    assert loaded > runs * 12, "the store kept %d keys over %d kills" % (loaded, runs)
    print("sigkill: %d runs, %d keys loaded, %d torn records or values dropped"
          % (runs, loaded, torn))

