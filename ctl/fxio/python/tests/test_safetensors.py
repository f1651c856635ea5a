"""The safetensors loader and checkpoint writer: round trips of numpy arrays
and torch tensors of every supported dtype, checked against an independent
reading of the format (struct + json here, not the loader), and refusals of
damaged files."""
import json
import struct

import numpy as np
import pytest
import torch

from fxio import safetensors as st


def parse(path):
    """An independent reader: {name: (dtype, shape, bytes)}, metadata."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    end = 0
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], data[b:e])
        end = max(end, e)
    assert end == len(data)  # packed, no trailing bytes
    assert (8 + n) % 8 == 0
    return out, meta


def test_numpy_roundtrip_every_dtype(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {
        "embed.weight": rng.standard_normal((1000, 64)).astype(np.float32),
        "f64": rng.standard_normal(17),
        "f16": rng.standard_normal((3, 5, 7)).astype(np.float16),
        "i64": rng.integers(-2**62, 2**62, 33),
        "i32": rng.integers(-2**31, 2**31, (2, 2), dtype=np.int32),
        "i16": rng.integers(-2**15, 2**15, 9, dtype=np.int16),
        "i8": rng.integers(-128, 128, 4097, dtype=np.int8),
        "u8": rng.integers(0, 256, 3, dtype=np.uint8),
        "mask": rng.integers(0, 2, 11).astype(bool),
        "scalar": np.array(3.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    path = tmp_path / "model.safetensors"
    st.save(tensors, path, metadata={"format": "np", "step": 7})
    ref, meta = parse(path)
    assert meta == {"format": "np", "step": "7"}
    for name, a in tensors.items():
        dt, shape, raw = ref[name]
        assert shape == list(a.shape)
        assert raw == a.tobytes()
    back = st.load(path)
    assert back.keys() == tensors.keys()
    for name, a in tensors.items():
        assert back[name].dtype == a.dtype
        assert back[name].shape == a.shape
        assert np.array_equal(back[name], a)
    assert st.metadata(path) == {"format": "np", "step": "7"}
    only = st.load(path, names={"i8"})
    assert list(only) == ["i8"]


def test_torch_roundtrip_with_bfloat16(tmp_path):
    g = torch.Generator().manual_seed(5)
    sd = {
        "layers.0.attn.q": torch.randn(128, 96, generator=g),
        "layers.0.attn.k": torch.randn(128, 96, generator=g).to(torch.bfloat16),
        "layers.0.mlp": torch.randn(300, generator=g).to(torch.float16),
        "pos": torch.arange(513, dtype=torch.int64),
        "flags": torch.tensor([True, False, True]),
        "t_view": torch.randn(8, 8, generator=g).t(),  # not contiguous: saved as values
    }
    path = tmp_path / "ckpt.safetensors"
    st.save(sd, path)
    ref, _ = parse(path)
    assert ref["layers.0.attn.k"][0] == "BF16"
    assert ref["layers.0.attn.k"][2] == sd["layers.0.attn.k"].view(torch.int16).numpy().tobytes()
    back = st.load(path, framework="pt")
    for name, t in sd.items():
        assert back[name].dtype == t.dtype, name
        assert torch.equal(back[name], t.contiguous()), name


def test_alignment_of_packed_tensors(tmp_path):
    # largest element first: every tensor starts aligned to its element size
    tensors = {"a": np.ones(3, np.int8), "b": np.ones(5, np.float64), "c": np.ones(7, np.float16)}
    path = tmp_path / "a.safetensors"
    st.save(tensors, path)
    ref, _ = parse(path)
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    for name, a in tensors.items():
        assert (8 + n + header[name]["data_offsets"][0]) % a.itemsize == 0


def test_damaged_files_are_refused(tmp_path):
    path = tmp_path / "bad.safetensors"
    st.save({"w": np.arange(10, dtype=np.float32)}, path)
    raw = bytearray(open(path, "rb").read())
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header["w"]["data_offsets"] = [0, 44]  # 11 floats' worth in a 40-byte tensor
    h = json.dumps(header).encode()
    h += b" " * ((-(8 + len(h))) % 8)
    bad = struct.pack("<Q", len(h)) + h + raw[8 + n:]
    path.write_bytes(bad)
    with pytest.raises(ValueError, match="offsets"):
        st.load(path)
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(ValueError, match="not plausible"):
        st.load(path)
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="shorter"):
        st.load(path)
