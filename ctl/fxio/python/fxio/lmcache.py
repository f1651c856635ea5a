"""An LMCache storage backend over KVCacheStore: FxioBackend, loaded by
LMCache from its configuration by module path and class name (no change
to LMCache), keeping KV chunks in blocks of a raw fxblk volume or a file.

What LMCache defines, as read (never copied) in LMCache/LMCache:
  lmcache/v1/storage_backend/abstract_backend.py @ 2bbf159471be:
    StorageBackendInterface: contains(key, pin), exists_in_put_tasks(key),
    batched_submit_put_task(keys, objs, transfer_spec), submit_prefetch_task
    (key), get_blocking(key), get_non_blocking(key), batched_get_blocking
    (keys), pin, unpin, remove(key, force), batched_remove, close.
  the same file in a later version the index holds (its commit not
    shown): StoragePluginInterface (alias ConfigurableStorageBackendInterface)
    whose __init__(dst_device, config, metadata, local_cpu_backend, loop) is
    "the instantiation contract"; batched_submit_put_task gains
    on_complete_callback and returns a list of Futures or None; async
    batched_async_contains(lookup_id, keys, pin) (hits of the key prefix) and
    batched_get_non_blocking(lookup_id, keys, transfer_spec); get_allocator
    _backend(); batched_contains; touch_cache.
  lmcache/v1/storage_backend/__init__.py @ 5f6f05bd7219, create_dynamic
    _backends: for each name of config.external_backends, config.extra
    _config["external_backend.NAME.module_path"] and [".class_name"],
    importlib.import_module, getattr, then class(config, metadata, loop,
    memory_allocator, local_cpu_backend, dst_device, lookup_server)
    positionally. A later version calls class(config=, dst_device=,
    metadata=, local_cpu_backend=, loop=) by keyword, and the latest
    (storage_plugin_launcher) reads config.storage_plugins and
    "storage_plugin.NAME.module_path"/".class_name" with the same keywords.
    __init__ below takes both calls.
  lmcache/v1/storage_backend/storage_manager.py @ 3ecd72f84ee0, the
    order LMCache calls a backend in: contains(key, pin) at lookup;
    batched_put -> batched_submit_put_task(keys, objs) and then
    obj.ref_count_down() on each object (so a backend writing later takes
    its own reference: ref_count_up at submit, down when written, as
    local_disk_backend.py @ 2bbf159471be submit_put_task /
    async_save_bytes_to_disk do); get -> get_blocking(key), batched_get ->
    batched_get_blocking(keys) (the caller owns the returned objects);
    prefetch -> submit_prefetch_task(key); batched_unpin -> unpin(key);
    remove / batched_remove; close.
  lmcache/v1/memory_management.py @ b98a5592cb81: MemoryObj (get_size():
    the logical bytes, prod(shape) * dtype size; byte_array: a writable
    view of the physical (maybe larger) buffer; get_shape, get_dtype,
    get_memory_format; ref_count_up/down, freeing at 0), allocated for a
    get by local_cpu_backend.allocate(shape, dtype, fmt) as
    LocalDiskBackend.load_bytes_from_disk does.
  lmcache/utils.py: CacheEngineKey, a dataclass hashed over its fields,
    to_string(); a hashable dict key, and with fxio.persistent the store's
    key is its to_string(): at 0353be824aeb that string holds every field
    __eq__ compares (model_name, world_size, worker_id, chunk_hash, dtype,
    tags), as LMCache's own disk and remote backends name chunks by it.

Configuration (LMCache's extra_config, keys of ours): fxio.path (/dev/fxN
or a file; required), fxio.block_bytes (a multiple of 4096 at least the
largest chunk's get_size(); required), fxio.capacity_blocks (default: the
size of path), fxio.durable (File.sync before a put is a hit), fxio.workers
(threads writing and prefetching, default 2), fxio.persistent (default
false: KVCacheStore's persistent index, kept across restarts),
fxio.reformat (with fxio.persistent: start empty whatever the volume
holds).

Semantics: a chunk is stored as its get_size() bytes with (shape, dtype,
fmt); a hit is a chunk whose write completed (while written it is
exists_in_put_tasks and a miss); a chunk already stored or being stored is
not written again; a chunk larger than a block, or with every block read
or pinned, is not stored (put_skipped in stats()). The index is in memory
(KVCacheStore's): empty at each start, as LMCache's local disk backend
is, unless fxio.persistent is true (opt-in, so a configuration that
expects a cache that forgets keeps it). Then the store keeps the chunks
on the volume across restarts and crashes, each key as its to_string()
and each chunk's shape, dtype and format as {"shape": [...], "dtype":
"float16", "fmt": "KV_2LTD"}, made LMCache's types again at a get
(torch.Size, torch.<dtype>, MemoryFormat[name]: FxioBackend.memory_format,
else lmcache.v1.memory_management's); a chunk whose value fails its hash
after a restart, or whose meta no longer decodes, is a miss, never served.

Proven (tests/test_lmcache.py, pytest over a file in the build tree, in
make check as ctest fxio-python): against stand-ins written in the test of
the LMCache pieces named above (key, MemoryObj with its ref count, the
CPU backend's allocate, the loader, StorageManager's call order), with
this module's LMCache base class being the local stand-in below. Not
proven: running inside a real LMCache (it needs torch with CUDA, not
installable here) or vLLM; an LMCache version whose interface differs
from the ones read; a GPU dst_device; the write-back of a prefetched chunk
to LMCache's real LocalCPUBackend.
"""

