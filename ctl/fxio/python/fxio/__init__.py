"""fxio: reads and writes between fxblk volumes (or files) and Python buffers.

libfxio (fxio.h) for Python. Buffers are numpy arrays, torch tensors (CPU,
ROCm, Ascend), anything with the buffer protocol (bytearray, memoryview,
mmap, array), DLPack arrays (kDLCPU, kDLROCM, pinned host) and, with the HIP
runtime in the process, __cuda_array_interface__ arrays; C-contiguous.
Reads fill them in place, writes take their bytes. Device memory that was
not registered (fxio.register) is staged through the pool for each I/O;
register what is used again. The GIL is released while an I/O runs, so
threads overlap.

    import fxio, numpy as np
    with fxio.open("/dev/fx0", "r") as f:
        a = np.empty(1 << 20, dtype=np.uint8)
        f.read_into(a, 0)          # 1 MiB from offset 0
        print(f.last_path, f.last_reason)

Every I/O takes libfxio's direct, staged or posix path and says which:
File.last_path / File.last_reason (this thread's last synchronous I/O on
the file), IoFuture.path / .reason (one async I/O), File.stats().
"""

import concurrent.futures
import errno
import io
import os
import threading
from collections import namedtuple

from . import _dlpack, _fxio

__all__ = ["open", "open_fd", "File", "IoFuture", "Completion", "register", "deregister",
           "buffer_span", "properties", "VERSION"]

VERSION = _fxio.VERSION

_MODES = {"r": _fxio.O_RDONLY, "w": _fxio.O_WRONLY, "rw": _fxio.O_RDWR,
          "r+": _fxio.O_RDWR}
_KINDS = {"host": _fxio.BUF_HOST, "hip": _fxio.BUF_HIP, "acl": _fxio.BUF_ACL,
          "emulated": _fxio.BUF_EMULATED, "auto": _fxio.BUF_AUTO}

# One completed I/O of a batch: bytes (or -errno), path, reason text.
Completion = namedtuple("Completion", "result path reason")


def properties():
    """What libfxio and the kernel under it offer (fxio_get_properties), a
    dict: version (major, minor); kernel_abi (0: /dev/fxblk-peer unusable)
    and kernel_reason; providers, the kernel's [{name, present, direct,
    peer_queues, reason}]; max_direct_io, the bytes one kernel RW moves
    (longer direct I/O is split; 0 without the kernel); engines {host, hip,
    acl: {present, reason}}, the staged path's copy engines; pool_slots and
    pool_slot_bytes of each file's bounce pool; queue_depth (0: per disk);
    async_workers per file. The first call may load the HIP and ACL
    runtimes."""
    return _fxio.properties()


def _runtime_loaded(lib):
    """Whether the runtime @lib is mapped in this process, by the rule
    libfxio follows before FXIO_BUF_AUTO consults it (runtime_in_process:
    a mapped file named @lib or @lib plus a version, libamdhip64.so.6 as
    ROCm installs it; nothing is loaded): when this says yes, libfxio's
    AUTO sees the same runtime and can tell device memory from host
    memory."""
    try:
        with io.open("/proc/self/maps") as maps:  # fxio.open is ours
            for line in maps:
                fields = line.rstrip("\n").split(None, 5)
                name = os.path.basename(fields[5]) if len(fields) == 6 else ""
                ver = name[len(lib):]
                if name.startswith(lib) and (
                        not ver or (len(ver) > 1 and ver[0] == "." and
                                    all(c.isdigit() or c == "." for c in ver))):
                    return True
    except OSError:
        return False
    return False


