"""fxio.vllm.FxioModelLoader driven as vLLM drives a model loader, against
stand-ins of the vLLM pieces it touches (vLLM needs a GPU build of torch
and is not installed here). Each stand-in mirrors vllm-project/vllm, read
(not copied) at:
  vllm/plugins/__init__.py                      the "vllm.general_plugins"
      entry-point group, each entry point loaded and called once
  vllm/model_executor/model_loader/__init__.py  register_model_loader
      (refuses a class not derived from BaseModelLoader), get_model_loader
  vllm/model_executor/model_loader/base_loader.py  BaseModelLoader:
      abstract download_model / load_weights; load_model builds the model
      and calls load_weights
  vllm/model_executor/models/utils.py           AutoWeightsLoader's
      contract for a model's load_weights: it consumes (name, tensor)
      pairs, copies each into its parameter, returns the names loaded
What this proves: the loader against these stand-ins, reading real
safetensors shards through libfxio. What it does not: the loader inside a
real vLLM."""
import abc
import importlib
import importlib.metadata
import json
import sys
import types

import pytest
import torch

from fxio import safetensors as st


# -- stand-ins --------------------------------------------------------------
class BaseModelLoader(abc.ABC):
    """base_loader.py: BaseModelLoader."""

    def __init__(self, load_config):
        self.load_config = load_config

    @abc.abstractmethod
    def download_model(self, model_config):
        raise NotImplementedError

    @abc.abstractmethod
    def load_weights(self, model, model_config):
        raise NotImplementedError

    def load_model(self, vllm_config, model_config):
        # initialize_model(vllm_config=...) on the target device, then the
        # weights, then process_weights_after_loading (nothing here)
        model = vllm_config.build()
        self.load_weights(model, model_config)
        return model.eval()


_TABLE = {}


def register_model_loader(load_format):
    """model_loader/__init__.py: register_model_loader."""
    def wrapper(cls):
        if not issubclass(cls, BaseModelLoader):
            raise ValueError("The model loader must be a subclass of `BaseModelLoader`.")
        _TABLE[load_format] = cls
        return cls
    return wrapper


def get_model_loader(load_config):
    if load_config.load_format not in _TABLE:
        raise ValueError(f"Load format `{load_config.load_format}` is not supported")
    return _TABLE[load_config.load_format](load_config)


class LoadConfig:
    def __init__(self, load_format="auto", model_loader_extra_config=None):
        self.load_format = load_format
        self.model_loader_extra_config = model_loader_extra_config or {}


class ModelConfig:
    def __init__(self, model, quantization=None):
        self.model = model
        self.quantization = quantization


class TinyModel(torch.nn.Module):
    """A model whose load_weights follows AutoWeightsLoader's contract."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(64, 16)
        self.proj = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        for p in self.parameters():
            torch.nn.init.zeros_(p)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        for name, tensor in weights:
            params[name].data.copy_(tensor)
            loaded.add(name)
        return loaded


class VllmConfig:
    def build(self):
        return TinyModel()


@pytest.fixture
def vllm(monkeypatch):
    """A `vllm` package in sys.modules with the stand-ins above, and
    fxio.vllm imported again so its base class is the stand-in's."""
    _TABLE.clear()
    names = ["vllm", "vllm.model_executor", "vllm.model_executor.model_loader",
             "vllm.model_executor.model_loader.base_loader"]
    mods = {n: types.ModuleType(n) for n in names}
    mods["vllm.model_executor.model_loader"].register_model_loader = register_model_loader
    mods["vllm.model_executor.model_loader"].get_model_loader = get_model_loader
    mods["vllm.model_executor.model_loader.base_loader"].BaseModelLoader = BaseModelLoader
    for n, m in mods.items():
        monkeypatch.setitem(sys.modules, n, m)
    import fxio.vllm
    mod = importlib.reload(fxio.vllm)
    yield mod
    monkeypatch.undo()
    importlib.reload(fxio.vllm)


def reference():
    g = torch.Generator().manual_seed(5)
    return {
        "embed.weight": torch.randn(64, 16, generator=g),
        "proj.weight": torch.randn(32, 16, generator=g),
        "proj.bias": torch.randn(32, generator=g),
        "norm.weight": torch.randn(32, generator=g).to(torch.float16),
        "norm.bias": torch.randn(32, generator=g),
    }


