"""The base of every profile section, registry-name checks, and the cache view of a section.

* ``StrictSettings``: every section rejects unknown keys (pydantic ``extra="forbid"``)
  and is frozen, so a misspelled key fails when the profile loads and a stage can
  never change the settings it was given. Floats are finite (``allow_inf_nan=False``:
  ``temperature: .inf`` is refused), and every number has an upper bound (the
  ``MAX_*`` below, generous but finite), so a typo such as ``sampling.n=10**30`` is
  refused naming its key instead of being sized into memory or sent to Prefect,
  whose database holds 64-bit integers. ``number_problems`` applies the same rules
  to values no field types (trl's keys of a trainer section, a reward's ``params``).
* Credentials in URLs: a section written out as JSON (``model_dump(mode="json")``: MLflow
  params, Prefect's flow-run parameters, ``--json``, ``profile.yaml``) has the user and
  password of every URL in its strings replaced by ``***`` (``http://***@host``; its
  ``repr`` too, which reaches logs and tracebacks), so a
  ``base_url: http://alice:PASS@host/v1`` reaches the backend from the settings object
  but no log. A hand-over to another process of ours that needs the secret (a job file,
  a fanned-out generation's work file, a profile shrunk for a pilot) dumps with the
  context ``{REVEAL_CREDENTIALS: True}``. A URL whose credentials were redacted is
  refused when it is validated again (``plain_url``), naming the key: it would reach
  the server as user ``***``.
* ``OPERATIONAL``: a section names the fields that decide *how* a stage runs but
  not *what* it computes (a timeout, a thread count, the name of the variable
  holding an API key), each with the reason. ``cache_view`` leaves exactly those
  out, so cache keys change with every other field and with nothing else.
* ``check_registered``: a field that names a registry entry (a backend, a verifier,
  a benchmark, a reward, a rejection strategy, an LCPR rule, a retriever, a shipped
  accelerate config, a packaged data set) is checked against the registry itself,
  through the ``Registries`` handed to the validation
  (``components.settings.registries``: the validation context's, else the process's),
  so settings import no other package of ours and stay a leaf that every component
  can import.
* ``ProjectPath``: a field naming a file or directory to read, relative to the
  project directory, or ``packaged:<set>[/<file>]`` for a data set shipped in
  the package (``components.data.packaged``; the set's name is checked when the
  profile loads, the path resolved with the others, ``profile.resolve_path``).

>>> class Demo(StrictSettings):
...     OPERATIONAL = {"timeout_s": "how long to wait, not what is computed"}
...     steps: int = 1
...     timeout_s: int = 60
>>> cache_view(Demo(steps=2, timeout_s=5))
{'steps': 2}
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, ClassVar, get_args

from pydantic import (
    AfterValidator, BaseModel, ConfigDict, SerializationInfo, SerializerFunctionWrapHandler, ValidationInfo,
    model_serializer,
)  # fmt: skip

from components.settings.registries import registries_for


class ProfileError(ValueError):
    """A profile that cannot be loaded; the message names the file and every bad key."""


MAX_SAMPLES = 10_000  # samples of one prompt (repeated-sampling pass@k curves reach 10^4)
MAX_TOKENS = 16_777_216  # 2^24 tokens of a context or a completion (the longest contexts are ~10^7)
MAX_ROWS = 100_000_000  # rows of a benchmark, a dataset or a selection
MAX_BATCH = 65_536  # prompts or examples in one batch
MAX_STEPS = 100_000_000  # optimizer steps, or steps between two events
MAX_WORKERS = 4_096  # threads, processes, concurrent requests, GPUs
MAX_SECONDS = 31_536_000  # a year: timeouts and intervals
MAX_SEED = 2**32 - 1  # numpy's legacy seeding, which transformers.set_seed calls, takes 0 .. 2^32 - 1
INT64 = 2**63 - 1  # the largest integer Prefect's database (and JSON readers in other languages) keeps


REVEAL_CREDENTIALS = "reveal_url_credentials"  # serialization-context key: keep URL credentials in a JSON dump
_USERINFO = re.compile(r'(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s"]*@')  # greedy: the authority's last @


def redact_credentials(value: Any) -> Any:
    """``value`` with the user and password of every URL in its strings (nested lists and mappings too) replaced
    by ``***``.

    >>> redact_credentials({"base_url": "http://alice:p@ss@127.0.0.1:8000/v1", "n": 2, "other": "http://h/a@b"})
    {'base_url': 'http://***@127.0.0.1:8000/v1', 'n': 2, 'other': 'http://h/a@b'}
    """
    if isinstance(value, str):
        return _USERINFO.sub(r"\g<scheme>***@", value) if "@" in value else value
    if isinstance(value, dict):
        return {key: redact_credentials(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_credentials(item) for item in value]
    return value


def credential_keys(value: Any, where: str) -> list[str]:
    """The dotted keys under ``where`` whose strings hold a URL with a user or password.

    >>> credential_keys({"model": {"base_url": "http://a:b@h/v1"}, "urls": ["http://h", "ftp://u@h"]}, "x")
    ['x.model.base_url', 'x.urls.1']
    """
    if isinstance(value, str):
        return [where] if redact_credentials(value) != value else []
    if isinstance(value, dict):
        return [key for name, item in value.items() for key in credential_keys(item, f"{where}.{name}")]
    if isinstance(value, (list, tuple)):
        return [key for index, item in enumerate(value) for key in credential_keys(item, f"{where}.{index}")]
    return []


def plain_url(value: str | None) -> str | None:
    """A URL setting as given; ``ValueError`` when its credentials are the ``***`` a written-out profile holds.

    >>> plain_url("http://alice:pw@host/v1")
    'http://alice:pw@host/v1'
    """
    if value is not None and "://***@" in value:
        raise ValueError(f"{value}: its credentials were redacted when a profile was written out (***); give the "
                         "user and password again, or a URL without them")
    return value


PlainUrl = Annotated[str, AfterValidator(plain_url)]


class StrictSettings(BaseModel):
    """Base of every section: unknown keys are errors, instances are immutable, floats finite, URLs' credentials
    left out of JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    OPERATIONAL: ClassVar[dict[str, str]] = {}

    def __repr_args__(self):  # repr() and str() reach logs and tracebacks: no URL's user or password either
        for name, value in super().__repr_args__():
            yield name, redact_credentials(value) if isinstance(value, (str, dict, list)) else value

    @model_serializer(mode="wrap")
    def _without_credentials(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo):
        data = handler(self)
        if info.mode_is_json() and not (info.context or {}).get(REVEAL_CREDENTIALS):
            return redact_credentials(data)
        return data