import asyncio
import concurrent.futures
import logging
import threading

from .kvcache import KVCacheStore

__all__ = ["FxioBackend"]

log = logging.getLogger(__name__)


class _StandInBase:
    """LMCache's StorageBackendInterface when LMCache is not installed:
    the same __init__(dst_device) keeping dst_device, no checks."""

    def __init__(self, dst_device="cuda"):
        self.dst_device = dst_device


def _lmcache_base():
    """LMCache's base class for a loadable backend: the newest name first."""
    try:
        from lmcache.v1.storage_backend import abstract_backend as ab
    except ImportError:
        return _StandInBase
    for name in ("StoragePluginInterface", "ConfigurableStorageBackendInterface",
                 "StorageBackendInterface"):
        if hasattr(ab, name):
            return getattr(ab, name)
    return _StandInBase


_Base = _lmcache_base()


def _extra(config):
    extra = getattr(config, "extra_config", None)
    return extra if extra is not None else {}


def _bytes(buf, nbytes):
    """The first @nbytes bytes of @buf (a MemoryObj's byte_array: a
    memoryview of a ctypes array, format '<B', which cast() refuses; bytes
    for a BytesBufferMemoryObj) as a memoryview, no copy."""
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    if mv.nbytes < nbytes:
        raise ValueError("FxioBackend: a buffer of %d bytes for %d" % (mv.nbytes, nbytes))
    return mv[:nbytes]


def _store_key(key):
    """A persistent store's key for LMCache's @key: its to_string(), or
    the key itself (bytes, str, int)."""
    to_string = getattr(key, "to_string", None)
    return to_string() if to_string is not None else key


def _same_key(key):
    return key


def _dtype_name(dtype):
    s = str(dtype)
    return s[len("torch."):] if s.startswith("torch.") else s


def _flag(v):
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


