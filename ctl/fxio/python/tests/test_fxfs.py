"""The safetensors loader on a file system: a model file saved with
fxio.safetensors.save and the same tensors saved with torch.save, each
read cold (page cache dropped) with fxio.safetensors.load (O_DIRECT into
one buffer: posix; and staged through libfxio's pool), with plain
open().read() + numpy views, and with torch.load; every tensor equal
across the four.

Where: FXIO_TEST_FSDIR (lab 58: xfs on a /dev/fxN, which FXIO_TEST_FSDEV
names: the directory must be on it), else pytest's tmp_path (the build
tree's file system, in ctest's run)."""
import os

import pytest
import torch

from fxio import safetensors as st


@pytest.fixture
def fsdir(tmp_path):
    d = os.environ.get("FXIO_TEST_FSDIR")
    if not d:
        return str(tmp_path)
    dev = os.environ.get("FXIO_TEST_FSDEV")
    if dev:
        assert os.stat(d).st_dev == os.stat(dev).st_rdev, \
            "%s is not on %s" % (d, dev)
    return d


def _bench_load():
    """examples/bench_load.py (next to tests/ here and in lab 58's copy):
    its cold() and plain_load(), the baseline the bench times."""
    import importlib.util
    ex = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "bench_load.py")
    spec = importlib.util.spec_from_file_location("bench_load", ex)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bl = _bench_load()
cold, plain_load = bl.cold, bl.plain_load


def model():
    """~6 MiB: a small transformer's shapes, four dtypes."""
    g = torch.Generator().manual_seed(58)
    sd = {"embed.weight": torch.randn(1000, 512, generator=g).to(torch.float16),
          "lm_head.bias": torch.randn(1000, generator=g),
          "pos": torch.arange(2048, dtype=torch.int64)}
    for i in range(4):
        sd["layers.%d.attn.qkv" % i] = torch.randn(384, 1024, generator=g).to(torch.bfloat16)
        sd["layers.%d.mlp.up" % i] = torch.randn(256, 1024, generator=g).to(torch.float16)
        sd["layers.%d.norm" % i] = torch.randn(512, generator=g)
    return sd


def test_model_file_on_the_file_system(fsdir):
    sd = model()
    stp = os.path.join(fsdir, "model.safetensors")
    ptp = os.path.join(fsdir, "model.pt")
    size = st.save(sd, stp, metadata={"format": "pt"})
    torch.save(sd, ptp)
    assert os.stat(stp).st_size == size > 6 << 20
    loads, stats = {}, {}
    for name, fn in [
            ("fxio", lambda s: st.load(stp, framework="pt", stats=s)),
            ("fxio staged", lambda s: st.load(stp, framework="pt", memory="emulated", stats=s)),
            ("open().read()", lambda s: plain_load(stp)),
            ("torch.load", lambda s: torch.load(ptp))]:
        cold(stp)
        cold(ptp)
        stats[name] = {}
        loads[name] = fn(stats[name])
    # fxio: the block-aligned bulk by O_DIRECT straight into the buffer;
    # staged: all of it through the pool
    bulk = size // 4096 * 4096
    assert stats["fxio"]["ios"]["staged"] == 0, stats["fxio"]
    assert stats["fxio"]["bytes"]["posix"] >= bulk, stats["fxio"]
    assert stats["fxio staged"]["bytes"]["staged"] >= bulk, stats["fxio staged"]
    for name, got in loads.items():
        assert got.keys() == sd.keys(), name
        for k, t in sd.items():
            assert got[k].dtype == t.dtype and got[k].shape == t.shape, (name, k)
            assert torch.equal(got[k], t), (name, k)
    assert st.metadata(stp) == {"format": "pt"}
    os.unlink(stp)
    os.unlink(ptp)
