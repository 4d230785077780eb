"""The papers' headline numbers as data: what a paper profile's run should be held against.

A paper profile (``profiles/<name>.yaml``) runs an experiment a paper reports; its table
file, ``profiles/papers/<name>.yaml``, lists the rows of the paper's tables that a run of
the profile measures, with the values as the paper prints them. Read from the papers'
texts by hand; nothing here computes a number.

A file holds ``scale`` (100 when the paper prints percentages, 1 for
fractions: a measured value is ``value / scale`` on the project's 0-1 scale), ``note``,
``problems`` (optional: benchmark -> the problems per language the paper's figures are over,
its n in independent units, which puts the paper's own sampling error into a comparison:
``components.reports.paper_comparison``) and ``rows``, a list of entries, one per (table row,
benchmark, metric); the paper's title and the text its numbers were read from are its spec's
(``components.reports.papers``: a shipped table is its profile's there), and a table of a project's own profile,
which no spec describes, may name its paper in ``paper``::

    - {table: Table 16, row: +AdaMame-GRPO, model: Qwen3-4B, measured_by: grpo,
       overrides: [...], benchmark: mgsm_rev2, metric: pass_at_4,
       values: {fr: 96.0, ja: 90.0, ..., all: 85.9}}

* ``table``, ``row``, ``model``: the paper's table, its row label and backbone, as printed;
* ``measured_by``: which evaluation of a run of the profile measures the row — a recipe's
  model tag (``base``, ``sft``, ``grpo``), ``evaluation`` (an evaluation profile's one
  model) or ``audit`` (the audit stage);
* ``overrides`` (optional): the ``key=value`` overrides of the profile whose run measures
  the row (a baseline's prompt, an ablation's reward); none: the profile as shipped;
* ``benchmark``: a benchmark registry name; ``verifier``: the audited proxy (audit rows);
* ``metric``: the project's metric name (``pass_at_4``, ``lcpr``, ``slc_and_acc``, ``ttc``,
  the QA metrics ``fem``/``c3recall``/``clr``, the audit's ``fnr``/``vlb_fnr`` …);
* ``values``: language (ISO 639-1) or language group (``all``, ``in_domain``,
  ``out_of_domain``, ``low``, ``mid``, ``high``: ``components.metrics.aggregate``) → value.

Optional fields of a row, for what a single printed number per cell cannot say:

* ``corrected``: language or group -> ``{value, evidence}``, for a cell the paper prints
  inconsistently with its own other tables (a swapped column, an average over the wrong
  languages). ``values`` keeps the cell as printed; ``value`` is the one a run is held against
  and ``evidence`` the arithmetic that shows it (which printed cells, which mean).
* ``scale``: the row's own unit when it is not the table's (a share printed in percent, 55,
  in a table of fractions).
* ``relation``: ``">"`` or ``"<"`` when the paper states a bound ("over 95 %"), not a value: a
  measurement is consistent when its interval reaches past the bound.
* ``before``: language or group -> the paper's value before a change whose result ``values``
  holds (a training audit's 0.647 -> 0.735); printed beside it, a run is held against ``values``.
* ``key``: the MLflow key of the measurement when it is not the default below (a figure the
  audit logs under its own prefix); ``{language}`` in it stands for the value's language or group.
* ``unmeasured``: why no run of the profile measures the row (a figure of a protocol the project
  does not run, a method it does not implement). The row is listed, never compared; it needs
  neither ``measured_by`` nor ``benchmark``, and its ``metric`` names the paper's figure freely.

``PaperRow.key`` is the MLflow key of the measured value in the run that measures it:
``evaluation/<benchmark>/<language>/<metric>``, or for the audit
``audit/<verifier>/<language>/<metric>`` (``audit/<verifier>/<metric>`` for a figure over
languages such as ``vlb_fnr``), unless the row's ``key`` says otherwise.

>>> rows = parse_table({"scale": 100, "rows": [{"table": "Table 2", "row": "PCS", "model": "Qwen3-8B-Base",
...     "measured_by": "grpo", "benchmark": "mmath", "metric": "slc_and_acc", "values": {"fr": 41.2}}]})
>>> rows[0].key, rows[0].fraction
('evaluation/mmath/fr/slc_and_acc', 0.412)
>>> fixed = parse_table({"scale": 100, "rows": [{"table": "Table 2", "row": "Vanilla", "model": "Qwen3-4B",
...     "measured_by": "base", "benchmark": "mgsm_rev2", "metric": "lcpr", "values": {"in_domain": 13.0},
...     "corrected": {"in_domain": {"value": 1.3, "evidence": "mean of table 16's fr, ja, ko, th"}}}]})
>>> fixed[0].value, fixed[0].corrected, fixed[0].fraction
(13.0, 1.3, 0.013)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.reports.papers import REPOSITORY_PROFILES, paper_of, table_of

SELECTION_METRICS = ("gap_recovered", "repairs_cross_lingual_share")  # components.audit.report: selection
MEASURED_BY = ("base", "sft", "grpo", "evaluation", "audit")
GROUPS = ("all", "in_domain", "out_of_domain", "low", "mid", "high")
QA_METRICS = ("em", "fem", "c3recall", "clr")  # components.metrics.qa, as the LcRL rollouts log them
AUDIT_METRICS = ("fnr", "fpr", "err", "pressure", "vlb_fnr", "vlb_fpr", "vlb_err",  # components.audit.report
                 "accuracy", *SELECTION_METRICS)
REQUIRED = ("table", "row", "model", "measured_by", "benchmark", "metric", "values")
OPTIONAL = ("overrides", "verifier", "corrected", "scale", "relation", "before", "key", "unmeasured")
UNMEASURED_OPTIONAL = ("measured_by", "benchmark")  # a row no run measures needs neither
RELATIONS = (">", "<")


@dataclass(frozen=True)
class PaperRow:
    """One number of a paper's table, and where a run of the profile reports its measurement."""

    table: str
    row: str
    model: str
    measured_by: str
    benchmark: str
    metric: str
    language: str
    value: float
    scale: float
    overrides: tuple[str, ...] = ()
    verifier: str | None = None
    problems: int | None = None  # the paper's n for this figure, in problems (None: the table does not say)
    corrected: float | None = None  # the value the paper's own other cells imply, where it prints another
    evidence: str | None = None  # how the corrected value follows from the printed cells
    relation: str | None = None  # ">" / "<": the paper states a bound, not a value
    before: float | None = None  # the paper's value before the change whose result ``value`` is
    key_template: str | None = None  # the measurement's MLflow key when not the default ({language})
    unmeasured: str | None = None  # why no run of the profile measures the row

    @property
    def held(self) -> float:
        """The value a run is held against, on the paper's scale: the corrected one where there is one."""
        return self.value if self.corrected is None else self.corrected

    @property
    def fraction(self) -> float:
        """The held value on the project's scale (0-1 for rates)."""
        return round(self.held / self.scale, 10)

    @property
    def printed_fraction(self) -> float:
        """The value as printed, on the project's scale."""
        return round(self.value / self.scale, 10)

    @property
    def key(self) -> str:
        """The MLflow metric key of the measured value in the run of ``measured_by``."""
        if self.key_template is not None:
            return self.key_template.replace("{language}", self.language)
        if self.measured_by != "audit":
            return f"evaluation/{self.benchmark}/{self.language}/{self.metric}"
        if self.metric.startswith("vlb_"):
            return f"audit/{self.verifier}/{self.metric}"
        return f"audit/{self.verifier}/{self.language}/{self.metric}"


