"""The flows a person starts from the Prefect UI: choose a profile, add ``key=value`` overrides, Run.

Each command of the CLI (``recipe``, ``data``, ``sft``, ``grpo``, ``evaluate``,
``audit``) has an entry flow with the same three parameters, so the Run form is
short and any experiment starts without re-deploying:

* ``profile``: one of the profiles in the profiles folder (a drop-down);
* ``overrides``: dotted ``key=value`` changes, as on the command line;
* ``advanced_profile``: optionally, a whole typed profile instead of a file.

The choice is validated by the same code as the CLI (every registry name and
cross-section rule, then the plan's refusals for the stages the command runs)
before any work starts; a bad override fails the flow run with a message that
names the key (one line in its log and its state, no traceback). The flow run carries the plan as a markdown artifact. The profiles folder is
``POLYREASON_PROFILES_DIR`` or the repository's ``profiles/``; the project
directory (where artifacts, ``mlruns/`` and caches live) is
``POLYREASON_PROJECT_DIR``, which ``polyreason deploy`` sets on the deployments.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from prefect import flow

from components.config import REVEALED, load_profile, load_profile_dict
from components.settings import Profile, ProfileError
from flows.commands import COMMANDS, sections_for, trained_sections
from runtime.flow_runs.prefect_artifacts import results_on_started_run
from runtime.flow_runs.names import entry_run_name
from runtime.flow_runs.plans import checked_plan, publish_plan, refused

REPO = Path(__file__).resolve().parents[1]


def profiles_dir() -> Path:
    return Path(os.environ.get("POLYREASON_PROFILES_DIR") or REPO / "profiles")


def profile_names() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in profiles_dir().glob("*.yaml"))) or ("none",)


ProfileName = Literal[profile_names()]  # the drop-down of the Run form (an inline enum), read when the module loads
def default_profile(names: tuple[str, ...]) -> str:
    """The profile the Run form starts on: the demo's when the folder has it."""
    return "cpu-demo" if "cpu-demo" in names else names[0]


DEFAULT_PROFILE = default_profile(profile_names())


def chosen_profile(profile: str, overrides: list[str], advanced_profile: Profile | None,
                   command: str = "recipe") -> Profile:
    """The profile a run of ``command`` asked for, validated like the CLI's (``ProfileError`` names every bad key;
    trl checks the trainer sections the command trains)."""
    trl_checks = trained_sections(command)
    if advanced_profile is not None:
        chosen = load_profile_dict(advanced_profile.model_dump(mode="json", context=REVEALED), overrides,
                                   source="advanced_profile",
                                   trl_checks=trl_checks)
    else:
        chosen = load_profile(profiles_dir() / f"{profile}.yaml", overrides, trl_checks=trl_checks)
    project = chosen.project_dir or os.environ.get("POLYREASON_PROJECT_DIR") or os.getcwd()
    return chosen.model_copy(update={"project_dir": str(Path(project).resolve())})


def entry_flow(command: str):
    """The UI entry of ``polyreason <command>``."""
    runner, help_text = COMMANDS[command]

    def run(profile: ProfileName = DEFAULT_PROFILE, overrides: list[str] = [],  # noqa: B006 - never mutated
            advanced_profile: Profile | None = None) -> dict:
        try:
            chosen = chosen_profile(profile, overrides, advanced_profile, command)
            plan = checked_plan(chosen, sections_for(command, chosen))
        except ProfileError as error:  # a mistyped key, a bad value, a setting the plan refuses: no traceback
            return refused(str(error))
        publish_plan(plan)
        with results_on_started_run():  # this flow run's page shows the results its subflows publish
            return runner(chosen)

    run.__doc__ = f"""{help_text}

    Args:
        profile: A profile of the profiles folder: the experiment to run.
        overrides: Dotted key=value changes to the profile, e.g. grpo.max_steps=10 or
            evaluation.benchmarks.0.limit=20 (values are read as YAML).
        advanced_profile: Optional; leave it at None (the form then says 'Property is type "None"') to run the
            profile chosen above. Switch its type to Profile to type a whole profile instead of a file (then
            ``profile`` is ignored); the same checks apply.
    """
    return flow(name=command, log_prints=True, flow_run_name=entry_run_name(command))(run)


recipe = entry_flow("recipe")
data = entry_flow("data")
sft = entry_flow("sft")
grpo = entry_flow("grpo")
evaluate = entry_flow("evaluate")
audit = entry_flow("audit")
