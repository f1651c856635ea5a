"""fxio.lmcache.FxioBackend driven as LMCache drives a storage backend,
against stand-ins of the LMCache pieces it touches (LMCache itself needs
torch with CUDA and is not installed here). Each stand-in names what it
mirrors in LMCache/LMCache, read (not copied) at:
  lmcache/utils.py                                  CacheEngineKey
  lmcache/v1/memory_management.py @ b98a5592cb81    MemoryFormat,
      MemoryObjMetadata, TensorMemoryObj (get_size, tensor, byte_array,
      ref_count_up / ref_count_down freeing at 0)
  lmcache/v1/storage_backend/__init__.py @ 5f6f05bd7219
      create_dynamic_backends (external_backends, positional constructor);
      the later storage_plugin_launcher (storage_plugins, keywords)
  lmcache/v1/storage_backend/storage_manager.py @ 3ecd72f84ee0
      StorageManager: its event loop thread, batched_put, get, batched_get,
      contains, batched_unpin, remove, prefetch, close
  lmcache/v1/storage_backend/local_disk_backend.py @ 2bbf159471be
      the CPU backend's allocate(shape, dtype, fmt) a disk backend reads into
What this proves: the backend against these stand-ins. What it does not:
the backend inside a real LMCache or vLLM."""
import asyncio
import ctypes
import dataclasses
import enum
import hashlib
import importlib
import math
import random
import sys
import threading
from collections import OrderedDict

import pytest
import torch

import fxio.lmcache
from fxio.kvcache import KVCacheStore
from fxio.lmcache import FxioBackend
from test_kvcache_concurrency import MemFile

BLOCK = 64 << 10
FULL = (2, 4, 256, 16)  # KV_2LTD [2, layers, tokens, hidden]: 64 KiB of float16
LAST = (2, 4, 37, 16)   # a sequence's last chunk: 9472 bytes, not whole 4 KiB


# -- stand-ins --------------------------------------------------------------
@dataclasses.dataclass(order=True)
class CacheEngineKey:
    """lmcache/utils.py CacheEngineKey: the five fields, hashed together,
    to_string() joining them with '@'."""
    fmt: str
    model_name: str
    world_size: int
    worker_id: int
    chunk_hash: int

    def __hash__(self):
        return hash((self.fmt, self.model_name, self.world_size, self.worker_id,
                     self.chunk_hash))

    def to_string(self):
        return "@".join(str(v) for v in dataclasses.astuple(self))


def itemsize(dtype):
    """dtype.itemsize, which LMCache uses, is torch >= 2.1's; 1.13 here."""
    return torch.empty((), dtype=dtype).element_size()


def key(i):
    return CacheEngineKey("vllm", "test/model", 1, 0, 1000 + i)


class MemoryFormat(enum.Enum):
    """memory_management.py MemoryFormat (the values used here)."""
    UNDEFINED = 0
    KV_2LTD = 1


@dataclasses.dataclass
class MemoryObjMetadata:
    """memory_management.py MemoryObjMetadata."""
    shape: torch.Size
    dtype: torch.dtype
    address: int
    phy_size: int
    ref_count: int
    pin_count: int = 0
    fmt: MemoryFormat = MemoryFormat.UNDEFINED


class TensorMemoryObj:
    """memory_management.py TensorMemoryObj: a flat uint8 tensor of
    phy_size bytes; get_size() is prod(shape) * dtype size; tensor views
    its first get_size() bytes as dtype and shape; byte_array is a ctypes
    array over all phy_size bytes (a memoryview of format '<B'); the
    allocator frees it when ref_count falls to 0 unpinned."""

    def __init__(self, raw, meta, allocator):
        self.raw_data, self.meta, self.parent_allocator = raw, meta, allocator
        self.lock = threading.Lock()

    def get_size(self):
        return math.prod(self.meta.shape) * itemsize(self.meta.dtype)

    def get_shape(self):
        return self.meta.shape

    def get_dtype(self):
        return self.meta.dtype

    def get_memory_format(self):
        return self.meta.fmt

    def get_physical_size(self):
        return self.meta.phy_size

    @property
    def metadata(self):
        return self.meta

    @property
    def tensor(self):
        return self.raw_data[:self.get_size()].view(self.meta.dtype).view(self.meta.shape)

    @property
    def byte_array(self):
        n = self.raw_data.numel() * self.raw_data.element_size()
        return memoryview((ctypes.c_ubyte * n).from_address(self.raw_data.data_ptr()))

    def ref_count_up(self):
        with self.lock:
            self.meta.ref_count += 1

    def ref_count_down(self):
        with self.lock:
            self.meta.ref_count -= 1
            assert self.meta.ref_count >= 0, "double free of a MemoryObj"
            if self.meta.ref_count == 0 and self.meta.pin_count == 0:
                self.parent_allocator.free(self)

    def get_ref_count(self):
        with self.lock:
            return self.meta.ref_count


