#!/usr/bin/env python3
"""Times loading a model file three ways and prints the figures (no
verdict): fxio.safetensors.load, plain open().read() + numpy views of the
same safetensors file, and torch.load of the same tensors saved with
torch.save. Also times libfxio's staged path on 16 MiB requests at queue
depth 1 (the old pipeline) and at the automatic depth (separate processes:
FXIO_DEPTH is read once).

    bench_load.py DIR [--mib 256] [--runs 3]

DIR: where the files go (a file system on /dev/fxN for the real case; the
plain reads are made cold by posix_fadvise(DONTNEED) on the file before
each run; libfxio uses O_DIRECT).
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np


def cold(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(fn, path, runs):
    out = []
    for _ in range(runs):
        cold(path)
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def plain_load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    buf = np.frombuffer(raw, dtype=np.uint8)
    return {k: buf[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}


def staged_child(path, size):
    """Prints seconds per 16 MiB staged read (unaligned buffer: staged)."""
    import fxio
    f = fxio.open(path)
    buf = np.empty((16 << 20) + 1, dtype=np.uint8)[1:]
    total = os.stat(path).st_size // (16 << 20) * (16 << 20)
    t = time.perf_counter()
    for off in range(0, total, 16 << 20):
        f.read_into(buf, off)
    dt = time.perf_counter() - t
    s = f.stats()
    print(json.dumps({"mib_s": total / dt / 2**20, "depth": s["queue_depth"],
                      "queue": s["disk_queue"], "path": f.last_path}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--staged-child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.staged_child:
        return staged_child(a.staged_child[0], int(a.staged_child[1]))
    import torch
    from fxio import safetensors as st

    n = a.mib << 20
    layers = 16
    g = torch.Generator().manual_seed(0)
    sd = {"layer.%d.weight" % i: torch.randn(n // layers // 2, generator=g).to(torch.float16)
          for i in range(layers)}
    stp = os.path.join(a.dir, "bench.safetensors")
    ptp = os.path.join(a.dir, "bench.pt")
    t = time.perf_counter()
    st.save(sd, stp)
    save_fxio = time.perf_counter() - t
    t = time.perf_counter()
    torch.save(sd, ptp)
    save_torch = time.perf_counter() - t
    rows = {
        "fxio.safetensors.load": timed(lambda: st.load(stp, framework="pt"), stp, a.runs),
        "open().read() + views": timed(lambda: plain_load(stp), stp, a.runs),
        "torch.load": timed(lambda: torch.load(ptp), ptp, a.runs),
    }
    mib = os.stat(stp).st_size / 2**20
    print("load of %.0f MiB (%d runs, cold page cache for buffered reads):" % (mib, a.runs))
    for name, xs in rows.items():
        print("  %-24s median %.3f s  (%.0f MiB/s; min %.3f max %.3f)"
              % (name, statistics.median(xs), mib / statistics.median(xs), min(xs), max(xs)))
    print("save: fxio.safetensors.save %.3f s, torch.save %.3f s" % (save_fxio, save_torch))
    for depth in ("1", ""):
        env = dict(os.environ)
        env.pop("FXIO_DEPTH", None)
        if depth:
            env["FXIO_DEPTH"] = depth
        r = subprocess.run([sys.executable, __file__, a.dir, "--staged-child", stp, str(n)],
                           env=env, capture_output=True, text=True, check=True)
        d = json.loads(r.stdout)
        print("staged 16 MiB reads, depth %-2d (%s): %.0f MiB/s"
              % (d["depth"], d["queue"], d["mib_s"]))
    os.unlink(stp)
    os.unlink(ptp)


if __name__ == "__main__":
    main()
