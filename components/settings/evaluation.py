"""The evaluation section: a model, its sampling and prompts, benchmarks, and the scoring rules.

Cross-field rules checked here, so every entry point (the CLI, a deployment, a
flow parameter edited in the Prefect UI) refuses the same profiles:

* ``pass@k`` needs at least ``k`` samples per problem: ``max(pass_k)`` is at most
  ``sampling.n`` and every benchmark's own ``samples``;
* a benchmark appears once (list its languages in one entry): two entries of one
  benchmark would share its metric names and artifacts;
* the ``lcb`` LCPR rule needs its English word list (``words_path``);
* a QA benchmark (MKQA, XOR-TyDi, the offline QA set) is answered with the search
  loop at test time, so it needs ``search`` (which nothing else reads) and the
  plain prompt style (its prompt is the search instruction, not a math instruction).
"""

from __future__ import annotations

from typing import Literal

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from components.settings.base import (
    MAX_ROWS, MAX_SAMPLES, MAX_SEED, MAX_TOKENS, BenchmarkName, LcprRuleName, ProjectPath, StrictSettings,
    VerifierName,
)  # fmt: skip
from components.settings.registries import registries_for
from components.settings.search import SearchSettings
from components.settings.shared import ModelSettings, PromptSettings, SamplingSettings


class BenchmarkSettings(StrictSettings):
    """One benchmark: registry name, optional local directory, languages, limit per language.

    Without ``data_dir`` the benchmark is read from the Hugging Face hub;
    ``hub_languages`` reads only those languages from the hub and the others from
    ``data_dir`` (for a language the offline copy lacks). ``samples``: samples per
    problem for this benchmark (``None``: the section's ``sampling.n``), for
    protocols that report avg@4 on one benchmark and avg@1 on another (PCS).
    """

    name: BenchmarkName
    data_dir: ProjectPath | None = None
    hub_languages: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    limit: int | None = Field(default=None, ge=1, le=MAX_ROWS)
    offset: int = Field(default=0, ge=0, le=MAX_ROWS)
    selection: Literal["first", "sample"] = "first"
    sample_seed: int = Field(default=0, ge=0, le=MAX_SEED)
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES)

    @model_validator(mode="after")
    def _hub_languages(self) -> "BenchmarkSettings":
        if self.hub_languages and self.data_dir is None:
            raise ValueError("hub_languages: without data_dir every language is read from the hub; drop it")
        missing = [lang for lang in self.hub_languages if lang not in self.languages]
        if missing:
            raise ValueError(f"hub_languages {missing} must also be listed in languages")
        return self


class ScoringSettings(StrictSettings):
    """Scoring rules: verifier, answer extraction, LCPR rule, SLC threshold, TTC context, pass@k, language groups.

    ``extraction``: ``strict`` takes the last ``\\boxed{}`` after ``</think>`` and nothing
    else (the paper protocols); ``lenient`` falls back to answer phrases, the last
    number and short responses (``components.extraction``). Either way the share of
    answers only a fallback finds is reported per language (``fallback_share``).
    ``lcpr_beside``: further LCPR rules scored on the same traces and reported next to
    ``lcpr_rule`` as ``lcpr_<rule>`` (with ``lpr_<rule>``, ``wpr_<rule>``): a profile that
    reproduces a paper's table scores with the paper's definition and shows the corrected
    rule beside it. ``headline``: the accuracy the language table and the model comparison
    lead with, ``accuracy`` (mean correctness of the samples, avg@n) or ``pass_at_<k>`` for
    a ``k`` of ``pass_k`` (AdaMame's tables report Pass@4).
    ``slc_detector``: how each reasoning step's language is detected for SLC and SLC&Acc,
    ``lingua`` (the project's detector, as LCPR's) or ``langdetect`` (PCS's reference: each step
    detected whole by langdetect, seeded; ``components.metrics.slc``).
    ``bootstrap_resamples`` and ``bootstrap_seed``: the resampling of problems behind every
    reported standard error (``components.metrics.bootstrap``).
    """

    verifier: VerifierName = "trusted"
    extraction: Literal["strict", "lenient"] = "lenient"
    lcpr_rule: LcprRuleName = "adamame"
    lcpr_beside: list[LcprRuleName] = Field(default_factory=list)
    headline: str = "accuracy"
    slc_threshold: float = Field(default=0.9, ge=0, le=1)
    slc_detector: Literal["lingua", "langdetect"] = "lingua"
    max_context: int = Field(default=8192, ge=1, le=MAX_TOKENS)
    pass_k: list[int] = Field(default_factory=lambda: [1], min_length=1)
    words_path: ProjectPath | None = None
    in_domain: list[str] = Field(default_factory=lambda: ["fr", "pt", "ja", "ko", "th"])
    bootstrap_resamples: int = Field(default=1000, ge=100, le=1_000_000)
    bootstrap_seed: int = Field(default=0, ge=0, le=MAX_SEED)

    @field_validator("pass_k")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if any(k < 1 or k > MAX_SAMPLES for k in value):
            raise ValueError(f"every k must be at least 1 and at most {MAX_SAMPLES}, got {value}")
        return value

    @model_validator(mode="after")
    def _word_list(self) -> "ScoringSettings":
        needing = [rule for rule in (self.lcpr_rule, *self.lcpr_beside) if rule.startswith("lcb")]
        if needing and not self.words_path:
            raise ValueError(f"lcpr rule {needing[0]!r} needs words_path (the LCB English word list)")
        if self.lcpr_rule in self.lcpr_beside or len(set(self.lcpr_beside)) < len(self.lcpr_beside):
            raise ValueError(f"lcpr_beside {self.lcpr_beside} repeats a rule (lcpr_rule is {self.lcpr_rule!r}): each "
                             "rule is reported once")
        return self

    @model_validator(mode="after")
    def _headline_is_reported(self) -> "ScoringSettings":
        known = ["accuracy", *(f"pass_at_{k}" for k in self.pass_k)]
        if self.headline not in known:
            raise ValueError(f"headline {self.headline!r} is not a reported accuracy (known with pass_k "
                             f"{self.pass_k}: {', '.join(known)})")
        return self


