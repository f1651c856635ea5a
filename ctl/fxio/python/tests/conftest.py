"""Shared fixtures: a disk image file in pytest's basetemp (the build tree,
whose file system does O_DIRECT), filled with a known pattern."""
import os

import numpy as np
import pytest

import fxio

DISK_BYTES = 8 << 20


def pattern(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.fixture
def disk(tmp_path):
    """(path, contents as a numpy array) of an 8 MiB file."""
    path = tmp_path / "disk.img"
    data = pattern(DISK_BYTES, 1)
    path.write_bytes(data.tobytes())
    try:
        fxio.open(path, "r").close()
    except OSError as e:
        if e.errno == 22:
            pytest.fail("SKIP: the file system of the build tree has no O_DIRECT")
        raise
    return path, data


def contents(path):
    return np.frombuffer(open(path, "rb").read(), dtype=np.uint8)
