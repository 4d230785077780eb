"""What a plan knows about a model before any weight is loaded: size, KV-cache geometry, context length.

Read, in this order, from

1. a local model directory: its ``config.json`` (``max_position_embeddings``,
   ``num_hidden_layers``, ``num_key_value_heads``, ``head_dim``; a multimodal
   config's ``text_config``) and the tensor shapes in its safetensors headers
   (``safetensors.safe_open`` reads the header only), so the count is exact;
2. the table ``models.yaml`` beside this module, for the hub models the shipped
   profiles name (each figure with where it was read);
3. nothing: an unknown hub model, an API model or a registered model version
   (``models:/``, whose base is known only once it is downloaded) is planned
   without memory figures or a context check, and the plan says so.

The context is what vLLM derives from the config (``max_position_embeddings``,
times a rope-scaling ``factor`` when the config declares one): it refuses a
``max_model_len`` above it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("models.yaml")
BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
EMBEDDED_DIR = {"embedded:gemma3-270m": "gemma3-270m"}


@dataclass(frozen=True)
class ModelFacts:
    """A model's size and context as far as they are known (``None``: not known before it runs)."""

    name: str
    source: str
    parameters: float | None = None
    layers: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    context: int | None = None
    think_block: bool | None = None  # False: the model's chat template writes no <think> block (None: not known)

    def weights_gib(self, dtype: str) -> float | None:
        """GiB of the weights in ``dtype``."""
        return None if self.parameters is None else self.parameters * BYTES[dtype] / 2**30

    def kv_bytes_per_token(self, dtype: str) -> int | None:
        """Bytes of KV cache per token: keys and values of every layer's KV heads."""
        if None in (self.layers, self.kv_heads, self.head_dim):
            return None
        return 2 * self.layers * self.kv_heads * self.head_dim * BYTES[dtype]


@lru_cache(maxsize=1)
def known_models() -> dict[str, dict]:
    """The table of hub models (``models.yaml``)."""
    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))


def model_facts(name: str, project_dir: str | Path | None = None) -> ModelFacts:
    """What is known about model ``name`` (a local directory, a table entry, or nothing)."""
    local = local_directory(name, project_dir)
    if local is not None:
        return local_facts(name, local)
    entry = known_models().get(name)
    if entry is not None:
        return ModelFacts(name=name, **{**entry, "parameters": float(entry["parameters"])})
    kind = "a registered model version" if name.startswith("models:/") else "not a local directory nor in models.yaml"
    return ModelFacts(name=name, source=f"unknown ({kind})")


def local_directory(name: str, project_dir: str | Path | None) -> Path | None:
    """The directory holding ``name``'s config: the path itself, or an embedded model already converted."""
    base = Path(project_dir or ".")
    if name in EMBEDDED_DIR:
        converted = base / ".cache" / "embedded" / EMBEDDED_DIR[name]
        return converted if (converted / "config.json").is_file() else None
    path = Path(name).expanduser()
    path = path if path.is_absolute() else base / path
    return path if (path / "config.json").is_file() else None


def local_facts(name: str, directory: Path) -> ModelFacts:
    """Figures from a local ``config.json`` and the safetensors headers beside it."""
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    text = config.get("text_config") or config
    heads = text.get("num_attention_heads")
    context = text.get("max_position_embeddings")
    factor = (text.get("rope_scaling") or {}).get("factor")
    if context is not None and factor:
        context = int(context * factor)
    head_dim = text.get("head_dim") or (text["hidden_size"] // heads if heads and text.get("hidden_size") else None)
    return ModelFacts(name=name, source=f"local config {directory / 'config.json'}",
                      parameters=safetensors_parameters(directory), layers=text.get("num_hidden_layers"),
                      kv_heads=text.get("num_key_value_heads", heads), head_dim=head_dim,
                      context=context)


def safetensors_parameters(directory: Path) -> float | None:
    """Parameters stored in ``directory``'s safetensors files (headers only); ``None`` without any."""
    from safetensors import safe_open

    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        with safe_open(str(path), framework="np") as handle:
            for key in handle.keys():
                count = 1
                for size in handle.get_slice(key).get_shape():
                    count *= size
                total += count
    return float(total)
