"""The data-construction stages as functions over parquet tables (AdaMame §3.1 and §3.3).

Each ``build_*`` reads its inputs from paths, writes its tables as parquet under
the ``out_dir`` it is given and returns a JSON-ready summary (counts, retention,
chrF, table paths); the Prefect tasks in ``tasks/data.py`` are thin adapters over
them and log every table to MLflow as a dataset input with its digest. Tables:

* ``source.parquet`` / ``source_problems.parquet`` (bad rows with ``FILE:LINE``);
* ``translations.parquet`` / ``translations_rejected.parquet`` (``reason``, ``detail``);
* ``sft.parquet`` (kept triplets, capped per language) / ``traces_rejected.parquet``;
* ``rollouts.parquet``, ``rl_train.parquet``, ``rl_validation.parquet``.

Prompts follow the generator: a chat model behind a local backend
(transformers/vLLM) gets the tokenizer's chat template here; an API backend gets
the user text and applies the template server-side.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.settings import (
        DataSourceSettings, ModelSettings, PromptSettings, RejectionSettings, TraceSettings, TranslationSettings,
    )  # fmt: skip

LOCAL_BACKENDS = ("transformers", "vllm")

COLUMNS = {
    "source": ["id", "row", "question", "gold", "source"],
    "source_problems": ["location", "row", "reason", "detail"],
    "translations": ["id", "row", "question", "gold", "source", "lang", "source_question", "judge_score"],
    "translations_rejected": ["id", "row", "question", "gold", "source", "lang", "source_question",
                              "judge_score", "reason", "detail"],
    "sft": ["id", "lang", "question", "gold", "prompt", "completion"],
    "traces_rejected": ["id", "lang", "question", "gold", "prompt", "completion", "reasons", "reason"],
    "rollouts": ["id", "lang", "sample_index", "completion", "correct", "in_language"],
    "rl_train": ["id", "lang", "question", "gold", "prompt"],
    "rl_validation": ["id", "lang", "question", "gold", "prompt"],
}  # fmt: skip


def write_table(rows: list[dict[str, Any]], path: Path, table: str) -> Path:
    """Write rows as parquet (the declared columns first; an empty table keeps its schema)."""
    import pandas as pd

    columns = COLUMNS[table]
    extra = [c for r in rows[:1] for c in r if c not in columns]
    frame = pd.DataFrame.from_records(rows, columns=columns + extra) if rows else pd.DataFrame(columns=columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return path


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a parquet table as plain dicts."""
    import pandas as pd

    return pd.read_parquet(path).to_dict(orient="records")


def render_prompts(rows: list[dict[str, Any]], prompt: "PromptSettings", model: "ModelSettings",
                   cache_dir: Path) -> list[str]:
    """Generation prompts for ``rows`` under ``model`` (chat template applied for local chat models)."""
    from components.data.prompts import build_prompts
    from components.data.traces import to_items

    if model.chat and model.backend in LOCAL_BACKENDS:
        from transformers import AutoTokenizer

        from components.generation.base import resolve_model

        tokenizer = AutoTokenizer.from_pretrained(resolve_model(model, cache_dir).path)
        return build_prompts(to_items(rows), prompt, tokenizer=tokenizer, chat=True, thinking=model.thinking)
    return build_prompts(to_items(rows), prompt, chat=False)


def _detector(languages: list[str]):
    from components.language import get_detector

    return get_detector(languages)


class NothingKeptError(RuntimeError):
    """A stage kept no row: the next stage would train or sample on nothing."""


def require_rows(count: int, stage: str, report: dict[str, Any]) -> None:
    """Refuse to go on when ``count`` is 0, with the stage's per-language report in the message.

    >>> require_rows(3, "traces", {})
    >>> require_rows(0, "traces", {"fr": {"rate": 0.0}})
    Traceback (most recent call last):
    ...
    components.data.datasets.NothingKeptError: traces: nothing was kept, so there is nothing to go on with; per language: {"fr": {"rate": 0.0}}
    """
    if count <= 0:
        import json

        detail = json.dumps(report, ensure_ascii=False, sort_keys=True)
        raise NothingKeptError(f"{stage}: nothing was kept, so there is nothing to go on with; per language: {detail}")


def build_source(source: "DataSourceSettings", out_dir: Path) -> dict[str, Any]:
    """Load and check the source problems; bad rows are reported and dropped."""
    from components.data.sources import load_source

    loaded = load_source(source)
    write_table(loaded.rows, out_dir / "source.parquet", "source")
    write_table(loaded.problems, out_dir / "source_problems.parquet", "source_problems")
    return {"rows": len(loaded.rows), "dropped": len(loaded.problems), "problems": loaded.problems[:50]}