def checkpoint(d, tensors, shards=2, decoy=True):
    """@tensors saved as @shards files model-0000K-of-0000N.safetensors
    with model.safetensors.index.json, and (decoy) a consolidated file the
    index does not name, holding other values: read, it would overwrite."""
    names = sorted(tensors)
    weight_map = {}
    for k in range(shards):
        fname = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
        part = {n: tensors[n] for n in names[k::shards]}
        st.save(part, str(d / fname))
        weight_map.update({n: fname for n in part})
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))
    if decoy:
        st.save({n: torch.full_like(t, 7) for n, t in tensors.items()},
                str(d / "consolidated.safetensors"))
    return d


def test_entry_point_registers_the_format(vllm):
    # what vLLM's load_general_plugins does in each process
    eps = importlib.metadata.entry_points(group="vllm.general_plugins")
    ours = [ep for ep in eps if ep.name == "fxio"]
    assert [ep.value for ep in ours] == ["fxio.vllm:register"], \
        "no vllm.general_plugins entry point 'fxio' in the installed metadata: %s" % list(eps)
    assert ours[0].load() is vllm.register
    assert ours[0].load()() is True
    loader = get_model_loader(LoadConfig(load_format="fxio"))
    assert type(loader) is vllm.FxioModelLoader
    assert isinstance(loader, BaseModelLoader)


def test_loads_the_indexed_shards(vllm, tmp_path):
    ref = reference()
    checkpoint(tmp_path, ref)
    vllm.register()
    loader = get_model_loader(LoadConfig(load_format="fxio"))
    mc = ModelConfig(str(tmp_path))
    loader.download_model(mc)
    model = loader.load_model(vllm_config=VllmConfig(), model_config=mc)
    got = dict(model.named_parameters())
    for name, t in ref.items():
        assert torch.equal(got[name].detach(), t.to(got[name].dtype)), name
    assert loader.stats["files"] == 2, "the decoy the index leaves out was read"
    assert loader.stats["tensors"] == len(ref)
    assert loader.stats["bytes"] == sum((tmp_path / f).stat().st_size for f in
                                        ("model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors"))


def test_without_index_every_file_in_shard_order(vllm, tmp_path):
    ref = reference()
    for k in (10, 2, 1):  # natural order: 1, 2, 10
        st.save({"proj.bias": ref["proj.bias"] + k}, str(tmp_path / ("w-%d.safetensors" % k)))
    assert [p.rsplit("/", 1)[1] for p in vllm.weights_files(str(tmp_path))] == \
        ["w-1.safetensors", "w-2.safetensors", "w-10.safetensors"]
    seen = [(n, t.clone()) for n, t in
            vllm.FxioModelLoader(LoadConfig("fxio")).weights_iterator(ModelConfig(str(tmp_path)))]
    assert [torch.equal(t, ref["proj.bias"] + k) for (_, t), k in zip(seen, (1, 2, 10))] == [True] * 3


def test_a_weight_not_in_the_checkpoint_fails_the_load(vllm, tmp_path):
    ref = reference()
    del ref["norm.bias"]
    checkpoint(tmp_path, ref, decoy=False)
    vllm.register()
    loader = get_model_loader(LoadConfig(load_format="fxio"))
    with pytest.raises(ValueError, match=r"not initialized from checkpoint: \{'norm.bias'\}"):
        loader.load_model(vllm_config=VllmConfig(), model_config=ModelConfig(str(tmp_path)))
    # as the default loader: no strict check for a quantized model
    loader.load_model(vllm_config=VllmConfig(), model_config=ModelConfig(str(tmp_path), "fp8"))


def test_refusals_name_the_fix(vllm, tmp_path):
    with pytest.raises(ValueError, match="Unexpected extra config keys.*'num_threads'"):
        vllm.FxioModelLoader(LoadConfig("fxio", {"num_threads": 4}))
    with pytest.raises(ValueError, match="request_bytes must be a positive multiple of 4096"):
        vllm.FxioModelLoader(LoadConfig("fxio", {"request_bytes": 1000}))
    loader = vllm.FxioModelLoader(LoadConfig("fxio", {"request_bytes": 1 << 20}))
    with pytest.raises(ValueError, match="not a directory.*download it onto the volume"):
        loader.download_model(ModelConfig("meta-llama/Llama-3-8B"))
    with pytest.raises(RuntimeError, match="Cannot find any model weights"):
        loader.download_model(ModelConfig(str(tmp_path)))


def test_register_refuses_nothing_and_imports_without_vllm():
    # the real import, no stand-in: vLLM is not installed here
    import fxio.vllm
    mod = importlib.reload(fxio.vllm)
    assert mod.register() is False
    with pytest.raises(RuntimeError, match="vLLM is not installed"):
        mod.FxioModelLoader(LoadConfig("fxio")).load_model()
