"""End-to-end: the whole recipe through the ``polyreason`` CLI against a real Prefect server and a real MLflow
tracking server, on the tiny from-config model; every assertion on MLflow goes through its REST API.

Data (MGSM exemplars as teacher traces) -> LoRA SFT -> rejection sampling of the SFT model -> GRPO -> evaluation
of the base, SFT and GRPO models -> registry. Then the same recipe with one GRPO setting changed: data, SFT and
rejection are cache hits (their runs point at the runs that produced the artifacts) and the base model's
evaluation generates nothing, while GRPO trains again, its model's generations are made by a fanned-out task
(``execution.runner: threads``) and the registry gets a new version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.helpers.publishers import late_writes

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LANGS = ["en", "fr"]


def recipe_profile(model: Path, shared_data: Path, tracking_uri: str) -> dict:
    tiny = {"model": str(model), "dtype": "float32", "device": "cpu"}
    return {
        "name": "tiny-recipe",
        "tracking": {"tracking_uri": tracking_uri, "experiment": "e2e-recipe"},
        "data": {"languages": LANGS, "traces": {"from_file": str(shared_data / "mgsm" / "exemplars.json")},
                 "rejection": {"strategy": "unsolved", "prompt": {"style": "instruction"}, "per_language": 4,
                               "validation_per_language": 1,
                               "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 6, "batch_size": 16}}},
        "sft": {"model": tiny, "template": "chat", "max_length": 256, "max_steps": 4, "save_steps": 2,
                "per_device_train_batch_size": 4, "gradient_checkpointing": False, "cpu_threads": 1},
        "grpo": {"model": {**tiny, "chat": True}, "rewards": [{"name": "accuracy"}], "max_steps": 2,
                 "per_device_train_batch_size": 4, "save_steps": 1, "cpu_threads": 1, "audit": {"enabled": False},
                 "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 6}},
        "evaluation": {"model": {**tiny, "chat": True}, "sampling": {"max_new_tokens": 6, "batch_size": 8},
                       "benchmarks": [{"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": list(LANGS),
                                       "limit": 2}]},  # a list of its own: one list twice is a YAML alias
        "registry": {"name": "tiny-recipe", "alias": "candidate"},
    }


def polyreason(command: str, profile: Path, project: Path, prefect_url: str, *overrides: str,
               as_json: bool = False) -> tuple[dict, subprocess.CompletedProcess]:
    """Run a stage command; its summary (``--json``: parsed from stdout, else from ``--out``) and the process."""
    out = project / f"{command}-summary.json"
    env = dict(os.environ, PREFECT_API_URL=prefect_url,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("POLYREASON_VERBOSE", None)
    result = ["--json"] if as_json else ["--out", str(out)]
    done = subprocess.run([sys.executable, "-m", "cli", command, str(profile), *overrides, "--project-dir",
                           str(project), *result], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return json.loads(done.stdout if as_json else out.read_text(encoding="utf-8")), done


def polyreason_recipe(profile: Path, project: Path, prefect_url: str, *overrides: str, as_json: bool = False) -> dict:
    """The recipe; by default its terminal is checked: progress on stderr, no library warnings, and on stdout the
    comparison's headline and where the runs are (``--json``: stdout is the JSON alone, checked by parsing it)."""
    summary, done = polyreason("recipe", profile, project, prefect_url, *overrides, as_json=as_json)
    if not as_json:
        lines = done.stdout.splitlines()  # the comparison's headline, within 100 columns, and where its table is
        text = lines[:next(i for i, line in enumerate(lines) if line.startswith("MLflow run: "))]  # paths, URLs whole
        assert max(map(len, text)) <= 100 and "Δ [paired 95% interval] (n_both" in done.stdout, done.stdout
        assert "mgsm, in-domain (fr):" in lines, done.stdout  # the in-domain languages this evaluation has
        assert any(line.startswith("lcpr ") for line in lines) and any(line.startswith("accuracy ") for line in lines)
        assert "grpo - sft  Δ" in done.stdout or "grpo - base  Δ" in done.stdout, done.stdout
        assert f"polyreason compare {summary['run_id']}" in done.stdout and "comparison/comparison.txt" in done.stdout
        assert f"MLflow run: {summary['run_url']}" in done.stdout and "MLflow run: http://" in done.stdout
        assert f"Prefect flow run: {prefect_url.removesuffix('/api')}/runs/flow-run/{summary['flow_run_id']}" \
            in done.stdout
        assert "sft: step 4/4" in done.stderr and "generate base: prompts" in done.stderr, done.stderr[-3000:]
        assert "Warning" not in done.stderr and "| INFO" not in done.stderr, done.stderr[-3000:]
    return summary


