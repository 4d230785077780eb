"""The project's registries, as the settings ask for them: the one place that knows where each registry lives.

The settings are a leaf and import none of these packages (``components.settings.registries``);
this module implements their ``Registries`` interface over the registries themselves, each
imported when its kind is first asked about (a profile without a trainer section never imports
the training package), and ``install`` hands it to the settings for the process. The entry
points of the project call ``install`` before they read a profile: the command line
(``cli/__init__.py``), the flows (``flows/__init__.py``: Prefect validates a flow's typed
profile parameter in whichever process runs the flow) and the tests (``conftest.py``).

Nothing a task runs imports this module: every import below is an arrow the import graph
draws, and a task reaching it would have every registry's code in its cache key.

>>> CATALOG.check("reward", "pcs"), CATALOG.benchmark_kind("mkqa"), CATALOG.benchmark_kind("mgsm")
('pcs', 'qa', 'math')
>>> CATALOG.check("verifier", "exactt")
Traceback (most recent call last):
ValueError: unknown verifier 'exactt' (known: exact, hybrid, math_verify, numeric, trusted)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from components.settings.base import unknown_name_message
from components.settings.registries import use_registries


def _backends() -> Mapping[str, Any]:
    from components.generation import BACKENDS

    return BACKENDS


def _verifiers() -> Mapping[str, Any]:
    from components.verification import VERIFIERS

    return VERIFIERS


def _benchmarks() -> Mapping[str, Any]:
    from components.data.benchmarks import BENCHMARKS

    return BENCHMARKS


def _rewards() -> Mapping[str, Any]:
    from components.rewards import REWARDS

    return REWARDS


def _rejection_strategies() -> Mapping[str, Any]:
    from components.data.rejection import REJECTION_STRATEGIES

    return REJECTION_STRATEGIES


def _lcpr_rules() -> Mapping[str, Any]:
    from components.metrics.lcpr import RULES

    return RULES


def _retrievers() -> Mapping[str, Any]:
    from components.retrieval import RETRIEVERS

    return RETRIEVERS


def _accelerate_configs() -> Mapping[str, Any]:
    from components.training.accelerate import ACCELERATE_CONFIGS

    return ACCELERATE_CONFIGS


def _packaged_data() -> Mapping[str, Any]:
    from components.data.packaged import PACKAGED_DATA

    return PACKAGED_DATA


REGISTRIES: dict[str, Callable[[], Mapping[str, Any]]] = {  # kind -> the registry of its names
    "backend": _backends,
    "verifier": _verifiers,
    "benchmark": _benchmarks,
    "reward": _rewards,
    "rejection strategy": _rejection_strategies,
    "LCPR rule": _lcpr_rules,
    "retriever": _retrievers,
    "accelerate config": _accelerate_configs,
    "packaged data set": _packaged_data,  # the sets a ``packaged:`` path names
}


@lru_cache(maxsize=8)
def _stress_table_languages(path: str | None) -> tuple[str, ...]:
    from components.audit.stress import load_table

    return tuple(sorted(load_table(path)["languages"]))


class Catalog:
    """``components.settings.registries.Registries`` over the project's registries."""

    def names(self, kind: str) -> list[str]:
        """The names registered for ``kind``."""
        return sorted(REGISTRIES[kind]())

    def check(self, kind: str, name: str) -> str:
        known = self.names(kind)
        if name not in known:
            raise ValueError(unknown_name_message(kind, name, known))
        return name

    def reward_problems(self, name: str, params: Mapping[str, Any]) -> list[str]:
        from components.rewards import reward_problems

        return reward_problems(name, params)

    def benchmark_kind(self, name: str) -> str:
        from components.data.benchmarks import benchmark_spec

        return benchmark_spec(name).kind

    def stress_table_languages(self, path: str | None) -> Sequence[str]:
        return _stress_table_languages(path)

    def packaged_directory(self, name: str) -> str:
        return str(_packaged_data()[self.check("packaged data set", name)])


CATALOG = Catalog()


def install() -> Catalog:
    """Hand the catalog to the settings for every later validation of this process (see the module docstring)."""
    use_registries(CATALOG)
    return CATALOG
