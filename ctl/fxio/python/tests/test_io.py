"""The fxio package over a file: numpy arrays, torch CPU tensors and
buffer-protocol objects, sync and async, batch, per-thread last_path,
stats, errors. (The lab's /dev/fxN is not used here.)"""
import mmap
import threading
import time

import numpy as np
import pytest
import torch

import fxio
from conftest import DISK_BYTES, contents, pattern


def ticks_inside(call, calls=6):
    """Runs call() @calls times while a ticker thread stamps the clock every
    0.5 ms; returns how many stamps fell inside the calls. With the GIL held
    through a call no stamp can land inside it (the ticker needs the GIL to
    read the clock): about one per call, at its Python prologue; with the
    GIL released, dozens."""
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.0005)

    t = threading.Thread(target=tick)
    t.start()
    windows = []
    try:
        for _ in range(calls):
            start = time.monotonic()
            call()
            windows.append((start, time.monotonic()))
    finally:
        stop.set()
        t.join()
    return len([x for x in ticks if any(a < x < b for a, b in windows)])


def test_numpy_roundtrip_aligned_and_not(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        a = np.zeros(1 << 20, dtype=np.uint8)
        assert f.read_into(a, 4096) == 1 << 20
        assert np.array_equal(a, data[4096:4096 + (1 << 20)])
        # an unaligned offset and size, a float array: bytes are bytes
        b = np.zeros(3001, dtype=np.float32)
        assert f.read_into(b, 777) == b.nbytes
        assert b.tobytes() == data[777:777 + b.nbytes].tobytes()
        w = pattern(123457, 7)
        assert f.write_from(w, 1000001) == w.nbytes
        assert f.last_path in ("posix", "staged")
    on_disk = contents(path)
    assert np.array_equal(on_disk[1000001:1000001 + w.nbytes], w)
    assert np.array_equal(on_disk[:1000001], data[:1000001])  # neighbours untouched
    assert np.array_equal(on_disk[1000001 + w.nbytes:], data[1000001 + w.nbytes:])


def test_torch_cpu_tensors(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        t = torch.empty(256, 1024, dtype=torch.float16)
        assert f.read_into(t, 8192) == t.numel() * 2
        assert t.numpy().tobytes() == data[8192:8192 + t.numel() * 2].tobytes()
        src = torch.arange(100000, dtype=torch.int64)
        assert f.write_from(src, 2 << 20) == 800000
        back = torch.zeros_like(src)
        f.read_into(back, 2 << 20)
        assert torch.equal(back, src)
        bf = torch.randn(333, dtype=torch.float32).to(torch.bfloat16)  # numpy has no bfloat16
        f.write_from(bf, 12345)
        bf_back = torch.empty_like(bf)
        f.read_into(bf_back, 12345)
        assert torch.equal(bf, bf_back)
        with pytest.raises(ValueError, match="not contiguous"):
            f.read_into(torch.empty(64, 64).t(), 0)


def test_buffer_protocol_objects(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        ba = bytearray(10000)
        assert f.read_into(ba, 5) == 10000
        assert bytes(ba) == data[5:10005].tobytes()
        mv = memoryview(bytearray(4096))
        f.read_into(mv, 0)
        assert mv.tobytes() == data[:4096].tobytes()
        m = mmap.mmap(-1, 1 << 16)
        f.read_into(m, 1 << 16)
        assert m[:] == data[1 << 16:2 << 16].tobytes()
        assert f.write_from(b"hello fxio", 99) == 10
        with pytest.raises(ValueError, match="read-only"):
            f.read_into(b"immutable", 0)
        with pytest.raises(ValueError, match="C-contiguous"):
            f.read_into(np.zeros((8, 8))[:, 1], 0)
        with pytest.raises(ValueError, match="outside the buffer"):
            f.read_into(bytearray(10), 0, size=11)
    assert contents(path)[99:109].tobytes() == b"hello fxio"


def test_reads_past_the_end_are_short_and_errors_are_oserror(disk, tmp_path):
    path, data = disk
    with fxio.open(path, "r") as f:
        a = np.zeros(8192, dtype=np.uint8)
        assert f.read_into(a, DISK_BYTES - 4096) == 4096
        assert np.array_equal(a[:4096], data[-4096:])
        with pytest.raises(OSError) as e:
            f.write_from(a, 0)  # opened read-only
        assert e.value.errno == 9  # EBADF
    with pytest.raises(FileNotFoundError):
        fxio.open(tmp_path / "nope", "r")
    f = fxio.open(path)
    f.close()
    with pytest.raises(ValueError, match="closed"):
        f.read_into(bytearray(4096), 0)


def test_last_path_and_reason_per_thread(disk):
    path, _ = disk
    with fxio.open(path, "r") as f:
        assert f.last_path == "none"
        emu = np.zeros(1 << 16, dtype=np.uint8)
        fxio.register(emu, "emulated")
        try:
            seen = {}
            go = threading.Barrier(2)

            def staged_reader():
                go.wait()
                for _ in range(20):
                    f.read_into(emu, 0)
                seen["t"] = (f.last_path, f.last_reason)

            t = threading.Thread(target=staged_reader)
            t.start()
            plain = np.zeros(1 << 16, dtype=np.uint8)
            go.wait()
            for _ in range(20):
                f.read_into(plain, 0)  # not registered: posix
                assert f.last_path == "posix"
            t.join()
            assert f.last_path == "posix"
            assert f.last_reason == "buffer not registered (compat mode)"
            assert seen["t"] == ("staged", "emulated device memory (host engine, never direct)")
        finally:
            fxio.deregister(emu)


def test_async_futures_and_gil_released(disk):
    path, data = disk
    with fxio.open(path, "r") as f:
        bufs = [np.zeros(65536 + i, dtype=np.uint8) for i in range(32)]
        futs = [f.submit_read(b, i * 100003) for i, b in enumerate(bufs)]
        for i, (b, fu) in enumerate(zip(bufs, futs)):
            assert fu.result(timeout=30) == b.nbytes
            assert fu.path in ("posix", "staged")
            assert fu.reason == "buffer not registered (compat mode)"
            assert np.array_equal(b, data[i * 100003:i * 100003 + b.nbytes])
        assert f.last_path == "none"  # async I/O leaves this thread's result alone
        # A ticker thread runs while a read is in flight: the GIL is free.
        big = np.zeros(DISK_BYTES, dtype=np.uint8)
        assert ticks_inside(lambda: f.read_into(big, 0)) >= 3 * 6
        assert np.array_equal(big, data)


def test_async_errors_and_batch(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        bufs = [np.zeros(50000, dtype=np.uint8) for _ in range(8)]
        res = f.read_batch([(b, 70000 * i) for i, b in enumerate(bufs)])
        assert [r.result for r in res] == [50000] * 8
        for i, b in enumerate(bufs):
            assert np.array_equal(b, data[70000 * i:70000 * i + 50000])
        w = [pattern(4096, s) for s in range(4)]
        res = f.write_batch([(b, (1 << 20) * (i + 1), 4096) for i, b in enumerate(w)])
        assert all(r.result == 4096 for r in res)
        # one range of a batch fails alone: per-range status, no exception
        ro = fxio.open(path, "r")
        res = ro.write_batch([(w[0], 0)])
        assert res[0].result == -9  # EBADF
        fut = ro.submit_write(w[0], 0)
        with pytest.raises(OSError):
            fut.result(timeout=30)
        ro.close()
    disk_now = contents(path)
    for i, b in enumerate(w):
        assert np.array_equal(disk_now[(1 << 20) * (i + 1):(1 << 20) * (i + 1) + 4096], b)


def test_stats_and_depth(disk):
    path, _ = disk
    with fxio.open(path, "r") as f:
        a = np.zeros(3 << 20, dtype=np.uint8)
        f.read_into(a, 1)  # unaligned: through the pool
        s = f.stats()
        assert s["ios"]["posix"] == 1
        assert s["bytes"]["posix"] == 3 << 20
        assert s["fallbacks"] == {"buffer not registered (compat mode)": 1}
        assert s["queue_depth"] >= 4
        assert s["disk_queue"] == "io_uring"
        assert s["staged_chunks"] >= 3
        assert s["pool_slots"] >= s["queue_depth"] + 2


def test_sync(disk):
    path, _ = disk
    with fxio.open(path, "rw") as f:
        a = np.full(8192, 7, dtype=np.uint8)
        f.write_from(a, 4096)
        assert f.sync() is None  # fdatasync of the file: no error
    with pytest.raises(ValueError):
        f.sync()  # closed


def test_register_dmabuf_stages_through_its_buffer_without_peer_queues(disk):
    # no /dev/fxblk-peer here: the "dma-buf" is not opened by any kernel,
    # and the I/O is staged through the buffer it was registered under
    path, data = disk
    a = np.zeros(16384, dtype=np.uint8)
    fxio.register_dmabuf(0, 4096, a)
    with fxio.open(path, "r") as f:
        assert f.read_into(a, 8192) == 16384
        assert f.last_path == "staged"
        assert (a == data[8192:8192 + 16384]).all()
    with pytest.raises(OSError):
        fxio.register_dmabuf(-1, 0, np.zeros(4096, dtype=np.uint8))
    fxio.deregister(a)


def test_batch_over_libfxio_batches(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        # 40 ranges, one with a negative offset: it fails alone, refused for
        # its arguments (path none), the others complete
        bufs = [np.zeros(30000 + i, dtype=np.uint8) for i in range(40)]
        items = [(b, 100003 * i + 7) for i, b in enumerate(bufs)]
        items[17] = (bufs[17], -4096)
        res = f.read_batch(items)
        assert len(res) == 40
        assert res[17] == (-22, "none", "")  # EINVAL
        for i, (b, r) in enumerate(zip(bufs, res)):
            if i == 17:
                assert not b.any()
                continue
            assert r.result == b.nbytes
            assert r.path == "posix"
            assert r.reason == "buffer not registered (compat mode)"
            assert np.array_equal(b, data[100003 * i + 7:100003 * i + 7 + b.nbytes])
        assert f.last_path == "none"  # batches leave this thread's result alone
        # registered emulated device memory: staged, with its reason; and
        # more ranges than one batch holds at once (1024)
        emu = np.zeros(1500 * 512, dtype=np.uint8)
        fxio.register(emu, "emulated")
        try:
            res = f.read_batch([(emu[512 * i:512 * (i + 1)], 512 * i) for i in range(1500)])
        finally:
            fxio.deregister(emu)
        assert {r.path for r in res} == {"staged"}
        assert {r.reason for r in res} == {"emulated device memory (host engine, never direct)"}
        assert np.array_equal(emu, data[:emu.nbytes])
        # a batch of writes, read back in a batch
        w = [pattern(8192, s) for s in range(6)]
        assert [r.result for r in f.write_batch([(b, (7 << 20) - 8192 * i) for i, b in enumerate(w)])] \
            == [8192] * 6
        back = [np.zeros(8192, dtype=np.uint8) for _ in w]
        f.read_batch([(b, (7 << 20) - 8192 * i) for i, b in enumerate(back)])
        for a, b in zip(w, back):
            assert np.array_equal(a, b)
        assert f.read_batch([]) == []


def test_batch_releases_the_gil(disk):
    path, data = disk
    with fxio.open(path, "r") as f:
        bufs = [np.zeros(1 << 20, dtype=np.uint8) for _ in range(8)]
        items = [(b, i << 20) for i, b in enumerate(bufs)]
        assert ticks_inside(lambda: f.read_batch(items)) >= 3 * 6
        assert np.array_equal(np.concatenate(bufs), data)


def test_properties(disk):
    p = fxio.properties()
    assert p["version"] == fxio.VERSION == (0, 3)
    assert p["engines"]["host"] == {"present": True, "reason": ""}
    assert set(p["engines"]) == {"host", "hip", "acl"}
    assert p["async_workers"] >= 1
    if p["kernel_abi"] == 0:  # the unit tests' host: no usable /dev/fxblk-peer
        assert "/dev/fxblk-peer" in p["kernel_reason"]
        assert p["providers"] == []
        assert p["max_direct_io"] == 0
    # each file's pool: the configured slots, or depth + 2 when that is more
    path, _ = disk
    with fxio.open(path, "r") as f:
        f.read_into(np.zeros(5000, dtype=np.uint8), 1)  # unaligned: through the pool
        s = f.stats()
    assert s["pool_slot_bytes"] == p["pool_slot_bytes"]
    assert s["pool_slots"] == max(p["pool_slots"], s["queue_depth"] + 2)


def test_register_auto_without_gpu_runtime_is_host(disk):
    """kind='auto' (FXIO_BUF_AUTO): no HIP or ACL runtime in this process,
    so the buffer is host memory: direct or posix, never staged."""
    path, data = disk
    a = np.zeros(8192, dtype=np.uint8)
    fxio.register(a, "auto")
    try:
        with fxio.open(path, "r") as f:
            assert f.read_into(a, 4096) == 8192
            assert f.last_path in ("direct", "posix")
        assert np.array_equal(a, data[4096:4096 + 8192])
    finally:
        fxio.deregister(a)
