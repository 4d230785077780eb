"""One LoRA adapter for a model trained in stages: SFT's adapter and GRPO's, concatenated.

GRPO trains a fresh adapter on the base weights with the SFT adapter merged in.
LoRA updates add up (``W + B₁A₁s₁ + B₂A₂s₂``), and a sum of two low-rank updates
is one update of rank ``r₁ + r₂`` whose factors are the two stacked (peft's
``add_weighted_adapter(..., combination_type="cat")``). So the GRPO model is
the *original* base plus one adapter, exactly: every backend evaluates it like
any other adapter (vLLM serves one LoRA per request), and the registry stores a
small adapter, not a full copy of the weights.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def combine_adapters(base: str, adapters: list[str], out_dir: str | Path) -> Path:
    """Save the concatenation of ``adapters`` (applied to ``base`` in order) as one adapter in ``out_dir``."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out_dir = Path(out_dir)
    names = [f"stage{index}" for index in range(len(adapters))]
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), adapters[0], adapter_name=names[0])
    for name, adapter in zip(names[1:], adapters[1:]):
        model.load_adapter(adapter, adapter_name=name)
    model.add_weighted_adapter(names, [1.0] * len(names), adapter_name="default", combination_type="cat")
    model.set_adapter("default")
    for name in names:
        model.delete_adapter(name)
    work = out_dir.with_name(f".{out_dir.name}.partial")
    shutil.rmtree(work, ignore_errors=True)
    model.save_pretrained(work)
    for extra in Path(adapters[-1]).iterdir():  # the tokenizer files a trainer saves beside its adapter
        if extra.is_file() and not (work / extra.name).exists():
            shutil.copy2(extra, work / extra.name)
    shutil.rmtree(out_dir, ignore_errors=True)
    work.rename(out_dir)
    return out_dir


def merge_adapter(base: str, adapter: str, out_dir: str | Path) -> Path:
    """Save ``base`` with ``adapter`` merged in, as a full model (tokenizer included) in ``out_dir``."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir = Path(out_dir)
    work = out_dir.with_name(f".{out_dir.name}.partial")
    shutil.rmtree(work, ignore_errors=True)
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), adapter).merge_and_unload().save_pretrained(work)
    AutoTokenizer.from_pretrained(base).save_pretrained(work)
    shutil.rmtree(out_dir, ignore_errors=True)
    work.rename(out_dir)
    return out_dir
