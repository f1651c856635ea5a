"""The keys and values of the persistent KVCacheStore's crash tests
(test_kvcache_persist.py on the host, tests/lab/tests/68-kv-persist.sh in
the lab), and their writer and checker. Every value and meta is derived
from its key's number, so whoever reopens the store knows what each hit
must hold.

  kvcrash.py put PATH --first N --seed S [--capacity C] [--manifest FILE]
      opens a persistent store of 64 KiB blocks on PATH (C blocks, or what
      PATH holds) and puts keys N, N + 1, ... in batches of 1 to 4 until it
      is killed or has put 5000; prints "ready" once open. --manifest:
      durable puts (File.sync before a put returns), the numbers of the
      keys stored appended to FILE and fsync'd after each batch (the
      acknowledged ones), and at most as many keys as the store has blocks
      (nothing evicted: every acknowledged key must stay a hit);
      --nondurable with it: the same without the sync (a control).
  kvcrash.py check PATH --first N [--manifest FILE]
      reopens it and checks keys N to N + 4999: every hit byte for byte and
      its meta, and every key of FILE a hit; prints one RESULT line; exits 1
      on a wrong byte or a lost acknowledged key."""
import argparse
import hashlib
import os
import random
import sys

import numpy as np

BLOCK = 64 << 10
RUN = 5000  # keys a writer puts at the most


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


def put(a):
    from fxio.kvcache import KVCacheStore
    durable = a.manifest is not None and not a.nondurable
    kv = KVCacheStore(a.path, BLOCK, capacity_blocks=a.capacity, persistent=True,
                      durable=durable)
    man = open(a.manifest, "a") if a.manifest else None
    print("ready: %d blocks, durable %s" % (kv.capacity, durable), flush=True)
    rnd = random.Random(a.seed)
    i, end = a.first, a.first + (min(RUN, kv.capacity) if man else RUN)
    while i < end:
        nums = range(i, min(i + rnd.randint(1, 4), end))
        stored = kv.batched_put([(key(j), content(j), meta(j)) for j in nums])
        if man is not None:
            man.write("".join("%d\n" % j for j, s in zip(nums, stored) if s))
            man.flush()
            os.fsync(man.fileno())
        i = nums[-1] + 1
    kv.close()


def check(a):
    from fxio.kvcache import KVCacheStore
    acked = set()
    if a.manifest:
        with open(a.manifest) as f:
            for line in f:
                if line.strip().isdigit() and line.endswith("\n"):  # the last may be torn
                    acked.add(int(line))
    hits, wrong = 0, []
    out = np.empty(BLOCK, dtype=np.uint8)
    with KVCacheStore(a.path, BLOCK, persistent=True) as kv:
        loaded = kv.stats["loaded"]
        for i in range(a.first, a.first + RUN):
            if not kv.get(key(i), out):
                continue
            hits += 1
            if not np.array_equal(out[:size(i)], content(i)) or kv.info(key(i)) != (size(i), meta(i)):
                wrong.append(i)
        torn = kv.stats["torn"]
        lost = sorted(i for i in acked if not kv.contains(key(i)))
    print("RESULT loaded=%d hits=%d wrong=%d acked=%d lost=%d torn=%d"
          % (loaded, hits, len(wrong), len(acked), len(lost), torn), flush=True)
    for i in wrong[:5]:
        print("WRONG: key %d served bytes or meta not its own" % i)
    for i in lost[:5]:
        print("LOST: acknowledged put of key %d is not a hit" % i)
    return 1 if wrong or lost else 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("put")
    w.add_argument("path")
    w.add_argument("--first", type=int, required=True)
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--capacity", type=int)
    w.add_argument("--manifest")
    w.add_argument("--nondurable", action="store_true")
    c = sub.add_parser("check")
    c.add_argument("path")
    c.add_argument("--first", type=int, required=True)
    c.add_argument("--manifest")
    a = p.parse_args(argv)
    return put(a) if a.cmd == "put" else check(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