class EvaluationSettings(StrictSettings):
    """The evaluation stage: generate every benchmark with one model and score it.

    ``search``: the retrieval loop QA benchmarks are answered with (LcRL's test-time
    retrieval, ``components.generation.search_generator``); set exactly when a QA benchmark
    is listed. ``baseline``: what the recipe's comparison of its evaluated models takes
    each delta against: one of them (``base``, ``sft``, ``grpo``), or ``previous``, each
    model against the one evaluated before it (SFT - base, GRPO - SFT: what each stage
    added). ``polyreason compare --baseline`` chooses the same for a comparison of runs.
    ``evaluate_base``: whether a recipe evaluates its base model beside the models it trains
    (false: only the trained ones, for a paper whose table has no row for the base; the
    ``evaluate`` command evaluates the base model whatever it says).
    """

    OPERATIONAL = {"evaluate_base": "which models a recipe evaluates, not what an evaluation of a model computes"}

    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    benchmarks: list[BenchmarkSettings] = Field(default_factory=list)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    search: SearchSettings | None = None
    baseline: Literal["base", "sft", "grpo", "previous"] = "base"
    evaluate_base: bool = True

    def qa_benchmarks(self, context: Mapping[str, Any] | None = None) -> list[str]:
        """The listed benchmarks that are open-domain QA (answered with the search loop, QA metrics): their spec's
        kind, through the registries of the validation ``context`` or the process's."""
        registries = registries_for(context)
        return [bench.name for bench in self.benchmarks if registries.benchmark_kind(bench.name) == "qa"]

    @model_validator(mode="after")
    def _search_for_qa(self, info: ValidationInfo) -> "EvaluationSettings":
        qa = self.qa_benchmarks(info.context)
        if qa and self.search is None:
            raise ValueError(f"benchmarks {', '.join(qa)} are QA benchmarks, answered with the retrieval loop at test "
                             "time: set evaluation.search (retrieval, rounds, max_searches ...)")
        if self.search is not None and not qa:
            raise ValueError("search is read by QA benchmarks only and none is listed; drop evaluation.search")
        if qa and self.prompt.style != "plain":
            raise ValueError(f"prompt.style {self.prompt.style!r}: the QA benchmarks ({', '.join(qa)}) are prompted "
                             "with the search instruction alone; set evaluation.prompt.style plain")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> "EvaluationSettings":
        fewest = min([self.sampling.n, *(b.samples for b in self.benchmarks if b.samples is not None)])
        if max(self.scoring.pass_k) > fewest:
            raise ValueError(f"scoring.pass_k asks for pass@{max(self.scoring.pass_k)} but a benchmark gets "
                             f"{fewest} sample(s) (sampling.n or its samples): pass@k needs at least k samples "
                             "per problem")
        if not self.evaluate_base and self.baseline == "base":
            raise ValueError("evaluation.baseline 'base': with evaluate_base false the recipe does not evaluate the "
                             "base model; set baseline to sft, grpo or previous")
        names = [bench.name for bench in self.benchmarks]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"benchmarks: {', '.join(repeated)} listed more than once; list all its languages "
                             "in one entry (two entries would share one benchmark's metric names and artifacts)")
        return self

    def sampling_for(self, benchmark: BenchmarkSettings) -> SamplingSettings:
        """The section's sampling with the benchmark's own sample count, when it has one."""
        if benchmark.samples is None or benchmark.samples == self.sampling.n:
            return self.sampling
        return self.sampling.model_copy(update={"n": benchmark.samples})