def known_metric(name: str, measured_by: str) -> bool:
    """Whether ``name`` is a metric the stage of ``measured_by`` reports."""
    if measured_by == "audit":
        return name in AUDIT_METRICS
    if name in QA_METRICS:
        return True
    from components.metrics.registry import metric_for

    try:
        metric_for(name)
    except KeyError:
        return False
    return True


def _language_ok(lang: Any) -> bool:
    return isinstance(lang, str) and (lang in GROUPS or (len(lang) == 2 and lang.isalpha()))


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _values_problems(name: str, values: Any, allowed: set | None = None) -> list[str]:
    """A ``values``-like field: a non-empty mapping of language or group to a number."""
    if not isinstance(values, Mapping) or not values:
        return [f"field '{name}': expected a mapping of language or group to value"]
    problems = []
    for lang, value in values.items():
        if not _language_ok(lang):
            problems.append(f"field '{name}': {lang!r} is neither a language code nor a group ({', '.join(GROUPS)})")
        elif allowed is not None and lang not in allowed:
            problems.append(f"field '{name}': {lang!r} has no value in 'values'")
        if name != "corrected" and not _number(value):
            problems.append(f"field '{name}': {lang}: expected a number, got {value!r}")
    return problems


def _corrected_problems(corrected: Any, allowed: set) -> list[str]:
    problems = _values_problems("corrected", corrected, allowed)
    for lang, cell in (corrected.items() if isinstance(corrected, Mapping) else ()):
        if not (isinstance(cell, Mapping) and set(cell) == {"value", "evidence"} and _number(cell["value"])
                and isinstance(cell["evidence"], str) and cell["evidence"].strip()):
            problems.append(f"field 'corrected': {lang}: expected {{value: number, evidence: text}}, got {cell!r}")
    return problems