def build_translations(settings: "TranslationSettings", source: "DataSourceSettings", languages: list[str],
                       source_language: str, source_path: Path, out_dir: Path,
                       cache_dir: Path) -> dict[str, Any]:
    """Translate, gate, judge; report acceptance and chrF per language."""
    from components.data.sources import load_references
    from components.data.translation import chrf_by_language, translate_rows
    from components.generation import build_generator

    rows = read_table(source_path)
    judge = build_generator(settings.judge, cache_dir) if settings.judge else None
    result = translate_rows(
        rows, languages, build_generator(settings.model, cache_dir), settings.sampling,
        _detector([*languages, source_language]), source_lang=source_language, judge=judge,
        judge_sampling=settings.judge_sampling, judge_min_score=settings.judge_min_score,
    )  # fmt: skip
    write_table(result.accepted, out_dir / "translations.parquet", "translations")
    write_table(result.rejected, out_dir / "translations_rejected.parquet", "translations_rejected")
    chrf = chrf_by_language(result, load_references(source, languages))
    per_lang = {}
    for lang in languages:
        ok = sum(1 for r in result.accepted if r["lang"] == lang)
        bad = [r["reason"] for r in result.rejected if r["lang"] == lang]
        reasons = {f"reason_{name}": float(bad.count(name)) for name in sorted(set(bad))}
        per_lang[lang] = {"accepted": float(ok), "rejected": float(len(bad)),
                          "rate": ok / (ok + len(bad)) if ok + len(bad) else 0.0, **reasons, **chrf.get(lang, {})}
    return {"accepted": len(result.accepted), "rejected": len(result.rejected), "languages": per_lang}


def build_traces(settings: "TraceSettings", languages: list[str], translations_path: Path, out_dir: Path,
                 cache_dir: Path) -> dict[str, Any]:
    """Teacher traces, filtered (format, language, correctness), capped per language."""
    from components.data.traces import cap_per_language, filter_traces, retention, user_prompts
    from components.generation import build_generator
    from components.metrics.lcpr import load_english_words
    from components.verification import get_verifier

    rows = read_table(translations_path)
    for row, user in zip(rows, user_prompts(rows, settings.prompt)):
        row["prompt"] = user
    prompts = render_prompts(rows, settings.prompt, settings.model, cache_dir)
    words = load_english_words(settings.words_path) if settings.words_path else None
    keep = lambda some, texts: filter_traces(  # noqa: E731
        some, texts, _detector(languages), get_verifier(settings.verifier), rule=settings.lcpr_rule, words=words,
        language_filter=settings.language_filter, min_slc=settings.min_slc)
    texts, probed = probed_traces(settings, rows, prompts, build_generator(settings.model, cache_dir), keep)
    kept, rejected = keep(rows, texts)
    sft_rows = cap_per_language(kept, settings.per_language, settings.seed)
    write_table(sft_rows, out_dir / "sft.parquet", "sft")
    write_table(rejected, out_dir / "traces_rejected.parquet", "traces_rejected")
    return {"kept": len(kept), "sft_rows": len(sft_rows), "rejected": len(rejected),
            "retention": retention(kept, rejected, languages),
            "yield": {p.language: p.as_dict() for p in probed}}  # fmt: skip


def probed_traces(settings: "TraceSettings", rows: list[dict[str, Any]], prompts: list[str], generator: Any,
                  keep: Any) -> tuple[list[str], list[Any]]:
    """Every row's trace, the probe's rows first: refused when the probe projects too few kept traces.

    Returns the traces in row order and the probe's projections (none when nothing was probed: no
    probe set, or no language with more queries than the probe).
    """
    from components.data.trace_yield import project, refuse_shortfall, split_probe
    from components.data.traces import generate_traces

    size = settings.early_stop.probe_per_language
    probe, rest = split_probe(rows, size) if size and rows else (list(range(len(rows))), [])
    if not rest:
        return (generate_traces(rows, prompts, generator, settings.sampling) if rows else []), []
    pick = lambda indices, items: [items[i] for i in indices]  # noqa: E731
    probe_texts = generate_traces(pick(probe, rows), pick(probe, prompts), generator, settings.sampling)
    probe_kept, _ = keep(pick(probe, rows), probe_texts)
    projections = project(probe_kept, pick(probe, rows), rows, settings.per_language)
    refuse_shortfall(projections, settings.early_stop.min_share)
    rest_texts = generate_traces(pick(rest, rows), pick(rest, prompts), generator, settings.sampling)
    texts = dict(zip(probe, probe_texts)) | dict(zip(rest, rest_texts))
    return [texts[i] for i in range(len(rows))], projections


