"""End-to-end: the cockpit. ``polyreason up`` starts Prefect and MLflow, ``deploy`` registers the deployments,
workers serve process work pools, recipes are triggered through the Prefect API and checked through MLflow's
REST API, a stage placed on another pool runs there, the nightly evaluation is scheduled and re-evaluates the
registered versions, and ``polyreason down`` leaves no process behind.

The browser tests (headless Chromium, a 1280-pixel screen) start a recipe from the Run form under a name like the
form's own defaults and watch its page (named like its MLflow run, its stages' progress on its Logs tab, its
results), then read the results: runs told apart by their names' first words, the registered version's logged
model with the evaluations' metrics (the nightly's too), a metrics table whose headline column fits the screen,
the nightly's page (its version, metrics, delta and link) and a refused key's page (one line, no traceback).
"""

from __future__ import annotations

import datetime
import json
import re

import pytest

from cli.stack_launch import alive
from components.reports.run_tables import number_text
from runtime.tracking import UI_VIEW
from tests.helpers.cockpit import (
    MlflowREST, polyreason, run_deployment, run_tree_artifacts, start_worker, stop, tiny_recipe, write_profiles,
)  # fmt: skip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(tmp_path_factory, tiny_model_dir, shared_data):
    from tests.e2e.conftest import free_port

    root = tmp_path_factory.mktemp("cockpit")
    project, profiles = root / "project", root / "profiles"
    write_profiles(profiles, [tiny_recipe(tiny_model_dir, shared_data, "tiny"),
                              tiny_recipe(tiny_model_dir, shared_data, "tiny-placed",
                                          placement={"data": "pool-a", "sft": "pool-b", "rejection": "pool-b",
                                                     "grpo": "pool-b", "evaluation": "pool-b"})])
    started = polyreason("up", "--project-dir", str(project), "--prefect-port", str(free_port()),
                         "--mlflow-port", str(free_port()), timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((project / ".polyreason" / "stack.json").read_text())
    workers = []
    try:
        deployed = polyreason("deploy", "--project-dir", str(project), "--profiles-dir", str(profiles),
                              "--all-nightlies", timeout=300)  # the nightly test's model is registered later
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        workers = [start_worker(pool, project, root / f"worker-{pool}.log") for pool in ("polyreason", "pool-a", "pool-b")]
        yield {"root": root, "project": project, "profiles": profiles, "state": state, "deploy": deployed.stdout,
               "api": f"{state['prefect_url']}/api", "mlflow": MlflowREST(state["mlflow_url"])}
    finally:
        for worker in workers:
            stop(worker)
        stopped = polyreason("down", "--project-dir", str(project), timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert not any(alive(pid) for pid in state["pids"].values()), "a server outlived polyreason down"


def test_up_prints_both_urls_and_status_sees_them(stack):
    status = json.loads(polyreason("status", "--project-dir", str(stack["project"]), "--json").stdout)
    assert status["running"] is True
    assert {s["url"] for s in status["servers"].values()} == {stack["state"]["prefect_url"], stack["state"]["mlflow_url"]}
    assert {"polyreason", "pool-a", "pool-b"} <= set(status["workers"])  # the pools deploy made, with their workers
    text = polyreason("status", "--project-dir", str(stack["project"])).stdout  # for a person: a line per thing
    assert stack["state"]["prefect_url"] in text and "healthy" in text and re.search(r"pool +polyreason: ", text)
    taken = stack["state"]["prefect_url"].rsplit(":", 1)[1]
    refused = polyreason("up", "--project-dir", str(stack["root"] / "other"), "--prefect-port", taken)
    assert refused.returncode == 2 and f"port {taken}" in refused.stderr and len(refused.stderr.splitlines()) <= 3


def test_recipe_deployment_runs_from_the_api_and_a_bad_override_names_its_key(stack):
    mlflow = stack["mlflow"]
    run = run_deployment(stack["api"], "recipe/recipe", {"profile": "tiny", "overrides": ["grpo.learning_rate=2e-5"]})
    assert run.state.is_completed(), run.state.message
    parent = mlflow.runs("tags.`polyreason.stage` = 'recipe' and tags.`polyreason.profile` = 'tiny'")[0]
    assert parent["tags"]["polyreason.deployment"] == "recipe"
    children = mlflow.runs(f"tags.mlflow.parentRunId = '{parent['info']['run_id']}'")
    assert {c["tags"]["polyreason.stage"] for c in children} == {"data", "sft", "rejection", "grpo", "evaluation"}
    names = {c["info"]["run_name"].split(" · ")[0] for c in children}  # what tells them apart comes first
    assert names == {"data", "sft", "rejection", "grpo", "base evaluation", "sft evaluation", "grpo evaluation"}
    assert parent["info"]["run_name"].startswith("recipe · tiny · grpo.learning_rate=2e-5 · ")
    assert not [key for c in children if c["tags"]["polyreason.stage"] == "evaluation" for key in c["metrics"]
                if key.startswith("system/")]  # the machine's samples on training runs only
    assert {f"evaluation/{tag}/mgsm/fr/accuracy" for tag in ("base", "sft", "grpo")} <= set(parent["metrics"])
    # the headline's value is logged once, under the chart MLflow opens on; its interval's parts stay in its cell
    assert "evaluation/mgsm in_domain accuracy grpo" in parent["metrics"]
    assert "evaluation/grpo/mgsm/in_domain/accuracy" not in parent["metrics"]
    assert "evaluation/grpo/mgsm/in_domain/accuracy_n" in parent["metrics"]
    version = mlflow.version("tiny", "candidate")
    assert version["tags"]["polyreason.parent_run_id"] == parent["info"]["run_id"]
    # the registered version is the logged model the GRPO evaluation measured: its metrics, on the benchmark's dataset
    model_id = version["tags"]["polyreason.model_id"]
    assert model_id == version["source"].removeprefix("models:/")
    grpo_evaluation = next(c for c in children if c["tags"].get("polyreason.model_tag") == "grpo")
    measured = model_metrics(mlflow, model_id)
    assert measured[("evaluation/mgsm/fr/accuracy", grpo_evaluation["info"]["run_id"])]["dataset_name"] == "mgsm"
    assert model_id in {o["model_id"] for o in mlflow.run(parent["info"]["run_id"]).get("outputs", {})
                        .get("model_outputs", [])}  # the recipe's run lists the models of its stages
    assert "workflowType=machine_learning" in version["description"] and model_id in version["description"]
    assert not [key for key in version["tags"] if key.startswith("mgsm/")]  # no metric as a text tag
    artifacts = run_tree_artifacts(stack["api"], run.id)  # what the Prefect flow-run pages show
    table = artifacts["tiny-evaluation-grpo-metrics"][0]
    accuracy = next(row for row in json.loads(table.data) if row["metric"] == "evaluation/mgsm/accuracy")
    value = parent["metrics"]["evaluation/grpo/mgsm/fr/accuracy"]
    assert table.type == "table" and list(accuracy)[:3] == ["metric", "in_domain", "overall"] and "fr" not in accuracy
    assert accuracy["in_domain"].startswith(number_text(value)) and "(n 1)" in accuracy["in_domain"]  # fr alone
    by_language = artifacts["tiny-evaluation-grpo-metrics-by-language"][0]  # every language's column, a link away
    assert "tiny-evaluation-grpo-metrics-by-language" in table.description and by_language.type == "markdown"
    header = by_language.data.splitlines()[0]
    assert header.startswith("| metric | in_domain | overall |") and header.endswith("| fr |"), header
    line = next(line for line in by_language.data.splitlines() if line.startswith("| evaluation/mgsm/accuracy |"))
    fr = line.strip("| ").split(" | ")[-1]
    assert fr.startswith(number_text(value)) and "(n 1)" in fr  # fr's own cell
    link = artifacts["tiny-evaluation-grpo-mlflow-run"][0]
    assert f"{stack['state']['mlflow_url']}/#/experiments/" in link.data
    assert {"tiny-data-metrics", "tiny-sft-metrics", "tiny-grpo-metrics", "tiny-recipe-metrics"} <= set(artifacts)
    summary = artifacts["tiny-recipe-summary"][0].data.splitlines()
    assert summary[2] == f"Registered: `models:/tiny/{version['version']}` (alias `candidate`)"  # first: the model
    head = summary[:summary.index("## Every metric and language, compared to base")]  # the headline, then the rest
    assert "## Headline: in_domain, compared to base" in head and "**accuracy**" in head
    assert "| benchmark | lang | model | value [95% interval] (n) | Δ to base (n_both) |" in head
    assert "**lcpr**" not in head or head.index("**lcpr**") < head.index("**accuracy**")  # LCPR first, if judged

    bad = run_deployment(stack["api"], "recipe/recipe", {"profile": "tiny", "overrides": ["grpo.learning_rat=1"]})
    assert bad.state.is_failed() and "grpo.learning_rat" in bad.state.message
    logged = run_logs(stack["api"], bad.id)  # what its Logs tab shows: the refusal, in one line, no traceback
    assert [line for line in logged if "grpo.learning_rat" in line][:1] and not [
        line for line in logged if "Traceback" in line or "FailedRun" in line], logged
    stack["refused"] = str(bad.id)


def test_a_stage_placed_on_another_pool_runs_there_with_the_same_artifacts(stack, tmp_path):
    from tests.helpers.cockpit import cli_env, said

    env = cli_env(PREFECT_API_URL=stack["api"], MLFLOW_TRACKING_URI=stack["state"]["mlflow_url"])
    placed = polyreason("recipe", str(stack["profiles"] / "tiny-placed.yaml"), "--project-dir", str(stack["project"]),
                        "--out", str(tmp_path / "placed.json"), env=env)
    assert placed.returncode == 0, said(placed)
    # in this process, the stages whose products are compared (``polyreason sft``: the recipe up to rejection)
    here = polyreason("sft", str(stack["profiles"] / "tiny-placed.yaml"), "placement={}", "--project-dir",
                      str(tmp_path / "in-process"), "--out", str(tmp_path / "here.json"), env=cli_env())
    assert here.returncode == 0, said(here)
    a, b = (json.loads((tmp_path / name).read_text()) for name in ("placed.json", "here.json"))
    assert a["data"]["sft_set"]["fingerprint"] == b["data"]["sft_set"]["fingerprint"]
    assert a["rl"]["rl_set"]["fingerprint"] == b["rl"]["rl_set"]["fingerprint"]
    assert a["sft"]["trained"]["run"]["fingerprint"] == b["sft"]["trained"]["run"]["fingerprint"]  # the adapter's bytes
    children = {c["tags"]["polyreason.stage"]: c["tags"].get("polyreason.deployment")
                for c in stack["mlflow"].runs(f"tags.mlflow.parentRunId = '{a['run_id']}'")}
    assert children["data"] == "pool-a" and children["sft"] == children["grpo"] == "pool-b"
    # the run that placed the stages shows their progress: lines only the placed workers' processes write
    lines = run_logs(stack["api"], stack["mlflow"].run(a["run_id"])["tags"]["prefect.flow_run.id"])
    assert any(re.match(r"grpo: started \(MLflow run [0-9a-f]{8}\)", line) for line in lines), lines
    assert any(re.match(r"generate .*: prompts \d+/\d+", line) for line in lines), lines


def test_nightly_evaluation_is_scheduled_and_re_evaluates_every_registered_version(stack):
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: stack["api"]}), get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("nightly-evaluation/tiny")
        schedules = client.read_deployment_schedules(deployment.id)
    assert [s.schedule.cron for s in schedules] == ["0 2 * * *"]
    run = run_deployment(stack["api"], "nightly-evaluation/tiny", {"profile": "tiny"})
    assert run.state.is_completed(), run.state.message
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    with temporary_settings(updates={PREFECT_API_URL: stack["api"]}), get_client(sync_client=True) as client:
        assert client.read_flow_run(run.id).name == f"tiny v1 nightly {day}"  # model, version and date
    runs = stack["mlflow"].runs(f"tags.`polyreason.nightly` = '{day}'")
    assert {r["tags"]["polyreason.registered"] for r in runs} == {"models:/tiny/1"}
    (nightly,) = runs
    assert nightly["info"]["run_name"].startswith(f"tiny v1 nightly {day} · ")
    linked = stack["mlflow"].call("model-versions/get", name="tiny", version="1")["model_version"]
    tags = {t["key"]: t["value"] for t in linked["tags"]}
    assert tags["polyreason.nightly.last_run"] == nightly["info"]["run_id"]
    assert f"Latest nightly evaluation: {day}, run [{nightly['info']['run_id']}]" in linked["description"]
    measured = model_metrics(stack["mlflow"], tags["polyreason.model_id"])  # the version's model: a point a night
    assert ("evaluation/mgsm/fr/accuracy", nightly["info"]["run_id"]) in measured
    summary = run_tree_artifacts(stack["api"], run.id)["tiny-v1-nightly"][0].data
    assert f"# Nightly {day}: `models:/tiny/1`" in summary and "Compared to its previous evaluation (recipe" in summary
    assert "| mgsm | " in summary and "(n 1)" in summary and "Δ to previous (recipe)" in summary
    assert "tiny-evaluation-tiny-v1-metrics" in run_tree_artifacts(stack["api"], run.id)
    stack["nightly"] = str(run.id)
    deploy_line = next(line for line in stack["deploy"].splitlines() if "nightly-evaluation/tiny " in line)
    assert deploy_line.endswith(" UTC") and "cron '0 2 * * *' (UTC), next run " in deploy_line


