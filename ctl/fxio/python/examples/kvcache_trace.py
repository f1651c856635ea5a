#!/usr/bin/env python3
"""Plays a KV-cache access trace against fxio.kvcache.KVCacheStore and
prints the hit rate, throughput and p50/p99 latency of the batched gets and
puts.

    kvcache_trace.py DISK [--trace FILE] [--block-kib 256] [--blocks N]

DISK: /dev/fxN (raw; its contents are overwritten) or a file. --trace: one
request per line, "KEY KEY ..." = the chunk hashes of one prompt, in order
(what LMCache looks up for a request: the longest cached prefix is reused,
the rest computed and stored). Without --trace a synthetic trace is made
(no recorded one ships): 400 requests over 40 shared prefixes (Zipf-chosen)
of 8-24 chunks each, plus a per-request unique tail of 2-8 chunks.
"""
import argparse
import random
import statistics
import time

import numpy as np

from fxio.kvcache import KVCacheStore


def synthetic(seed=1):
    rng = random.Random(seed)
    prefixes = [["p%d-%d" % (p, i) for i in range(rng.randint(8, 24))] for p in range(40)]
    weights = [1 / (k + 1) for k in range(len(prefixes))]
    trace = []
    for r in range(400):
        pre = rng.choices(prefixes, weights)[0]
        tail = ["r%d-%d" % (r, i) for i in range(rng.randint(2, 8))]
        trace.append(pre + tail)
    return trace


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("disk")
    ap.add_argument("--trace")
    ap.add_argument("--block-kib", type=int, default=256)
    ap.add_argument("--blocks", type=int, default=None)
    a = ap.parse_args()
    trace = ([line.split() for line in open(a.trace) if line.strip()] if a.trace
             else synthetic())
    bb = a.block_kib << 10
    kv = KVCacheStore(a.disk, bb, a.blocks)
    pool = [np.full(bb, i, dtype=np.uint8) for i in range(64)]
    get_lat, put_lat = [], []
    moved = 0
    t0 = time.perf_counter()
    for chunks in trace:
        outs = [np.empty(bb, dtype=np.uint8) for _ in chunks]
        t = time.perf_counter()
        hits = kv.batched_get(chunks, outs)
        get_lat.append(time.perf_counter() - t)
        moved += sum(hits) * bb
        new = [(k, pool[hash(k) % len(pool)]) for k, h in zip(chunks, hits) if not h]
        if new:
            t = time.perf_counter()
            kv.batched_put(new)
            put_lat.append(time.perf_counter() - t)
            moved += len(new) * bb
    dt = time.perf_counter() - t0
    s = kv.stats
    print("trace: %d requests, %d chunk lookups, blocks of %d KiB, store of %d blocks%s"
          % (len(trace), s["hits"] + s["misses"], a.block_kib, kv.capacity,
             "" if a.trace else " (synthetic trace)"))
    print("hit rate %.1f%% (%d hits, %d misses), %d puts, %d evictions"
          % (100 * s["hits"] / max(1, s["hits"] + s["misses"]), s["hits"], s["misses"],
             s["puts"], s["evictions"]))
    print("throughput %.0f MiB/s (%.1f GiB moved in %.2f s)" % (moved / dt / 2**20, moved / 2**30, dt))
    print("batched get: p50 %.2f ms, p99 %.2f ms; batched put: p50 %.2f ms, p99 %.2f ms"
          % (1e3 * statistics.median(get_lat), 1e3 * pct(get_lat, 99),
             1e3 * statistics.median(put_lat) if put_lat else 0,
             1e3 * pct(put_lat, 99) if put_lat else 0))
    io = kv.io_stats()
    print("libfxio: ios %s, queue %s depth %d" % (io["ios"], io["disk_queue"], io["queue_depth"]))
    kv.close()


if __name__ == "__main__":
    main()