def _torch_span(buf):
    """(address, nbytes, kind) of a torch tensor: CPU memory, ROCm device
    memory (device 'cuda' in a ROCm build: torch.version.hip) or Ascend
    memory (torch_npu's device 'npu')."""
    import torch
    if not buf.is_contiguous():
        raise ValueError("fxio: the tensor is not contiguous")
    dev = buf.device.type
    if dev == "cpu":
        kind = "host"
    elif dev == "cuda" and getattr(torch.version, "hip", None):
        kind = "hip"
    elif dev == "npu":
        kind = "acl"
    elif dev == "cuda":
        raise ValueError("fxio: a CUDA tensor: libfxio copies device memory with ROCm (HIP) "
                         "and Ascend (AscendCL) only, not NVIDIA's CUDA")
    else:
        raise ValueError("fxio: a %s tensor: only cpu, ROCm ('cuda' in a ROCm build of "
                         "torch) and Ascend ('npu') tensors are supported" % dev)
    return buf.data_ptr(), buf.numel() * buf.element_size(), kind


def _cai_span(buf, writable):
    """(address, nbytes, kind, keep) of an object with
    __cuda_array_interface__ (version 2 or 3, the Numba specification
    CuPy and PyTorch follow; ROCm builds of both export HIP pointers with
    it). The interface does not say whose memory it is: with the HIP
    runtime in the process libfxio asks it (FXIO_BUF_AUTO); without one the
    object is refused rather than read into as host memory."""
    cai = buf.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise ValueError("fxio: a masked __cuda_array_interface__ array")
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise ValueError("fxio: the buffer is read-only")
    n = _dlpack.c_nbytes(tuple(cai["shape"]), cai.get("strides"), int(cai["typestr"][2:]),
                         "__cuda_array_interface__ array")
    if not (_runtime_loaded("libamdhip64.so") or _runtime_loaded("libascendcl.so")):
        raise ValueError("fxio: an object with __cuda_array_interface__, and no HIP or "
                         "AscendCL runtime in this process to say what memory it is; "
                         "register it with fxio.register(buf, kind=...) or pass a DLPack "
                         "array")
    return ptr or 0, n, "auto", buf


def _dlpack_span(buf):
    """(address, nbytes, kind, keep) of a DLPack producer (__dlpack__ and
    __dlpack_device__: CuPy, JAX, numpy, torch): its device type says whose
    memory it is."""
    kind_of = {_dlpack.CPU: "host", _dlpack.CUDA_HOST: "host", _dlpack.ROCM_HOST: "host",
               _dlpack.ROCM: "hip"}
    dev = int(buf.__dlpack_device__()[0])
    if dev not in kind_of:
        raise ValueError("fxio: a DLPack array on %s: libfxio moves host (kDLCPU, "
                         "kDLCUDAHost, kDLROCMHost) and ROCm (kDLROCM) memory; %s"
                         % (_dlpack.device_name(dev),
                            "NVIDIA's CUDA memory is not supported"
                            if dev in (_dlpack.CUDA, _dlpack.CUDA_MANAGED)
                            else "register other memory with fxio.register(buf, kind=...)"))
    addr, n, _, capsule = _dlpack.borrow(buf)
    return addr, n, kind_of[dev], (buf, capsule)


def _classify(buf, writable):
    """(address, nbytes, kind, keepalive) of @buf: a torch tensor, a
    buffer-protocol object (numpy, bytearray, mmap), a DLPack producer or
    an object with __cuda_array_interface__. kind: 'host', 'hip', 'acl' or
    'auto' (ask the runtime in the process)."""
    if type(buf).__module__.startswith("torch"):
        addr, n, kind = _torch_span(buf)
        return addr, n, kind, buf
    try:
        view = memoryview(buf)
    except TypeError:
        view = None
    if view is not None:
        if not view.c_contiguous:
            raise ValueError("fxio: the buffer is not C-contiguous")
        if writable and view.readonly:
            raise ValueError("fxio: the buffer is read-only")
        addr, nbytes, _ = _fxio.buffer_info(view)
        return addr, nbytes, "host", view  # the memoryview pins the export (no resize)
    if hasattr(buf, "__dlpack__") and hasattr(buf, "__dlpack_device__"):
        return _dlpack_span(buf)
    if hasattr(buf, "__cuda_array_interface__"):
        return _cai_span(buf, writable)
    raise TypeError("fxio: %s is no buffer: pass a numpy array, a torch tensor, a "
                    "buffer-protocol object, a DLPack array or one with "
                    "__cuda_array_interface__" % type(buf).__name__)


