"""What can be checked from a profile alone, before any Prefect or MLflow work: every problem at once.

A profile can be valid and still unable to run: a data directory that is not
there, a language a benchmark does not have, an exemplars file with a typo, a
local model path that does not exist (the hub would be asked for it, with
retries), an API key that is not exported, an endpoint nobody listens on, a
tracking store that cannot be reached or written. Found inside a flow, each
costs a Prefect start, a FAILED run and a long traceback; found here, a command
refuses to start with one line per problem, each naming the key and the path
or URL (``Refused``).

The checks look at the sections the command runs (``sections``) and never at
the network beyond a short connection to the URLs the profile names. The plan
of those sections (``components.planning``: a curriculum its steps cannot
complete, a length above the model's context …) is checked next, then the task
runner a fan-out needs (its optional package), the tracking store
(``cli.store_check``), the free space where the project's state is written
(``cli.disk_space``), and last whether a server of the project's ``polyreason up``
stack is down (``cli.stack.stack_problems``: its runs would go elsewhere).
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from components.settings import ModelSettings, Profile, StrictSettings, redact_credentials
from components.settings.base import is_path_field

CONNECT_TIMEOUT_S = 3.0
LOCAL_BACKENDS = ("transformers", "vllm")
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


class Refused(Exception):
    """A command that cannot start; the message lists every problem, one per line."""

    def __init__(self, problems: list[str], source: str = ""):
        self.problems = problems
        head = f"{source}: " if source else ""
        text = problems[0] if len(problems) == 1 else f"{len(problems)} problems:\n" + "\n".join(
            f"  - {problem}" for problem in problems)
        super().__init__(head + text)


def walk(section: Any, where: str) -> Iterator[tuple[str, StrictSettings, str]]:
    """``(dotted key, section, field name)`` for every field of ``section`` and the sections inside it."""
    if not isinstance(section, StrictSettings):
        return
    for name in type(section).model_fields:
        value = section.__dict__[name]
        key = f"{where}.{name}"
        yield key, section, name
        if isinstance(value, StrictSettings):
            yield from walk(value, key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, f"{key}.{index}")


def path_problems(section: Any, where: str) -> list[str]:
    """Every path field that names something not on disk (all profile paths are inputs).

    A path with placeholders (``test_{language}.json``: one file per language, missing ones skipped by
    their reader) is checked by its directory.
    """
    problems = []
    for key, owner, name in walk(section, where):
        value = owner.__dict__[name]
        if not isinstance(value, str) or not is_path_field(type(owner), name):
            continue
        path = Path(value).expanduser()
        if "{" in path.name and "{" not in str(path.parent):
            path = path.parent
        if "{" not in str(path) and (problem := unreadable(path)):
            problems.append(f"{key}: {path} {problem}")
    return problems


def unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be read (``does not exist``, a symbolic-link loop, no permission), or ``None``.

    ``Path.exists`` says ``False`` for all of them; ``os.stat``'s error tells them apart.

    >>> import tempfile; loop = Path(tempfile.mkdtemp()) / "a"; loop.symlink_to(loop)
    >>> unreadable(loop), unreadable(loop.parent / "b"), unreadable(loop.parent)
    ('is a symbolic-link loop (it leads back to itself)', 'does not exist', None)
    """
    try:
        os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a part of its path is a file)"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a symbolic-link loop (it leads back to itself)"
        return f"cannot be read ({error.strerror})"
    return None


def benchmark_problems(section: Any, where: str) -> list[str]:
    """Languages a benchmark's local copy does not have (its files, as the loader reads them); a copy shipped in
    the package holds only what the CPU profiles read, so the problem then says where the others are."""
    from components.data.benchmarks import available_languages
    from components.data.packaged import packaged_set

    problems = []
    for index, bench in enumerate(getattr(section, "benchmarks", None) or []):
        if bench.data_dir is None or not Path(bench.data_dir).is_dir():
            continue  # the hub copy, or a missing directory (already reported)
        available = available_languages(bench.name, bench.data_dir)
        missing = [lang for lang in bench.languages if lang not in available]
        if missing:
            shipped = packaged_set(bench.data_dir)
            hint = (f"; packaged:{shipped} ships only these: set data_dir to a full copy, or unset it to read the "
                    f"hub copy (or list the others in hub_languages)") if shipped else ""
            problems.append(f"{where}.benchmarks.{index}.languages: {bench.name} has no {', '.join(missing)} in "
                            f"{bench.data_dir} (it has: {', '.join(available) or 'nothing'}){hint}")
    return problems


