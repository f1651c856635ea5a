"""The keys and values of test_kvcache_persist.py, and its crash test's
child: `kv_crash_child.py PATH CAPACITY FIRST SEED` opens a persistent
KVCacheStore on PATH and puts keys FIRST, FIRST + 1, ... in batches of 1 to
4 until it is killed (or has put 5000), printing "ready" once open. Every
value and meta is derived from its key's number, so whoever reopens the
store knows what each hit must hold."""
import hashlib
import random
import sys

import numpy as np

BLOCK = 64 << 10


def key(i):
    """The three key types a persistent store keeps, in turn."""
    return (hashlib.sha256(b"chunk-%d" % i).digest(), "chunk/%d" % i, 10 ** 30 + i)[i % 3]


def size(i):
    """1 byte to a whole block: short last chunks, not multiples of 4096."""
    return random.Random(i).choice((BLOCK, BLOCK, random.Random(-i).randint(1, BLOCK)))


def content(i):
    return np.random.default_rng(i).integers(0, 256, size(i), dtype=np.uint8)


def meta(i):
    return {"shape": [2, 4, i % 37], "dtype": "float16", "fmt": "KV_2LTD", "n": i}


def main(path, capacity, first, seed):
    from fxio.kvcache import KVCacheStore
    kv = KVCacheStore(path, BLOCK, capacity_blocks=capacity, persistent=True)
    print("ready", flush=True)
    rnd = random.Random(seed)
    i = first
    while i < first + 5000:
        n = rnd.randint(1, 4)
        kv.batched_put([(key(j), content(j), meta(j)) for j in range(i, i + n)])
        i += n
    kv.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
