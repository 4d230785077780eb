"""Load-time checks of every registry name a profile uses (ARCHITECTURE.md, habit 5).

Each stage adds its checks here as a small function; ``registry_problems``
returns every problem found so a profile reports all its errors at once.
Registries are imported lazily so this module stays cheap to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.config import Profile


def _unknown(kind: str, where: str, name: str, known) -> list[str]:
    if name in known:
        return []
    return [f"{where}: unknown {kind} {name!r} (known: {', '.join(sorted(known))})"]


def _evaluation_problems(profile: "Profile") -> list[str]:
    section = profile.evaluation
    if section is None:
        return []
    from components.data.benchmarks import BENCHMARKS
    from components.generation import BACKENDS
    from components.verification import VERIFIERS

    problems = _unknown("backend", "evaluation.model.backend", section.model.backend, BACKENDS)
    problems += _unknown("verifier", "evaluation.scoring.verifier", section.scoring.verifier, VERIFIERS)
    for index, bench in enumerate(section.benchmarks):
        problems += _unknown("benchmark", f"evaluation.benchmarks.{index}.name", bench.name, BENCHMARKS)
    return problems


def _data_sft_problems(profile: "Profile") -> list[str]:
    """Data/SFT stage: backends, verifier, rejection strategy, source/evaluation overlap (issue 5)."""
    from components.data.rejection import REJECTION_STRATEGIES
    from components.data.sources import source_overlaps
    from components.generation import BACKENDS
    from components.verification import VERIFIERS

    problems: list[str] = []
    data = profile.data
    if data is not None:
        models = [("translation.model", data.translation.model), ("translation.judge", data.translation.judge),
                  ("traces.model", data.traces.model)]
        if data.rejection is not None:
            models.append(("rejection.policy", data.rejection.policy))
            problems += _unknown("rejection strategy", "data.rejection.strategy", data.rejection.strategy,
                                 REJECTION_STRATEGIES)
            if data.rejection.policy is None and (profile.sft is None or not profile.sft.merge):
                problems.append("data.rejection: policy is null (the SFT model) but the profile has no sft section "
                                "with merge: true; set sft.merge: true or give data.rejection.policy")
        for where, model in models:
            if model is not None:
                problems += _unknown("backend", f"data.{where}.backend", model.backend, BACKENDS)
        problems += _unknown("verifier", "data.traces.verifier", data.traces.verifier, VERIFIERS)
        benchmarks = profile.evaluation.benchmarks if profile.evaluation else []
        for name in source_overlaps(data.source, benchmarks):
            problems.append(f"data.source: {name!r} is both the source of training queries and an evaluation "
                            f"benchmark of this profile; drop it from evaluation.benchmarks or use another source")
    if profile.sft is not None:
        problems += _unknown("backend", "sft.model.backend", profile.sft.model.backend, BACKENDS)
    return problems


CHECKS = [_evaluation_problems, _data_sft_problems]


def registry_problems(profile: "Profile") -> list[str]:
    """All unknown registry names in ``profile``, as readable lines."""
    problems: list[str] = []
    for check in CHECKS:
        problems += check(profile)
    return problems


def _audit_problems(profile: "Profile") -> list[str]:
    """Verifier names, stress-table languages, and where the audited generations come from."""
    section = profile.audit
    if section is None:
        return []
    from pathlib import Path

    import yaml

    from components.audit.stress import load_table
    from components.verification import VERIFIERS

    problems = _unknown("verifier", "audit.reference", section.reference, VERIFIERS)
    problems += _unknown("verifier", "audit.guard_verifier", section.guard_verifier, VERIFIERS)
    for index, name in enumerate(section.proxies):
        problems += _unknown("verifier", f"audit.proxies.{index}", name, VERIFIERS)
    table = section.stress_table
    if table is not None and not Path(table).is_absolute():
        table = Path(profile.project_dir or ".") / table  # as flows/audit.py resolves it
    try:
        table_languages = load_table(table)["languages"]
    except (OSError, ValueError, yaml.YAMLError) as error:
        return problems + [f"audit.stress_table: {error}"]
    for index, lang in enumerate(section.stress_languages):
        problems += _unknown("stress-table language", f"audit.stress_languages.{index}", lang, table_languages)
    if section.generations is None and profile.evaluation is None:
        problems.append("audit.generations: unset, and the profile has no evaluation section to generate from")
    style = profile.evaluation.prompt.style if profile.evaluation is not None else None
    if section.probe and section.number_only_generations is None and style not in (None, "instruction", "prefix"):
        problems.append(f"audit.probe: the number-only probe rewrites the instruction of prompt styles 'instruction' "
                        f"or 'prefix' (evaluation.prompt.style is {style!r}); set audit.probe=false or "
                        "audit.number_only_generations")
    return problems


CHECKS.append(_audit_problems)


def _grpo_problems(profile: "Profile") -> list[str]:
    """Reward names, their keyword parameters and verifier names (issue 6)."""
    section = profile.grpo
    if section is None:
        return []
    from components.rewards import reward_parameter_problems
    from components.verification import VERIFIERS

    problems: list[str] = []
    for index, reward in enumerate(section.rewards):
        where = f"grpo.rewards.{index}"
        problems += [f"{where}: {p}" for p in reward_parameter_problems(reward.name, reward.params)]
        verifier = reward.params.get("verifier")
        if isinstance(verifier, str):
            problems += _unknown("verifier", f"{where}.params.verifier", verifier, VERIFIERS)
    return problems


CHECKS.append(_grpo_problems)