def models_in(section: Any, where: str) -> Iterator[tuple[str, ModelSettings]]:
    for key, owner, name in walk(section, where):
        if isinstance(owner.__dict__[name], ModelSettings):
            yield key, owner.__dict__[name]


def looks_local(value: str, base: Path) -> bool:
    """Whether a model name is meant as a local path rather than a hub id (``owner/name``).

    >>> looks_local("./tiny", Path("/")), looks_local("Qwen/Qwen3-4B", Path("/nonexistent")), looks_local("a/b/c", Path("/"))
    (True, False, True)
    """
    if value.startswith(("/", "./", "../", "~")) or value.endswith(".gguf"):
        return True
    parts = Path(value).parts
    return len(parts) > 2 or (len(parts) == 2 and (base / parts[0]).is_dir())


def model_problems(key: str, model: ModelSettings, base: Path) -> list[str]:
    """A local path that is not there, a hub model missing offline, an API key not exported, a dead endpoint."""
    if model.backend == "openai":
        return api_problems(key, model)
    name = model.model
    if model.backend not in LOCAL_BACKENDS or name.startswith(("embedded:", "models:/")):
        return []
    path = Path(name).expanduser() if Path(name).expanduser().is_absolute() else base / name
    if path.exists():
        return []
    if looks_local(name, base):
        return [f"{key}.model: {name} does not exist (a local model path; hub ids look like owner/name)"]
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") and not in_hub_cache(model):
        return [f"{key}.model: {name} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set"]
    return []


def in_hub_cache(model: ModelSettings) -> bool:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model.model, model.gguf_file or "config.json")
    return isinstance(found, str)


def api_problems(key: str, model: ModelSettings) -> list[str]:
    from components.generation.openai_backend import MissingApiKeyError, resolve_api_key

    problems = []
    try:
        resolve_api_key(model, os.environ)
    except MissingApiKeyError as error:
        problems.append(f"{key}.api_key_env: {error}")
    if model.base_url and not any(os.environ.get(name) for name in PROXY_VARIABLES):
        refused = unreachable(model.base_url)
        if refused:
            problems.append(f"{key}.base_url: {redact_credentials(model.base_url)} is not reachable ({refused})")
    return problems


def unreachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why a TCP connection to ``url``'s host and port fails within ``timeout_s``, or ``None`` when it opens."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=timeout_s):
            return None
    except socket.timeout:
        return f"no answer within {timeout_s:g} s"
    except OSError as error:
        return error.strerror or str(error)


def execution_problems(profile: Profile, sections: list[str]) -> list[str]:
    """A fan-out whose task runner's package is not installed (``execution.runner: ray`` without prefect-ray)."""
    from runtime.flow_runs.task_runners import runner_problem

    problem = runner_problem(profile.execution) if "evaluation" in sections and profile.execution.fans_out else None
    return [problem] if problem else []


def check_profile(profile: Profile, sections: list[str], source: str = "") -> None:
    """Raise ``Refused`` with every problem of the ``sections`` a command runs (profile paths made absolute)."""
    from cli.disk_space import space_problems, state_paths
    from cli.stack import stack_problems
    from cli.store_check import tracking_problems, tracking_uri_of
    from components.planning import plan_profile

    profile = profile.with_absolute_paths()
    base = Path(profile.project_dir)
    problems: list[str] = []
    for name in sections:
        section = getattr(profile, name)
        problems += path_problems(section, name) + benchmark_problems(section, name)
        for key, model in models_in(section, name):
            problems += model_problems(key, model, base)
    problems += [str(problem) for problem in plan_profile(profile, sections=sections).problems_for(sections)]
    problems += execution_problems(profile, sections)
    problems += tracking_problems(profile.tracking, base)
    problems += space_problems(state_paths(base, tracking_uri_of(profile.tracking, base)))
    problems += stack_problems(base, profile.tracking.tracking_uri)
    if problems:
        raise Refused(problems, source)