def _optional_problems(entry: Mapping) -> list[str]:
    """The optional fields' own checks (see the module docstring)."""
    allowed = set(entry["values"]) if isinstance(entry["values"], Mapping) else set()
    problems = []
    if "corrected" in entry:
        problems += _corrected_problems(entry["corrected"], allowed)
    if "before" in entry:
        problems += _values_problems("before", entry["before"], allowed)
    if "scale" in entry and entry["scale"] not in (1, 100):
        problems.append(f"field 'scale': expected 1 (fractions) or 100 (percentages), got {entry['scale']!r}")
    if "relation" in entry and entry["relation"] not in RELATIONS:
        problems.append(f"field 'relation': expected one of {', '.join(RELATIONS)}, got {entry['relation']!r}")
    if "key" in entry and not (isinstance(entry["key"], str) and entry["key"].count("/") >= 1):
        problems.append(f"field 'key': expected an MLflow key such as audit/selection/{{language}}/gap_recovered, "
                        f"got {entry['key']!r}")
    if "unmeasured" in entry and not (isinstance(entry["unmeasured"], str) and entry["unmeasured"].strip()):
        problems.append("field 'unmeasured': expected the reason no run measures the row")
    return problems


def entry_problems(entry: Any) -> list[str]:
    """What is wrong with one entry of ``rows``, field by field."""
    if not isinstance(entry, Mapping):
        return [f"expected a mapping, got {type(entry).__name__}"]
    unmeasured = "unmeasured" in entry
    required = [name for name in REQUIRED if not (unmeasured and name in UNMEASURED_OPTIONAL)]
    problems = [f"field '{name}': missing" for name in required if name not in entry]
    problems += [f"field '{name}': unknown (known: {', '.join(REQUIRED + OPTIONAL)})" for name in entry
                 if name not in REQUIRED + OPTIONAL]
    if problems:
        return problems
    problems = _values_problems("values", entry["values"]) + _optional_problems(entry)
    if unmeasured:
        if "measured_by" in entry and entry["measured_by"] not in MEASURED_BY:
            problems.append(f"field 'measured_by': {entry['measured_by']!r} (known: {', '.join(MEASURED_BY)})")
        return problems
    if entry["measured_by"] not in MEASURED_BY:
        problems.append(f"field 'measured_by': {entry['measured_by']!r} (known: {', '.join(MEASURED_BY)})")
    elif not known_metric(str(entry["metric"]), entry["measured_by"]):
        problems.append(f"field 'metric': {entry['metric']!r} is not a metric the {entry['measured_by']} reports")
    if (entry["measured_by"] == "audit") != ("verifier" in entry):
        problems.append("field 'verifier': audit rows name the audited verifier, other rows do not")
    return problems


def parse_table(data: Any, source: str = "<table>") -> list[PaperRow]:
    """The rows of a loaded table file, one ``PaperRow`` per value; ``ValueError`` naming row and field."""
    if not isinstance(data, Mapping) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{source}: expected a mapping with a 'rows' list")
    scale = data.get("scale")
    if scale not in (1, 100):
        raise ValueError(f"{source}: field 'scale': expected 1 (fractions) or 100 (percentages), got {scale!r}")
    sizes = paper_sizes(data.get("problems"), source)
    problems = [f"{source}: rows.{index}: {problem}" for index, entry in enumerate(data["rows"])
                for problem in entry_problems(entry)]
    if problems:
        raise ValueError("\n".join(problems))
    return [_row(entry, lang, value, float(scale), sizes) for entry in data["rows"]
            for lang, value in entry["values"].items()]