class MlflowREST:
    """The few MLflow REST endpoints the assertions need (no client library in between)."""

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")

    def call(self, endpoint: str, body: dict | None = None, **query) -> dict:
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def run(self, run_id: str) -> dict:
        run = self.call("runs/get", run_id=run_id)["run"]
        run["metrics"] = {m["key"]: m["value"] for m in run["data"].get("metrics", [])}
        run["tags"] = {t["key"]: t["value"] for t in run["data"].get("tags", [])}
        run["params"] = {p["key"]: p["value"] for p in run["data"].get("params", [])}
        return run

    def children(self, parent: dict) -> list[dict]:
        body = {"experiment_ids": [parent["info"]["experiment_id"]], "max_results": 100,
                "filter": f"tags.mlflow.parentRunId = '{parent['info']['run_id']}'"}
        return [self.run(r["info"]["run_id"]) for r in self.call("runs/search", body).get("runs", [])]

    def artifacts(self, run_id: str, path: str) -> list[str]:
        return [f["path"] for f in self.call("artifacts/list", run_id=run_id, path=path).get("files", [])]

    def logged_model(self, model_id: str) -> dict:
        """A logged model (MLflow 3): its info, its params as a dict, its metrics as logged."""
        model = self.call(f"logged-models/{model_id}")["model"]
        data = model.setdefault("data", {})
        model["params"] = {p["key"]: p["value"] for p in data.get("params", [])}
        data.setdefault("metrics", [])
        return model

    def model_artifacts(self, model_id: str) -> list[str]:
        listed = self.call(f"logged-models/{model_id}/artifacts/directories")
        return [f["path"] for f in listed.get("files", [])]