def model_metrics(mlflow, model_id: str) -> dict[tuple[str, str], dict]:
    """(key, run id) -> metric of a logged model, as MLflow's API returns it (its run, dataset, value)."""
    model = mlflow.call(f"logged-models/{model_id}")["model"]
    return {(m["key"], m.get("run_id")): m for m in model.get("data", {}).get("metrics", [])}


def run_logs(api_url: str, flow_run_id) -> list[str]:
    """Every log line of a flow run, as its Logs tab shows them."""
    from prefect import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return [log.message for log in logs]


CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser_page():
    import shutil

    if shutil.which("chromium") is None and not __import__("os").path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (.ci/run installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1100})  # a laptop's screen
        page.set_default_timeout(60_000)
        yield page
        browser.close()


PREFECT_STYLE_NAME = "rho56-delos"  # the Run form's default names: a Greek letter, a number, a star
STAGE_PROGRESS = re.compile(r"(?:data|sft|rejection|grpo|recipe|evaluation \w+): (?:started|step \d+/\d+|done in)"
                            r"|generate \S+: prompts \d+/\d+")


def flow_run_id(api_url: str, name: str) -> str:
    """The id of the top-level flow run named ``name`` (waiting up to 3 minutes: a worker starts it, then it is
    named); the recipe subflow it runs bears the same name, as their MLflow run does."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, FlowRunFilterParentTaskRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    runs = []
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        for _ in range(180):
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                name=FlowRunFilterName(any_=[name]), parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=True)))
            if runs:
                break
            __import__("time").sleep(1)
    assert len(runs) == 1, f"no flow run is named {name!r}"
    return str(runs[0].id)


def flow_run_names(api_url: str, root: str) -> dict[str, str]:
    """Name -> id of every flow run under ``root`` (its subflows, theirs, ...)."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    names, frontier = {}, [root]
    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        while frontier:
            children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
            names.update({child.name: str(child.id) for child in children})
            frontier = [child.id for child in children]
    return names


