"""The safetensors loader and checkpoint writer: round trips of numpy arrays
and torch tensors of every supported dtype, checked against an independent
reading of the format (struct + json here, not the loader); the writer's
bytes against files written out by hand and against the bytes that
huggingface/safetensors' own tests expect of its writer; the reader on
that library's valid and invalid test files (safetensors/src/tensor.rs,
mod tests, at commit 24b0b2857fef49be734b9ab72ce97c09bb25f5b9), and
refusals of damaged files, each with its reason."""
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
    with pytest.raises(ValueError, match="too large"):
        st.load(path)
    path.write_bytes(b"abc")
    with pytest.raises(ValueError, match="shorter"):
        st.load(path)


# -- bytes as the format demands ----------------------------------------------

def test_writer_bytes_match_the_reference_writer(tmp_path):
    """save() writes what safetensors' serialize() writes: tensor.rs
    test_serialization (a 64-byte header: no padding),
    test_serialization_forced_alignement (7 spaces of padding) and
    test_empty (no tensors; with metadata)."""
    data = np.arange(6, dtype=np.float32)
    cases = [
        ({"attn.0": data.reshape(1, 2, 3)}, None, bytes([
            64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
            116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
            58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
            101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
            0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64])),
        ({"attn0": data.reshape(1, 1, 2, 3)}, None, bytes([
            72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
            121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
            91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
            115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
            32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
            160, 64])),
        ({}, None, bytes([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32])),
        ({}, {"framework": "pt"}, bytes([
            40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
            95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
            116, 34, 125, 125, 32, 32, 32, 32, 32])),
    ]
    for i, (tensors, meta, want) in enumerate(cases):
        path = tmp_path / ("ref%d.safetensors" % i)
        assert st.save(tensors, path, metadata=meta) == len(want)
        assert path.read_bytes() == want, "case %d" % i
        back = st.load(path)
        assert back.keys() == tensors.keys()
        for k, a in tensors.items():
            assert np.array_equal(back[k], a)


def test_writer_bytes_hand_built(tmp_path):
    """Five dtypes and metadata, the file spelled out by hand: metadata
    first, then I64, F64, BF16, F16, U8 (the dtype enum descending, whatever
    the insertion order or the names), offsets contiguous from 0, the
    header padded with spaces to a multiple of 8, the bytes little-endian."""
    tensors = {
        "m": np.array([1, 2, 3], dtype=np.uint8),
        "z": np.array([1.0], dtype=np.float16),
        "a": np.array([-2.0], dtype=np.float64),
        "h": torch.tensor([1.0, -1.0], dtype=torch.bfloat16),
        "b": np.array([7, -1], dtype=np.int64),
    }
    header = ('{"__metadata__":{"format":"pt"},'
              '"b":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},'
              '"a":{"dtype":"F64","shape":[1],"data_offsets":[16,24]},'
              '"h":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},'
              '"z":{"dtype":"F16","shape":[1],"data_offsets":[28,30]},'
              '"m":{"dtype":"U8","shape":[3],"data_offsets":[30,33]}}')
    assert len(header) == 306
    header += "      "  # 6 spaces: 312 = 39 x 8
    body = (b"\x07\0\0\0\0\0\0\0" + b"\xff" * 8             # I64 7, -1
            + b"\0\0\0\0\0\0\0\xc0"                          # F64 -2.0
            + b"\x80\x3f\x80\xbf"                            # BF16 1.0, -1.0
            + b"\0\x3c"                                      # F16 1.0
            + b"\x01\x02\x03")                               # U8
    want = b"\x38\x01\0\0\0\0\0\0" + header.encode() + body  # N = 312
    path = tmp_path / "hand.safetensors"
    st.save(tensors, path, metadata={"format": "pt"})
    assert path.read_bytes() == want
    back = st.load(path, framework="pt")
    assert back["h"].dtype == torch.bfloat16 and torch.equal(back["h"], tensors["h"])
    assert back["b"].tolist() == [7, -1] and back["m"].tolist() == [1, 2, 3]
    # a name that is not ASCII: its UTF-8 bytes in the header, as serde_json
    # writes them (no \u escape)
    st.save({"\u00e9": np.array([9], np.uint8)}, path)
    h = '{"\u00e9":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'.encode("utf-8")
    assert len(h) == 54
    h += b"  "
    assert path.read_bytes() == struct.pack("<Q", 56) + h + b"\x09"
    assert st.load(path)["\u00e9"].tolist() == [9]


