#!/usr/bin/env python3
"""Plays a KV-cache access trace against fxio.kvcache.KVCacheStore and
prints the hit rate, throughput and p50/p99 latency of the batched gets and
puts.

    kvcache_trace.py DISK [--trace FILE] [--block-kib 64] [--blocks N]
                     [--engine fxio,pread] [--reps N] [--json]
    kvcache_trace.py --write-trace FILE [--seed N]

DISK: /dev/fxN (raw; its contents are overwritten) or a file. --trace: one
request per line, "KEY KEY ..." = the chunk hashes of one prompt, in order
(what LMCache looks up for a request: the longest cached prefix is reused,
the rest computed and stored); lines starting with # are comments. Default:
kvcache-trace.txt next to this script, a seeded synthetic trace stored in
the repository (no recorded production trace ships): --write-trace makes it
(200 requests over 20 shared prefixes of 4-12 chunks, Zipf-chosen, each
with a unique tail of 1-4 chunks; seed 1).

For each request: one batched get of all its chunks (the hits read back),
then one batched put of the misses (blocks "computed": a fixed pattern).
The store starts empty each run, so the first use of a prefix misses.
--engine: fxio (KVCacheStore's batches through libfxio: every block of a
batch in flight at once) and/or pread (the baseline: the same store and
index, each block one os.preadv/os.pwritev on an O_DIRECT descriptor, one
after another, as a plain Python backend does; O_DIRECT so that the page
cache does not answer the gets). Output buffers are 4 KiB aligned, so both
move data without a bounce copy. --json: one JSON object per run.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

import numpy as np

from fxio import Completion
from fxio.kvcache import KVCacheStore

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TRACE = os.path.join(HERE, "kvcache-trace.txt")


def synthetic(seed=1, requests=200, nprefix=20):
    rng = random.Random(seed)
    prefixes = [["p%d-%d" % (p, i) for i in range(rng.randint(4, 12))] for p in range(nprefix)]
    weights = [1 / (k + 1) for k in range(len(prefixes))]
    trace = []
    for r in range(requests):
        pre = rng.choices(prefixes, weights)[0]
        tail = ["r%d-%d" % (r, i) for i in range(rng.randint(1, 4))]
        trace.append(pre + tail)
    return trace


def read_trace(path):
    return [line.split() for line in open(path)
            if line.strip() and not line.startswith("#")]


def aligned(n):
    raw = np.empty(n + 4096, dtype=np.uint8)
    skip = (-raw.ctypes.data) % 4096
    return raw[skip:skip + n]


class PreadFile:
    """The baseline's I/O: File's batch interface done with one blocking
    O_DIRECT preadv/pwritev per block, in order."""

    def __init__(self, path):
        self._fd = os.open(path, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
        self._ios = 0

    def _run(self, items, write):
        out = []
        for it in items:  # (buf, off) or (buf, off, size), as File's batches
            buf, off = it[0], it[1]
            mv = memoryview(buf).cast("B")
            if len(it) > 2:
                mv = mv[:it[2]]
            n = os.pwritev(self._fd, [mv], off) if write else os.preadv(self._fd, [mv], off)
            self._ios += 1
            out.append(Completion(n, "pread", ""))
        return out

    def read_batch(self, items):
        return self._run(items, False)

    def write_batch(self, items):
        return self._run(items, True)

    def stats(self):
        return {"ios": {"pread": self._ios}, "disk_queue": "none", "queue_depth": 1}

    def close(self):
        os.close(self._fd)


def pct(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def play(disk, trace, block_bytes, blocks, engine):
    f = PreadFile(disk) if engine == "pread" else None
    kv = KVCacheStore(disk, block_bytes, blocks, file=f)
    outs = [aligned(block_bytes) for _ in range(max(len(c) for c in trace))]
    pool = [aligned(block_bytes) for _ in range(16)]
    for i, p in enumerate(pool):
        p[:] = i
    get_lat, put_lat = [], []
    moved = 0
    t0 = time.perf_counter()
    for chunks in trace:
        t = time.perf_counter()
        hits = kv.batched_get(chunks, outs[:len(chunks)])
        get_lat.append(time.perf_counter() - t)
        moved += sum(hits) * block_bytes
        new = [(k, pool[i % len(pool)]) for i, (k, h) in enumerate(zip(chunks, hits)) if not h]
        if new:
            t = time.perf_counter()
            kv.batched_put(new)
            put_lat.append(time.perf_counter() - t)
            moved += len(new) * block_bytes
    dt = time.perf_counter() - t0
    s = dict(kv.stats)
    io = kv.io_stats()
    kv.close()
    lookups = s["hits"] + s["misses"]
    return {
        "engine": engine, "requests": len(trace), "lookups": lookups,
        "hits": s["hits"], "misses": s["misses"], "hit_rate": s["hits"] / max(1, lookups),
        "puts": s["puts"], "evictions": s["evictions"],
        "block_kib": block_bytes >> 10, "capacity_blocks": kv.capacity,
        "bytes": moved, "seconds": dt, "mibs": moved / dt / 2**20,
        "get_ms": {"p50": 1e3 * statistics.median(get_lat), "p99": 1e3 * pct(get_lat, 99)},
        "put_ms": {"p50": 1e3 * statistics.median(put_lat) if put_lat else 0.0,
                   "p99": 1e3 * pct(put_lat, 99)},
        "ios": io["ios"], "disk_queue": io["disk_queue"], "queue_depth": io["queue_depth"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("disk", nargs="?")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--block-kib", type=int, default=64)
    ap.add_argument("--blocks", type=int, default=None, help="store capacity (default: the disk's)")
    ap.add_argument("--engine", default="fxio", help="fxio, pread or both (comma-separated)")
    ap.add_argument("--reps", type=int, default=1, help="runs per engine, engines alternating")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write-trace", metavar="FILE")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.write_trace:
        trace = synthetic(a.seed)
        with open(a.write_trace, "w") as fh:
            fh.write("# kvcache_trace.py --write-trace (seed %d): %d requests, one a line,\n"
                     "# the chunk hashes of one prompt in order (synthetic: shared prefixes\n"
                     "# p<prefix>-<i>, Zipf-chosen; unique tails r<request>-<i>)\n"
                     % (a.seed, len(trace)))
            for chunks in trace:
                fh.write(" ".join(chunks) + "\n")
        return 0
    if not a.disk:
        ap.error("DISK is required")
    engines = a.engine.split(",")
    if not set(engines) <= {"fxio", "pread"}:
        ap.error("--engine: fxio and/or pread")
    tpath = a.trace or DEFAULT_TRACE
    trace = read_trace(tpath)
    for rep in range(a.reps):
        for engine in (engines if rep % 2 == 0 else engines[::-1]):
            r = play(a.disk, trace, a.block_kib << 10, a.blocks, engine)
            r.update(rep=rep, trace=os.path.basename(tpath))
            if a.json:
                print(json.dumps(r), flush=True)
                continue
            print("%s: trace %s: %d requests, %d chunk lookups, blocks of %d KiB, store of %d blocks"
                  % (engine, r["trace"], r["requests"], r["lookups"], r["block_kib"],
                     r["capacity_blocks"]))
            print("  hit rate %.1f%% (%d hits, %d misses), %d puts, %d evictions"
                  % (100 * r["hit_rate"], r["hits"], r["misses"], r["puts"], r["evictions"]))
            print("  throughput %.1f MiB/s (%.1f MiB moved in %.2f s)"
                  % (r["mibs"], r["bytes"] / 2**20, r["seconds"]))
            print("  batched get: p50 %.2f ms, p99 %.2f ms; batched put: p50 %.2f ms, p99 %.2f ms"
                  % (r["get_ms"]["p50"], r["get_ms"]["p99"], r["put_ms"]["p50"], r["put_ms"]["p99"]))
            print("  I/Os %s, queue %s depth %d" % (r["ios"], r["disk_queue"], r["queue_depth"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