class CPUBackend:
    """What the backend uses of LocalCPUBackend: allocate(shape, dtype,
    fmt) (local_disk_backend.py load_bytes_from_disk), a MemoryObj with
    ref_count 1 in 4 KiB-aligned memory that, as LMCache's allocators do,
    reuses the memory of freed objects (so a backend reading an object
    after its last reference went sees another chunk's bytes), and
    submit_put_task (prefetch's write-back); live: the objects not freed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.live = set()
        self.free_raw = {}  # phy size -> [raw tensors of freed objects]
        self.written_back = {}

    def allocate(self, shape, dtype, fmt=MemoryFormat.KV_2LTD):
        shape = torch.Size(shape)
        size = math.prod(shape) * itemsize(dtype)
        phy = -(-size // 4096) * 4096
        with self.lock:
            pool = self.free_raw.get(phy)
            raw = pool.pop() if pool else None
        if raw is None:
            raw = torch.zeros(phy + 4096, dtype=torch.uint8)
            skip = -raw.data_ptr() % 4096
            raw = raw[skip:skip + phy]
        obj = TensorMemoryObj(raw, MemoryObjMetadata(shape, dtype, raw.data_ptr(), phy, 1,
                                                     fmt=fmt), self)
        with self.lock:
            self.live.add(id(obj))
        return obj

    def free(self, obj):
        with self.lock:
            self.live.remove(id(obj))
            self.free_raw.setdefault(obj.meta.phy_size, []).append(obj.raw_data)

    def submit_put_task(self, k, obj):
        self.written_back[k] = obj


class Config:
    """The LMCacheEngineConfig fields the loaders read."""

    def __init__(self, extra, external_backends=None, storage_plugins=None):
        self.extra_config = extra
        self.external_backends = external_backends
        self.storage_plugins = storage_plugins


def create_dynamic_backends(config, metadata, loop, memory_allocator, local_cpu_backend,
                            dst_device, lookup_server, storage_backends):
    """__init__.py @ 5f6f05bd create_dynamic_backends: per name of
    external_backends, module_path and class_name from extra_config,
    import_module + getattr, the constructor called positionally. (LMCache
    logs and goes on when one fails; here it raises, for the test.)"""
    for name in set(config.external_backends or ()):
        module_path = config.extra_config.get("external_backend.%s.module_path" % name)
        class_name = config.extra_config.get("external_backend.%s.class_name" % name)
        cls = getattr(importlib.import_module(module_path), class_name)
        storage_backends[name] = cls(config, metadata, loop, memory_allocator,
                                     local_cpu_backend, dst_device, lookup_server)


def storage_plugin_launcher(config, metadata, loop, local_cpu_backend, dst_device,
                            storage_backends):
    """The later loader: storage_plugins, storage_plugin.NAME.module_path /
    class_name, the constructor called by keyword."""
    for name in set(config.storage_plugins or ()):
        module_path = config.extra_config.get("storage_plugin.%s.module_path" % name)
        class_name = config.extra_config.get("storage_plugin.%s.class_name" % name)
        cls = getattr(importlib.import_module(module_path), class_name)
        storage_backends[name] = cls(config=config, dst_device=dst_device, metadata=metadata,
                                     local_cpu_backend=local_cpu_backend, loop=loop)


class StorageManager:
    """storage_manager.py @ 3ecd72f StorageManager, reduced to one backend
    behind the CPU one: an asyncio loop in its own thread passed to the
    backends; batched_put -> batched_submit_put_task then ref_count_down
    of each object; get -> get_blocking, a hit written back to the CPU
    backend; batched_get -> batched_get_blocking; contains(key, pin);
    batched_unpin -> unpin per key; remove; prefetch ->
    submit_prefetch_task; close."""

    def __init__(self, extra, store=None):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.cpu = CPUBackend()
        if store is None:
            cfg = Config(dict(extra, **{
                "external_backend.fxio.module_path": "fxio.lmcache",
                "external_backend.fxio.class_name": "FxioBackend"}), ["fxio"])
            backends = OrderedDict()
            create_dynamic_backends(cfg, "metadata", self.loop, None, self.cpu, "cpu",
                                    None, backends)
            self.backend = backends["fxio"]
        else:
            self.backend = FxioBackend(Config(extra), "metadata", self.loop, None, self.cpu,
                                       "cpu", None, store=store)

    def make(self, k, shape=FULL, dtype=torch.float16):
        """A chunk as the GPU connector hands it over: allocated, filled."""
        obj = self.cpu.allocate(shape, dtype, MemoryFormat.KV_2LTD)
        obj.raw_data[:obj.get_size()] = content(k, obj.get_size())
        return obj

    def batched_put(self, keys, objs):
        futs = self.backend.batched_submit_put_task(keys, objs)
        for o in objs:
            o.ref_count_down()
        return futs or []

    def get(self, k):
        obj = self.backend.get_blocking(k)
        if obj is not None:
            self.cpu.submit_put_task(k, obj)
        return obj

    def batched_get(self, keys):
        return self.backend.batched_get_blocking(keys)

    def lookup(self, keys, pin=True):
        n = 0
        for k in keys:
            if not self.backend.contains(k, pin):
                break
            n += 1
        return n

    def batched_unpin(self, keys):
        for k in keys:
            self.backend.unpin(k)

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self):
        self.backend.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


def content(k, nbytes):
    """The bytes of chunk @k: a pattern seeded by its hash."""
    seed = int.from_bytes(hashlib.sha256(k.to_string().encode()).digest()[:8], "little")
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=g)


def same(obj, k):
    return torch.equal(obj.raw_data[:obj.get_size()], content(k, obj.get_size()))


def wait(futs):
    return [f.result(30) for f in futs]


@pytest.fixture
def manager(disk):
    path, _ = disk
    sm = StorageManager({"fxio.path": str(path), "fxio.block_bytes": BLOCK})
    yield sm
    sm.close()


# -- tests ------------------------------------------------------------------
def test_loaded_by_module_path_and_class_name(disk):
    """Both LMCache loaders build it from configuration alone: the
    positional call of create_dynamic_backends and the keyword one of
    storage_plugin_launcher; each argument lands where it belongs. LMCache
    is not installed: the module stands on its own base class."""
    assert "lmcache" not in sys.modules
    assert FxioBackend.__mro__[1] is fxio.lmcache._StandInBase
    path, _ = disk
    loop, cpu = object(), CPUBackend()
    extra = {"fxio.path": str(path), "fxio.block_bytes": str(BLOCK),
             "fxio.capacity_blocks": "8",
             "external_backend.fx.module_path": "fxio.lmcache",
             "external_backend.fx.class_name": "FxioBackend",
             "storage_plugin.fx.module_path": "fxio.lmcache",
             "storage_plugin.fx.class_name": "FxioBackend"}
    cfg = Config(extra, external_backends=["fx"], storage_plugins=["fx"])
    old, new = OrderedDict(), OrderedDict()
    create_dynamic_backends(cfg, "meta", loop, "allocator", cpu, "cpu", "lookup", old)
    storage_plugin_launcher(cfg, "meta", loop, cpu, "cpu", new)
    for b in (old["fx"], new["fx"]):
        try:
            assert type(b) is FxioBackend and str(b) == "FxioBackend"
            assert (b.config, b.metadata, b.loop, b.local_cpu_backend, b.dst_device) == \
                (cfg, "meta", loop, cpu, "cpu")
            assert b.store.block_bytes == BLOCK and b.store.capacity == 8
            assert b.get_allocator_backend() is cpu
        finally:
            b.close()
    assert (old["fx"].memory_allocator, old["fx"].lookup_server) == ("allocator", "lookup")
    with pytest.raises(ValueError, match="fxio.path"):
        FxioBackend(Config({"fxio.block_bytes": BLOCK}), dst_device="cpu")


def test_round_trip_keeps_bytes_shape_dtype_fmt_and_short_last_chunk(manager):
    """Chunks put as StorageManager puts them come back from get_blocking
    and batched_get_blocking as new MemoryObjs of the CPU backend with the
    same bytes, shape, dtype and format; the last chunk of a sequence,
    9472 bytes, keeps its length. The objects put are freed once written
    (their ref count back to 0), the ones got are the caller's."""
    sm = manager
    ks = [key(1), key(2), key(3)]
    objs = [sm.make(ks[0]), sm.make(ks[1], dtype=torch.bfloat16),
            sm.make(ks[2], LAST)]
    wait(sm.batched_put(ks, objs))
    assert sm.cpu.live == set(), "objects put not freed after their write"
    assert sm.lookup(ks) == 3 and sm.backend.batched_contains(ks + [key(4)]) == 3
    got = [sm.get(k) for k in ks] + sm.batched_get(ks + [key(4)])
    assert got[-1] is None
    for i, (o, want) in enumerate(zip(got[:6], (objs * 2))):
        k = ks[i % 3]
        assert o is not want and o.get_shape() == want.get_shape(), k
        assert o.get_dtype() == want.get_dtype() and o.get_memory_format() == MemoryFormat.KV_2LTD
        assert o.get_size() == want.get_size() and same(o, k), "chunk %d: other bytes" % i
    assert got[2].get_size() == 9472 and got[2].tensor.shape == LAST
    assert sm.backend.store.info(ks[2])[0] == 9472  # its bytes, not its 12 KiB buffer
    assert got[1].tensor.dtype == torch.bfloat16
    assert sm.cpu.written_back[ks[0]] is got[0]  # get wrote the hit back to the CPU tier
    for o in got[:6]:
        o.ref_count_down()
    assert sm.cpu.live == set()
    sm.batched_unpin(ks)



