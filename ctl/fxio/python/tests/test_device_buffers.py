"""Buffers that are not buffer-protocol objects: DLPack producers and
__cuda_array_interface__ arrays, and how fxio routes device memory.

The DLPack cases use real producers (numpy's and torch's __dlpack__, whose
capsules fxio parses), hidden behind an object that offers only the DLPack
methods, so the buffer protocol cannot be taken instead. There is no GPU
here: an array that claims kDLROCM is host memory in a process without the
HIP runtime, so its I/O must fail with ENODEV (libfxio registered it as HIP
memory and has no HIP engine to stage it) and leave no registration behind.
__cuda_array_interface__ objects follow the Numba specification (version 3:
shape, typestr, data (pointer, read-only), strides None or in bytes)."""
import errno
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import fxio
from conftest import contents, pattern


class DLPackOnly:
    """A real producer's DLPack methods, nothing else; @device overrides
    the device __dlpack_device__ reports."""

    def __init__(self, arr, device=None):
        self._arr, self._device = arr, device

    def __dlpack__(self, stream=None):
        return self._arr.__dlpack__()

    def __dlpack_device__(self):
        return self._device or self._arr.__dlpack_device__()


class CAIOnly:
    """__cuda_array_interface__ (v3) over a numpy array's memory."""

    def __init__(self, arr, strides=None):
        self._arr = arr
        self.__cuda_array_interface__ = {
            "shape": arr.shape, "typestr": arr.dtype.str, "version": 3,
            "data": (arr.ctypes.data, not arr.flags.writeable), "strides": strides}


def test_dlpack_numpy_and_torch_roundtrip(disk):
    path, data = disk
    with fxio.open(path, "rw") as f:
        a = np.zeros(1 << 16, dtype=np.float32)
        assert f.read_into(DLPackOnly(a), 8192) == a.nbytes
        assert a.tobytes() == data[8192:8192 + a.nbytes].tobytes()
        t = torch.zeros(3000, dtype=torch.int16)  # unaligned size: bounced
        assert f.read_into(DLPackOnly(t), 777) == 6000
        assert t.numpy().tobytes() == data[777:777 + 6000].tobytes()
        # a slice: its own bytes (numpy puts the offset in data, byte_offset 0)
        w = pattern(1 << 16, 3)
        assert f.write_from(DLPackOnly(w[4096:]), 1 << 20) == (1 << 16) - 4096
    got = contents(path)
    assert np.array_equal(got[1 << 20:(1 << 20) + (1 << 16) - 4096], w[4096:])


def test_dlpack_refuses_strided_and_cuda(disk):
    path, _ = disk
    with fxio.open(path, "r") as f:
        a = np.zeros((64, 64), dtype=np.uint8)
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read_into(DLPackOnly(a[:, ::2]), 0)
        with pytest.raises(ValueError, match="kDLCUDA: .*NVIDIA's CUDA memory is not supported"):
            f.read_into(DLPackOnly(a, device=(2, 0)), 0)
        with pytest.raises(ValueError, match="kDLVulkan"):
            f.read_into(DLPackOnly(a, device=(7, 0)), 0)
        with pytest.raises(TypeError, match="is no buffer"):
            f.read_into(object(), 0)


def test_rocm_array_is_hip_memory(disk):
    """kDLROCM: registered as HIP memory for the I/O, so without a HIP
    runtime libfxio refuses it (ENODEV, naming HIP), never a host read."""
    assert not fxio.properties()["engines"]["hip"]["present"], \
        "this test needs a machine without the HIP runtime"
    path, _ = disk
    a = np.zeros(1 << 16, dtype=np.uint8)
    with fxio.open(path, "r") as f:
        for call in (f.read_into, f.submit_read):
            with pytest.raises(OSError, match="hip memory at .*: no HIP runtime") as e:
                call(DLPackOnly(a, device=(10, 0)), 0)
            assert e.value.errno == errno.ENODEV, e.value
        res = f.read_batch([(DLPackOnly(a, device=(11, 0)), 0)])  # pinned host: host
        assert res[0].result == a.nbytes
    # nothing stays registered: the range registers again
    fxio.register(a, kind="host", kernel=False)
    fxio.deregister(a)