def prefect_artifact(api_url: str, key: str) -> str:
    """The latest markdown of the Prefect artifact ``key`` (Prefect's REST API)."""
    body = json.dumps({"artifacts": {"key": {"any_": [key]}}, "sort": "CREATED_DESC", "limit": 1}).encode()
    request = urllib.request.Request(f"{api_url}/artifacts/filter", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        found = json.loads(response.read())
    assert found, f"no Prefect artifact {key!r}"
    return found[0]["data"]


def measured_models(mlflow: MlflowREST, children: dict[str, dict], trained: dict[str, dict]) -> None:
    """Each evaluation's metrics carry the logged model they measure (the trained stage's, or one describing the
    base) and the benchmark's dataset, which is an input of the evaluation run with its digest (MLflow 3)."""
    for tag in ("base", "sft", "grpo"):
        run = children[f"evaluation-{tag}"]
        (model_id,) = [m["model_id"] for m in run["inputs"]["model_inputs"]]
        model = mlflow.logged_model(model_id)
        if tag in trained:  # the weights the stage logged as its output
            assert model_id in {o["model_id"] for o in trained[tag]["outputs"]["model_outputs"]}, tag
        else:
            assert model["info"]["model_type"] == "base-reference" and "fingerprint" in model["params"]
        (dataset,) = [d["dataset"] for d in run["inputs"]["dataset_inputs"] if d["dataset"]["name"] == "mgsm"]
        assert dataset["digest"] and '"num_rows": 4' in dataset["profile"]  # 2 problems in each of 2 languages
        measured = {m["key"]: m for m in model["data"]["metrics"]}
        accuracy = measured["evaluation/mgsm/fr/accuracy"]
        assert accuracy["model_id"] == model_id and accuracy["run_id"] == run["info"]["run_id"], tag
        assert (accuracy["dataset_name"], accuracy["dataset_digest"]) == ("mgsm", dataset["digest"]), tag
        assert accuracy["value"] == run["metrics"]["evaluation/mgsm/fr/accuracy"]


def measured_model(run: dict) -> str:
    """The logged model an evaluation run measured (its one model input)."""
    (model_id,) = [m["model_id"] for m in run["inputs"]["model_inputs"]]
    return model_id


def by_name(runs: list[dict]) -> dict[str, dict]:
    """Child runs by stage (an evaluation by its model too): ``data``, ``sft``, ``evaluation-base`` …"""
    def key(run: dict) -> str:
        stage = run["tags"]["polyreason.stage"]
        return f"{stage}-{run['tags']['polyreason.model_tag']}" if stage == "evaluation" else stage

    return {key(run): run for run in runs}


def test_recipe_runs_every_stage_under_one_parent_and_reuses_what_did_not_change(
        tiny_model_dir, shared_data, tmp_path, prefect_server, mlflow_server):
    profile = tmp_path / "recipe.yaml"
    profile.write_text(yaml.safe_dump(recipe_profile(tiny_model_dir, shared_data, mlflow_server)), encoding="utf-8")
    project = tmp_path / "project"
    mlflow = MlflowREST(mlflow_server)

    first = polyreason_recipe(profile, project, prefect_server)
    parent = mlflow.run(first["run_id"])
    children = by_name(mlflow.children(parent))
    assert set(children) == {"data", "sft", "rejection", "grpo", "evaluation-base", "evaluation-sft",
                             "evaluation-grpo"}
    assert {c["tags"]["polyreason.cache"] for c in children.values()} == {"miss"}
    assert parent["info"]["run_name"] == f"recipe · tiny-recipe · {first['run_id'][:8]}"  # no override: nothing to add
    assert children["evaluation-sft"]["info"]["run_name"].startswith("sft evaluation · tiny-recipe · ")
    for run in (parent, *children.values()):  # the Prefect flow run that logged it, for the way back
        assert run["tags"]["prefect.flow_run.id"] and run["tags"]["prefect.flow_run.name"], run["info"]["run_name"]
    assert len({c["tags"]["prefect.flow_run.id"] for c in children.values()}) == len(children)  # a flow run each
    experiment = mlflow.call("experiments/get", experiment_id=parent["info"]["experiment_id"])["experiment"]
    assert {"key": "mlflow.experimentKind", "value": "custom_model_development"} in experiment["tags"]
    assert parent["tags"]["polyreason.profile_digest"] and parent["tags"]["mlflow.source.git.commit"]
    assert parent["tags"]["polyreason.git.dirty"] in ("true", "false")  # the code's provenance on the parent run
    assert parent["tags"]["polyreason.library.trl"] and parent["tags"]["polyreason.library.math-verify"]
    sft_run = children["sft"]["info"]["run_id"]
    assert mlflow.artifacts(sft_run, "cache_key") == ["cache_key/sft-train.json"]  # why it was (not) reused
    assert children["evaluation-base"]["tags"]["polyreason.cache.code.score"]
    for tag in ("base", "sft", "grpo"):
        for lang in LANGS:
            assert f"evaluation/{tag}/mgsm/{lang}/accuracy" in parent["metrics"], (tag, lang)
            assert f"evaluation/mgsm/{lang}/accuracy" in children[f"evaluation-{tag}"]["metrics"]
    assert "evaluation/grpo/mgsm/fr/accuracy_delta" in parent["metrics"]
    # the plan: max_steps 4 and 2; 8 RL rows (4 per language) at 2 prompts per step: 4 steps per epoch
    assert (parent["params"]["plan.sft.optimizer_steps"], parent["params"]["plan.grpo.optimizer_steps"],
            parent["params"]["plan.grpo.steps_per_epoch"], parent["params"]["plan.problems"]) == ("4", "2", "4", "0")
    assert {"plan/plan.md", "plan/plan.json"} <= set(mlflow.artifacts(first["run_id"], "plan"))
    assert "## grpo" in prefect_artifact(prefect_server, "plan-tiny-recipe")
    assert {"comparison/languages.json", "profile.yaml"} <= set(mlflow.artifacts(first["run_id"], "")) | {
        p for p in mlflow.artifacts(first["run_id"], "comparison")}
    for stage in ("sft", "grpo"):  # every checkpoint a logged model with its step and its adapter's files
        run = children[stage]
        checkpoints = {key.rsplit(".", 1)[1]: value.removeprefix("models:/") for key, value in run["tags"].items()
                       if key.startswith("polyreason.checkpoint.")}
        assert checkpoints and set(checkpoints.values()) <= {o["model_id"] for o in run["outputs"]["model_outputs"]}
        for step, model_id in checkpoints.items():
            model = mlflow.logged_model(model_id)
            assert model["params"]["step"] == step and model["info"]["source_run_id"] == run["info"]["run_id"]
            assert "adapter_model.safetensors" in mlflow.model_artifacts(model_id)
    measured_models(mlflow, children, {"sft": children["sft"], "grpo": children["grpo"]})
    (benchmark,) = [d["dataset"] for d in parent["inputs"]["dataset_inputs"]]  # the recipe's run lists it too
    assert (benchmark["name"], benchmark["source_type"]) == ("mgsm", "local")

    version = mlflow.call("registered-models/alias", name="tiny-recipe", alias="candidate")["model_version"]
    tags = {t["key"]: t["value"] for t in version.get("tags", [])}
    assert version["version"] == "1" and version["run_id"] == first["run_id"]
    assert tags["polyreason.base_model"] == str(tiny_model_dir) and tags["polyreason.kind"] == "adapter"
    assert tags["polyreason.parent_run_id"] == first["run_id"] and tags["polyreason.languages"] == "en,fr"
    assert tags["polyreason.profile_digest"] == parent["tags"]["polyreason.profile_digest"]
    assert not [key for key in tags if key.startswith("mgsm/")]  # its metrics are its model's, not text tags
    trained = tags["polyreason.model_id"]  # the version is the GRPO stage's model, the one its evaluation measured
    assert version["source"] == f"models:/{trained}" and trained in version["description"]
    assert trained in {o["model_id"] for o in children["grpo"]["outputs"]["model_outputs"]}
    assert measured_model(children["evaluation-grpo"]) == trained
    assert trained in {o["model_id"] for o in parent["outputs"]["model_outputs"]}  # the recipe lists its models
    assert "polyreason-model.json" in mlflow.model_artifacts(trained)  # the card that says how to load it

    second = polyreason_recipe(profile, project, prefect_server, "grpo.learning_rate=2.0e-5",
                               "execution.runner=threads", "execution.workers=2", as_json=True)  # fanned out
    parent2 = mlflow.run(second["run_id"])
    children2 = by_name(mlflow.children(parent2))
    label = "grpo.learning_rate=2.0e-5 execution.runner=threads execution.workers=2"  # what this run changed
    assert parent2["info"]["run_name"] == f"recipe · tiny-recipe · {label} · {second['run_id'][:8]}"
    assert children2["grpo"]["info"]["run_name"].startswith(f"grpo · tiny-recipe · {label} · ")
    assert parent2["metrics"]["evaluation/fanout/tasks"] == 1  # only the new GRPO model had anything to generate
    assert "evaluation/fanout.json" in mlflow.artifacts(second["run_id"], "evaluation")
    for stage in ("data", "sft", "rejection", "evaluation-base", "evaluation-sft"):
        assert children2[stage]["tags"]["polyreason.cache"] == "hit", stage
        assert children2[stage]["tags"]["polyreason.cache.source_run"] == children[stage]["info"]["run_id"], stage
    assert children2["sft"]["tags"]["polyreason.cache.code.sft-train"] == children["sft"]["tags"][
        "polyreason.cache.code.sft-train"]  # same code, same libraries: the key differs in nothing but the run
    def outputs(run):
        return {o["model_id"] for o in run.get("outputs", {}).get("model_outputs", [])}

    def measured(run):
        return [m["model_id"] for m in run["inputs"]["model_inputs"]]

    assert outputs(children2["sft"]) == outputs(children["sft"])  # the hit links the source's models, logs none
    assert all(mlflow.logged_model(m)["info"]["source_run_id"] == children["sft"]["info"]["run_id"]
               for m in outputs(children2["sft"]))
    assert children["sft"]["info"]["run_id"] in children2["sft"]["tags"]["polyreason.cache.source_run_url"]
    assert measured(children2["evaluation-base"]) == measured(children["evaluation-base"])  # one base reference
    assert measured(children2["evaluation-sft"]) == measured(children["evaluation-sft"])
    assert children2["grpo"]["tags"]["polyreason.cache"] == "miss"
    assert children2["evaluation-grpo"]["tags"]["polyreason.cache"] == "miss"
    assert not any(b["generated"] for e in second["evaluations"][:2] for b in e["benchmarks"].values())
    assert second["registered"]["version"] == 2
    assert late_writes(project) == []  # every artifact directory: one publisher per product, nothing added later

    registered, _ = polyreason("evaluate", profile, project, prefect_server, "data=null", "sft=null", "grpo=null",
                               "registry=null", "evaluation.model.model=models:/tiny-recipe@candidate")
    assert registered["model"]["registered"] == "models:/tiny-recipe/2"
    assert (Path(registered["model"]["model"]["adapter"]) / "adapter_config.json").is_file()
    run = mlflow.run(registered["run_id"])
    assert run["tags"]["polyreason.registered"] == "models:/tiny-recipe/2" and "evaluation/mgsm/fr/accuracy" in run["metrics"]
    version2 = mlflow.call("model-versions/get", name="tiny-recipe", version="2")["model_version"]
    assert measured_model(run) == version2["source"].removeprefix("models:/")  # its metrics on the version's model
