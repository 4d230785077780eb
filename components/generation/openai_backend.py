"""OpenAI-compatible generation backend (a `vllm serve` endpoint or a hosted API).

Uses the ``openai`` package (``OpenAI(base_url=..., api_key=..., max_retries=0)``)
with our own retry loop so the policy is explicit and testable: 429 and 5xx
answers, timeouts and connection errors are retried with exponential backoff
(``backoff_s * 2**attempt``, capped, honouring a numeric ``Retry-After``), up to
``ModelSettings.max_retries`` times; other 4xx errors fail at once. Requests run
on at most ``ModelSettings.max_concurrency`` threads. Each sample is one request
(``n=1``, ``seed = sampling.seed + sample_index``), so every answer has its own
token count from ``usage`` and is cached by (model, prompt, parameters, seed) in
an :class:`~components.generation.api_cache.ApiCache`: a re-run never pays twice,
and raising ``n`` later reuses the samples already bought.

The key comes from the environment variable named by ``ModelSettings.api_key_env``
(the one environment read in ``components``: a secret must not travel through
profiles, caches or logs). It is held by the client only; ``repr`` never shows it.
A local server needs no key: with ``base_url`` set and no ``api_key_env`` the
placeholder ``"EMPTY"`` is sent (vLLM's convention).
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from components.generation.api_cache import ApiCache, cache_key

if TYPE_CHECKING:
    from components.settings import ModelSettings, SamplingSettings

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_STOP_STRINGS = 4  # the OpenAI API's limit on ``stop``


class MissingApiKeyError(ValueError):
    """The profile names an API-key variable that is not set (or names none for a hosted API)."""


def resolve_api_key(model: "ModelSettings", environ: Mapping[str, str]) -> str:
    """The API key for ``model``, read from ``environ[model.api_key_env]``.

    >>> from components.settings import ModelSettings
    >>> resolve_api_key(ModelSettings(backend="openai", model="m", base_url="http://127.0.0.1:8000/v1"), {})
    'EMPTY'
    >>> resolve_api_key(ModelSettings(backend="openai", model="m", api_key_env="K"), {"K": "s3cret"})
    's3cret'
    """
    name = model.api_key_env
    if name is None:
        if model.base_url is None:
            raise MissingApiKeyError(
                "the openai backend needs model.api_key_env (the name of the environment variable "
                "holding the API key) when no model.base_url of a local server is given"
            )
        return "EMPTY"
    value = environ.get(name, "").strip()
    if not value:
        raise MissingApiKeyError(
            f"the environment variable {name} (model.api_key_env) is not set or empty: "
            f"export {name}=<your API key> before running the openai backend for model {model.model!r}"
        )
    return value


def _status_of(error: BaseException) -> int | None:
    return getattr(error, "status_code", None)


def _retry_after(error: BaseException) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def is_retryable(error: BaseException) -> bool:
    """429/5xx (and 408/409), timeouts and connection errors are worth another try."""
    import openai

    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    return isinstance(error, openai.APIStatusError) and _status_of(error) in RETRY_STATUS


class OpenAIGenerator:
    """Generator over an OpenAI-compatible ``/v1/completions`` or ``/v1/chat/completions``."""

    name = "openai"

    def __init__(
        self,
        model: "ModelSettings",
        cache_dir: Path,
        *,
        api_key: str,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        timeout_s: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
        cache: bool = True,
    ) -> None:
        import openai

        self.model = model
        self.cache = ApiCache(Path(cache_dir) / "api") if cache else None
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.sleep = sleep
        self.retries_done = 0
        self._client = openai.OpenAI(
            base_url=model.base_url, api_key=api_key, max_retries=0, timeout=timeout_s
        )

    def __repr__(self) -> str:
        url = self.model.base_url  # shown without its user and password: a repr reaches logs
        shown = None if url is None else re.sub(r"//[^/?#\s]*@", "//***@", url, count=1)
        return f"OpenAIGenerator(model={self.model.model!r}, base_url={shown!r})"

    # ------------------------------------------------------------ requests

    def _parameters(self, sampling: "SamplingSettings") -> dict[str, Any]:
        budget = "max_completion_tokens" if self.model.chat else "max_tokens"
        return {"temperature": sampling.temperature, "top_p": sampling.top_p, budget: sampling.max_new_tokens}

    def _request(self, prompt: str, parameters: dict[str, Any], seed: int) -> dict[str, Any]:
        if self.model.chat:
            response = self._client.chat.completions.create(
                model=self.model.model,
                messages=[{"role": "user", "content": prompt}],
                n=1,
                seed=seed,
                **parameters,
            )
            text = response.choices[0].message.content or ""
        else:
            response = self._client.completions.create(
                model=self.model.model, prompt=prompt, n=1, seed=seed, **parameters
            )
            text = response.choices[0].text or ""
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        return {"text": text, "num_tokens": tokens}

    def _with_retries(self, prompt: str, parameters: dict[str, Any], seed: int) -> dict[str, Any]:
        attempt, limit = 0, self.model.max_retries
        while True:
            try:
                return self._request(prompt, parameters, seed)
            except Exception as error:  # narrowed just below: only retryable API errors loop
                if not is_retryable(error) or attempt >= limit:
                    raise
                wait = min(self.max_backoff_s, self.backoff_s * 2**attempt)
                hinted = _retry_after(error)
                if hinted is not None:
                    wait = min(self.max_backoff_s, max(wait, hinted))
                attempt += 1
                self.retries_done += 1
                self.sleep(wait)

    def _one(self, prompt: str, parameters: dict[str, Any], seed: int) -> dict[str, Any]:
        if self.cache is None:
            return self._with_retries(prompt, parameters, seed)
        key = cache_key(f"{self.model.base_url}|{self.model.model}|chat={self.model.chat}", prompt, parameters, seed)
        entry = self.cache.get(key)
        if entry is None:
            entry = self._with_retries(prompt, parameters, seed)
            self.cache.put(key, entry)
        return entry

    def generate(self, prompts: list[str], sampling: "SamplingSettings", stop: Sequence[str] = ()) -> list[list[Any]]:
        """``sampling.n`` completions per prompt, in prompt order.

        ``stop``: the API's ``stop`` takes at most 4 strings (OpenAI's limit); the
        first 4 are sent, and the caller's cut at every stop string does the rest.
        """
        from components.generation.base import Completion

        parameters = self._parameters(sampling)
        if stop:
            parameters["stop"] = list(stop)[:MAX_STOP_STRINGS]
        jobs = [(p, sampling.seed + i) for p in prompts for i in range(sampling.n)]
        with ThreadPoolExecutor(max_workers=self.model.max_concurrency) as pool:
            entries = list(pool.map(lambda job: self._one(job[0], parameters, job[1]), jobs))
        out: list[list[Any]] = []
        for index in range(len(prompts)):
            chunk = entries[index * sampling.n : (index + 1) * sampling.n]
            out.append([Completion(text=e["text"], num_tokens=e["num_tokens"]) for e in chunk])
        return out


def openai_backend(model: "ModelSettings", cache_dir: Path) -> OpenAIGenerator:
    """Registry factory: reads the key from the variable the profile names, refuses when missing."""
    return OpenAIGenerator(model, cache_dir, api_key=resolve_api_key(model, os.environ))