def buffer_span(buf, writable):
    """(address, nbytes, keepalive) of @buf's memory.

    torch tensors (CPU, ROCm, Ascend) must be contiguous; numpy arrays,
    buffer-protocol objects, DLPack arrays and __cuda_array_interface__
    arrays C-contiguous. @writable: the I/O stores into it (a read).
    keepalive must stay referenced while the I/O runs.
    """
    addr, nbytes, _, keep = _classify(buf, writable)
    return addr, nbytes, keep


_RUNTIMES = {"hip": "HIP", "acl": "AscendCL"}
_reg_lock = threading.Lock()
_registered = {}  # address -> (keepalive, nbytes), fxio.register's
_loans = {}  # (address, nbytes) -> count: temporary registrations in use


class _Loan:
    """Keeps a buffer alive for one I/O; for device memory no registration
    covers, registers it for that I/O (user space only: FXIO_BUF_NO_KERNEL,
    so it is staged through the pool with its runtime's engine, as cuFile
    takes an unregistered device buffer) and deregisters it when the last
    I/O using the same range lets go."""

    def __init__(self, addr, nbytes, kind, keep):
        self.keep, self.key = keep, None
        if kind == "host" or nbytes == 0:
            return
        with _reg_lock:
            for a, (_, n) in _registered.items():
                if a <= addr and addr + nbytes <= a + n:
                    return  # fxio.register()ed: that registration serves it
            key = (addr, nbytes)
            if key not in _loans:
                try:
                    _fxio.register(addr, nbytes, _KINDS[kind] | _fxio.BUF_NO_KERNEL)
                except OSError as e:
                    if e.errno == errno.EEXIST:
                        raise ValueError(
                            "fxio: device buffer [%#x, +%d) overlaps another one in use or "
                            "registered; fxio.register() the whole allocation once"
                            % (addr, nbytes)) from None
                    if e.errno == errno.ENODEV:
                        raise OSError(errno.ENODEV, "fxio: %s memory at %#x: no %s runtime in "
                                      "this process to stage it (fxio.properties()"
                                      "['engines'])" % (kind, addr, _RUNTIMES.get(kind, kind))
                                      ) from None
                    raise
                _loans[key] = 0
            _loans[key] += 1
            self.key = key

    def __del__(self):
        key, self.key = self.key, None
        if key is None:
            return
        try:
            with _reg_lock:
                _loans[key] -= 1
                if _loans[key] == 0:
                    del _loans[key]
                    _fxio.deregister(key[0])
        except Exception:  # noqa: BLE001 - at interpreter exit, or already gone
            pass


def _span(buf, size, writable):
    addr, nbytes, kind, keep = _classify(buf, writable)
    if size is None:
        size = nbytes
    elif size < 0 or size > nbytes:
        raise ValueError("fxio: size %d outside the buffer's %d bytes" % (size, nbytes))
    return addr, size, _Loan(addr, size, kind, keep)


def register(buf, kind=None, kernel=True):
    """Registers @buf with libfxio (fxio_buf_register): 'host' memory may
    then go direct; 'hip' and 'acl' device memory goes direct where the
    kernel's provider moves it, else staged with its runtime's engine;
    'emulated' is host memory treated as device memory (staged with the
    host engine); 'auto' asks the HIP or ACL runtime already loaded in the
    process (FXIO_BUF_AUTO), host memory when none claims it. Default: what
    @buf says it is (a ROCm tensor or kDLROCM array: 'hip', an Ascend
    tensor: 'acl', __cuda_array_interface__: 'auto', else 'host').
    kernel=False: FXIO_BUF_NO_KERNEL. Unregistered device buffers work too
    (staged, registered for each I/O); register one that is used again."""
    addr, nbytes, own, keep = _classify(buf, False)
    flags = _KINDS[kind or own] | (0 if kernel else _fxio.BUF_NO_KERNEL)
    with _reg_lock:
        _fxio.register(addr, nbytes, flags)
        _registered[addr] = (keep, nbytes)