def test_persistent_chunks_survive_a_restart_torn_ones_are_misses(disk, monkeypatch):
    """fxio.persistent: chunks put before LMCache stopped are hits of the
    next LMCache on the same volume, with their bytes, shape, dtype and
    format (made the stand-in's types again: FxioBackend.memory_format);
    a chunk whose bytes were torn on the volume is a miss of
    batched_get_blocking, never another chunk's bytes. Without
    fxio.persistent (the default) the next LMCache starts empty."""
    monkeypatch.setattr(FxioBackend, "memory_format", MemoryFormat)
    path, _ = disk
    extra = {"fxio.path": str(path), "fxio.block_bytes": BLOCK, "fxio.persistent": "true",
             "fxio.capacity_blocks": 16}
    ks = [key(i) for i in range(6)]
    sm = StorageManager(extra)
    try:
        objs = [sm.make(ks[0]), sm.make(ks[1], dtype=torch.bfloat16), sm.make(ks[2], LAST)] + \
            [sm.make(k) for k in ks[3:]]
        wait(sm.batched_put(ks, objs))
        assert sm.backend.store.persistent and sm.lookup(ks, pin=False) == 6
        torn = sm.backend.store._index[ks[4].to_string()]
        torn_at = sm.backend.store._off(torn.block) + 1000
    finally:
        sm.close()
    plain = StorageManager(dict(extra, **{"fxio.persistent": "false"}))
    try:
        assert plain.lookup(ks) == 0
    finally:
        plain.close()
    with open(path, "r+b") as f:
        f.seek(torn_at)
        b = f.read(1)
        f.seek(torn_at)
        f.write(bytes([b[0] ^ 0x80]))
    sm = StorageManager(extra)
    try:
        assert sm.backend.store.stats["loaded"] == 6 and sm.lookup(ks, pin=False) == 6
        got = sm.backend.batched_get_blocking(ks + [key(9)])
        assert got[4] is None and got[6] is None and not sm.backend.contains(ks[4])
        for i in (0, 1, 2, 3, 5):
            o, want = got[i], objs[i]
            assert o.get_shape() == want.get_shape() and isinstance(o.get_shape(), torch.Size)
            assert o.get_dtype() == want.get_dtype()
            assert o.get_memory_format() is MemoryFormat.KV_2LTD
            assert o.get_size() == want.get_size() and same(o, ks[i]), "chunk %d: other bytes" % i
            o.ref_count_down()
        assert got[2].get_size() == 9472 and got[1].get_dtype() == torch.bfloat16
        assert sm.cpu.live == set()
    finally:
        sm.close()

