"""The pilot where flows meet it: the shrunk profile and its budget, and the newest pilot of a profile.

* ``pilot_profile(profile, sizes)``: the profile with the overrides of
  ``components.planning.pilot.shrinks`` applied (and named ``<name>-pilot``, so its
  runs, logged models and artifacts are told apart from the full run's), both plans,
  and the budget the pilot prints before it starts.
* ``newest_pilot(uri, experiment_id, name)``: the newest finished pilot run of the
  profile ``name``, which a full run started after it links to (``tasks.recipe``).
"""

from __future__ import annotations

from typing import Any

from components.config import REVEALED, load_profile_dict
from components.settings import Profile

PILOT_TAG = "polyreason.pilot.profile"  # on a pilot's MLflow run: the name of the profile it piloted
SUFFIX = "-pilot"


def stopped_by_data(error: BaseException) -> bool:
    """Whether ``error`` is the data stage refusing to go on (nothing kept, or a probe's shortfall)."""
    from components.data.datasets import NothingKeptError
    from components.data.trace_yield import TraceShortfallError

    return isinstance(error, (NothingKeptError, TraceShortfallError))


def pilot_profile(profile: Profile, sizes: dict[str, int | float], gpu: str | None = None) -> tuple[Profile, Any, Any, Any]:
    """The shrunk profile, its budget, the full plan and the pilot's plan (``sizes``: ``PilotSizes``' fields)."""
    from components.planning import plan_profile
    from components.planning.estimate import DEFAULT_GPU
    from components.planning.pilot import Budget, PilotSizes, shrinks, stage_shares

    pilot_sizes = PilotSizes(**sizes)
    cuts = shrinks(profile, pilot_sizes)
    overrides = [cut.override for cut in cuts]
    data = profile.model_dump(mode="json", context=REVEALED)  # the shrunk profile runs: its URLs keep their secrets
    small = load_profile_dict(data, [*overrides, f"name={profile.name}{SUFFIX}"], source=f"{profile.name} (pilot)",
                              trl_checks=trl_checked(profile))
    full_plan, pilot_plan = plan_profile(profile, gpu or DEFAULT_GPU), plan_profile(small, gpu or DEFAULT_GPU)
    values = lambda plan: {s.stage: s.values for s in plan.stages}  # noqa: E731
    total = lambda plan: plan.total.high if plan.total else None  # noqa: E731
    budget = Budget(shares=stage_shares(values(pilot_plan), values(full_plan)), overrides=overrides,
                    pilot_gpu_hours=total(pilot_plan), full_gpu_hours=total(full_plan),
                    notes=(["audit and registry do not run in a pilot"] if profile.audit or profile.registry else [])
                    + _grpo_notes(profile, pilot_sizes)
                    + [f"the shrunk plan warns: {problem}" for problem in pilot_plan.problems])
    return small, budget, full_plan, pilot_plan


def _grpo_notes(profile: Profile, sizes: Any) -> list[str]:
    from components.planning.pilot import grpo_share_note, max_steps

    note = grpo_share_note(max_steps(profile.grpo), sizes) if profile.grpo is not None else None
    return [note] if note else []


def trl_checked(profile: Profile) -> tuple[str, ...]:
    """The trainer sections of ``profile`` (trl checks them again on the pilot's copy: the trainers need it)."""
    return tuple(name for name in ("sft", "grpo") if getattr(profile, name) is not None)


def markdown(report: Any) -> str:
    """A pilot's report as the markdown of its Prefect artifact."""
    return f"# Pilot of `{report.profile}`\n\n```\n" + "\n".join(report.lines()) + "\n```\n"


def newest_pilot(uri: str, experiment_id: str, name: str) -> Any:
    """The newest FINISHED pilot run of the profile ``name`` in the experiment, or ``None``."""
    from runtime.tracking import client

    runs = client(uri).search_runs([experiment_id], filter_string=f"tags.`{PILOT_TAG}` = '{name}' "
                                                                  "and attributes.status = 'FINISHED'",
                                   order_by=["attributes.start_time DESC"], max_results=1)
    return runs[0] if runs else None


def reward_ranges(profile: Profile) -> dict:
    """The range of each reward key the pilot reads (``components.rewards.ranges``); empty without GRPO."""
    from components.rewards.ranges import ranges_by_key

    if profile.grpo is None:
        return {}
    return ranges_by_key([(r.name, r.weight, r.params) for r in profile.grpo.rewards])


def data_facts(profile: Profile, full_plan: Any) -> dict | None:
    """What a data stage's projection needs of the full run: its languages, queries and targets per language."""
    data = profile.data
    if data is None:
        return None
    values = next((s.values for s in full_plan.stages if s.stage == "data"), {})
    from_file = bool(data.traces.from_file)
    queries = {} if from_file else {lang: int(values.get("source_rows") or 0) for lang in data.languages}
    targets = {lang: data.traces.per_language for lang in data.languages if data.traces.per_language}
    return {"languages": list(data.languages), "queries": queries, "targets": targets,
            "translated": not from_file and data.translation is not None}
