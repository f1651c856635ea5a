"""fxio.open_fd (fxio_open_fd): a File on a descriptor the caller opened,
left open by close() unless owned; a bad fd is OSError EBADF."""
import errno
import mmap
import os

import numpy as np
import pytest

import fxio
from conftest import contents, pattern


def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError as e:
        assert e.errno == errno.EBADF
        return False


def read_fd(fd, n):
    """The first @n bytes through @fd itself, into page-aligned memory (the
    fd may have O_DIRECT)."""
    m = mmap.mmap(-1, (n + 4095) // 4096 * 4096)
    assert os.preadv(fd, [m], 0) == len(m)
    return m[:n]


def roundtrip(f, fd):
    """Unaligned write and read back (the pool), an aligned read (plain
    pread); the caller's fd sees the bytes."""
    w = pattern(50001, 3)
    assert f.write_from(w, 777) == w.nbytes
    assert f.last_path == "posix"
    r = np.zeros(w.nbytes, dtype=np.uint8)
    assert f.read_into(r, 777) == w.nbytes
    assert np.array_equal(r, w)
    a = np.zeros(8192, dtype=np.uint8)
    assert f.read_into(a, 4096) == 8192
    assert np.array_equal(a, w[4096 - 777:4096 - 777 + 8192])
    assert read_fd(fd, 777 + w.nbytes)[777:] == w.tobytes()


def test_file_with_o_direct_not_owned_stays_open(disk):
    path, data = disk
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        with fxio.open_fd(fd) as f:
            assert f.path == "<fd %d>" % fd
            roundtrip(f, fd)
            f.sync()
        assert is_open(fd)
        assert read_fd(fd, 777) == data[:777].tobytes()  # still usable
    finally:
        os.close(fd)
    assert np.array_equal(contents(path)[:777], data[:777])  # neighbours untouched


def test_owned_fd_is_closed_by_close(disk):
    path, _ = disk
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    f = fxio.open_fd(fd, own=True)
    roundtrip(f, fd)
    f.close()
    assert not is_open(fd)


def test_python_file_object_and_memfd(tmp_path):
    """A file object (fileno()) and a nameless memfd without O_DIRECT."""
    p = tmp_path / "plain.img"
    p.write_bytes(bytes(1 << 20))
    with open(p, "r+b") as pf:
        with fxio.open_fd(pf) as f:
            roundtrip(f, pf.fileno())
        assert not pf.closed and is_open(pf.fileno())
    m = os.memfd_create("fxio-test")
    try:
        os.ftruncate(m, 1 << 20)
        with fxio.open_fd(m) as f:
            roundtrip(f, m)
        assert is_open(m)
    finally:
        os.close(m)


def test_read_only_fd_refuses_writes(disk):
    path, _ = disk
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        with fxio.open_fd(fd) as f:
            with pytest.raises(OSError) as e:
                f.write_from(np.zeros(4096, dtype=np.uint8), 0)
            assert e.value.errno == errno.EBADF
    finally:
        os.close(fd)


def test_bad_fd_is_ebadf(tmp_path):
    with pytest.raises(OSError) as e:
        fxio.open_fd(-1)
    assert e.value.errno == errno.EBADF
    fd = os.open(tmp_path, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(OSError) as e:
        fxio.open_fd(fd)
    assert e.value.errno == errno.EBADF
    n = os.open("/dev/null", os.O_RDWR)
    try:
        with pytest.raises(OSError) as e:
            fxio.open_fd(n, own=True)
        assert e.value.errno == errno.ENOTBLK
        assert is_open(n)  # a failed open never closes it
    finally:
        os.close(n)