def test_in_flight_put_is_not_a_hit(manager):
    """While a chunk's write is held, it is exists_in_put_tasks (from the
    moment batched_submit_put_task returned), a miss for contains and
    get_blocking, not written again by a second put, and its MemoryObj is
    still referenced though StorageManager let go of it; once written it
    is a hit with its bytes and the object is freed."""
    sm = manager
    f = MemFile(4 * BLOCK)
    sm.backend.close()
    sm.backend = FxioBackend(Config({}), "meta", sm.loop, None, sm.cpu, "cpu", None,
                             store=KVCacheStore("<mem>", BLOCK, 4, file=f))
    f.hold("write")
    obj = sm.make(key(1))
    futs = sm.batched_put([key(1)], [obj])
    try:
        assert sm.backend.exists_in_put_tasks(key(1))
        assert f.entered["write"].wait(10)
        assert sm.backend.exists_in_put_tasks(key(1)) and not sm.backend.contains(key(1))
        assert sm.backend.get_blocking(key(1)) is None
        assert sm.backend.get_non_blocking(key(1)) is None
        assert obj.get_ref_count() == 1 and id(obj) in sm.cpu.live, \
            "the object was let go of before its write ended"
        assert sm.batched_put([key(1)], [sm.make(key(1))]) == []  # not written twice
    finally:
        f.release("write")
    assert wait(futs) == [[True]]
    assert not sm.backend.exists_in_put_tasks(key(1)) and sm.backend.contains(key(1))
    assert sm.cpu.live == set()
    got = sm.backend.get_blocking(key(1))
    assert same(got, key(1))
    got.ref_count_down()


