"""The generation contract shared by every backend, and the helpers they share.

- ``Completion(text, num_tokens)``: one sample; ``num_tokens`` counts generated
  tokens including the end-of-sequence token, as vLLM's ``len(output.token_ids)`` does.
- ``Generator``: ``generate(prompts, sampling, stop=()) -> list[list[Completion]]``,
  ``n`` samples per prompt, in prompt order (lm-eval's ``LM.generate_until`` shape).
  ``stop`` strings end a sample early where the backend can (transformers
  ``stop_strings``, vLLM and OpenAI ``stop``); the text may still contain the stop
  string, and callers cut it (``truncate_at_stops``), so every backend agrees.
- ``run_batches``: batching, the progress line (``components.progress``: prompts done and tokens/s; a tqdm
  bar too when a backend is made with ``progress=True``), and a
  failing batch re-raised as ``GenerationError`` naming the model and batch.
- ``resolve_model`` / ``model_fingerprint``: where a model's files are, and a
  cheap identity for cache keys (settings + file sizes/mtimes + small-file hashes).

>>> Completion("hi", 2)
Completion(text='hi', num_tokens=2)
>>> str(GenerationError("m", 3, ValueError("boom")))
'model m: generation failed on batch 3: ValueError: boom'
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from components.progress import generation_progress

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings, SamplingSettings


EMBEDDED_PREFIX = "embedded:"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
SMALL_FILE_BYTES = 2_000_000


@dataclass(frozen=True)
class Completion:
    text: str
    num_tokens: int


@dataclass(frozen=True)
class GenerationStats:
    """What the last ``generate`` call did: wall seconds inside the backend, prompts, tokens."""

    seconds: float
    prompts: int
    tokens: int

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


class Generator(Protocol):
    name: str

    def generate(self, prompts: list[str], sampling: SamplingSettings,
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        ...


class GenerationError(RuntimeError):
    """A backend failed on one batch; the message names the model and the batch index."""

    def __init__(self, model: str, batch_index: int, cause: BaseException):
        super().__init__(f"model {model}: generation failed on batch {batch_index}: {type(cause).__name__}: {cause}")
        self.model = model
        self.batch_index = batch_index


BatchFn = Callable[[list[str], int], list[list[Completion]]]


def run_batches(prompts: Sequence[str], batch_size: int, generate_batch: BatchFn, *, model_name: str,
                progress: bool = True) -> tuple[list[list[Completion]], GenerationStats]:
    """Call ``generate_batch(batch, batch_index)`` over consecutive batches, with a progress bar."""
    from tqdm.auto import tqdm

    results: list[list[Completion]] = []
    tokens = 0
    start = time.perf_counter()
    with tqdm(total=len(prompts), desc=f"generate {model_name}", unit="prompt", disable=not progress) as bar, \
            generation_progress(Path(model_name).name or model_name, len(prompts)) as line:
        for index, begin in enumerate(range(0, len(prompts), batch_size)):
            batch = list(prompts[begin:begin + batch_size])
            batch_start = time.perf_counter()
            try:
                with line.running(len(batch)):
                    out = generate_batch(batch, index)
            except Exception as error:  # re-raised with the model and batch named
                raise GenerationError(model_name, index, error) from error
            if len(out) != len(batch):
                raise GenerationError(model_name, index, ValueError(f"{len(out)} results for {len(batch)} prompts"))
            results.extend(out)
            batch_tokens = sum(c.num_tokens for samples in out for c in samples)
            tokens += batch_tokens
            line.advance(len(batch), batch_tokens, time.perf_counter() - batch_start)
            elapsed = time.perf_counter() - start
            bar.update(len(batch))
            bar.set_postfix(tok_s=f"{tokens / elapsed:.1f}" if elapsed > 0 else "-")
    return results, GenerationStats(time.perf_counter() - start, len(prompts), tokens)


def truncate_at_stops(text: str, stops: Sequence[str]) -> str:
    """Cut ``text`` at the earliest stop string (vLLM's ``stop`` semantics: the stop is not kept).

    >>> truncate_at_stops("La réponse est 12.\\nQuestion : suivante", ["\\nQuestion"])
    'La réponse est 12.'
    """
    cut = min((index for index in (text.find(stop) for stop in stops) if index >= 0), default=len(text))
    return text[:cut]


def encode_prompts(tokenizer: Any, prompts: Sequence[str]) -> list[list[int]]:
    """Token ids per prompt; special tokens (BOS) are added unless the text already starts with BOS.

    Chat templates such as Gemma's write ``<bos>`` themselves; adding another
    would double it. Both the transformers and vLLM backends tokenize here,
    so they see identical ids.
    """
    bos = getattr(tokenizer, "bos_token", None)
    ids = []
    for prompt in prompts:
        has_bos = bool(bos) and prompt.startswith(bos)
        ids.append(list(tokenizer(prompt, add_special_tokens=not has_bos)["input_ids"]))
    return ids


def count_until_eos(token_ids: Sequence[int], eos_ids: set[int]) -> int:
    """Generated tokens up to and including the first EOS (the rest is padding).

    >>> count_until_eos([5, 6, 2, 0, 0], {2})
    3
    >>> count_until_eos([5, 6], {2})
    2
    """
    for position, token in enumerate(token_ids):
        if token in eos_ids:
            return position + 1
    return len(token_ids)


def generated_length(token_ids: Sequence[int], eos_ids: set[int], pad_id: int | None) -> int:
    """Tokens a sample generated: up to the first EOS, else without the padding after a stop string.

    ``generate`` pads a sequence that stopped on a stop string (no EOS) with ``pad_id``
    until the batch ends; those pads were never generated.

    >>> generated_length([5, 6, 2, 0, 0], {2}, 0), generated_length([5, 6, 7, 0, 0], {2}, 0)
    (3, 3)
    >>> generated_length([5, 0, 7], {2}, 0)
    3
    """
    count = count_until_eos(token_ids, eos_ids)
    if pad_id is None or pad_id in eos_ids:
        return count
    while count and token_ids[count - 1] == pad_id:
        count -= 1
    return count


def replicate_greedy(samples: list[Completion], n: int) -> list[Completion]:
    """Greedy decoding gives one answer; ``n`` samples are ``n`` copies of it."""
    return [samples[0]] * n


# ---------------------------------------------------------------- model location and identity


@dataclass(frozen=True)
class ResolvedModel:
    """Where ``from_pretrained`` looks: a local dir or hub id, plus an optional GGUF file name."""

    path: str
    gguf_file: str | None
    local: bool


def resolve_model(model: ModelSettings, cache_dir: Path) -> ResolvedModel:
    """``embedded:<name>`` -> the converted cached copy; ``x.gguf`` -> (its dir, its name); else as given."""
    if model.model.startswith(EMBEDDED_PREFIX):
        from components.generation.embedded import embedded_model_path

        return ResolvedModel(str(embedded_model_path(model.model[len(EMBEDDED_PREFIX):], cache_dir)), None, True)
    path = Path(model.model).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return ResolvedModel(str(path.parent), path.name, True)
    if path.is_dir():
        return ResolvedModel(str(path), model.gguf_file, True)
    return ResolvedModel(model.model, model.gguf_file, False)


def load_tokenizer(model: ModelSettings, cache_dir: Path) -> Any:
    """The model's tokenizer alone (for chat-template prompts), without loading weights."""
    from transformers import AutoTokenizer

    resolved = resolve_model(model, cache_dir)
    extra = {"gguf_file": resolved.gguf_file} if resolved.gguf_file else {}
    return AutoTokenizer.from_pretrained(resolved.path, **extra)


def model_fingerprint(model_settings: ModelSettings, resolved_path: str | Path | None) -> str:
    """sha256 over the settings that change outputs and the model files' identity.

    Weight files enter by name, size and mtime (no hashing of gigabytes); config,
    tokenizer and template files up to 2 MB by content; a LoRA adapter by the
    digest of its files. A hub id (no local path) is its own identity.
    """
    settings = model_settings.model_dump(mode="json", exclude={"api_key_env", "max_concurrency", "max_retries"})
    payload: dict[str, Any] = {"settings": settings, "files": _file_identities(resolved_path),
                               "adapter": adapter_digest(model_settings.adapter)}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def adapter_digest(adapter: str | Path | None) -> str | None:
    """sha256 over the files of a LoRA adapter directory (adapters are small: their content is hashed).

    Two adapters trained differently never share a cache entry, even at the same path.
    """
    if adapter is None:
        return None
    root = Path(adapter)
    if not root.is_dir():
        return f"missing:{adapter}"
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _file_identities(resolved_path: str | Path | None) -> list[list[Any]]:
    if resolved_path is None:
        return []
    root = Path(resolved_path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    else:
        return [[str(resolved_path), "not a local path"]]
    out: list[list[Any]] = []
    for path in files:
        stat = path.stat()
        name = str(path.relative_to(root)) if root.is_dir() else path.name
        if path.suffix in WEIGHT_SUFFIXES or stat.st_size > SMALL_FILE_BYTES:
            out.append([name, stat.st_size, stat.st_mtime_ns])
        else:
            out.append([name, hashlib.sha256(path.read_bytes()).hexdigest()])
    return out


def prompt_seed(seed: int, prompt: str) -> int:
    """The seed of one prompt's samples: the first 63 bits of sha256(``seed``, NUL, the prompt's text).

    Decided by the run's seed and the prompt alone, never by its position in a call, so every cut of the work
    gives a prompt the same draws; two seeds give a prompt unrelated draws. Written here: torch and vLLM seed a
    generator with one integer, and no library derives per-item seeds from text.

    >>> prompt_seed(3, "2+2?") == prompt_seed(3, "2+2?"), prompt_seed(3, "2+2?") == prompt_seed(4, "2+2?")
    (True, False)
    """
    digest = hashlib.sha256(f"{seed}\x00{prompt}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1