def build_traces_from_file(settings: "TraceSettings", languages: list[str], out_dir: Path) -> dict[str, Any]:
    """Traces written beforehand (``settings.from_file``), filtered and capped like generated ones."""
    from components.data.teacher_file import read_teacher_file
    from components.data.traces import cap_per_language, filter_traces, retention, user_prompts
    from components.metrics.lcpr import load_english_words
    from components.verification import get_verifier

    rows, problems = read_teacher_file(settings.from_file, languages, settings.exemplar_trace_language)
    texts = [row.pop("completion") for row in rows]
    for row, user in zip(rows, user_prompts(rows, settings.prompt)):
        row["prompt"] = user
    words = load_english_words(settings.words_path) if settings.words_path else None
    kept, rejected = filter_traces(rows, texts, _detector(languages), get_verifier(settings.verifier),
                                   rule=settings.lcpr_rule, words=words, language_filter=settings.language_filter,
                                   min_slc=settings.min_slc)
    sft_rows = cap_per_language(kept, settings.per_language, settings.seed)
    write_table(sft_rows, out_dir / "sft.parquet", "sft")
    write_table(rejected, out_dir / "traces_rejected.parquet", "traces_rejected")
    return {"kept": len(kept), "sft_rows": len(sft_rows), "rejected": len(rejected), "file_problems": problems[:50],
            "skipped_rows": len(problems), "retention": retention(kept, rejected, languages)}


def build_rl_set(settings: "RejectionSettings", verifier: str, languages: list[str], sft_path: Path,
                 policy: "ModelSettings", out_dir: Path, cache_dir: Path) -> dict[str, Any]:
    """Sample the policy on the SFT queries, select by strategy, cap per language, hold out validation."""
    from components.data.rejection import get_strategy, outcomes, select, selection_summary, split_train_validation
    from components.data.traces import open_think
    from components.generation import build_generator
    from components.verification import get_verifier

    strategy = get_strategy(settings.strategy)
    keep = [*COLUMNS["rl_train"], *(["source_question"] if settings.english_references else [])]
    rows = [{k: r.get(k) for k in keep} for r in read_table(sft_path)]
    n = strategy.rollouts(settings.sampling.n)
    roll_rows: list[dict[str, Any]] = []
    if n and rows:
        prompts = render_prompts(rows, settings.prompt, policy, cache_dir)
        outputs = build_generator(policy, cache_dir).generate(prompts, settings.sampling)
        texts = [[open_think(p) + c.text for c in completions] for p, completions in zip(prompts, outputs)]
        roll_rows = outcomes(rows, texts, _detector(languages), get_verifier(verifier))
    selected = select(rows, roll_rows, strategy)
    train, validation = split_train_validation(selected, settings.per_language, settings.validation_per_language,
                                               settings.seed)
    if settings.english_references:
        add_english_references([*train, *validation], settings, verifier, policy, cache_dir)
    write_table(roll_rows, out_dir / "rollouts.parquet", "rollouts")
    write_table(train, out_dir / "rl_train.parquet", "rl_train")
    write_table(validation, out_dir / "rl_validation.parquet", "rl_validation")
    return {"strategy": strategy.name, "rollouts_per_query": n, "selected": len(selected), "train": len(train),
            "validation": len(validation),
            "languages": selection_summary(rows, selected, train, validation, roll_rows, languages)}


def add_english_references(rows: list[dict[str, Any]], settings: "RejectionSettings", verifier: str,
                           policy: "ModelSettings", cache_dir: Path) -> None:
    """Set ``en_question`` and ``en_reference`` (the reasoning of the policy's first correct English answer to
    the source question, ``None`` when none of ``sampling.n`` samples is correct and in English) on every row."""
    from components.data.rejection import in_query_language
    from components.data.traces import open_think
    from components.generation import build_generator
    from components.verification import get_verifier, split_think

    for row in rows:
        question = row.pop("source_question", None)
        row["en_question"], row["en_reference"] = (question if isinstance(question, str) and question else None), None
    asked = [row for row in rows if row["en_question"]]
    if not asked:
        return
    english = [{"id": r["id"], "lang": "en", "question": r["en_question"], "gold": r["gold"]} for r in asked]
    prompts = render_prompts(english, settings.prompt, policy, cache_dir)
    outputs = build_generator(policy, cache_dir).generate(prompts, settings.sampling)
    detector, verify = _detector(["en", *sorted({r["lang"] for r in rows})]), get_verifier(verifier)
    for row, prompt, completions in zip(asked, prompts, outputs):
        for text in (open_think(prompt) + c.text for c in completions):
            if verify(text, str(row["gold"]), "en").correct and in_query_language(text, "en", detector):
                row["en_reference"] = split_think(text).trace
                break


def summary_metrics(stage: str, step: str, summary: dict[str, Any]) -> dict[str, float]:
    """MLflow metrics ``<stage>/<step>/<name>`` and ``<stage>/<step>/<name>/<lang>`` from a step summary.

    >>> summary_metrics("data", "traces", {"kept": 1, "retention": {"fr": {"rate": 0.5}}, "note": "x"})
    {'data/traces/kept': 1.0, 'data/traces/rate/fr': 0.5}
    """
    out = {f"{stage}/{step}/{k}": float(v) for k, v in summary.items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}  # fmt: skip
    for group in ("languages", "retention", "yield"):
        for lang, values in (summary.get(group) or {}).items():
            out.update({f"{stage}/{step}/{name}/{lang}": float(v) for name, v in values.items()})
    return out