def test_reference_files_load(tmp_path):
    """Files tensor.rs's tests deserialize: an I32 [2,2] tensor, a scalar,
    a zero-sized tensor, no padding and whitespace padding either side."""
    path = tmp_path / "r.safetensors"
    ok = [
        (b'<\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}'
         + b"\0" * 16, {"test": np.zeros((2, 2), np.int32)}),
        (b'8\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}'
         + b"\0" * 4, {"test": np.array(0, np.int32)}),
        (b'<\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}',
         {"test": np.zeros((2, 0), np.int32)}),
        (b"\x06\0\0\0\0\0\0\0{}\x0d\x20\x09\x0a", {}),
        (b"\x06\0\0\0\0\0\0\0\x09\x0a{}\x0d\x20", {}),
    ]
    for raw, want in ok:
        path.write_bytes(raw)
        back = st.load(path)
        assert back.keys() == want.keys(), raw
        for k, a in want.items():
            assert back[k].dtype == a.dtype and back[k].shape == a.shape
            assert np.array_equal(back[k], a)


T16 = b'<\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}'


def _hdr(obj_text, data=b""):
    raw = obj_text.encode()
    return struct.pack("<Q", len(raw)) + raw + data


BAD = [
    # tensor.rs's invalid files, then more
    ("extra bytes (polyglot)", T16 + b"\0" * 16 + b"extra_bogus_data_for_polyglot_file",
     "cover 16 bytes, the file holds 50"),
    ("2 bytes missing", T16 + b"\0" * 14, "cover 16 bytes, the file holds 14"),
    ("header too large", b"<\0\0\0\0\xff\xff\xff" + T16[8:] + b"\0" * 16, "header too large"),
    ("empty file", b"", "header too small"),
    ("length without header", b"<\0\0\0\0\0\0\0", "runs past the end"),
    ("not UTF-8", b"\x01\0\0\0\0\0\0\0\xff", "not UTF-8"),
    ("not JSON", b"\x01\0\0\0\0\0\0\0{", "not JSON"),
    ("size off", _hdr('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}}', b"\0" * 4),
     r"offsets \[0, 4\] do not hold I32 \[2, 2\] \(16 bytes\)"),
    ("json attack", _hdr("{" + ",".join('"w%d":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}' % i
                                         for i in range(10)) + "}", b"\0" * 16), "overlap"),
    ("hole", _hdr('{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                  '"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}', b"\0" * 12),
     "leave a hole after the previous tensor's end 4"),
    ("not from 0", _hdr('{"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}', b"\0" * 8),
     "hole"),
    ("duplicate", _hdr('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                       '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"),
     "duplicate key 'a'"),
    ("array header", _hdr("[]"), "not a JSON object"),
    ("unknown dtype", _hdr('{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}', b"\0"),
     "dtype F4 not supported"),
    ("missing key", _hdr('{"a":{"dtype":"U8","data_offsets":[0,1]}}', b"\0"),
     "wants exactly dtype, shape and data_offsets"),
    ("negative size", _hdr('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}', b"\0"),
     "not a list of sizes"),
    ("offsets backwards", _hdr('{"a":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}', b"\0"),
     "do not hold"),
    ("metadata not strings", _hdr('{"__metadata__":{"step":7}}'), "strings to strings"),
]


@pytest.mark.parametrize("what,raw,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_files_are_refused_with_the_reason(tmp_path, what, raw, msg):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    with pytest.raises(st.SafetensorsError, match=msg):
        st.load(path)


def test_more_dtypes(tmp_path):
    """C64 and the unsigned types round trip in numpy; F8 loads as its bytes
    in numpy (and as torch's float8 where torch has it); a torch without
    uint16 says so instead of failing inside torch."""
    tensors = {"c": np.array([1 + 2j, -3j], np.complex64), "u16": np.array([65535], np.uint16),
               "u32": np.array([1, 2], np.uint32), "u64": np.array([2**63], np.uint64)}
    path = tmp_path / "d.safetensors"
    st.save(tensors, path)
    back = st.load(path)
    for k, a in tensors.items():
        assert back[k].dtype == a.dtype and np.array_equal(back[k], a)
    if not hasattr(torch, "uint16"):
        with pytest.raises(ValueError, match="tensor u16: U16 and torch .* has no such dtype"):
            st.load(path, framework="pt", names={"u16"})
    path.write_bytes(_hdr('{"f8":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}      ',
                          b"\x38\xb8"))
    back = st.load(path)
    assert back["f8"].dtype == np.uint8 and back["f8"].tolist() == [0x38, 0xb8]
    if hasattr(torch, "float8_e4m3fn"):
        assert st.load(path, framework="pt")["f8"].float().tolist() == [1.0, -1.0]
    else:
        with pytest.raises(ValueError, match="F8_E4M3 and torch"):
            st.load(path, framework="pt")


def test_load_paths_and_stats(tmp_path):
    """The bulk read goes by O_DIRECT straight into the buffer (posix), in
    pieces of request_bytes, or through the pool when the buffer is
    registered as device memory (staged); the tensors are the same."""
    a = np.arange(300000, dtype=np.float32)  # ~1.2 MiB: several blocks and a tail
    path = tmp_path / "p.safetensors"
    st.save({"a": a}, path)
    s1, s2 = {}, {}
    assert np.array_equal(st.load(path, stats=s1)["a"], a)
    assert np.array_equal(st.load(path, memory="emulated", stats=s2)["a"], a)
    size = path.stat().st_size
    assert s1["ios"]["posix"] == 2 and s1["ios"]["staged"] == 0, s1  # header + one 4 MiB piece
    assert s1["bytes"]["posix"] >= size
    # pieces of 256 KiB: one I/O each (one batch), the tensors the same
    s3 = {}
    assert np.array_equal(st.load(path, stats=s3, request_bytes=256 << 10)["a"], a)
    assert s3["ios"]["posix"] == 1 + -(-size // (256 << 10)), s3
    with pytest.raises(ValueError, match="multiple of 4096"):
        st.load(path, request_bytes=1000)
    assert s2["ios"]["staged"] >= 1 and s2["bytes"]["staged"] >= path.stat().st_size - 4096, s2


def test_save_in_pieces(tmp_path):
    """save() copies the file's bytes into window x request_bytes buffers
    written as batches: with 8 KiB pieces and windows of 2 and 3 over a
    file of ~70 KiB (tensors and the header crossing pieces, a partial last
    piece), the bytes are exactly the header and the tensors in order."""
    rng = np.random.default_rng(9)
    tensors = {"t%02d" % i: rng.standard_normal(rng.integers(1, 3000)).astype(
        [np.float32, np.float16, np.int64][i % 3]) for i in range(20)}
    tensors["long.name." + "x" * 9000] = np.arange(3, dtype=np.uint8)  # header > 8 KiB
    head, placed = st.header_bytes(tensors)
    want = head + b"".join(a.tobytes() for _, a, _ in placed)
    for window in (2, 3):
        path = tmp_path / ("w%d.safetensors" % window)
        assert st.save(tensors, path, request_bytes=8192, window=window) == len(want)
        assert path.read_bytes() == want
    back = st.load(path, request_bytes=8192)
    for k, a in tensors.items():
        assert np.array_equal(back[k], a)
    with pytest.raises(ValueError, match="window"):
        st.save(tensors, path, window=0)


def test_readme_model_load_example(tmp_path):
    """README's three lines, as written there, on a checkpoint save() wrote
    of a torch module's state_dict."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.LayerNorm(8))
    path = str(tmp_path / "model.safetensors")
    st.save(model.state_dict(), path)
    torch.manual_seed(2)
    fresh = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.LayerNorm(8))
    assert not torch.equal(fresh[0].weight, model[0].weight)
    # README.md, "Load a model from Python"
    from fxio import safetensors
    state = safetensors.load(path, framework="pt")
    fresh.load_state_dict(state)
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(a, b), k
