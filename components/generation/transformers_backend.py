"""transformers backend: batched ``model.generate`` with left padding.

Follows the usual decoder-only batching recipe (transformers docs, "Generation
with LLMs": left padding, attention mask, pad = eos when the tokenizer has no
pad). Sampling uses a fresh ``GenerationConfig`` and the model's own
``generation_config`` is replaced by a neutral one at load, so a checkpoint's
defaults (Gemma's top_k=64, a repetition penalty) never leak in and the vLLM
backend (``generation_config="vllm"``) sees the same decoding rule.
Stop strings end a sample early through ``generate(stop_strings=..., tokenizer=...)``
(transformers' ``StopStringCriteria``); a stopped sample is padded, not ended by EOS,
so its token count drops the trailing padding (``generated_length``).
``temperature == 0`` is greedy (one decode, copied ``n`` times); otherwise each
prompt is decoded on its own, its ``n`` samples one ``num_return_sequences=n``
call after ``torch.manual_seed(prompt_seed(seed, prompt))``: a seed of the
prompt's own (as the vLLM backend gives each request one, and the API backends
each sample), so a prompt draws the same samples whichever prompts share its
chunk, batch or process: a fanned-out, pooled or sequential run writes the same
rows. (Sampling a batch of prompts from one generator would tie each prompt's
draws to its neighbours; a prompt alone also has no padding that could move its
logits.) Prompts are batched in order of
their token length (results come back in prompt order), so a batch pads its
prompts less: on the few-shot MGSM demo prompts, 7% fewer prefill positions. Loads a local directory, a hub
id, or a GGUF file (``gguf_file=``, dequantized on load), with an optional LoRA
adapter merged in (``ModelSettings.adapter``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from components.generation.base import (
    Completion,
    GenerationStats,
    encode_prompts,
    generated_length,
    prompt_seed,
    replicate_greedy,
    resolve_model,
    run_batches,
)

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings, SamplingSettings

DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


class TransformersGenerator:
    """``Generator`` on a local transformers model; loads lazily on first use."""

    name = "transformers"
    loads = 0  # models loaded in this process (the evaluation shares one per model; tests read it)

    def __init__(self, model: ModelSettings, cache_dir: Path, *, progress: bool = False):
        self.settings = model
        self.cache_dir = Path(cache_dir)
        self.progress = progress
        self.stats: GenerationStats | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: str = "cpu"

    @property
    def tokenizer(self) -> Any:
        self.load()
        return self._tokenizer

    def load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        resolved = resolve_model(self.settings, self.cache_dir)
        extra = {"gguf_file": resolved.gguf_file} if resolved.gguf_file else {}
        tokenizer = AutoTokenizer.from_pretrained(resolved.path, **extra)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        dtype = getattr(torch, DTYPES[self.settings.dtype]) if self.settings.dtype in DTYPES else "auto"
        model = AutoModelForCausalLM.from_pretrained(resolved.path, dtype=dtype, **extra)
        TransformersGenerator.loads += 1
        if self.settings.adapter:
            model = merged_adapter(model, self.settings.adapter)
        if self.settings.device == "auto":
            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            self._device = self.settings.device
        model.to(self._device).eval()
        model.generation_config = GenerationConfig(
            bos_token_id=model.generation_config.bos_token_id,
            eos_token_id=model.generation_config.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        self._model, self._tokenizer = model, tokenizer

    def close(self) -> None:
        """Drop the model so its memory can be freed."""
        self._model = self._tokenizer = None

    def _eos_ids(self) -> set[int]:
        ids = self._model.generation_config.eos_token_id
        ids = set(ids if isinstance(ids, list) else [ids] if ids is not None else [])
        if self._tokenizer.eos_token_id is not None:
            ids.add(self._tokenizer.eos_token_id)
        return ids

    def generate(self, prompts: list[str], sampling: SamplingSettings,
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        self.load()
        lengths = [len(ids) for ids in encode_prompts(self._tokenizer, prompts)]
        order = sorted(range(len(prompts)), key=lengths.__getitem__)  # batches of similar length: less padding
        results, self.stats = run_batches(
            [prompts[i] for i in order], sampling.batch_size,
            lambda batch, index: self._generate_batch(batch, index, sampling, stop),
            model_name=self.settings.model, progress=self.progress,
        )
        restored: list[list[Completion]] = [[] for _ in prompts]
        for position, index in enumerate(order):
            restored[index] = results[position]
        return restored

    def _generate_batch(self, prompts: list[str], batch_index: int, sampling: SamplingSettings,
                        stop: Sequence[str]) -> list[list[Completion]]:
        """Greedy: the batch in one decode. Sampled: each prompt alone, from its own seed (``prompt_seed``)."""
        if sampling.temperature == 0:
            return self._decode(prompts, sampling, stop)
        return [self._decode([prompt], sampling, stop, seed=prompt_seed(sampling.seed, prompt))[0]
                for prompt in prompts]

    def _decode(self, prompts: list[str], sampling: SamplingSettings, stop: Sequence[str],
                seed: int | None = None) -> list[list[Completion]]:
        import torch
        from transformers import GenerationConfig

        greedy = sampling.temperature == 0
        ids = encode_prompts(self._tokenizer, prompts)
        inputs = self._tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt").to(self._device)
        eos = sorted(self._eos_ids())
        config = GenerationConfig(
            max_new_tokens=sampling.max_new_tokens,
            do_sample=not greedy,
            num_return_sequences=1 if greedy else sampling.n,
            eos_token_id=eos,
            pad_token_id=self._tokenizer.pad_token_id,
            stop_strings=list(stop) or None,
            **({} if greedy else {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}),
        )
        if seed is not None:
            torch.manual_seed(seed)
        with torch.inference_mode():
            output = self._model.generate(**inputs, generation_config=config,
                                          tokenizer=self._tokenizer if stop else None)
        new_tokens = output[:, inputs["input_ids"].shape[1]:].tolist()
        per_prompt = 1 if greedy else sampling.n
        results = []
        for i in range(len(prompts)):
            samples = [self._completion(row, set(eos)) for row in new_tokens[i * per_prompt:(i + 1) * per_prompt]]
            results.append(replicate_greedy(samples, sampling.n) if greedy else samples)
        return results

    def _completion(self, token_ids: list[int], eos: set[int]) -> Completion:
        count = generated_length(token_ids, eos, self._tokenizer.pad_token_id)
        text = self._tokenizer.decode(token_ids[:count], skip_special_tokens=True)
        return Completion(text=text, num_tokens=count)


def merged_adapter(model: Any, adapter: str) -> Any:
    """The base model with a LoRA adapter merged in (peft ``PeftModel.from_pretrained`` + ``merge_and_unload``).

    Merging once at load makes generation as fast as with the base model.
    """
    from peft import PeftModel

    return PeftModel.from_pretrained(model, adapter).merge_and_unload()


def make_transformers(model: ModelSettings, cache_dir: Path) -> TransformersGenerator:
    return TransformersGenerator(model, cache_dir)
