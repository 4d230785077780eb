"""The data-construction section (AdaMame §3.1 and §3.3): source -> translation -> traces (-> RL set).

* ``DataSourceSettings``: English source problems with gold answers, from the hub
  or a local file (relative paths are relative to the project directory).
* ``TranslationSettings``: LLM translation into every target language, with gates
  and an optional 1-5 judge (AdaMame verified translations with a second model).
* ``TraceSettings``: teacher reasoning traces and their filter (format, language,
  correctness), capped per language.
* ``RejectionSettings``: selection of the RL set by sampling the policy. The
  number of rollouts per query is ``sampling.n`` (AdaMame: k = 8; keep
  ``0 < correct < n``): one field says it, so there is nothing to disagree with.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from components.settings.base import (
    MAX_ROWS, MAX_SEED, LcprRuleName, ProjectPath, RejectionStrategyName, StrictSettings, VerifierName, changed_fields,
)  # fmt: skip
from components.settings.evaluation import BenchmarkSettings
from components.settings.shared import ModelSettings, PromptSettings, SamplingSettings

HUB_ONLY = ("hub_config", "split")
PATH_ONLY = ("format",)


class DataSourceSettings(StrictSettings):
    """English source problems with gold answers (AdaMame §3.1 "Queries").

    Exactly one of ``hub`` (a Hugging Face dataset name, e.g.
    ``open-r1/DAPO-Math-17k-Processed``; needs the network; ``hub_config`` and
    ``split`` choose the table) or ``path`` (a local JSONL/JSON/parquet/TSV/CSV
    file; ``format`` ``auto`` goes by its suffix). Columns are mapped by name;
    ``answer_regex`` extracts the gold from a longer answer field (its first
    group, e.g. ``"####\\s*(.+)$"`` for GSM8K). ``benchmark`` names the evaluation
    benchmark the source is drawn from, so a profile that also evaluates on it is
    refused. ``reference_path`` is a per-language file of reference translations
    aligned row by row (``{lang}``: ISO code, ``{language}``: English name), as
    MSVAMP ships them; translations are scored against it with chrF.
    """

    name: str = "source"
    hub: str | None = None
    hub_config: str | None = None
    split: str = "train"
    path: ProjectPath | None = None
    format: Literal["auto", "jsonl", "json", "parquet", "tsv", "csv"] = "auto"
    question_column: str = "question"
    answer_column: str = "answer"
    id_column: str | None = None
    answer_regex: str | None = None
    benchmark: str | None = None
    limit: int | None = Field(default=None, ge=1, le=MAX_ROWS)
    reference_path: ProjectPath | None = None
    reference_column: str = "m_query"

    @model_validator(mode="after")
    def _one_origin(self) -> "DataSourceSettings":
        if (self.hub is None) == (self.path is None):
            raise ValueError("give exactly one of source.hub or source.path")
        unused = changed_fields(self, PATH_ONLY if self.hub else HUB_ONLY)
        if unused:
            origin = "hub" if self.hub else "path"
            raise ValueError(f"{', '.join(unused)}: not read for a source given by {origin}")
        return self


def _tokens(text: str) -> set[str]:
    return {part.lower() for part in re.split(r"[/\\]", text) if part}


def source_overlaps(source: DataSourceSettings, benchmarks: Iterable[BenchmarkSettings]) -> list[str]:
    """Evaluation benchmarks that the source is drawn from (name, hub path or directory match).

    >>> src = DataSourceSettings(path="data/msvamp/test_English.json")
    >>> source_overlaps(src, [BenchmarkSettings(name="msvamp"), BenchmarkSettings(name="mgsm")])
    ['msvamp']
    """
    origin = _tokens(source.hub or source.path or "")
    hits = []
    for bench in benchmarks:
        name = bench.name.lower()
        same_dir = bench.data_dir is not None and source.path is not None and (
            os.path.normpath(bench.data_dir) == os.path.normpath(str(Path(source.path).parent))
        )
        if source.benchmark == bench.name or name in origin or same_dir:
            hits.append(bench.name)
    return hits


class TranslationSettings(StrictSettings):
    """Translation of each source query into every target language; ``judge`` (optional) scores 1-5."""

    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(default_factory=lambda: SamplingSettings(max_new_tokens=512))
    judge: ModelSettings | None = None
    judge_sampling: SamplingSettings = Field(default_factory=lambda: SamplingSettings(max_new_tokens=8))
    judge_min_score: int = Field(default=4, ge=1, le=5)

    @model_validator(mode="after")
    def _judge_fields(self) -> "TranslationSettings":
        if self.judge is None and changed_fields(self, ("judge_sampling", "judge_min_score")):
            raise ValueError("judge_sampling/judge_min_score are read only when a judge model is given")
        return self


class TraceEarlyStopSettings(StrictSettings):
    """A probe of the teacher's yield before the whole trace set is generated (``components.data.trace_yield``).

    The first ``probe_per_language`` queries of each language are generated and filtered first; when the
    upper end of a language's 95% retention interval projects fewer than ``min_share`` of its target
    (``per_language``, or every query of the language), the stage stops there. ``probe_per_language``
    ``None`` generates everything at once; a language with no more queries than the probe is not probed.
    """

    probe_per_language: int | None = Field(default=100, ge=1, le=MAX_ROWS)
    min_share: float = Field(default=0.5, gt=0, le=1)


class TraceSettings(StrictSettings):
    """Teacher reasoning traces and their filter (AdaMame §3.1, appendix C.1).

    ``per_language`` caps the kept traces per language, sampled with ``seed``.
    ``from_file``: traces written beforehand instead of a teacher model — a JSONL
    of rows ``id, lang, question, gold, completion``, or MGSM's ``exemplars.json``
    (its step-by-step answers exist in every MGSM language). Such a stage reads no
    source and translates nothing; the filter still applies.
    ``exemplar_trace_language``: with ``exemplars.json``, every question (in each
    of ``languages``) gets the trace of the same exemplar written in this language
    instead of its own — e.g. ``en``: English reasoning for French, Japanese and
    Thai questions, the language confusion that English-centric SFT teaches and
    that the language-aware GRPO rewards set out to undo. ``None``: each
    question's own language. The language filter would drop those traces, so it
    must be ``none``.
    ``language_filter``: ``lcpr`` keeps a trace only when both LCPR levels pass
    (AdaMame: entirely in the query language), ``slc`` when its step-level
    language consistency is at least ``min_slc`` (a cold start that keeps
    code-switched traces, as PCS's curriculum assumes: it starts from low SLC),
    ``none`` keeps every language.
    ``early_stop``: the teacher's yield probed on the first queries of each language, and the stage stopped
    when it projects a set far below the target (``TraceEarlyStopSettings``).
    """

    from_file: ProjectPath | None = None
    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(temperature=1.0, max_new_tokens=2048)
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    verifier: VerifierName = "trusted"
    lcpr_rule: LcprRuleName = "adamame"
    words_path: ProjectPath | None = None
    language_filter: Literal["lcpr", "slc", "none"] = "lcpr"
    min_slc: float | None = Field(default=None, ge=0, le=1)
    per_language: int | None = Field(default=None, ge=1, le=MAX_ROWS)
    exemplar_trace_language: str | None = None
    early_stop: TraceEarlyStopSettings = Field(default_factory=TraceEarlyStopSettings)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _teacher_or_file(self) -> "TraceSettings":
        if self.from_file and changed_fields(self, ("model", "sampling", "early_stop")):
            raise ValueError("model/sampling/early_stop: traces read from_file are not generated; remove them")
        if self.exemplar_trace_language is not None:
            if not (self.from_file and str(self.from_file).endswith(".json")):
                raise ValueError("exemplar_trace_language is read only for from_file exemplars (MGSM's exemplars.json)")
            if self.language_filter != "none":
                raise ValueError(f"exemplar_trace_language {self.exemplar_trace_language!r} writes traces outside "
                                 f"the question's language, which language_filter {self.language_filter!r} drops: "
                                 "set language_filter to none")
        if (self.language_filter == "slc") != (self.min_slc is not None):
            raise ValueError("min_slc is given exactly when language_filter is slc "
                             f"(language_filter={self.language_filter!r}, min_slc={self.min_slc})")
        return self


class RejectionSettings(StrictSettings):
    """RL-set selection over the SFT set (AdaMame §3.3, appendix B.5, table 8).

    ``strategy``: ``zero_one_filter`` (``sampling.n`` rollouts, keep 0 < correct < n),
    ``random`` (no rollouts), ``conditional`` (one rollout, keep it if it is in
    the query language and wrong) or ``unsolved`` (``sampling.n`` rollouts, keep
    the queries the policy cannot solve yet: none correct). ``policy`` ``None``
    means the SFT model.
    ``english_references``: the policy also answers each kept query's English
    source question (``sampling.n`` samples) and the first correct answer
    reasoning in English becomes the row's ``en_reference`` (with
    ``en_question``): the references of M-Thinker's cross-lingual alignment reward.
    """

    strategy: RejectionStrategyName = "zero_one_filter"
    policy: ModelSettings | None = None
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(n=8, temperature=0.6, top_p=0.95, max_new_tokens=2048)
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    per_language: int | None = Field(default=1000, ge=1, le=MAX_ROWS)
    validation_per_language: int = Field(default=200, ge=0, le=MAX_ROWS)
    english_references: bool = False
    seed: int = Field(default=0, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _rollouts_fit_strategy(self) -> "RejectionSettings":
        n = self.sampling.n
        if self.strategy == "zero_one_filter" and n < 2:
            raise ValueError(f"zero_one_filter keeps 0 < correct < n: sampling.n must be at least 2, got {n}")
        if self.strategy == "conditional" and n != 1:
            raise ValueError(f"conditional judges one rollout per query: set sampling.n to 1 (got {n})")
        return self


class DataSettings(StrictSettings):
    """The data-construction stage: source -> translation -> traces (-> rejection after SFT).

    ``source`` (translated, then answered by the teacher) or ``traces.from_file``
    (traces written beforehand): exactly one.
    """

    source: DataSourceSettings | None = None
    languages: list[str] = Field(min_length=1)
    source_language: str = "en"
    translation: TranslationSettings = Field(default_factory=TranslationSettings)
    traces: TraceSettings = Field(default_factory=TraceSettings)
    rejection: RejectionSettings | None = None

    @model_validator(mode="after")
    def _one_origin(self) -> "DataSettings":
        if (self.source is None) == (self.traces.from_file is None):
            raise ValueError("give data.source (translated and answered by models) or data.traces.from_file "
                             "(traces written beforehand), exactly one")
        if self.source is None and changed_fields(self, ("translation", "source_language")):
            raise ValueError("translation/source_language: traces read from_file are not translated; remove them")
        return self
