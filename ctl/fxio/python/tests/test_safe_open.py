"""safe_open, load_file and load(names=): the reference library's lazy
reader (huggingface/safetensors bindings/python/src/lib.rs at commit
24b0b2857fef49be734b9ab72ce97c09bb25f5b9) over libfxio. Tensors are
checked against an independent reading of the file (struct + json), the
indexing of get_slice against numpy's and torch's own indexing of the whole
tensor, and the bytes read against libfxio's counters: a lazy read that read
the whole file would pass the value checks and fail those."""
import json
import struct

import numpy as np
import pytest
import torch

from fxio import safetensors as st

MIB = 1 << 20


def independent(path):
    """{name: numpy array} read with struct + json, not the loader."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        a = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=st.DTYPES[info["dtype"]])
        out[name] = a.reshape(info["shape"])
    return out


@pytest.fixture
def model(tmp_path):
    """A file of a large tensor (1 MiB, 1024 rows of 1 KiB), small ones
    before and after it in file order, and metadata."""
    rng = np.random.default_rng(11)
    tensors = {
        "big": rng.integers(0, 2**31, (1024, 256), dtype=np.int32),
        "a.bias": rng.standard_normal(7).astype(np.float32),
        "z.w": rng.standard_normal((3, 4)),
        "mask": rng.integers(0, 2, 5).astype(bool),
    }
    path = tmp_path / "m.safetensors"
    st.save(tensors, path, metadata={"format": "pt"})
    return path, tensors


def posix_bytes(f):
    return f._f.stats()["bytes"]["posix"]


def test_keys_metadata_and_tensors(model):
    path, tensors = model
    ref = independent(path)
    with st.safe_open(path, framework="numpy") as f:
        assert f.keys() == sorted(tensors)
        order = sorted(ref, key=lambda k: json.loads(open(path, "rb").read()[8:8 + struct.unpack(
            "<Q", open(path, "rb").read()[:8])[0]])[k]["data_offsets"])
        assert f.offset_keys() == order
        assert f.metadata() == {"format": "pt"}
        for k in tensors:
            assert np.array_equal(f.get_tensor(k), ref[k]), k
            assert np.array_equal(f.get_tensor(k), tensors[k]), k
        every = f.get_tensors()
        assert list(every) == order
        assert all(np.array_equal(every[k], ref[k]) for k in ref)


def test_metadata_none_when_absent(tmp_path):
    path = tmp_path / "nometa.safetensors"
    st.save({"x": np.arange(3, dtype=np.int8)}, path)
    with st.safe_open(path, "np") as f:
        assert f.metadata() is None  # the reference returns None, not {}


def test_get_tensor_reads_only_that_tensor(model):
    path, tensors = model
    with st.safe_open(path, framework="numpy") as f:
        before = posix_bytes(f)
        assert np.array_equal(f.get_tensor("a.bias"), tensors["a.bias"])
        small = posix_bytes(f) - before
        assert 0 < small <= 8192, small  # the block(s) holding 28 bytes, not 1 MiB
        before = posix_bytes(f)
        f.get_tensor("big")
        assert posix_bytes(f) - before >= MIB


@pytest.mark.parametrize("key", [
    5, -1, -1024, 1023, slice(None), slice(10, 20), slice(10, 20, 3), slice(None, None, -1),
    slice(900, 100, -7), slice(-5, None), slice(20, 10), slice(2000, 3000),
    (slice(3, 9), slice(1, 4)), (7, 2), (slice(1, 5, 2), Ellipsis),
    Ellipsis, (Ellipsis, 3),
])
def test_get_slice_matches_indexing_the_whole_tensor(model, key):
    path, tensors = model
    with st.safe_open(path, framework="numpy") as f:
        s = f.get_slice("big")
        assert s.get_shape() == [1024, 256]
        assert s.get_dtype() == "I32"
        want = tensors["big"][key]
        got = s[key]
        assert got.shape == want.shape and np.array_equal(got, want), key
    with st.safe_open(path, framework="pt") as f:
        want = torch.from_numpy(np.ascontiguousarray(tensors["big"]))
        if isinstance(key, slice) and key.step is not None and key.step < 0 or \
                isinstance(key, tuple) and any(isinstance(k, slice) and (k.step or 1) < 0 for k in key):
            return  # torch has no negative steps (numpy's answer is checked above)
        got = f.get_slice("big")[key]
        assert torch.equal(got, want[key]), key


def test_get_slice_reads_only_the_rows(model):
    path, tensors = model
    with st.safe_open(path, framework="numpy") as f:
        before = posix_bytes(f)
        rows = f.get_slice("big")[100:104]  # 4 KiB of the 1 MiB
        assert np.array_equal(rows, tensors["big"][100:104])
        assert posix_bytes(f) - before <= 3 * 4096, posix_bytes(f) - before
        assert rows.base is None or rows.flags.owndata  # its own copy


def test_index_out_of_range_and_missing_names(model):
    path, _ = model
    with st.safe_open(path, framework="numpy") as f:
        with pytest.raises(IndexError, match="out of bounds"):
            f.get_slice("big")[1024]
        with pytest.raises(st.SafetensorError, match="File does not contain tensor nope"):
            f.get_tensor("nope")
        with pytest.raises(st.SafetensorError, match="File does not contain tensor nope"):
            f.get_slice("nope")


def test_use_after_close_and_bad_arguments(model):
    path, _ = model
    f = st.safe_open(path, framework="np")
    f.close()
    f.close()  # twice is fine
    with pytest.raises(st.SafetensorError, match="used after close"):
        f.keys()
    with pytest.raises(st.SafetensorError, match="used after close"):
        f.get_tensor("big")
    with pytest.raises(ValueError, match="framework 'tf' not supported"):
        st.safe_open(path, framework="tf")
    with pytest.raises(ValueError, match="needs framework 'pt'"):
        st.safe_open(path, framework="numpy", device="cuda:0")


def test_damaged_file_refused_at_open(tmp_path, model):
    path, _ = model
    bad = tmp_path / "cut.safetensors"
    bad.write_bytes(open(path, "rb").read()[:-1])
    with pytest.raises(st.SafetensorError, match="incomplete"):
        st.safe_open(bad, framework="numpy")


def test_torch_framework_and_load_file(model):
    path, tensors = model
    with st.safe_open(path, framework="pt", device="cpu") as f:
        t = f.get_tensor("z.w")
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float64
        assert torch.equal(t, torch.from_numpy(tensors["z.w"]))
    out = st.load_file(path)
    assert set(out) == set(tensors)
    assert all(torch.equal(out[k], torch.from_numpy(np.ascontiguousarray(v)))
               for k, v in tensors.items())
    out = st.load_file(path, framework="numpy")
    assert all(np.array_equal(out[k], v) for k, v in tensors.items())


def test_load_names_reads_only_those(model):
    path, tensors = model
    s = {}
    out = st.load(path, names={"mask", "z.w"}, stats=s)
    assert set(out) == {"mask", "z.w"}
    assert all(np.array_equal(out[k], tensors[k]) for k in out)
    assert s["bytes"]["posix"] < MIB, s  # header and two small tensors, not 1 MiB