def duplicated_models(mlflow, experiment: str) -> list[str]:
    """The logged models a re-run copied: any whose source run was a cache hit (such a run must link the models
    of the run that did the work, never log its own), and a reference model logged twice for one fingerprint."""
    models, token = [], None
    while True:
        page = mlflow.call("logged-models/search", {"experiment_ids": [experiment], "max_results": 100,
                                                    **({"page_token": token} if token else {})})
        models += page.get("models", [])
        token = page.get("next_page_token")
        if not token:
            break
    hits = {r["info"]["run_id"] for r in mlflow.runs("tags.`polyreason.cache` = 'hit'")}
    copied = [m["info"]["name"] for m in models if m["info"].get("source_run_id") in hits]
    references = [(m["info"]["name"], p["value"]) for m in models for p in m.get("data", {}).get("params", [])
                  if p["key"] == "fingerprint" and str(m["info"].get("model_type", "")).endswith("-reference")]
    return sorted(set(copied) | {f"{name} ({fp[:8]})" for name, fp in references if references.count((name, fp)) > 1})


def choose(page, profile: str) -> None:
    """Open the profile drop-down of the Run form (it opens on the keyboard) and pick ``profile``."""
    control = page.locator(".p-select-button").first.locator("button")
    option = page.get_by_role("option", name=profile, exact=True)
    for _ in range(5):
        control.focus()
        control.press("ArrowDown")
        try:
            option.wait_for(timeout=5_000)
            break
        except Exception:  # not open yet: the form was still rendering; press again
            page.wait_for_timeout(1_000)
    option.click()


