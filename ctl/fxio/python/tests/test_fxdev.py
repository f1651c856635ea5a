"""The fxio package over a real /dev/fxN (lab test 58-fxio-python): numpy
arrays and torch CPU tensors written with write_from and read back with
read_into on each of libfxio's paths, checked byte for byte and against an
independent reader and writer (os.pread/os.pwrite on another descriptor,
through the page cache); async futures; batches mixing the paths; several
threads on one File each seeing their own last_path.

Needs FXIO_TEST_DEV=/dev/fxN (the volume's contents are overwritten) and
FXIO_TEST_DIRECT=1 when registered host memory must go direct (the module's
/dev/fxblk-peer is there) or 0 when it must not. Without FXIO_TEST_DEV
(ctest's run in the build tree) every test here is skipped, with that
reason. Paths, as docs/gpu-direct.md "When each path is chosen":
  unreg     a buffer never registered: posix
  emulated  fxio.register(buf, "emulated"): staged with the host engine
  host      fxio.register(buf, "host"): direct when the I/O is block
            aligned, staged when not (with /dev/fxblk-peer); posix without it
"""
import os
import threading
from collections import namedtuple

import numpy as np
import pytest
import torch

import fxio

DEV = os.environ.get("FXIO_TEST_DEV", "")
pytestmark = pytest.mark.skipif(
    not DEV, reason="FXIO_TEST_DEV not set: these run over /dev/fxN in the lab "
    "(tests/lab/tests/58-fxio-python.sh, lab --hostfs)")

ALIGN = 4096
REG_NONE = "buffer not registered (compat mode)"
REG_EMU = "emulated device memory (host engine, never direct)"
REG_UNALIGNED = "buffer, offset or size not aligned to the disk's block size"
MIB = 1 << 20
# (device offset, length, buffer offset): aligned; inside one block;
# across a 64 KiB chunk and a member; across many chunks and larger than the
# lab's bounce pool (2 slots of 256 KiB), unaligned at both ends
RANGES = [(0, MIB, 0), (100, 300, 7), (65436, 200000, 1), (123457, 1300001, 4095)]
# an arena holds a source and a destination for the longest range, the
# destination HALF (4 KiB aligned) after the source
HALF = (1300001 + 2 * ALIGN) // ALIGN * ALIGN
ARENA = 2 * HALF


@pytest.fixture(scope="module")
def fxdev():
    """(path, size in bytes, direct expected) of the lab's volume."""
    import stat
    assert stat.S_ISBLK(os.stat(DEV).st_mode), "%s is not a block device" % DEV
    want = os.environ.get("FXIO_TEST_DIRECT")
    assert want in ("0", "1"), \
        "FXIO_TEST_DIRECT must be 1 (registered host memory goes direct) or 0, got %r" % want
    fd = os.open(DEV, os.O_RDONLY)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)
    assert size >= 512 * MIB, "%s: %d bytes, the tests need 512 MiB" % (DEV, size)
    return DEV, size, want == "1"