def register_dmabuf(fd, offset, buf, kind="host"):
    """Registers bytes [offset, offset + len(buf)) of the dma-buf @fd
    (fxio_buf_register_dmabuf) under @buf's address: I/O into or from @buf
    then goes direct where fxblk's peer queues reach the disk (the NIC
    attaches the dma-buf), else it is staged through @buf with the @kind
    engine, so @buf must be that memory as the engine sees it (a host
    mapping of the dma-buf for 'host'). deregister(buf) undoes it."""
    addr, nbytes, keep = buffer_span(buf, False)
    with _reg_lock:
        _fxio.register_dmabuf(fd, offset, nbytes, addr, _KINDS[kind])
        _registered[addr] = (keep, nbytes)


def deregister(buf):
    addr, _, _ = buffer_span(buf, False)
    with _reg_lock:
        _fxio.deregister(addr)
        _registered.pop(addr, None)


class IoFuture(concurrent.futures.Future):
    """An async I/O: result() is the byte count (OSError on failure);
    path and reason say how it went once done(). Running from its submit
    on: cancel() returns False (the I/O cannot be taken back; a timeout
    such as asyncio.wait_for's leaves it running and its buffer in use)."""

    def __init__(self, keepalive):
        super().__init__()
        self.path = "none"
        self.reason = ""
        self._keep = keepalive
        # Without this cancel() succeeds while the I/O runs, and the
        # completion's set_result raises InvalidStateError in the poller.
        self.set_running_or_notify_cancel()