def test_pin_keeps_a_chunk_from_eviction(disk):
    """A chunk pinned by a lookup (contains(key, pin=True)) stays while
    puts evict the others; after batched_unpin it is evicted like any."""
    path, _ = disk
    sm = StorageManager({"fxio.path": str(path), "fxio.block_bytes": BLOCK,
                         "fxio.capacity_blocks": 2})
    try:
        wait(sm.batched_put([key(1), key(2)], [sm.make(key(1)), sm.make(key(2))]))
        assert sm.lookup([key(1)]) == 1  # pinned
        for i in (3, 4, 5):
            wait(sm.batched_put([key(i)], [sm.make(key(i))]))
            assert sm.backend.contains(key(1)), "pinned chunk 1 evicted by chunk %d" % i
        got = sm.get(key(1))
        assert same(got, key(1))
        got.ref_count_down()
        sm.batched_unpin([key(1)])
        wait(sm.batched_put([key(6)], [sm.make(key(6))]))
        wait(sm.batched_put([key(7)], [sm.make(key(7))]))
        assert not sm.backend.contains(key(1))
        assert sm.backend.stats()["evictions"] == 5
    finally:
        sm.close()


def test_remove(manager):
    sm = manager
    ks = [key(i) for i in range(4)]
    wait(sm.batched_put(ks, [sm.make(k) for k in ks]))
    assert sm.backend.remove(key(0)) and not sm.backend.remove(key(0))
    assert not sm.backend.contains(key(0)) and sm.backend.get_blocking(key(0)) is None
    assert sm.backend.batched_remove([key(1), key(2), key(9)]) == 2
    assert sm.lookup(ks, pin=False) == 0 and sm.backend.contains(key(3))


