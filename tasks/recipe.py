"""Prefect tasks of the recipe's own bookkeeping: the profile it ran, the model comparison, the stage table.

* The parent run carries the profile (as YAML), its digest (the fingerprint of
  what it computes) and the git commit of the code, so a run can be reproduced.
* ``comparison_task`` (cached) renders every evaluated model side by side per
  benchmark and language (``components.reports.comparison``); ``tasks.compare.log_comparison_task``
  sends the table, the deltas to the base model and the plots to the parent run.
* ``log_plan_task``: the plan of the run (``components.planning``: steps, tokens,
  curricula, where each stage runs, the GPU-hours estimate) as ``plan.*`` params
  and ``plan.md``/``plan.json`` of the parent run, and as the flow run's markdown
  artifact.
* ``paper_table_task``: the table file of the profile's paper rows, when it has one
  (``components.reports.paper_tables.find_table``); ``tasks.compare.paper_task`` holds the run against it.
* ``log_stages_task``: which child run did each stage.
* ``link_pilot_task``: the newest pilot of the profile (``polyreason pilot``), as the run's tags.
"""

from __future__ import annotations

import yaml
from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import Profile
from runtime import tracking
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.policy import CACHED, cache_policy
from runtime.outputs import EvaluationOutputs
from runtime.project import Made, Project
from runtime.tracking import RunRef


@task(name="log-profile", cache_policy=NO_CACHE)
def log_profile_task(run: RunRef, profile: Profile) -> None:
    """The validated profile as ``profile.yaml`` in the run's artifacts."""
    text = yaml.safe_dump(profile.model_dump(mode="json"), allow_unicode=True, sort_keys=False)
    tracking.log_text(run, text, "profile.yaml")


@task(name="log-plan", cache_policy=NO_CACHE)
def log_plan_task(run: RunRef, profile: Profile, sections: list[str] | None = None) -> dict:
    """The recipe's plan in its parent run (params and files) and on the flow run (a markdown artifact, once: not
    again under a Run form's flow run, which published it); ``sections``: only the stages of those profile sections
    (those the run runs)."""
    from components.planning import plan_profile
    from components.planning.render import markdown, params
    from runtime.flow_runs.plans import publish_plan

    from runtime.flow_runs.progress import STARTED

    plan = plan_profile(profile, sections=sections)
    tracking.log_params(run, params(plan))
    tracking.log_text(run, markdown(plan), "plan/plan.md")
    tracking.log_dict(run, plan.as_dict(), "plan/plan.json")
    if STARTED.get() is None:  # a run started from the Run form published it on its own page already
        publish_plan(plan)
    return {"problems": [str(problem) for problem in plan.problems]}


@task(name="compare-models", cache_policy=cache_policy("reporting"), **CACHED)
def comparison_task(evaluations: list[EvaluationOutputs], baseline: str, project: Project,
                    in_domain: list[str] | None = None) -> ArtifactRef:
    """The comparison table (rows and text, paired intervals over each model's scored rows), the
    in-domain languages together as one more row, and one accuracy-vs-LCPR plot per benchmark."""
    from components.reports.comparison import in_domain_row, write_comparison
    from components.metrics import IN_DOMAIN_LANGUAGES
    from components.reports.benchmark import read_report

    def rows(name: str, path: str) -> list[dict]:
        report = read_report(name, path)
        return report.language_table + in_domain_row(name, report.metrics, report.headline)

    tables = {e.model.tag: {name: rows(name, b.report.path) for name, b in e.benchmarks.items()} for e in evaluations}
    scored = {e.model.tag: {name: b.scores.path for name, b in e.benchmarks.items()} for e in evaluations}
    identity = [[[e.model.tag, e.model.fingerprint, [[b.report.fingerprint, b.scores.fingerprint]
                                                     for b in e.benchmarks.values()]] for e in evaluations],
                baseline, in_domain]  # another baseline or language group is another table, in its own directory
    return project.produce("comparison", identity, ".", lambda out: Made(
        summary={"rows": write_comparison(tables, baseline, out, scored, in_domain or IN_DOMAIN_LANGUAGES)},
        fingerprint=file_fingerprint(out / "comparison.json")))


@task(name="link-pilot", cache_policy=NO_CACHE)
def link_pilot_task(run: RunRef, profile_name: str) -> str | None:
    """Tag the recipe's run with the newest finished pilot of its profile (``polyreason pilot``): its run id, URL and
    verdict; returns the pilot's run id (``None`` when the profile had no pilot in this experiment)."""
    from runtime.flow_runs.pilots import newest_pilot

    pilot = newest_pilot(run.tracking_uri, run.experiment_id, profile_name)
    if pilot is None:
        return None
    ref = RunRef(tracking_uri=run.tracking_uri, run_id=pilot.info.run_id, experiment_id=run.experiment_id)
    tracking.set_tags(run, {"polyreason.pilot_run": ref.run_id, "polyreason.pilot_url": tracking.run_url(ref),
                            "polyreason.pilot_verdict": pilot.data.tags.get("polyreason.pilot.verdict", "unknown")})
    return ref.run_id


@task(name="log-stages", cache_policy=NO_CACHE)
def log_stages_task(run: RunRef, runs: dict[str, str | None]) -> None:
    """The stage -> child run table of a recipe run."""
    tracking.log_table(run, [{"stage": stage, "run_id": run_id} for stage, run_id in runs.items() if run_id],
                       "recipe/stages.json")


@task(name="paper-table", cache_policy=NO_CACHE)
def paper_table_task(profile_name: str, project: Project) -> str | None:
    """The paper table of the profile called ``profile_name`` (``profiles/papers/<name>.yaml``: the project's own,
    else the one its paper's spec lists), if there is one."""
    from components.reports.paper_tables import find_table

    found = find_table(profile_name, project.root)
    return None if found is None else str(found)