def test_unregistered_device_buffer_is_registered_per_io(disk, monkeypatch):
    """What an unregistered device buffer gets (the DLPack device type and
    torch's device decide the kind; here 'emulated', host memory libfxio
    stages as device memory, stands in for a GPU's): a registration for
    each I/O, held by a synchronous call, a batch and an async I/O until it
    ends, shared by I/Os on the same range, then gone."""
    path, data = disk
    a = np.zeros(1 << 16, dtype=np.uint8)
    real = fxio._classify
    monkeypatch.setattr(fxio, "_classify", lambda buf, w: (
        (lambda r: (r[0], r[1], "emulated", r[3]))(real(buf, w))))

    def registered():
        try:
            fxio.register(a, kind="host", kernel=False)
        except OSError as e:
            assert e.errno == errno.EEXIST
            return True
        fxio.deregister(a)
        return False

    with fxio.open(path, "r") as f:
        assert f.read_into(a, 0) == a.nbytes and f.last_path == "staged"
        assert np.array_equal(a, data[:1 << 16])
        assert not registered()
        futs = [f.submit_read(a, 4096 * i) for i in range(4)]
        assert registered() or all(x.done() for x in futs)
        for x in futs:
            assert x.result(timeout=30) == a.nbytes and x.path == "staged"
        del x, futs
        assert not registered()
        res = f.read_batch([(a, 0), (a, 8192)])
        assert [r.result for r in res] == [a.nbytes] * 2
        assert not registered()


def test_registered_device_buffer_is_not_registered_again(disk):
    """A buffer fxio.register()ed by the caller serves its I/O (no second
    registration, which libfxio would refuse as an overlap)."""
    path, data = disk
    a = np.zeros(1 << 16, dtype=np.uint8)
    fxio.register(a, kind="emulated")
    try:
        with fxio.open(path, "r") as f:
            assert f.read_into(DLPackOnly(a[4096:], device=(10, 0)), 0) == (1 << 16) - 4096
            assert f.last_path == "staged"
            assert np.array_equal(a[4096:], data[:(1 << 16) - 4096])
    finally:
        fxio.deregister(a)


def test_cuda_array_interface(disk):
    path, _ = disk
    a = np.zeros((16, 16), dtype=np.float64)
    with fxio.open(path, "r") as f:
        with pytest.raises(ValueError, match="no HIP or AscendCL runtime in this process"):
            f.read_into(CAIOnly(a), 0)
        with pytest.raises(ValueError, match="not C-contiguous"):
            f.read_into(CAIOnly(a, strides=(8, 128)), 0)
        a.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            f.read_into(CAIOnly(a), 0)


# A process that has the HIP runtime as ROCm installs it (libamdhip64.so.6,
# loaded by its SONAME; no unversioned libamdhip64.so): the
# __cuda_array_interface__ array's memory is asked of it and staged through
# it. The runtime is libfxio's test stand-in (ctl/fxio/tests/fake_amdhip64.c:
# ROCm 6's prototypes, host memory from hipMalloc reported as device memory);
# it runs in a child, so this process keeps no HIP runtime.
HIP_CHILD = r"""
import ctypes, sys
import numpy as np
import fxio
hip = ctypes.CDLL(sys.argv[1])
path, n, off = sys.argv[2], 1 << 16, 4096
assert fxio._runtime_loaded("libamdhip64.so"), "libamdhip64.so.6 not seen as the HIP runtime"
p = ctypes.c_void_p()
assert hip.hipMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0


class CAI:
    __cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "|u1",
                                "data": (p.value, False), "strides": None}


before = hip.fakehip_copies()
with fxio.open(path, "r") as f:
    assert f.read_into(CAI(), off) == n
    print("path", f.last_path)
print("copies", hip.fakehip_copies() - before)
got = np.frombuffer((ctypes.c_ubyte * n).from_address(p.value), dtype=np.uint8)
want = np.frombuffer(open(path, "rb").read()[off:off + n], dtype=np.uint8)
print("equal", bool(np.array_equal(got, want)))
"""


def test_cuda_array_interface_hip_loaded_by_soname(disk):
    fake = os.environ.get("FXIO_FAKE_HIP", "")
    if not os.path.exists(fake):
        pytest.fail("SKIP: FXIO_FAKE_HIP (the build's fakehip/libamdhip64.so.6) is not set: "
                    "run through ctest")
    assert os.path.basename(fake) == "libamdhip64.so.6"
    path, _ = disk
    out = subprocess.run([sys.executable, "-c", HIP_CHILD, fake, str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "path staged" in out.stdout
    assert "equal True" in out.stdout
    copies = int(out.stdout.split("copies ")[1].split()[0])
    assert copies >= 1