def test_prefetch_and_the_non_blocking_gets(manager):
    """submit_prefetch_task reads a hit and hands it to the CPU backend
    (False on a miss); get_non_blocking is a Future of the chunk (None on
    a miss); on LMCache's loop, batched_async_contains counts the hit
    prefix and batched_get_non_blocking returns that prefix's chunks."""
    sm = manager
    ks = [key(1), key(2), key(3)]
    wait(sm.batched_put([ks[0], ks[2]], [sm.make(ks[0]), sm.make(ks[2], LAST)]))
    assert not sm.backend.submit_prefetch_task(ks[1])
    assert sm.backend.submit_prefetch_task(ks[2])
    fut = sm.backend.get_non_blocking(ks[0])
    assert sm.backend.get_non_blocking(ks[1]) is None
    got = fut.result(30)
    assert same(got, ks[0])
    got.ref_count_down()
    assert sm.run(sm.backend.batched_async_contains("l1", ks)) == 1
    objs = sm.run(sm.backend.batched_get_non_blocking("l1", [ks[2], ks[0], ks[1], ks[2]]))
    assert len(objs) == 2 and same(objs[0], ks[2]) and same(objs[1], ks[0])
    for o in objs:
        o.ref_count_down()
    sm.backend.close()  # waits for the prefetch
    pre = sm.cpu.written_back[ks[2]]
    assert same(pre, ks[2]) and pre.get_shape() == LAST
    pre.ref_count_down()
    assert sm.cpu.live == set()


def test_concurrent_puts_and_gets_every_hit_is_its_own_chunk(disk):
    """4 writer threads put batches of chunks through batched_put while 4
    reader threads get them (batched_get_blocking, get_blocking,
    get_non_blocking and batched_get_non_blocking on the loop) over the
    real libfxio File, 16 blocks for 48 chunks (constant eviction): every
    hit is compared byte for byte with its key's chunk, every object is
    freed in the end."""
    path, _ = disk
    sm = StorageManager({"fxio.path": str(path), "fxio.block_bytes": BLOCK,
                         "fxio.capacity_blocks": 16, "fxio.workers": 3})
    nkeys, rounds = 48, 60
    wrong, errors, hits = [], [], [0]
    recent, lock = [], threading.Lock()
    writing = threading.Event()
    shapes = {i: LAST if i % 5 == 0 else FULL for i in range(nkeys)}

    def check(objs, ks):
        for o, k in zip(objs, ks):
            if o is None:
                continue
            with lock:
                hits[0] += 1
            if not same(o, k) or o.get_shape() != shapes[k.chunk_hash - 1000]:
                wrong.append(k.chunk_hash)
            o.ref_count_down()

    def remember(ids):  # the keys just put, which readers mostly ask for
        with lock:
            recent[:] = (recent + ids)[-16:]

    def writer(seed):
        rng = random.Random(seed)
        try:
            for _ in range(rounds):
                ids = rng.sample(range(nkeys), 3)
                remember(ids)
                sm.batched_put([key(i) for i in ids], [sm.make(key(i), shapes[i]) for i in ids])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    def reader(seed):
        rng = random.Random(seed)
        n = 0
        try:
            while n < rounds or writing.is_set():
                n += 1
                with lock:
                    pool = list(recent) or [0]
                ks = [key(rng.choice(pool)) for _ in range(2)]
                if ks[0] == ks[1]:
                    ks = ks[:1]
                how = n % 4
                if how == 0:
                    check(sm.batched_get(ks), ks)
                elif how == 1:
                    check([sm.backend.get_blocking(ks[0])], ks[:1])
                elif how == 2:
                    fut = sm.backend.get_non_blocking(ks[0])
                    check([fut.result(30) if fut else None], ks[:1])
                else:
                    check(sm.run(sm.backend.batched_get_non_blocking("r", ks)), ks)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=f, args=(s,))
               for f, s in [(writer, s) for s in range(4)] + [(reader, 100 + s) for s in range(4)]]
    writing.set()
    try:
        for t in threads:
            t.start()
        for i, t in enumerate(threads):
            if i == 4:  # the writers ended: the readers stop after their rounds
                writing.clear()
            t.join()
    finally:
        sm.close()  # waits for the puts queued
    assert not errors, errors[:3]
    assert not wrong, "%d wrong hits of %d: chunks %s" % (len(wrong), hits[0], wrong[:5])
    assert hits[0] > 0 and sm.backend.stats()["evictions"] > 0
    assert sm.cpu.live == set(), "%d objects never freed" % len(sm.cpu.live)
