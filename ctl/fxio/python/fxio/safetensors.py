"""safetensors files through libfxio: load() reads a model file (on a file
system on /dev/fxN, or anywhere O_DIRECT works) into numpy arrays or torch
tensors, save() writes a checkpoint. No dependency beyond numpy (torch only
when asked for): the format is

    u64 little-endian N | N bytes of JSON header | the tensors' bytes

with the header {"name": {"dtype": "F32", "shape": [2, 3],
"data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}, offsets
relative to the first byte after the header, tensors packed without holes
(https://github.com/huggingface/safetensors, format section).
"""

import json
import os
import struct

import numpy as np

from . import File

__all__ = ["load", "save", "metadata", "read_header", "DTYPES"]

# safetensors dtype -> numpy dtype of the same size ("BF16": numpy has
# none; its bit patterns as int16, viewed as torch.bfloat16 in torch)
DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.int16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
    "BOOL": np.bool_,
}
_NP_TO_ST = {np.dtype(v): k for k, v in DTYPES.items() if k != "BF16"}

_ALIGN = 4096  # O_DIRECT alignment that every disk accepts


def _aligned_empty(n):
    """A uint8 array of @n bytes whose first byte is 4 KiB aligned, so
    libfxio reads the aligned part straight into it (no bounce copy)."""
    raw = np.empty(n + _ALIGN, dtype=np.uint8)
    skip = (-raw.ctypes.data) % _ALIGN
    return raw[skip:skip + n]


def read_header(f):
    """(header dict, data start offset) of an open fxio.File."""
    head = _aligned_empty(_ALIGN)
    got = f.read_into(head, 0)
    if got < 8:
        raise ValueError("safetensors: %s: shorter than its length field" % f.path)
    (n,) = struct.unpack("<Q", head[:8].tobytes())
    if n > 100 << 20:
        raise ValueError("safetensors: %s: header of %d bytes is not plausible" % (f.path, n))
    if 8 + n <= got:
        raw = head[8:8 + n].tobytes()
    else:
        buf = _aligned_empty(8 + n)
        if f.read_into(buf, 0) != 8 + n:
            raise ValueError("safetensors: %s: header cut short" % f.path)
        raw = buf[8:].tobytes()
    return json.loads(raw.decode("utf-8")), 8 + n


def _check(name, info, data_len):
    b, e = info["data_offsets"]
    count = 1
    for d in info["shape"]:
        count *= d
    size = np.dtype(DTYPES[info["dtype"]]).itemsize * count
    if not 0 <= b <= e <= data_len or e - b != size:
        raise ValueError("safetensors: tensor %s: offsets %s do not hold %s %s"
                         % (name, info["data_offsets"], info["dtype"], info["shape"]))


def load(path, framework="numpy", names=None):
    """{name: tensor} of the safetensors file @path, read with libfxio in
    one pass into one 4 KiB-aligned buffer that the tensors are views of.
    framework: "numpy" or "pt" (torch CPU tensors). names: only these."""
    if framework not in ("numpy", "pt"):
        raise ValueError("safetensors: framework must be 'numpy' or 'pt'")
    with File(path, "r") as f:
        header, start = read_header(f)
        header.pop("__metadata__", None)
        size = os.stat(path).st_size
        data_len = size - start
        for name, info in header.items():
            if info["dtype"] not in DTYPES:
                raise ValueError("safetensors: tensor %s: dtype %s not supported"
                                 % (name, info["dtype"]))
            _check(name, info, data_len)
        # The whole file: the block-aligned part goes straight into the
        # buffer (posix path, no copy), the tail through libfxio's pool.
        buf = _aligned_empty(size)
        whole = size // _ALIGN * _ALIGN
        if whole and f.read_into(buf[:whole], 0) != whole:
            raise ValueError("safetensors: %s: short read" % path)
        if size > whole and f.read_into(buf[whole:], whole) != size - whole:
            raise ValueError("safetensors: %s: short read" % path)
    out = {}
    for name, info in header.items():
        if names is not None and name not in names:
            continue
        b, e = info["data_offsets"]
        dt = np.dtype(DTYPES[info["dtype"]])
        arr = buf[start + b:start + e].view(dt).reshape(info["shape"])
        out[name] = _to_torch(arr, info["dtype"]) if framework == "pt" else arr
    return out


def metadata(path):
    """The file's "__metadata__" ({} when none)."""
    with File(path, "r") as f:
        return read_header(f)[0].get("__metadata__", {})


def _to_torch(arr, st_dtype):
    import torch
    t = torch.from_numpy(arr)
    return t.view(torch.bfloat16) if st_dtype == "BF16" else t


_TORCH_TO_ST = None


def _as_numpy(name, t):
    """(numpy view of the bytes, safetensors dtype) of an array or tensor."""
    global _TORCH_TO_ST
    if type(t).__module__.startswith("torch"):
        import torch
        if _TORCH_TO_ST is None:
            _TORCH_TO_ST = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
                            torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
                            torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
                            torch.bool: "BOOL"}
        if t.dtype not in _TORCH_TO_ST:
            raise ValueError("safetensors: tensor %s: dtype %s not supported" % (name, t.dtype))
        st = _TORCH_TO_ST[t.dtype]
        t = t.detach().cpu().contiguous()
        if st == "BF16":
            t = t.view(torch.int16)
        return t.numpy(), st
    a = np.asarray(t)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
    if a.dtype not in _NP_TO_ST:
        raise ValueError("safetensors: array %s: dtype %s not supported" % (name, a.dtype))
    return a, _NP_TO_ST[a.dtype]


def save(tensors, path, metadata=None, sync=True):
    """Writes {name: numpy array or torch tensor} to @path as safetensors
    (a checkpoint), through libfxio. Tensors are packed largest element
    first (so every tensor starts aligned to its element size), the header
    padded with spaces to a multiple of 8 bytes. With @sync (the default)
    the file's data is durable when save returns (File.sync(): a crash
    then loses no byte of the checkpoint); sync=False leaves that to the
    caller, as torch.save does."""
    items = []
    for name, t in tensors.items():
        a, st = _as_numpy(name, t)
        items.append((name, a, st))
    items.sort(key=lambda x: (-x[1].dtype.itemsize, x[0]))
    header, off = {}, 0
    for name, a, st in items:
        header[name] = {"dtype": st, "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * ((-(8 + len(raw))) % 8)
    start = 8 + len(raw)
    total = start + off
    with open(path, "wb") as fh:  # created and sized; libfxio cannot create
        fh.truncate(total)
    with File(path, "rw") as f:
        head = np.frombuffer(struct.pack("<Q", len(raw)) + raw, dtype=np.uint8)
        f.write_from(head, 0)
        # one after the other: neighbours share partial blocks, which
        # libfxio writes by read-modify-write
        for name, a, _ in items:
            if a.nbytes:
                f.write_from(a.reshape(-1).view(np.uint8),
                             start + header[name]["data_offsets"][0])
        if sync:
            f.sync()
    return total