class FxioBackend(_Base):
    # LMCache's MemoryFormat enum, for a persistent store's chunks read
    # after a restart; None: imported from lmcache.v1.memory_management.
    memory_format = None

    def __init__(self, config=None, metadata=None, loop=None, memory_allocator=None,
                 local_cpu_backend=None, dst_device="cuda", lookup_server=None, *,
                 store=None):
        """Takes what LMCache's loaders pass, positionally (config,
        metadata, loop, memory_allocator, local_cpu_backend, dst_device,
        lookup_server) or by keyword; @store: a KVCacheStore to use instead
        of opening fxio.path (tests)."""
        super().__init__(dst_device=dst_device)
        self.config, self.metadata, self.loop = config, metadata, loop
        self.local_cpu_backend = local_cpu_backend
        self.memory_allocator = memory_allocator
        self.lookup_server = lookup_server
        extra = _extra(config)
        if store is None:
            path = extra.get("fxio.path")
            if not path:
                raise ValueError("FxioBackend: extra_config has no fxio.path")
            if "fxio.block_bytes" not in extra:
                raise ValueError("FxioBackend: extra_config has no fxio.block_bytes")
            cap = extra.get("fxio.capacity_blocks")
            store = KVCacheStore(path, int(extra["fxio.block_bytes"]),
                                 None if cap is None else int(cap),
                                 durable=_flag(extra.get("fxio.durable", False)),
                                 persistent=_flag(extra.get("fxio.persistent", False)),
                                 reformat=_flag(extra.get("fxio.reformat", False)))
        self.store = store
        self._persistent = getattr(store, "persistent", False)
        self._sk = _store_key if self._persistent else _same_key
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(extra.get("fxio.workers", 2)), thread_name_prefix="fxio-lmcache")
        self._lock = threading.Lock()
        self._submitted = set()  # keys accepted by a put, not yet written
        self._closed = False
        self.skipped = {"too_big": 0, "no_block": 0, "failed": 0}

    def __str__(self):
        return "FxioBackend"

    # -- lookups --------------------------------------------------------
    def contains(self, key, pin=False):
        return self.store.contains(self._sk(key), pin=pin)

    def batched_contains(self, keys, pin=False):
        """How many of @keys, from the first, are hits (each pinned with
        @pin)."""
        n = 0
        for k in keys:
            if not self.store.contains(self._sk(k), pin=pin):
                break
            n += 1
        return n

    async def batched_async_contains(self, lookup_id, keys, pin=False):
        return self.batched_contains(keys, pin)

    def exists_in_put_tasks(self, key):
        with self._lock:
            if key in self._submitted:
                return True
        return self.store.exists_in_put_tasks(self._sk(key))

    def pin(self, key):
        return self.store.pin(self._sk(key))

    def unpin(self, key):
        return self.store.unpin(self._sk(key))

    def touch_cache(self):
        """Recency is kept by the store at each get: nothing to do."""

    # -- puts -----------------------------------------------------------
    def batched_submit_put_task(self, keys, objs, transfer_spec=None,
                                on_complete_callback=None):
        """Queues the writes of @objs (MemoryObjs) under @keys and returns
        at once; each object is referenced (ref_count_up) until its write
        ended. Keys stored or being stored are skipped. Returns [a Future
        of the batch: a bool per key written], or None if nothing was
        queued. @on_complete_callback(key) runs for each key stored."""
        todo = []
        with self._lock:
            if self._closed:
                return None
            for k, o in zip(keys, objs):
                sk = self._sk(k)
                if k in self._submitted or self.store.exists_in_put_tasks(sk) or \
                        self.store.contains(sk) or any(k == t[0] for t in todo):
                    continue
                if o.get_size() > self.store.block_bytes:
                    self.skipped["too_big"] += 1
                    continue
                o.ref_count_up()
                self._submitted.add(k)
                todo.append((k, o))
            if not todo:
                return None
            fut = self._pool.submit(self._put, todo, on_complete_callback)
        return [fut]

    def submit_put_task(self, key, obj, on_complete_callback=None):
        """One key: batched_submit_put_task([key], [obj])."""
        futs = self.batched_submit_put_task([key], [obj],
                                            on_complete_callback=on_complete_callback)
        return futs[0] if futs else None

    async def async_batched_submit_put_task(self, keys, objs, transfer_spec=None,
                                            on_complete_callback=None):
        self.batched_submit_put_task(keys, objs, transfer_spec, on_complete_callback)

    def _put(self, todo, on_complete):
        stored = [False] * len(todo)
        try:
            items = [(self._sk(k), _bytes(o.byte_array, o.get_size()), self._meta(o))
                     for k, o in todo]
            stored = self.store.batched_put(items)
        except Exception as e:  # noqa: BLE001 - a put lost is a miss later, not an error
            self.skipped["failed"] += 1
            log.warning("FxioBackend: a put of %d chunks failed: %s", len(todo), e)
        finally:
            with self._lock:
                for k, _ in todo:
                    self._submitted.discard(k)
            for _, o in todo:
                o.ref_count_down()
        self.skipped["no_block"] += sum(1 for s in stored if not s)
        if on_complete is not None:
            for (k, _), s in zip(todo, stored):
                if s:
                    try:
                        on_complete(k)
                    except Exception as e:  # noqa: BLE001 - as LMCache: logged, not raised
                        log.warning("FxioBackend: on_complete_callback(%s): %s", k, e)
        return stored

    def _meta(self, obj):
        """What the store keeps of @obj besides its bytes."""
        shape, dtype, fmt = obj.get_shape(), obj.get_dtype(), obj.get_memory_format()
        if not self._persistent:
            return shape, dtype, fmt
        return {"shape": [int(d) for d in shape], "dtype": _dtype_name(dtype),
                "fmt": getattr(fmt, "name", fmt)}

    def _unmeta(self, meta):
        """(shape, dtype, fmt) of a chunk from what _meta() kept."""
        if not self._persistent:
            return meta
        import torch
        fmts = self.memory_format
        if fmts is None:
            from lmcache.v1.memory_management import MemoryFormat as fmts
        return torch.Size(meta["shape"]), getattr(torch, meta["dtype"]), fmts[meta["fmt"]]

    # -- gets -----------------------------------------------------------
    def _allocate(self, shape, dtype, fmt):
        alloc = self.local_cpu_backend if self.local_cpu_backend is not None \
            else self.memory_allocator
        if alloc is None:
            raise RuntimeError("FxioBackend: no local_cpu_backend or memory_allocator "
                               "to allocate a chunk read into")
        return alloc.allocate(shape, dtype, fmt)

    def batched_get_blocking(self, keys):
        """A MemoryObj (allocated by LMCache's CPU backend, owned by the
        caller) per key, None for a miss; the hits read in one batch."""
        entries = [self.store.acquire(self._sk(k)) for k in keys]
        objs = [None] * len(keys)
        ok = False
        try:
            for i, e in enumerate(entries):
                if e is not None:
                    try:
                        shape, dtype, fmt = self._unmeta(e.meta)
                    except (KeyError, TypeError, AttributeError, ImportError) as exc:
                        log.warning("FxioBackend: %s: a chunk's meta %r: %s", keys[i], e.meta,
                                    exc)
                        continue  # a miss
                    objs[i] = self._allocate(shape, dtype, fmt)  # None: a miss
            hits = [i for i, o in enumerate(objs) if o is not None]
            try:
                self.store.read_entries([entries[i] for i in hits],
                                        [_bytes(objs[i].byte_array, entries[i].nbytes)
                                         for i in hits])
            except OSError as e:
                log.warning("FxioBackend: a read of %d chunks failed: %s", len(hits), e)
                return [None] * len(keys)
            ok = True
        finally:
            for e in entries:
                if e is not None:
                    e.release()
            if not ok:
                for o in objs:
                    if o is not None:
                        o.ref_count_down()
        return objs

    def get_blocking(self, key):
        return self.batched_get_blocking([key])[0]

    def get_non_blocking(self, key, location=None):
        """A Future of get_blocking(key), None on a miss now."""
        if not self.store.contains(self._sk(key)):
            return None
        return self._pool.submit(self.get_blocking, key)

    async def batched_get_non_blocking(self, lookup_id, keys, transfer_spec=None):
        """The MemoryObjs of @keys' hit prefix (the caller owns them), read
        in a worker thread; those after a miss are not returned (freed)."""
        loop = asyncio.get_running_loop()
        objs = await loop.run_in_executor(self._pool, self.batched_get_blocking, list(keys))
        out = []
        for o in objs:
            if o is None:
                break
            out.append(o)
        for o in objs[len(out):]:
            if o is not None:
                o.ref_count_down()
        return out

    def submit_prefetch_task(self, key):
        """Reads @key in a worker thread into a chunk handed to LMCache's
        CPU backend (submit_put_task), as LocalDiskBackend's prefetch does;
        False on a miss or without a CPU backend."""
        cpu = self.local_cpu_backend
        if cpu is None or not self.store.contains(self._sk(key)):
            return False

        def fetch():
            obj = self.get_blocking(key)
            if obj is not None:
                cpu.submit_put_task(key, obj)
            return obj

        self._pool.submit(fetch)
        return True

    def get_allocator_backend(self):
        return self.local_cpu_backend

    # -- removal, close -------------------------------------------------
    def remove(self, key, force=True):
        return self.store.remove(self._sk(key))

    def batched_remove(self, keys, force=True):
        return sum(1 for k in keys if self.store.remove(self._sk(k)))

    def stats(self):
        return dict(self.store.stats, **{"put_" + k: v for k, v in self.skipped.items()})

    def close(self):
        """Waits for the puts and prefetches queued, then closes the store."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.shutdown(wait=True)
        self.store.close()