def test_a_person_starts_the_recipe_in_the_prefect_ui_and_finds_it_in_the_mlflow_ui(stack, browser_page, shots):
    page, prefect, mlflow_url = browser_page, stack["state"]["prefect_url"], stack["state"]["mlflow_url"]
    page.goto(f"{prefect}/deployments", wait_until="networkidle")
    page.get_by_placeholder("Search deployments").fill("recipe")  # the list is paged 10 at a time
    page.get_by_role("link", name="recipe", exact=True).first.click()
    page.wait_for_url("**/deployments/deployment/**")
    page.get_by_role("button", name="Run", exact=True).wait_for()
    shots(page, "1-prefect-deployment")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("button", name="Custom run").click()
    page.wait_for_url("**/run?**")
    page.get_by_role("button", name="Add item").wait_for()
    page.locator("input").first.fill(PREFECT_STYLE_NAME)  # the Run Name field: a name like the form's own defaults
    choose(page, "tiny")
    page.get_by_role("button", name="Add item").click()
    page.locator("textarea").last.fill("evaluation.sampling.seed=1")  # the new item of the overrides list
    shots(page, "2-prefect-run-form")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(lambda url: "/deployments/deployment/" in url and "/run?" not in url)  # back on the deployment
    label = "evaluation.sampling.seed=1"
    started = flow_run_id(stack["api"], f"recipe · tiny · {label}")  # renamed like its MLflow run once it starts
    assert re.fullmatch(r"[a-z]+[0-9]+-[a-z]+", PREFECT_STYLE_NAME)
    page.goto(f"{prefect}/runs/flow-run/{started}", wait_until="domcontentloaded")
    deadline, progress = __import__("time").time() + 600, []
    while True:
        page.wait_for_timeout(2500)  # the page fetches its state and logs after the document
        body = page.inner_text("body")
        if "Completed" in body:
            break
        assert "Failed" not in body and __import__("time").time() < deadline, body
        if "Running" in body and STAGE_PROGRESS.search(body):  # its own Logs tab: which stage runs, how far
            if not progress:
                shots(page, "3-prefect-started-run-progress")
            progress += STAGE_PROGRESS.findall(body)
        page.reload(wait_until="domcontentloaded")
    assert progress, "the started run's page never showed a stage's progress line while it ran"
    page.get_by_text(re.compile(r"^evaluation grpo: done in ")).first.wait_for()  # the subflows' lines, here
    shots(page, "3-prefect-flow-run-completed")
    page.get_by_text("Artifacts", exact=True).first.click()  # the run the person started shows the results
    page.get_by_text("tiny-recipe-summary", exact=True).first.click()
    page.get_by_text("benchmark", exact=True).first.wait_for()  # the comparison table of the recipe's summary
    shots(page, "3a-prefect-started-run-summary")

    names = flow_run_names(stack["api"], started)  # every stage's flow run named like its MLflow run
    for stage in ("recipe", "data", "sft", "rejection", "grpo", "base evaluation", "sft evaluation",
                  "grpo evaluation"):
        assert f"{stage} · tiny · {label}" in names, (stage, sorted(names))
    page.goto(f"{prefect}/runs/flow-run/{names[f'grpo evaluation · tiny · {label}']}", wait_until="domcontentloaded")
    page.get_by_text(f"grpo evaluation · tiny · {label}").first.wait_for()
    page.get_by_text(re.compile(r"generate .*: prompts \d+/\d+, .* tokens/s")).first.wait_for()  # its progress
    page.get_by_text(re.compile(r"^evaluation grpo: done in ")).first.wait_for()
    shots(page, "3b-prefect-stage-progress-logs")

    parent = stack["mlflow"].runs("tags.`polyreason.stage` = 'recipe' and params.`evaluation.sampling.seed` = '1'")[0]
    page.goto(f"{mlflow_url}/#/experiments/{parent['info']['experiment_id']}/runs/{parent['info']['run_id']}",
              wait_until="domcontentloaded")
    page.get_by_text("evaluation/grpo/mgsm/fr/accuracy", exact=True).first.wait_for()
    page.get_by_role("heading", name="Registered models").wait_for()  # its logged models' table names it too
    assert page.get_by_role("link", name="tiny", exact=True).count() >= 1  # the registered model, linked
    shots(page, "4-mlflow-parent-run")
    grpo = stack["mlflow"].runs(f"tags.mlflow.parentRunId = '{parent['info']['run_id']}' and "
                                "tags.`polyreason.stage` = 'grpo'")[0]
    for run, first, charts in ((parent, "evaluation", ["mgsm in_domain accuracy base", "mgsm in_domain accuracy grpo"]),
                               (grpo, "grpo", ["reward"])):  # the chart pages open on the headline
        page.goto(f"{mlflow_url}/#/experiments/{run['info']['experiment_id']}/runs/{run['info']['run_id']}"
                  f"/model-metrics?{UI_VIEW}", wait_until="domcontentloaded")
        page.get_by_text(re.compile(r"^\(\d+\)$")).first.wait_for()  # a section's header: "<name>", "(<charts>)"
        page.wait_for_timeout(2000)  # every section rendered
        lines = [line.strip() for line in page.inner_text("body").splitlines() if line.strip()]
        counts = [index for index, line in enumerate(lines) if re.fullmatch(r"\(\d+\)", line)]
        sections = [lines[index - 1] for index in counts]
        assert sections[0] == first, sections  # the first section: the headline's
        opening = lines[counts[0] + 1:counts[1] - 1] if len(counts) > 1 else lines[counts[0] + 1:]
        assert all(chart in opening for chart in charts), (charts, opening)
        shots(page, f"4b-mlflow-{first}-charts")

    sft = stack["mlflow"].runs(f"tags.mlflow.parentRunId = '{parent['info']['run_id']}' and "
                               "tags.`polyreason.stage` = 'sft'")[0]
    assert sft["tags"]["polyreason.cache"] == "hit"  # the API's recipe trained the same SFT model
    source = stack["mlflow"].run(sft["tags"]["polyreason.cache.source_run"])
    page.goto(f"{mlflow_url}/#/experiments/{sft['info']['experiment_id']}/runs/{sft['info']['run_id']}",
              wait_until="domcontentloaded")
    page.get_by_text(re.compile(r"Cache hit: the work")).first.wait_for()  # the run's description
    link = page.get_by_role("link", name=source["info"]["run_name"], exact=True).first
    assert source["info"]["run_id"] in link.get_attribute("href")  # leads to the run that trained it
    shots(page, "4a-mlflow-cache-hit-links-its-source")
    assert {o["model_id"] for o in sft.get("outputs", {}).get("model_outputs", [])} == {
        o["model_id"] for o in source.get("outputs", {}).get("model_outputs", [])}  # its models: the source's
    duplicated = duplicated_models(stack["mlflow"], sft["info"]["experiment_id"])
    assert not duplicated, f"logged models copied by a re-run: {duplicated}"


