"""Prefect artifacts on the current flow run: the one place a flow run's reports are published.

Prefect 3 keeps *artifacts* beside a flow run and shows them on its page (the
Artifacts tab) and, by key, on the Artifacts page, where a key's artifacts form a
history (each profile's latest plan, each stage's latest metrics). Prefect wants
keys of lowercase letters, digits and dashes (``artifact_key``). Each publisher
here is a no-op outside a flow run (a plain function call, a test), so callers
never check.

* ``publish_markdown`` / ``publish_table`` / ``publish_link``: Prefect's
  ``create_markdown_artifact``, ``create_table_artifact`` and ``create_link_artifact``.
* ``publish_stage_run(run, project, name)``: what every stage's flow run shows when its MLflow run
  is done: the run's metrics per language as a table (``components.reports.run_tables``,
  read back from MLflow, so the page shows what MLflow holds, cache hits
  included: logging tasks are never cached) and a link to the run.
* ``publish_recipe_summary``: the recipe's markdown summary (its comparison with
  paired intervals, the registered version).
* ``results_on_started_run``: the flow run a person started (a Run form entry flow, the nightly)
  runs the stages as subflows; inside this block the command's results (the top MLflow run's metrics
  and link, the recipe's summary) are published on that flow run too, so its page shows them, as
  are its subflows' progress lines (``runtime.flow_runs.progress.on_started_run``).
* ``mlflow_ui_url``: the run's page in the MLflow UI when a tracking server is
  known (the tracking URI is one, or ``polyreason up`` recorded one serving this
  project's store in ``.polyreason/stack.json``); else the tracking URI and run id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from components.settings import TrackingSettings, redact_credentials
from runtime import tracking
from runtime.flow_runs.progress import STARTED
from runtime.flow_runs.progress import on_started_run as results_on_started_run
from runtime.project import Project
from runtime.tracking import RunRef


def artifact_key(text: str) -> str:
    """A Prefect artifact key from ``text`` (lowercase letters, digits and dashes).

    >>> artifact_key("plan-Qwen3-8B_pcs.grpo")
    'plan-qwen3-8b-pcs-grpo'
    """
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")


def in_flow_run() -> bool:
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def _publish(kind: str, started: bool, **fields: Any) -> Any:
    """A ``kind`` artifact (Prefect's ``MarkdownArtifact``...) on the current flow run, and on the started one."""
    from prefect import artifacts
    from prefect.context import FlowRunContext

    if not in_flow_run():
        return None
    fields = redact_credentials(fields)  # a URL in a report shows no user or password
    made = getattr(artifacts, kind)(**fields).create()
    here, there = str(FlowRunContext.get().flow_run.id), STARTED.get()
    if started and there and there != here:
        getattr(artifacts, kind)(**fields, flow_run_id=there).create()
    return made.id


def publish_markdown(key: str, markdown: str, description: str, started: bool = False) -> Any:
    """A markdown artifact on the current flow run (its id); ``None`` outside a flow run."""
    return _publish("MarkdownArtifact", started, markdown=markdown, key=artifact_key(key), description=description)


def publish_table(key: str, rows: list[dict[str, Any]], description: str, started: bool = False) -> Any:
    """A table artifact (a list of rows, every row with every column) on the current flow run; ``None`` outside."""
    return _publish("TableArtifact", started, table=rows, key=artifact_key(key), description=description)


def publish_link(key: str, link: str, text: str, description: str, started: bool = False) -> Any:
    """A link artifact on the current flow run; ``None`` outside a flow run."""
    return _publish("LinkArtifact", started, link=link, link_text=text, key=artifact_key(key),
                    description=description)


def recorded_mlflow_url(project: Project) -> str | None:
    """The MLflow server ``polyreason up`` recorded for this project, if it recorded one."""
    path = project.stack_file
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8")).get("mlflow_url")


def mlflow_ui_url(run: RunRef, project: Project) -> str:
    """The run's page in the MLflow UI (see the module docstring), else ``tracking.run_url``'s text."""
    server = recorded_mlflow_url(project)
    if server and not run.tracking_uri.startswith(("http://", "https://")) \
            and run.tracking_uri == tracking.tracking_uri(TrackingSettings(), project):  # the stack serves this store
        return tracking.run_url(RunRef(server, run.run_id, run.experiment_id))
    return tracking.run_url(run)


def publish_stage_run(run: RunRef, project: Project, name: str) -> None:
    """The stage's metrics table (``<name>-metrics``), and the link to its MLflow run (``<name>-mlflow-run``).

    The table keeps the columns of several languages (``in_domain``, ``overall`` …): with a column per language
    beside them an evaluation's table was 13 columns wide and its headline off a 1280-pixel screen. The columns per
    language are in ``<name>-metrics-by-language`` (markdown, every column) and in the MLflow run."""
    from components.reports.run_tables import language_table

    if not in_flow_run():
        return
    data = tracking.client(run.tracking_uri).get_run(run.run_id).data
    top = "mlflow.parentRunId" not in data.tags  # the command's own run: its results go on the started flow run too
    rows = language_table(data.metrics)
    narrow = several_languages(rows)
    url = mlflow_ui_url(run, project)
    web = url.startswith(("http://", "https://"))
    where = f"[the MLflow run]({url})" if web else "the MLflow run"
    per_language = (f"; each language's column: the artifact {artifact_key(name)}-metrics-by-language and {where}"
                    if narrow != rows else "")
    publish_table(f"{name}-metrics", narrow,
                  f"{name}: the MLflow run's metrics (last logged values); ±1 standard error and n (problems) where "
                  f"the metric has them{per_language}", started=top)
    if narrow != rows:
        publish_markdown(f"{name}-metrics-by-language", markdown_table(rows),
                         f"{name}: the MLflow run's metrics, one column per language", started=top)
    publish_link(f"{name}-mlflow-run", url if web else run.tracking_uri, f"MLflow run {run.run_id}" if web else url,
                 f"{name}: the MLflow run", started=top)


def several_languages(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``rows`` with the metric and the columns of several languages only (all of them when it has none).

    >>> several_languages([{"metric": "a", "in_domain": "1", "overall": "2", "fr": "3"}])
    [{'metric': 'a', 'in_domain': '1', 'overall': '2'}]
    >>> several_languages([{"metric": "a", "value": "1"}])
    [{'metric': 'a', 'value': '1'}]
    """
    from components.reports.run_tables import GROUPS, VALUE

    keep = {"metric", VALUE, *GROUPS}
    if not rows or not any(column in GROUPS for column in rows[0]):
        return rows
    return [{column: text for column, text in row.items() if column in keep} for row in rows]


def markdown_table(rows: list[dict[str, str]]) -> str:
    """Rows (every row with every column) as a markdown table; a ``|`` in a cell is escaped.

    >>> print(markdown_table([{"metric": "a", "fr": "0.5 (n 2)"}]))
    | metric | fr |
    |---|---|
    | a | 0.5 (n 2) |
    """
    if not rows:
        return "No metrics."
    columns = list(rows[0])
    cells = [[str(row.get(column, "")).replace("|", "\\|") for column in columns] for row in rows]
    return "\n".join(["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
                      *("| " + " | ".join(line) + " |" for line in cells)])


def publish_recipe_summary(parent: RunRef, project: Project, name: str, comparison: Any, baseline: str,
                           registered: Any) -> None:
    """The recipe's markdown summary (``<name>-summary``): its MLflow run, the comparison, the registered version."""
    from components.reports.run_tables import recipe_summary

    if not in_flow_run():
        return
    rows = json.loads((Path(comparison.path) / "comparison.json").read_text(encoding="utf-8")) if comparison else None
    registered = registered.model_dump(mode="json") if registered is not None else None
    url = mlflow_ui_url(parent, project)
    link = f"[{parent.run_id}]({url})" if url.startswith("http") else url
    publish_markdown(f"{name}-summary", recipe_summary(name, link, rows, baseline, registered),
                     f"{name}: the comparison of its models (paired 95% intervals) and the registered version",
                     started=True)


def model_ui_url(run: RunRef, project: Project, model_id: str) -> str | None:
    """A logged model's page in the MLflow UI (its metrics, each nightly's among them), when a UI is known."""
    url = mlflow_ui_url(run, project)
    if not url.startswith(("http://", "https://")):
        return None
    return f"{url.split('/#/', 1)[0]}/#/experiments/{run.experiment_id}/models/{model_id}?{tracking.UI_VIEW}"


def publish_nightly_summary(tracking_uri: str, run_id: str, project: Project, name: str, reference: str, day: str,
                            model_id: str, previous: dict | None, comparison: Any) -> None:
    """A nightly evaluation's markdown (``<name>-nightly``): the version, its run and logged model, its metrics with
    their intervals, and the delta to the version's previous evaluation with its paired interval."""
    from components.reports.run_tables import nightly_summary

    if not in_flow_run():
        return
    run = RunRef(tracking_uri, run_id, tracking.client(tracking_uri).get_run(run_id).info.experiment_id)
    url = mlflow_ui_url(run, project)
    link = f"[{run.run_id}]({url})" if url.startswith("http") else url
    model_url = model_ui_url(run, project, model_id)
    model_link = f"[{model_id}]({model_url})" if model_url else f"`{model_id}`"
    if previous is not None:
        before = mlflow_ui_url(RunRef(run.tracking_uri, previous["run_id"], run.experiment_id), project)
        previous = {**previous, "link": f"[{previous['run_id']}]({before})" if before.startswith("http") else before}
    rows = json.loads((Path(comparison.path) / "comparison.json").read_text(encoding="utf-8")) if comparison else None
    publish_markdown(f"{name}-nightly", nightly_summary(reference, day, link, model_link, previous, rows),
                     f"{name}: the nightly evaluation of {reference}, against its previous one", started=True)