def _row(e: Mapping, lang: str, value: float, scale: float, sizes: Mapping[str, int]) -> PaperRow:
    """One ``PaperRow`` of a checked entry (``entry_problems``)."""
    corrected = (e.get("corrected") or {}).get(lang)
    before = (e.get("before") or {}).get(lang)
    benchmark = str(e.get("benchmark", "-"))
    return PaperRow(table=str(e["table"]), row=str(e["row"]), model=str(e["model"]),
                    measured_by=str(e.get("measured_by", "-")), benchmark=benchmark, metric=str(e["metric"]),
                    language=lang, value=float(value), scale=float(e.get("scale", scale)),
                    overrides=tuple(e.get("overrides") or ()), verifier=e.get("verifier"),
                    problems=sizes.get(benchmark),
                    corrected=None if corrected is None else float(corrected["value"]),
                    evidence=None if corrected is None else str(corrected["evidence"]),
                    relation=e.get("relation"), before=None if before is None else float(before),
                    key_template=e.get("key"), unmeasured=e.get("unmeasured"))


def paper_sizes(value: Any, source: str = "<table>") -> dict[str, int]:
    """The table's ``problems`` field: benchmark -> a positive whole number; ``ValueError`` naming the entry.

    >>> paper_sizes({"mgsm_rev2": 250}), paper_sizes(None)
    ({'mgsm_rev2': 250}, {})
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{source}: field 'problems': expected a mapping of benchmark to problems per language")
    bad = [name for name, count in value.items() if isinstance(count, bool) or not isinstance(count, int) or count < 1]
    if bad:
        raise ValueError(f"{source}: field 'problems': {', '.join(map(str, bad))}: expected a positive whole number")
    return {str(name): count for name, count in value.items()}


def table_path(profile_path: str | Path) -> Path:
    """Where the table file of a profile lives: ``papers/<name>.yaml`` beside it."""
    path = Path(profile_path)
    return path.parent / "papers" / path.name


def load_table(path: str | Path) -> list[PaperRow]:
    """``parse_table`` of a table file."""
    return parse_table(yaml.safe_load(Path(path).read_text(encoding="utf-8")), str(path))


def find_table(name: str, project_dir: str | Path) -> Path | None:
    """The table file of the profile called ``name``: in the project's ``profiles/papers/``, else its paper's
    (``components.reports.papers``)."""
    path = Path(project_dir) / "profiles" / "papers" / f"{name}.yaml"
    return path if path.is_file() else table_of(name)


def resolve_table(spec: str, project_dir: str | Path = ".") -> Path:
    """The table file ``spec`` names: a paper profile's path (its table beside it), a table file, or a profile
    name; ``ValueError`` saying what was looked for.

    >>> resolve_table("qwen2.5-3b-lcrl-mkqa").name
    'qwen2.5-3b-lcrl-mkqa.yaml'
    """
    path = Path(spec)
    if path.suffix in (".yaml", ".yml"):
        table = path if path.parent.name == "papers" else table_path(path)
        if table.is_file():
            return table
        raise ValueError(f"{spec}: no paper table at {table} (a paper profile's table is papers/<name>.yaml beside "
                         "it; the cpu-* twins have none: name their paper profile)")
    found = find_table(spec, project_dir)
    if found is None:
        raise ValueError(f"{spec}: no paper table named so in {Path(project_dir) / 'profiles' / 'papers'} or "
                         f"{REPOSITORY_PROFILES / 'papers'}")
    return found


def table_title(path: str | Path) -> str:
    """The paper a table file holds rows of: its spec's citation (a shipped table, named by its profile), else the
    file's ``paper`` field, else its name.

    >>> table_title(REPOSITORY_PROFILES / "papers" / "qwen3-8b-verifier-bias-evaluation.yaml")[:31]
    'Multilingual verifier bias in R'
    """
    paper = paper_of(Path(path).stem) if Path(path).resolve() == table_of(Path(path).stem) else None
    if paper is not None:
        return paper.citation
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return str(data.get("paper", Path(path).stem)) if isinstance(data, Mapping) else Path(path).stem
