"""vLLM model loading through libfxio: FxioModelLoader, vLLM's load format
"fxio", reads a model directory's safetensors shards with
fxio.safetensors.load (each shard in one pass, O_DIRECT into one aligned
buffer, as a batch of large requests that span every member of a striped
/dev/fxN) and gives vLLM the tensors as its own loaders do: (name, tensor)
pairs for the model's load_weights.

    pip install the package (its entry point registers the format in every
    vLLM process), then
        vllm serve /models/NAME --load-format fxio
        LLM(model="/models/NAME", load_format="fxio")

What vLLM defines, as read (never copied) in vllm-project/vllm:
  vllm/plugins/__init__.py: DEFAULT_PLUGINS_GROUP = "vllm.general_plugins";
    load_general_plugins() loads each entry point of that group and calls
    it once per process: the API server, the engine core and each worker
    (the worker builds the model), all of them unless VLLM_PLUGINS names
    the ones to load. Ours: fxio = "fxio.vllm:register" (pyproject.toml;
    the python3-fxio .deb ships it in fxio-VERSION.dist-info).
  vllm/model_executor/model_loader/__init__.py: register_model_loader
    (load_format) returns a decorator that refuses a class that is not a
    subclass of BaseModelLoader (ValueError), warns when it replaces a
    format, and enters it in the table get_model_loader(load_config)
    reads: the class of load_config.load_format, called with load_config.
  vllm/model_executor/model_loader/base_loader.py: BaseModelLoader
    (load_config) with the abstract download_model(model_config) and
    load_weights(model, model_config); its load_model(vllm_config,
    model_config) builds the model on the target device, calls
    load_weights and then process_weights_after_loading.
  vllm/model_executor/model_loader/default_loader.py @ 00b5ad071262, what
    this loader does as the default one does: the files of a local
    directory's safetensors checkpoint (_prepare_weights: *.safetensors;
    when model.safetensors.index.json exists, only the files its
    weight_map names, as filter_duplicate_safetensors_files keeps; none
    left: RuntimeError "Cannot find any model weights with `PATH`");
    model_loader_extra_config a dict whose unknown keys are refused
    (ValueError); load_weights: loaded = model.load_weights(an iterator
    of (name, tensor)), then, for a model without quantization whose
    load_weights returned the names, the parameters it did not load raise
    ValueError("Following weights were not initialized from checkpoint:
    {...}").

What it does not do, unlike the default loader: download (the model must
be a local directory: fxio reads a volume, not the Hub), .bin/.pt
checkpoints, the expert-parallel and encoder-only shard filters, torchao
checkpoints. The tensors are host memory that load_weights copies into
the model's device parameters, as with the default loader's safetensors
reader; not a direct read into device memory.

Proven (tests/test_vllm.py, pytest in make check as ctest fxio-python, and
in tests/pip-venv.sh against the pip-installed package): against
stand-ins of the vLLM pieces above written in the test. Not proven:
inside a real vLLM (it needs a GPU build of torch, not installable here).
"""

import glob
import json
import logging
import os
import re
import time

from . import safetensors as _st

__all__ = ["FxioModelLoader", "LOAD_FORMAT", "register", "weights_files"]

LOAD_FORMAT = "fxio"
INDEX_FILE = "model.safetensors.index.json"  # transformers' SAFE_WEIGHTS_INDEX_NAME
EXTRA_KEYS = {"request_bytes"}

log = logging.getLogger(__name__)


class _StandInBase:
    """vLLM's BaseModelLoader when vLLM is not installed: the same
    __init__(load_config); nothing else (load_model is vLLM's)."""

    def __init__(self, load_config):
        self.load_config = load_config

    def load_model(self, *args, **kwargs):
        raise RuntimeError("fxio.vllm: vLLM is not installed here: its BaseModelLoader "
                           "builds the model (pip install vllm)")


def _vllm_base():
    try:
        from vllm.model_executor.model_loader.base_loader import BaseModelLoader
    except ImportError:
        return _StandInBase
    return BaseModelLoader


def _natural(path):
    # shards as model-00002-of-00010 sort by their numbers
    return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", os.path.basename(path))]


