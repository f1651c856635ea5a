"""Borrowing the memory of a DLPack producer (ctypes, no build dependency).

The structures are DLPack's ABI as in dlpack.h (dmlc/dlpack, v0.8, the
"dltensor" capsule every producer gives when __dlpack__() is called without
max_version): DLManagedTensor begins with DLTensor {void *data; DLDevice
{int32 device_type, device_id}; int32 ndim; DLDataType {uint8 code, bits;
uint16 lanes}; int64 *shape, *strides; uint64 byte_offset}. fxio only
borrows: the capsule keeps its name "dltensor", so the producer's capsule
destructor still calls the tensor's deleter when the capsule is freed (the
protocol's rule for a consumer that does not take ownership), and the
capsule is kept referenced until the I/O ends.
"""

import ctypes

# DLDeviceType (dlpack.h)
CPU, CUDA, CUDA_HOST, OPENCL, VULKAN, METAL, VPI, ROCM, ROCM_HOST = 1, 2, 3, 4, 7, 8, 9, 10, 11
CUDA_MANAGED, ONEAPI = 13, 14
NAMES = {CPU: "kDLCPU", CUDA: "kDLCUDA", CUDA_HOST: "kDLCUDAHost", OPENCL: "kDLOpenCL",
         VULKAN: "kDLVulkan", METAL: "kDLMetal", VPI: "kDLVPI", ROCM: "kDLROCM",
         ROCM_HOST: "kDLROCMHost", 12: "kDLExtDev", CUDA_MANAGED: "kDLCUDAManaged",
         ONEAPI: "kDLOneAPI"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def device_name(kind):
    return NAMES.get(kind, "device type %d" % kind)


def c_nbytes(shape, byte_strides, item, what):
    """Bytes of an array of @shape with @item-byte elements, whose strides
    in bytes (None: compact row-major) must be C order: ValueError naming
    @what otherwise. A dimension of extent 1 may have any stride."""
    if byte_strides is not None:
        want = item
        for d, st in zip(reversed(shape), reversed(byte_strides)):
            if d != 1 and st != want:
                raise ValueError("fxio: the %s is not C-contiguous" % what)
            want *= d
    n = item
    for d in shape:
        n *= d
    return n


def borrow(obj):
    """(address, nbytes, device_type, capsule) of a C-contiguous DLPack
    tensor; the capsule must stay referenced while the memory is used."""
    capsule = obj.__dlpack__()
    ptr = _get_pointer(capsule, b"dltensor")
    if not ptr:
        raise ValueError("fxio: __dlpack__() gave no 'dltensor' capsule")
    t = _Tensor.from_address(ptr)
    shape = [t.shape[i] for i in range(t.ndim)]
    item = (t.dtype.bits * t.dtype.lanes + 7) // 8
    # strides in elements; NULL: compact row-major (DLPack < 1.0 allows it)
    strides = [t.strides[i] * item for i in range(t.ndim)] if t.strides else None
    n = c_nbytes(shape, strides, item, "DLPack tensor")
    return (t.data or 0) + t.byte_offset, n, t.device.device_type, capsule