def pattern(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def pread(path, off, n):
    """The independent reader: a buffered descriptor of its own."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)


def pwrite(path, off, data):
    """The independent writer: buffered, then fsync."""
    fd = os.open(path, os.O_WRONLY)
    try:
        assert os.pwrite(fd, data, off) == len(data)
        os.fsync(fd)
    finally:
        os.close(fd)


def want_path(kind, aligned, direct):
    """(path, reason) libfxio must report for an I/O of @kind; reason None:
    not checked (the kernel's or libfxio's own words)."""
    if kind == "unreg":
        return "posix", REG_NONE
    if kind == "emulated":
        return "staged", REG_EMU
    if not direct:
        return "posix", None
    return ("direct", "") if aligned else ("staged", REG_UNALIGNED)


class Arena:
    """A 4 KiB-aligned numpy or torch buffer, registered as @kind (unless
    'unreg'); slices of it are registered memory."""

    def __init__(self, kind, lib, nbytes=ARENA):
        self.kind, self.lib = kind, lib
        if lib == "numpy":
            raw = np.zeros(nbytes + ALIGN, dtype=np.uint8)
            a = (-raw.ctypes.data) % ALIGN
        else:
            raw = torch.zeros(nbytes + ALIGN, dtype=torch.uint8)
            a = (-raw.data_ptr()) % ALIGN
        self.raw = raw  # keeps the memory
        self.buf = raw[a:a + nbytes]
        if kind != "unreg":
            fxio.register(self.buf, kind)

    def view(self, off, n):
        return self.buf[off:off + n]

    def close(self):
        if self.kind != "unreg":
            fxio.deregister(self.buf)


def as_bytes(buf):
    if isinstance(buf, torch.Tensor):
        return buf.contiguous().view(torch.uint8).numpy().tobytes()
    return buf.tobytes()


def same(got, want, what):
    """Asserts two byte strings are equal, saying where they differ (not
    pytest's diff of megabytes, which takes minutes under TCG)."""
    x, y = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
    assert x.size == y.size, "%s: %d bytes, expected %d" % (what, x.size, y.size)
    d = np.flatnonzero(x != y)
    assert d.size == 0, "%s: %d of %d bytes differ, the first at +%d (%d, expected %d)" % (
        what, d.size, x.size, d[0], x[d[0]], y[d[0]])


def fill(view, data):
    """Copies the uint8 numpy array @data into @view (numpy or torch)."""
    if isinstance(view, torch.Tensor):
        view.view(torch.uint8).copy_(torch.from_numpy(data))
    else:
        view[:] = data


def zero(view):
    if isinstance(view, torch.Tensor):
        view.zero_()
    else:
        view[:] = 0


def check_path(f, kind, aligned, direct, what):
    path, reason = want_path(kind, aligned, direct)
    assert f.last_path == path, "%s: path %s, expected %s (%s)" % (what, f.last_path, path, f.last_reason)
    if reason is not None:
        assert f.last_reason == reason, "%s: reason %r" % (what, f.last_reason)


def is_aligned(off, n, boff):
    return off % 512 == 0 and n % 512 == 0 and boff % ALIGN == 0


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", ["unreg", "emulated", "host"])
def test_roundtrip_each_path(fxdev, kind, lib):
    path, _, direct = fxdev
    base = {"unreg": 0, "emulated": 16, "host": 32}[kind] * MIB + (0 if lib == "numpy" else 8 * MIB)
    arena = Arena(kind, lib)
    try:
        with fxio.open(path, "rw") as f:
            for i, (off, n, boff) in enumerate(RANGES):
                off += base
                al = is_aligned(off, n, boff)
                what = "%s %s %d+%d (buffer +%d)" % (lib, kind, off, n, boff)
                src, dst = arena.view(boff, n), arena.view(HALF + boff, n)
                data = pattern(n, 100 + i)
                fill(src, data)
                assert f.write_from(src, off) == n
                check_path(f, kind, al, direct, "write " + what)
                zero(dst)
                assert f.read_into(dst, off) == n
                check_path(f, kind, al, direct, "read " + what)
                same(as_bytes(dst), data.tobytes(), "%s: read_into after write_from" % what)
                same(pread(path, off, n), data.tobytes(), "%s: os.pread after write_from" % what)
                # the other way: an independent writer, libfxio reads
                data = pattern(n, 200 + i)
                pwrite(path, off, data.tobytes())
                zero(dst)
                assert f.read_into(dst, off) == n
                check_path(f, kind, al, direct, "read after pwrite " + what)
                same(as_bytes(dst), data.tobytes(), "%s: read_into after os.pwrite" % what)
    finally:
        arena.close()


def test_torch_dtypes_direct_and_staged(fxdev):
    """float16, bfloat16 (numpy has none) and int64 tensors of registered
    host memory, block aligned (direct) and not (staged); unregistered
    (posix)."""
    path, _, direct = fxdev
    base = 48 * MIB
    arena = Arena("host", "torch")
    try:
        with fxio.open(path, "rw") as f:
            for i, dt in enumerate([torch.float16, torch.bfloat16, torch.int64]):
                if dt == torch.int64:
                    src = torch.arange(-65536, 65536, dtype=dt)
                else:
                    src = torch.randn(131072, dtype=torch.float32).to(dt)
                n = src.numel() * src.element_size()
                for boff, doff in ((0, 0), (8, 1000)):  # aligned / not
                    off = base + i * 4 * MIB + doff
                    t = arena.view(boff, n).view(dt)
                    t.copy_(src)
                    al = is_aligned(off, n, boff)
                    assert al == (doff == 0)
                    assert f.write_from(t, off) == n
                    check_path(f, "host", al, direct, "write %s +%d" % (dt, doff))
                    back = arena.view(HALF + boff, n).view(dt)
                    back.zero_()
                    assert f.read_into(back, off) == n
                    check_path(f, "host", al, direct, "read %s +%d" % (dt, doff))
                    assert torch.equal(back, src)
                    plain = torch.zeros_like(src)  # never registered
                    assert f.read_into(plain, off) == n
                    check_path(f, "unreg", False, direct, "read %s plain" % dt)
                    assert torch.equal(plain, src)
    finally:
        arena.close()


Job = namedtuple("Job", "arena aligned off n src dst data")


def jobs_over(base, seed):
    """Every range of RANGES for every kind of buffer, numpy and torch, each
    in an arena and 2 MiB of the device of its own from @base (they are all
    in flight at once): the source view filled with a pattern, the
    destination view zeroed."""
    jobs = []
    for j, (kind, lib) in enumerate((k, lib) for k in ("unreg", "emulated", "host")
                                    for lib in ("numpy", "torch")):
        for i, (off, n, boff) in enumerate(RANGES):
            a = Arena(kind, lib)
            off += base + (j * len(RANGES) + i) * 2 * MIB
            data = pattern(n, seed + 10 * j + i)
            src, dst = a.view(boff, n), a.view(HALF + boff, n)
            fill(src, data)
            zero(dst)
            jobs.append(Job(a, is_aligned(off, n, boff), off, n, src, dst, data))
    return jobs


def check_done(what, job, direct, result, path, reason):
    """One I/O of @job ended with @result bytes on @path for @reason."""
    name = "%s %s/%s %d+%d" % (what, job.arena.kind, job.arena.lib, job.off, job.n)
    p, why = want_path(job.arena.kind, job.aligned, direct)
    assert result == job.n, "%s: %d bytes" % (name, result)
    assert path == p, "%s: path %s, expected %s (%s)" % (name, path, p, reason)
    assert why is None or reason == why, "%s: reason %r" % (name, reason)


def check_data(what, job, path):
    """@job's destination and the device (os.pread) hold its pattern."""
    name = "%s %s/%s %d+%d" % (what, job.arena.kind, job.arena.lib, job.off, job.n)
    same(as_bytes(job.dst), job.data.tobytes(), "%s: data read" % name)
    same(pread(path, job.off, job.n), job.data.tobytes(), "%s: os.pread" % name)


def test_async_futures(fxdev):
    """submit_write then submit_read, all in flight at once, on every path,
    numpy and torch: each future's bytes, path and reason, the data; this
    thread's last_path stays 'none'."""
    path, _, direct = fxdev
    jobs = jobs_over(64 * MIB, 300)
    try:
        with fxio.open(path, "rw") as f:
            futs = [f.submit_write(j.src, j.off) for j in jobs]
            for j, fu in zip(jobs, futs):
                check_done("async write", j, direct, fu.result(timeout=120), fu.path, fu.reason)
            futs = [f.submit_read(j.dst, j.off) for j in jobs]
            for j, fu in zip(jobs, futs):
                check_done("async read", j, direct, fu.result(timeout=120), fu.path, fu.reason)
                check_data("async", j, path)
            assert f.last_path == "none"  # async I/O leaves this thread's result alone
    finally:
        for j in jobs:
            j.arena.close()


def test_batches_mixing_paths(fxdev):
    """One write_batch and one read_batch over ranges of every kind of
    buffer, numpy and torch: per range the bytes, path and reason."""
    path, _, direct = fxdev
    jobs = jobs_over(128 * MIB, 400)
    try:
        with fxio.open(path, "rw") as f:
            res = f.write_batch([(j.src, j.off) for j in jobs])
            assert len(res) == len(jobs)
            for j, r in zip(jobs, res):
                check_done("batch write", j, direct, *r)
            res = f.read_batch([(j.dst, j.off) for j in jobs])
            assert len(res) == len(jobs)
            for j, r in zip(jobs, res):
                check_done("batch read", j, direct, *r)
                check_data("batch", j, path)
            assert f.last_path == "none"  # batches leave this thread's result alone
    finally:
        for j in jobs:
            j.arena.close()


def test_threads_each_see_their_own_last_path(fxdev):
    """Four threads on one File, started together, each on its own path and
    region, alternating writes and reads: after every I/O each thread's
    last_path and last_reason are its own, and its data reads back."""
    path, _, direct = fxdev
    base = 192 * MIB
    # kind, device offset within the region, length, buffer offset
    plan = {"posix": ("unreg", 0, 65536, 0), "staged-emulated": ("emulated", 0, 65536, 0),
            "host-aligned": ("host", 0, 65536, 0), "host-unaligned": ("host", 3, 65536 - 7, 5)}
    arenas = {name: Arena(k, "numpy", nbytes=4 * 65536) for name, (k, _, _, _) in plan.items()}
    rounds = 15
    seen, errors = {}, []
    go = threading.Barrier(len(plan))
    with fxio.open(path, "rw") as f:
        def worker(j, name):
            kind, doff, n, boff = plan[name]
            p, why = want_path(kind, is_aligned(doff, n, boff), direct)
            a = arenas[name]
            got = []
            try:
                go.wait(timeout=60)
                for r in range(rounds):
                    off = base + j * 4 * MIB + r * 131072 + doff
                    data = pattern(n, 1000 * j + r)
                    fill(a.view(boff, n), data)
                    assert f.write_from(a.view(boff, n), off) == n
                    got.append((f.last_path, f.last_reason))
                    zero(a.view(2 * 65536 + boff, n))
                    assert f.read_into(a.view(2 * 65536 + boff, n), off) == n
                    got.append((f.last_path, f.last_reason))
                    same(a.view(2 * 65536 + boff, n).tobytes(), data.tobytes(),
                         "%s round %d: data" % (name, r))
            except Exception as e:  # reported by the main thread
                errors.append("%s: %r" % (name, e))
            seen[name] = (p, why, got)

        ts = [threading.Thread(target=worker, args=(j, name)) for j, name in enumerate(plan)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert f.last_path == "none"  # the main thread did no I/O on f
        st = f.stats()
    for a in arenas.values():
        a.close()
    assert not errors, errors
    for name, (p, why, got) in seen.items():
        assert len(got) == 2 * rounds, "%s: %d I/Os" % (name, len(got))
        wrong = [g for g in got if g[0] != p or (why is not None and g[1] != why)]
        assert not wrong, "%s: expected %s %r, saw %s" % (name, p, why, sorted(set(wrong)))
    # the file's counters add up to what the threads did on each path
    want = {"direct": 0, "staged": 0, "posix": 0}
    for p, _, got in seen.values():
        want[p] += len(got)
    assert {k: st["ios"][k] for k in want} == want, st["ios"]


def test_properties_say_why(fxdev):
    """The kernel side libfxio found: usable with /dev/fxblk-peer (direct
    expected), else its reason names the node."""
    _, _, direct = fxdev
    p = fxio.properties()
    assert p["engines"]["host"] == {"present": True, "reason": ""}
    if direct:
        assert p["kernel_abi"] != 0, p["kernel_reason"]
        assert p["max_direct_io"] > 0
    else:
        assert p["kernel_abi"] == 0
        assert "/dev/fxblk-peer" in p["kernel_reason"]


def test_kvcache_store_of_torch_blocks(fxdev):
    """fxio.kvcache.KVCacheStore on the raw volume (blocks from byte 0):
    float16 blocks of 256 KiB, unregistered (posix) and in registered host
    memory (direct), batched put and get, LRU eviction, each block at its
    place on the device (os.pread)."""
    import hashlib
    from fxio.kvcache import KVCacheStore

    path, _, direct = fxdev
    B = 256 << 10

    def key(i):
        return hashlib.sha256(b"chunk-%d" % i).digest()

    gen = torch.Generator().manual_seed(58)
    blocks = [torch.randn(B // 2, generator=gen).to(torch.float16) for _ in range(24)]
    arena = Arena("host", "torch", nbytes=16 * B)
    try:
        reg = [arena.view(i * B, B).view(torch.float16) for i in range(16)]
        with KVCacheStore(path, B, capacity_blocks=16) as kv:
            # 0-7 from plain tensors, 8-15 from registered memory
            for i in range(8, 16):
                reg[i].copy_(blocks[i])
            kv.batched_put([(key(i), blocks[i] if i < 8 else reg[i]) for i in range(16)])
            outs = [torch.zeros_like(b) for b in blocks[:8]] + [r for r in reg[8:]]
            for r in reg[8:]:
                r.zero_()
            assert kv.batched_get([key(i) for i in range(16)], outs) == [True] * 16
            for i in range(16):
                assert torch.equal(outs[i], blocks[i]), "block %d" % i
                # an empty store fills the device from block 0, in order
                same(pread(path, i * B, B), as_bytes(blocks[i]), "kvcache block %d on the device" % i)
            ios = kv.io_stats()["ios"]
            want = {"direct": 16, "staged": 0, "posix": 16} if direct else \
                {"direct": 0, "staged": 0, "posix": 32}
            assert {k: ios[k] for k in want} == want, ios
            # 8 more: the 8 least recently used (0-7) are evicted, their
            # blocks reused in order
            kv.batched_put([(key(i), blocks[i]) for i in range(16, 24)])
            assert kv.stats["evictions"] == 8
            out = torch.zeros_like(blocks[0])
            assert not kv.get(key(0), out)
            assert kv.get(key(16), out) and torch.equal(out, blocks[16])
            same(pread(path, 0, B), as_bytes(blocks[16]), "kvcache block 0 after eviction")
    finally:
        arena.close()
