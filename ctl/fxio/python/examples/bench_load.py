#!/usr/bin/env python3
"""Times loading and saving a model file, and prints the figures (no
verdict). Loads, each of the same tensors, read cold:
  fxio          fxio.safetensors.load (O_DIRECT into one aligned buffer)
  fxio-staged   the same with memory="emulated": staged through libfxio's
                pool with the host copy engine (the path a GPU buffer takes)
  plain         open().read() of the same safetensors file + numpy views
                (torch.from_numpy), no libfxio
  torch.load    torch.load of the same tensors saved with torch.save
Saves: fxio.safetensors.save (durable: ends with File.sync) and torch.save
followed by os.fsync (durable too, so the two compare).

    bench_load.py DIR [--mib 256] [--runs 3] [--json] [--staged-depth]

DIR: where the files go (a file system on /dev/fxN for the real case). The
buffered readers are made cold by fsync + posix_fadvise(DONTNEED) on the
file before each run (libfxio uses O_DIRECT); the methods' order rotates
per run; the first run's tensors are compared with the saved ones.
--json: one JSON object per timed run ({"op": "load"|"save", "method",
"rep", "seconds", "bytes", "mibs"}). --staged-depth: also libfxio's staged
path on 16 MiB requests at queue depth 1 and at the automatic depth
(separate processes: FXIO_DEPTH is read once).
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


def plain_load(path):
    """open().read() + views, as a loader without libfxio does."""
    import torch
    from fxio.safetensors import DTYPES
    with open(path, "rb") as f:  # read(), into a writable buffer (torch wants one)
        raw = bytearray(os.fstat(f.fileno()).st_size)
        f.readinto(raw)
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for k, v in header.items():
        b, e = v["data_offsets"]
        dt = np.dtype(DTYPES[v["dtype"]])
        t = torch.from_numpy(np.frombuffer(raw, dt, (e - b) // dt.itemsize, 8 + n + b)
                             .reshape(v["shape"]))
        out[k] = t.view(torch.bfloat16) if v["dtype"] == "BF16" else t
    return out


def staged_child(path):
    """Prints MiB/s of 16 MiB staged reads (unaligned buffer: staged)."""
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
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--staged-depth", action="store_true")
    ap.add_argument("--staged-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.staged_child:
        return staged_child(a.staged_child)
    import torch
    from fxio import safetensors as st

    n = a.mib << 20
    layers = 16
    g = torch.Generator().manual_seed(0)
    # a model's mix: float16 and bfloat16 weights, float32 norms
    sd = {}
    for i in range(layers):
        dt = torch.float16 if i % 2 else torch.bfloat16
        sd["layers.%d.weight" % i] = torch.randn(n // layers // 2 - 256, generator=g).to(dt)
        sd["layers.%d.norm" % i] = torch.randn(256, generator=g)
    stp = os.path.join(a.dir, "bench.safetensors")
    ptp = os.path.join(a.dir, "bench.pt")

    def save_torch():
        torch.save(sd, ptp)
        fd = os.open(ptp, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    loads = {
        "fxio": lambda: st.load(stp, framework="pt"),
        "fxio-staged": lambda: st.load(stp, framework="pt", memory="emulated"),
        "plain": lambda: plain_load(stp),
        "torch.load": lambda: torch.load(ptp),
    }
    saves = {"fxio.save": lambda: st.save(sd, stp), "torch.save": save_torch}
    rows = []

    def emit(op, method, rep, secs, path):
        size = os.stat(path).st_size
        r = {"op": op, "method": method, "rep": rep, "seconds": secs, "bytes": size,
             "mibs": size / secs / 2**20}
        rows.append(r)
        if a.json:
            print(json.dumps(r), flush=True)

    for rep in range(a.runs):
        names = list(saves)
        for name in names[rep % 2:] + names[:rep % 2]:
            path = stp if name == "fxio.save" else ptp
            if os.path.exists(path):
                os.unlink(path)
            t = time.perf_counter()
            saves[name]()
            emit("save", name, rep, time.perf_counter() - t, path)
        names = list(loads)
        k = rep % len(names)
        for name in names[k:] + names[:k]:
            path = ptp if name == "torch.load" else stp
            cold(path)
            t = time.perf_counter()
            got = loads[name]()
            emit("load", name, rep, time.perf_counter() - t, path)
            if rep == 0:
                assert got.keys() == sd.keys(), name
                for key, ten in sd.items():
                    assert torch.equal(got[key], ten), (name, key)
            del got
    if not a.json:
        mib = os.stat(stp).st_size / 2**20
        print("%.0f MiB of tensors, %d runs (median, min-max s; buffered reads cold):" % (mib, a.runs))
        for op in ("load", "save"):
            for m in dict.fromkeys(r["method"] for r in rows if r["op"] == op):
                xs = [r["seconds"] for r in rows if r["op"] == op and r["method"] == m]
                print("  %s %-12s median %.3f s (%.0f MiB/s; %.3f-%.3f)"
                      % (op, m, statistics.median(xs), mib / statistics.median(xs), min(xs), max(xs)))
    if a.staged_depth:
        for depth in ("1", ""):
            env = dict(os.environ)
            env.pop("FXIO_DEPTH", None)
            if depth:
                env["FXIO_DEPTH"] = depth
            r = subprocess.run([sys.executable, __file__, a.dir, "--staged-child", stp],
                               env=env, capture_output=True, text=True, check=True)
            d = json.loads(r.stdout)
            print("staged 16 MiB reads, depth %-2d (%s): %.0f MiB/s"
                  % (d["depth"], d["queue"], d["mib_s"]))
    os.unlink(stp)
    os.unlink(ptp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