class File:
    """An open disk or file (fxio_open: O_DIRECT). Not inheritable."""

    def __init__(self, path, mode="r", *, _handle=None):
        if _handle is not None:  # open_fd's
            self.path = path
            self._h = _handle
        else:
            if mode not in _MODES:
                raise ValueError("fxio: mode must be one of %s" % ", ".join(_MODES))
            self.path = os.fspath(path)
            self._h = _fxio.Handle(self.path, _MODES[mode])
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._pending = {}  # id -> IoFuture
        self._poller = None
        self._closing = False
        self._inflight = 0  # synchronous I/Os and batches running: close waits

    def _enter(self, what):
        with self._cv:
            if self._closing or self._h.closed:
                raise ValueError("fxio: %s on a closed file" % what)
            self._inflight += 1

    def _leave(self):
        with self._cv:
            self._inflight -= 1
            if not self._inflight:
                self._cv.notify_all()

    # -- synchronous ------------------------------------------------------
    def read_into(self, buf, dev_off, size=None):
        """Reads size (default: all of @buf) bytes at @dev_off into @buf;
        returns the bytes read (fewer at the end of the disk)."""
        addr, size, keep = _span(buf, size, True)
        self._enter("read_into")
        try:
            n = self._h.read(addr, size, dev_off)
        finally:
            self._leave()
        del keep
        return n

    def write_from(self, buf, dev_off, size=None):
        """Writes size (default: all of @buf) bytes of @buf at @dev_off."""
        addr, size, keep = _span(buf, size, False)
        self._enter("write_from")
        try:
            n = self._h.write(addr, size, dev_off)
        finally:
            self._leave()
        del keep
        return n

    def sync(self):
        """Makes every write completed on this file durable (fdatasync of
        the disk; on /dev/fxN also of fxblk's peer queues, which carry the
        direct writes). OSError (EIO) if some may not be."""
        self._h.sync()

    @property
    def last_path(self):
        """'direct', 'staged', 'posix' or 'none': this thread's last
        read_into/write_from on this file."""
        return self._h.last_path()

    @property
    def last_reason(self):
        """Why that I/O did not go direct ('' when it did), in the words of
        the kernel or provider where they gave some."""
        return self._h.last_reason()

    def stats(self):
        return self._h.stats()

    # -- asynchronous -----------------------------------------------------
    def submit_read(self, buf, dev_off, size=None):
        addr, size, keep = _span(buf, size, True)
        return self._submit(False, addr, size, dev_off, keep)

    def submit_write(self, buf, dev_off, size=None):
        addr, size, keep = _span(buf, size, False)
        return self._submit(True, addr, size, dev_off, keep)

    def _submit(self, write, addr, size, dev_off, keep):
        fut = IoFuture(keep)
        with self._cv:
            if self._closing:
                raise ValueError("fxio: submit on a closing file")
            if self._poller is None:
                self._poller = threading.Thread(target=self._poll_loop, daemon=True,
                                                name="fxio-poll")
                self._poller.start()
            fid = self._h.submit(write, addr, size, dev_off, 0)
            self._pending[fid] = fut
            self._cv.notify_all()
        return fut

    def _poll_loop(self):
        while True:
            with self._cv:
                while not self._pending and not self._closing:
                    self._cv.wait()
                if not self._pending and self._closing:
                    return
            for fid, _, result, path, reason in self._h.poll(64, 100):
                with self._cv:
                    fut = self._pending.pop(fid, None)
                    self._cv.notify_all()
                if fut is None:
                    continue
                fut.path, fut.reason = path, reason
                fut._keep = None
                if result < 0:
                    fut.set_exception(OSError(-result, os.strerror(-result), self.path))
                else:
                    fut.set_result(result)

    def read_batch(self, items):
        """items: [(buffer, dev_off) or (buffer, dev_off, size)], all in
        flight at once (up to 1024; more are queued as ranges end) in one
        libfxio batch (fxio_batch_*), the GIL released until the last one
        ended; returns a Completion per item, in order (result: bytes, or
        -errno: one failed range fails alone, no exception; path 'none'
        for a range refused for its arguments, e.g. a negative offset)."""
        return self._batch(items, False)

    def write_batch(self, items):
        return self._batch(items, True)

    def _batch(self, items, write):
        ops, keep = [], []
        for it in items:
            buf, off = it[0], it[1]
            addr, size, k = _span(buf, it[2] if len(it) > 2 else None, not write)
            ops.append((write, addr, size, off))
            keep.append(k)
        self._enter("batch")
        try:
            res = self._h.batch(ops)
        finally:
            self._leave()
        del keep
        return [Completion(*r) for r in res]

    # -- lifetime ---------------------------------------------------------
    def close(self):
        """Waits for the I/O in flight (synchronous, batches, async), then
        closes; I/O started later raises ValueError."""
        with self._cv:
            if self._h.closed:
                return
            self._closing = True
            self._cv.notify_all()
            while self._inflight:
                self._cv.wait()
            poller = self._poller
        if poller is not None:
            poller.join()
        self._h.close()

    @property
    def closed(self):
        return self._h.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def open(path, mode="r"):  # noqa: A001 - as the builtin, for files on fxN
    """Opens a block device (/dev/fxN) or a regular file with O_DIRECT.
    mode: 'r', 'w' or 'rw'."""
    return File(path, mode)


def open_fd(fd, own=False):
    """A File on a descriptor the caller opened (fxio_open_fd), e.g. a file
    on a file system on fxN opened with os.O_DIRECT: an int or an object
    with fileno(). The fd is used as it is (its access mode; O_DIRECT only
    if the caller set it). close() leaves it open unless @own is true, so a
    Python file object stays usable; keep it open until then. A bad fd
    raises OSError with errno EBADF."""
    if not isinstance(fd, int):
        fd = fd.fileno()
    return File("<fd %d>" % fd, _handle=_fxio.Handle.from_fd(fd, bool(own)))