def number_problems(value: Any, where: str) -> list[str]:
    """Non-finite floats and integers beyond 64 bits inside ``value`` (nested lists and mappings), each named.

    >>> number_problems({"beta": float("inf"), "steps": [1, 10**30]}, "grpo")
    ['grpo.beta: inf is not a finite number', 'grpo.steps.1: 10**30 is beyond the 64-bit range (at most 2**63 - 1)']
    """
    if isinstance(value, bool):
        return []
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where}: {value} is not a finite number"]
    if isinstance(value, int) and abs(value) > INT64:
        shown = f"10**{len(str(abs(value))) - 1}" if str(abs(value)).strip("0") == "1" else f"{value:.3g}"
        return [f"{where}: {shown} is beyond the 64-bit range (at most 2**63 - 1)"]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in number_problems(item, f"{where}.{key}")]
    if isinstance(value, (list, tuple)):
        return [p for index, item in enumerate(value) for p in number_problems(item, f"{where}.{index}")]
    return []


def unknown_name_message(kind: str, name: str, known: Iterable[str]) -> str:
    """The one wording every unknown-name error uses.

    >>> unknown_name_message("backend", "nope", ["fake", "vllm"])
    "unknown backend 'nope' (known: fake, vllm)"
    """
    return f"unknown {kind} {name!r} (known: {', '.join(known)})"


