"""A profile passed as a flow parameter (as the Prefect UI and deployments pass it) is checked like the CLI's.

The UI hands a flow the profile as plain JSON, never through ``load_profile``;
the rules live on the settings models, so Prefect's own parameter validation
refuses the run before the flow body starts, with the same problem text as the
CLI. Nothing is written: no artifact, no MLflow run.
"""

from __future__ import annotations

import pytest

from components.config import load_profile_dict
from components.rewards import REWARDS
from components.settings import ProfileError

BAD = {"grpo": {"model": {"model": "m"}, "dataset": "d.jsonl", "rewards": [{"name": "nope"}]}}


def test_unknown_reward_fails_before_any_work_with_the_cli_message(tmp_path):
    from flows.grpo import grpo_flow

    profile = {"name": "ui-run", "project_dir": str(tmp_path), **BAD}
    with pytest.raises(ProfileError) as cli:
        load_profile_dict(profile)
    cli_line = next(line for line in str(cli.value).splitlines() if "unknown reward" in line).strip()
    assert cli_line == f"- grpo.rewards.0: unknown reward 'nope' (known: {', '.join(sorted(REWARDS))})"

    state = grpo_flow(profile=profile, return_state=True)
    assert state.is_failed()
    where, problem = cli_line.removeprefix("- ").split(": ", 1)
    assert f"profile.{where}: Value error, {problem}" in state.message
    assert list(tmp_path.iterdir()) == []  # no artifacts/, no mlruns/: the flow body never ran


def test_a_run_form_override_that_the_plan_refuses_fails_before_any_work(tmp_path, monkeypatch):
    """The Run form's recipe/stage flows check the plan of what they run, as the command line's preflight does:
    cpu-grpo's τ (one rise, to 0.2, at a check every 2 steps) cannot rise in 2 steps."""
    from flows.entry import grpo

    monkeypatch.setenv("POLYREASON_PROJECT_DIR", str(tmp_path))
    state = grpo(profile="cpu-grpo", overrides=["grpo.max_steps=2"], return_state=True)
    assert state.is_failed()
    assert ("grpo.rewards.0.params.tau_max, grpo.rewards.0.params.tau_interval, grpo.max_steps: the τ curriculum "
            "cannot reach 0.2 in the planned 2 optimizer steps (max_steps 2)") in state.message
    assert list(tmp_path.iterdir()) == []  # no artifacts/, no mlruns/: no stage started


def test_a_misspelled_list_key_in_the_run_form_fails_with_its_one_line_and_no_traceback(tmp_path, monkeypatch,
                                                                                         caplog):
    """``evaluation.benchmark.0.limit`` (the list is ``benchmarks``): the closest key, named before any work."""
    from flows.entry import evaluate

    monkeypatch.setenv("POLYREASON_PROJECT_DIR", str(tmp_path))
    state = evaluate(profile="cpu-demo", overrides=["evaluation.benchmark.0.limit=8"], return_state=True)
    assert state.is_failed()
    assert state.message == ("override 'evaluation.benchmark.0.limit=8': no such key `evaluation.benchmark`; "
                             "did you mean `evaluation.benchmarks`?")
    assert "Traceback" not in caplog.text
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override, named", [
    ("evaluation.sampling.n=1" + "0" * 30, "evaluation.sampling.n: Input should be less than or equal to 10000"),
    ("evaluation.sampling.temperature=.inf", "evaluation.sampling.temperature: Input should be a finite number"),
])
def test_an_unbounded_number_in_the_run_form_fails_before_any_work_naming_its_key(tmp_path, monkeypatch, override,
                                                                                   named):
    """The bounds live on the settings: the Run form's overrides meet them as the command line's do."""
    from flows.entry import evaluate

    monkeypatch.setenv("POLYREASON_PROJECT_DIR", str(tmp_path))
    state = evaluate(profile="cpu-demo", overrides=[override], return_state=True)
    assert state.is_failed()
    assert named in state.message
    assert list(tmp_path.iterdir()) == []