def weights_files(model_dir):
    """The safetensors files of the checkpoint in @model_dir, in shard
    order, as vLLM's default loader chooses them: every *.safetensors, or
    with an index file only those its weight_map names."""
    if not os.path.isdir(model_dir):
        raise ValueError("fxio.vllm: model %r is not a directory: load format 'fxio' reads a "
                         "local checkpoint (download it onto the volume first, e.g. "
                         "huggingface-cli download NAME --local-dir DIR)" % (model_dir,))
    files = glob.glob(os.path.join(model_dir, "*.safetensors"))
    index = os.path.join(model_dir, INDEX_FILE)
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            named = {os.path.join(model_dir, v) for v in json.load(f)["weight_map"].values()}
        files = [f for f in files if f in named]
    if not files:
        raise RuntimeError("Cannot find any model weights with `%s`" % model_dir)
    return sorted(files, key=_natural)


class FxioModelLoader(_vllm_base()):
    """Load format "fxio": a local safetensors checkpoint through libfxio.
    model_loader_extra_config: {"request_bytes": N} (a multiple of 4096,
    default fxio.safetensors.REQUEST_BYTES), nothing else. After a load,
    self.stats holds files, tensors, bytes and seconds."""

    def __init__(self, load_config):
        super().__init__(load_config)
        extra = getattr(load_config, "model_loader_extra_config", None) or {}
        if not isinstance(extra, dict):
            raise ValueError("model_loader_extra_config must be a dict for load format %s, got %s"
                             % (LOAD_FORMAT, type(extra).__name__))
        unknown = set(extra) - EXTRA_KEYS
        if unknown:
            raise ValueError("Unexpected extra config keys for load format %s: %s (known: %s)"
                             % (LOAD_FORMAT, sorted(unknown), sorted(EXTRA_KEYS)))
        rb = extra.get("request_bytes", _st.REQUEST_BYTES)
        if not isinstance(rb, int) or isinstance(rb, bool) or rb <= 0 or rb % 4096:
            raise ValueError("model_loader_extra_config request_bytes must be a positive "
                             "multiple of 4096, got %r" % (rb,))
        self.request_bytes = rb
        self.stats = {"files": 0, "tensors": 0, "bytes": 0, "seconds": 0.0}

    def download_model(self, model_config):
        """Nothing to download: checks that the model is a local directory
        holding a checkpoint, naming the fix when it is not."""
        weights_files(model_config.model)

    def weights_iterator(self, model_config):
        """(name, torch CPU tensor) of every tensor of the checkpoint, shard
        by shard, each shard read in one pass (one buffer the tensors are
        views of, released when its tensors are)."""
        t0 = time.monotonic()
        for path in weights_files(model_config.model):
            tensors = _st.load(path, framework="pt", request_bytes=self.request_bytes)
            self.stats["files"] += 1
            self.stats["bytes"] += os.path.getsize(path)
            for name, tensor in tensors.items():
                self.stats["tensors"] += 1
                yield name, tensor
            del tensors
        self.stats["seconds"] += time.monotonic() - t0

    def load_weights(self, model, model_config):
        loaded = model.load_weights(self.weights_iterator(model_config))
        s = self.stats
        log.info("fxio: %d tensors, %.2f GiB from %d files in %.2f s", s["tensors"],
                 s["bytes"] / 2**30, s["files"], s["seconds"])
        if getattr(model_config, "quantization", None) is None and loaded is not None:
            missing = {name for name, _ in model.named_parameters()} - set(loaded)
            if missing:
                raise ValueError("Following weights were not initialized from checkpoint: %s"
                                 % (missing,))


def register():
    """vLLM's general-plugin entry point (group vllm.general_plugins):
    registers FxioModelLoader as load format "fxio". True when it did;
    False where vLLM is not installed."""
    try:
        from vllm.model_executor.model_loader import register_model_loader
    except ImportError:
        return False
    if FxioModelLoader.__bases__[0] is _StandInBase:  # vLLM arrived after this import
        raise RuntimeError("fxio.vllm was imported before vLLM could be: reload it")
    register_model_loader(LOAD_FORMAT)(FxioModelLoader)
    return True