def test_compare_puts_a_recipe_and_a_registered_version_side_by_side(stack):
    from tests.helpers.cockpit import cli_env

    mlflow = stack["mlflow"]
    parent = mlflow.runs("tags.`polyreason.stage` = 'recipe' and tags.`polyreason.profile` = 'tiny'")[-1]
    env = cli_env(PREFECT_API_URL=stack["api"], MLFLOW_TRACKING_URI=stack["state"]["mlflow_url"])
    done = polyreason("compare", parent["info"]["run_id"], "models:/tiny@candidate", "--baseline", "base",
                      "--project-dir", str(stack["project"]), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(label in done.stdout for label in ("base", "sft", "grpo", "tiny-v")), done.stdout
    comparison = mlflow.runs("tags.`polyreason.stage` = 'comparison'")[0]
    assert comparison["tags"]["polyreason.baseline"] == "base"
    assert "evaluation/grpo/mgsm/fr/accuracy_delta" in comparison["metrics"]
    files = [f["path"] for f in mlflow.call("artifacts/list", run_id=comparison["info"]["run_id"]).get("files", [])]
    assert "mgsm_accuracy_vs_lcpr.png" in files  # top level: MLflow's compare view shows it


def test_a_person_reads_the_results_in_both_uis(stack, browser_page, shots):
    """After the recipes above: the experiment's runs table, two recipes compared, the registered model's logged
    model, the Prefect flow run's metrics table and its link to the MLflow run, the nightly deployment's schedule."""
    page, prefect, mlflow_url, mlflow = browser_page, stack["state"]["prefect_url"], stack["state"]["mlflow_url"], \
        stack["mlflow"]
    parents = mlflow.runs("tags.`polyreason.stage` = 'recipe' and tags.`polyreason.profile` = 'tiny'")
    assert len(parents) >= 2, "the API's recipe and the browser's"
    experiment = parents[0]["info"]["experiment_id"]
    page.goto(f"{mlflow_url}/#/experiments/{experiment}?{UI_VIEW}", wait_until="domcontentloaded")
    page.wait_for_url("**/runs?**")  # the model-training view opens on its runs table
    page.get_by_text(parents[0]["info"]["run_name"]).first.wait_for()
    shots(page, "5-mlflow-experiment-runs")
    columns = {p["key"] for run in mlflow.runs("") for p in run["data"].get("params", [])}  # the table's params
    print(f"param columns of the runs table: {len(columns)}")
    assert 20 < len(columns) < 150, sorted(columns)  # what runs changed, not every setting (330 before)

    two = json.dumps([p["info"]["run_id"] for p in parents[:2]])
    page.goto(f"{mlflow_url}/#/compare-runs?runs={two}&experiments={json.dumps([experiment])}",
              wait_until="domcontentloaded")
    for differing in ("grpo.learning_rate", "evaluation.sampling.seed"):  # the two runs' overrides
        page.get_by_text(differing, exact=True).first.wait_for()
    shots(page, "6-mlflow-compare-recipes")

    first = mlflow.call("model-versions/get", name="tiny", version="1")["model_version"]  # the nightly's version
    model_id = first["source"].removeprefix("models:/")
    assert model_id.startswith("m-"), "the registered version is a LoggedModel"
    page.goto(f"{mlflow_url}/#/experiments/{experiment}/models/{model_id}?{UI_VIEW}", wait_until="domcontentloaded")
    page.get_by_text(model_id, exact=True).first.wait_for()
    page.get_by_text("evaluation/mgsm/fr/accuracy", exact=True).first.wait_for()  # the evaluations' metrics
    assert page.get_by_text(re.compile(r"^Metrics \(0\)$")).count() == 0
    nightly_run = mlflow.run({t["key"]: t["value"] for t in first["tags"]}["polyreason.nightly.last_run"])
    page.get_by_text(nightly_run["info"]["run_name"]).first.wait_for()  # the nightly's point, by its run
    shots(page, "7-mlflow-registered-model-metrics")

    browser = next(p for p in parents if p["data"].get("params") and
                   {q["key"]: q["value"] for q in p["data"]["params"]}.get("evaluation.sampling.seed") == "1")
    evaluation = mlflow.runs(f"tags.mlflow.parentRunId = '{browser['info']['run_id']}' and "
                             "tags.`polyreason.model_tag` = 'grpo'")[0]
    (measured,) = [m["model_id"] for m in mlflow.run(evaluation["info"]["run_id"])["inputs"]["model_inputs"]]
    page.goto(f"{mlflow_url}/#/experiments/{experiment}/models/{measured}", wait_until="domcontentloaded")
    page.get_by_text("evaluation/mgsm/fr/accuracy", exact=True).first.wait_for()  # its metrics, on its page
    assert page.get_by_text(re.compile(r"^Metrics \(0\)$")).count() == 0
    shots(page, "7b-mlflow-evaluated-model-metrics")
    table = run_tree_artifacts(stack["api"], flow_run_id(stack["api"], "recipe · tiny · evaluation.sampling.seed=1"))[
        "tiny-evaluation-grpo-metrics"][0]
    page.goto(f"{prefect}/runs/flow-run/{table.flow_run_id}", wait_until="domcontentloaded")
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("tiny-evaluation-grpo-metrics", exact=True).first.click()
    page.get_by_text("evaluation/mgsm/accuracy", exact=True).first.wait_for()
    headline = page.get_by_role("columnheader", name="in_domain").first.bounding_box()
    assert headline and headline["x"] + headline["width"] <= 1280, headline  # visible on a 1280-pixel screen
    shots(page, "8-prefect-metrics-table")
    page.go_back(wait_until="domcontentloaded")
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("tiny-evaluation-grpo-mlflow-run", exact=True).first.click()
    with page.context.expect_page() as opened:  # the link opens the MLflow UI in a new tab
        page.get_by_role("link", name=f"MLflow run {evaluation['info']['run_id']}").click()
    run_page = opened.value
    run_page.get_by_text("evaluation/mgsm/fr/accuracy", exact=True).first.wait_for()
    assert run_page.url.startswith(f"{mlflow_url}/#/experiments/{experiment}/runs/{evaluation['info']['run_id']}")
    shots(run_page, "9-mlflow-run-from-prefect-link")
    run_page.close()

    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: stack["api"]}), get_client(sync_client=True) as client:
        nightly = client.read_deployment_by_name("nightly-evaluation/tiny")
    page.goto(f"{prefect}/deployments/deployment/{nightly.id}", wait_until="networkidle")
    page.get_by_text("flows/nightly.py:nightly_evaluation", exact=True).wait_for()
    page.get_by_text(re.compile(r"At 02:00 AM")).first.wait_for()  # the profile's cron, 0 2 * * *
    page.get_by_role("link", name="nightly-evaluation").first.wait_for()  # the header has loaded its flow
    shots(page, "10-prefect-nightly-schedule")

    page.goto(f"{prefect}/runs/flow-run/{stack['nightly']}", wait_until="domcontentloaded")  # the nightly's own page
    page.get_by_text(re.compile(r"^tiny v1 nightly \d{4}-\d\d-\d\d$")).first.wait_for()
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("tiny-v1-nightly", exact=True).first.click()
    page.get_by_text(re.compile(r"Version evaluated: models:/tiny/1")).first.wait_for()  # the version
    page.get_by_text("accuracy", exact=True).first.wait_for()  # its metrics table, with intervals and the delta
    page.get_by_text(re.compile(r"Δ to previous \(recipe\)")).first.wait_for()
    assert page.get_by_role("link", name=re.compile(r"^[0-9a-f]{32}$")).count() >= 1  # its MLflow run, linked
    shots(page, "11-prefect-nightly-run")

    page.goto(f"{prefect}/runs/flow-run/{stack['refused']}", wait_until="domcontentloaded")  # a mistyped key
    page.get_by_text(re.compile(r"grpo\.learning_rat: neither a field")).first.wait_for()
    assert "Traceback" not in page.inner_text("body") and "FailedRun" not in page.inner_text("body")
    shots(page, "12-prefect-refused-key")