def check_registered(kind: str, name: str, context: Mapping[str, Any] | None = None) -> str:
    """``name`` when it is registered for ``kind``; ``ValueError`` listing the known names otherwise (the registries
    of the validation ``context``, else the process's: ``components.settings.registries``)."""
    return registries_for(context).check(kind, name)


def registered(kind: str) -> Any:
    """A string type whose values must be registered for ``kind`` (checked item by item inside lists)."""

    def check(value: str, info: ValidationInfo) -> str:
        return check_registered(kind, value, info.context)

    return Annotated[str, AfterValidator(check)]


class ProjectPathMarker:
    """Marks a settings field that holds a path; relative values are relative to the project directory."""

    def __repr__(self) -> str:
        return "ProjectPath"


PACKAGED_PREFIX = "packaged:"


def check_project_path(value: str) -> str:
    """``value``; a ``packaged:<set>[/<file>]`` reference must name a shipped set and stay inside it.

    >>> check_project_path("packaged:mgsm/exemplars.json"), check_project_path("../data/x.json")
    ('packaged:mgsm/exemplars.json', '../data/x.json')
    >>> check_project_path("packaged:mgsm/../../x")
    Traceback (most recent call last):
    ValueError: packaged:mgsm/../../x: a packaged path names a file inside its set ('..' is not allowed)
    """
    if value.startswith(PACKAGED_PREFIX):
        name, _, inside = value.removeprefix(PACKAGED_PREFIX).partition("/")
        check_registered("packaged data set", name)
        if ".." in PurePosixPath(inside).parts:
            raise ValueError(f"{value}: a packaged path names a file inside its set ('..' is not allowed)")
    return value


def packaged_path(value: str) -> Path:
    """The absolute path a ``packaged:<set>[/<file>]`` reference names (``components.data.packaged``)."""
    name, _, inside = value.removeprefix(PACKAGED_PREFIX).partition("/")
    return Path(registries_for().packaged_directory(name)) / inside


ProjectPath = Annotated[str, ProjectPathMarker(), AfterValidator(check_project_path)]


def is_path_field(model: type[BaseModel], name: str) -> bool:
    """Whether field ``name`` of ``model`` is a ``ProjectPath`` (also inside ``Optional``)."""
    field = model.model_fields[name]
    return _has_marker(field.annotation) or any(isinstance(m, ProjectPathMarker) for m in field.metadata)


def _has_marker(annotation: Any) -> bool:
    if any(isinstance(meta, ProjectPathMarker) for meta in getattr(annotation, "__metadata__", ())):
        return True
    return any(_has_marker(arg) for arg in get_args(annotation))


BackendName = registered("backend")
VerifierName = registered("verifier")
BenchmarkName = registered("benchmark")
RejectionStrategyName = registered("rejection strategy")
LcprRuleName = registered("LCPR rule")


def changed_fields(section: BaseModel, names: Iterable[str]) -> list[str]:
    """The fields among ``names`` whose value differs from their default.

    Used to refuse a field that the rest of the section makes meaningless. The
    check is on values, not on which keys were given, so a dumped section
    (a deployment's parameters, a job file) validates again unchanged.
    """
    fields = type(section).model_fields
    return [name for name in names if section.__dict__[name] != fields[name].get_default(call_default_factory=True)]


def cache_view(value: Any) -> Any:
    """A section as plain JSON data without its ``OPERATIONAL`` fields (nested sections too).

    A trainer section's trl keys (its extra keys) count like fields.
    """
    if isinstance(value, StrictSettings):  # not getattr: reading a field is not consuming it
        stored = {**value.__dict__, **(value.__pydantic_extra__ or {})}
        return {name: cache_view(item) for name, item in stored.items() if name not in type(value).OPERATIONAL}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [cache_view(item) for item in value]
    if isinstance(value, dict):
        return {key: cache_view(item) for key, item in value.items()}
    return value
