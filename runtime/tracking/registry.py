"""Trained models in the MLflow model registry: register a recipe's model, resolve ``models:/`` references.

A registered version is an MLflow *logged model* (MLflow 3) whose artifacts are
the LoRA adapter (or a full model) and ``polyreason-model.json``, the card
that says how to load it: the base model as the profile named it (a hub id, or
``embedded:gemma3-270m``, so the version loads on any machine that can reach the
base), whether it is an adapter or a full model, and where it came from.
The version registers the logged model its evaluation measured (the trained stage's,
with the card added), so the version's model page lists the metrics of every evaluation
of those weights, the recipe's and each nightly's. Versions carry tags (recipe, base
model, languages, profile digest, parent run, the logged model's id) and an alias
(``candidate`` by default).

``resolve_registered`` turns ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` into
local files (downloaded once into the project cache) and model settings.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from runtime import tracking
from runtime.outputs import RegisteredModel

CARD = "polyreason-model.json"
PREFIX = "models:/"
MODEL_TAG = "polyreason.model_id"  # a version's logged model (MLflow's SQL registry keeps no model id of its own)


def write_model_dir(out: Path, weights: str, kind: str, card: Mapping[str, Any]) -> Path:
    """A directory holding the weights to register (``adapter/`` or ``full/``: ``kind``) and the card; the
    card's ``weights`` names the folder, so a version registered when a full model's kind was ``merged`` loads too."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(weights, out / kind)
    (out / CARD).write_text(json.dumps({**card, "kind": kind, "weights": kind}, indent=1), encoding="utf-8")
    return out


def register_model(run: tracking.RunRef, name: str, alias: str, model_dir: Path, tags: Mapping[str, str],
                   evaluated: str | None = None) -> RegisteredModel:
    """Register ``model_dir``'s weights as a new version of ``name`` and alias it.

    ``evaluated``: the logged model that holds these weights and that the evaluation's metrics name; the version
    registers that model (its card added to its files), so the version leads to the model and the model to every
    evaluation of it, nightlies included. Without one (a merged copy, weights no stage uploaded) the directory is
    logged as a new logged model of ``run``."""
    client = tracking.client(run.tracking_uri)
    logged = holding_model(client, evaluated, model_dir)
    if logged is None:
        logged = client.create_logged_model(run.experiment_id, name=name, source_run_id=run.run_id, tags=dict(tags))
        client.log_model_artifacts(logged.model_id, str(model_dir))
        client.finalize_logged_model(logged.model_id, "READY")
    if not client.search_registered_models(filter_string=f"name = '{name}'"):
        client.create_registered_model(name, description="Registered by polyreason recipes.")
    tags = {**tags, MODEL_TAG: logged.model_id}
    version = client.create_model_version(name, source=version_source(run.tracking_uri, logged), run_id=run.run_id,
                                          tags=dict(tags), model_id=logged.model_id,
                                          description=version_description(run, logged.model_id, tags))
    client.set_registered_model_alias(name, alias, version.version)
    return RegisteredModel(name=name, version=int(version.version), alias=alias,
                           uri=f"{PREFIX}{name}/{version.version}", model_id=logged.model_id)


def holding_model(client, model_id: str | None, model_dir: Path):
    """The logged model ``model_id`` with the card of ``model_dir`` added, when its files are the weights there
    (an adapter a stage uploaded; a merged or full model is described, not uploaded); else ``None``."""
    if model_id is None:
        return None
    logged = client.get_logged_model(model_id)
    card = json.loads((model_dir / CARD).read_text(encoding="utf-8"))
    if logged.tags.get("polyreason.weights") == "not uploaded" or card.get("kind") != "adapter":
        return None
    with tempfile.TemporaryDirectory() as scratch:  # the card alone: the model's files are the weights already
        (Path(scratch) / CARD).write_text(json.dumps({**card, "weights": "."}, indent=1), encoding="utf-8")
        client.log_model_artifacts(model_id, scratch)
    return logged


def version_description(run: tracking.RunRef, model_id: str, tags: Mapping[str, str]) -> str:
    """The version's description (markdown on its page): its logged model (whose page holds the metrics of every
    evaluation of it), and the run that registered it; links open MLflow's model-training view.

    >>> version_description(tracking.RunRef("http://h", "r1", "3"), "m-1", {"polyreason.kind": "adapter"})
    'adapter weights: logged model [m-1](http://h/#/experiments/3/models/m-1?workflowType=machine_learning) (the metrics of every evaluation of it); registered by the recipe run [r1](http://h/#/experiments/3/runs/r1?workflowType=machine_learning)'
    """
    if run.tracking_uri.startswith(("http://", "https://")):
        page = f"{run.tracking_uri.rstrip('/')}/#/experiments/{run.experiment_id}/models/{model_id}?{tracking.UI_VIEW}"
        model = f"[{model_id}]({page})"
    else:
        model = f"`{model_id}`"
    url = tracking.run_url(run)
    by = f"[{run.run_id}]({url})" if url.startswith("http") else f"`{run.run_id}`"
    return (f"{tags.get('polyreason.kind', 'model')} weights: logged model {model} (the metrics of every evaluation "
            f"of it); registered by the recipe run {by}")


def version_with_tag(tracking_uri: str, name: str, key: str, value: str) -> str | None:
    """The newest version of model ``name`` whose tag ``key`` is ``value`` (``None`` when there is none)."""
    mlflow_client = tracking.client(tracking_uri)
    if not mlflow_client.search_registered_models(filter_string=f"name = '{name}'"):
        return None
    same = [v.version for v in mlflow_client.search_model_versions(f"name = '{name}'") if v.tags.get(key) == value]
    return max(same, key=int) if same else None


def version_source(tracking_uri: str, logged) -> str:
    """The source a model version points at: the logged model (``models:/<id>``) on a tracking server, its
    artifact folder on a local store, whose registry resolves ``models:/`` through MLflow's process-wide
    default store instead of the client's."""
    if tracking_uri.startswith(("http://", "https://")):
        return f"{PREFIX}{logged.model_id}"
    return logged.artifact_location


def artifact_location(client, source: str) -> str:
    """Where a version's files are: its logged model's artifact folder, or the source itself."""
    return client.get_logged_model(source.removeprefix(PREFIX)).artifact_location if source.startswith(PREFIX) else source


def parse_reference(reference: str) -> tuple[str, str | None, str | None]:
    """``models:/NAME@ALIAS`` -> (name, alias, None); ``models:/NAME/VERSION`` -> (name, None, version).

    >>> parse_reference("models:/demo@candidate"), parse_reference("models:/demo/3")
    (('demo', 'candidate', None), ('demo', None, '3'))
    """
    body = reference.removeprefix(PREFIX)
    if "@" in body:
        name, alias = body.split("@", 1)
        return name, alias, None
    name, _, version = body.partition("/")
    if not name or not version.isdigit():
        raise ValueError(f"{reference!r}: expected models:/NAME@ALIAS or models:/NAME/VERSION")
    return name, None, version


def resolve_registered(tracking_uri: str, reference: str, cache_dir: Path) -> dict[str, Any]:
    """Download a registered version once; return its card with local paths and the version's identity."""
    from mlflow.artifacts import download_artifacts

    name, alias, version = parse_reference(reference)
    client = tracking.client(tracking_uri)
    found = client.get_model_version_by_alias(name, alias) if alias else client.get_model_version(name, version)
    local = cache_dir / "registry" / name / str(found.version)
    if not (local / "artifacts" / CARD).is_file():
        shutil.rmtree(local, ignore_errors=True)
        download_artifacts(artifact_uri=artifact_location(client, found.source), dst_path=str(local),
                           tracking_uri=tracking_uri)
    root = local / "artifacts"
    card = json.loads((root / CARD).read_text(encoding="utf-8"))
    return {**card, "path": str(root / card["weights"]), "uri": f"{PREFIX}{name}/{found.version}",
            "version": int(found.version), "name": name, "run_id": found.run_id}


def nightly_references(tracking_uri: str, names: list[str], alias: str | None, latest: int) -> list[str]:
    """``models:/NAME/VERSION`` of every version a nightly run re-evaluates: the alias's and the newest ``latest``."""
    client = tracking.client(tracking_uri)
    found: list[str] = []
    for name in names:
        if not client.search_registered_models(filter_string=f"name = '{name}'"):
            continue
        versions = sorted((int(v.version) for v in client.search_model_versions(f"name = '{name}'")), reverse=True)
        chosen = versions[:latest]
        if alias is not None and alias in client.get_registered_model(name).aliases:
            chosen.append(int(client.get_model_version_by_alias(name, alias).version))
        found += [f"{PREFIX}{name}/{version}" for version in sorted(set(chosen))]
    return found


def link_evaluation(tracking_uri: str, reference: str, run_id: str, day: str) -> None:
    """Tag a model version with the evaluation run of ``day`` (and as its latest nightly evaluation), and name that
    run, linked, in the version's description (the page a person reads; tags are for lookups)."""
    name, _, version = parse_reference(reference)
    client = tracking.client(tracking_uri)
    client.set_model_version_tag(name, version, f"polyreason.nightly.{day}", run_id)
    client.set_model_version_tag(name, version, "polyreason.nightly.last_run", run_id)
    url = tracking.run_url(tracking.RunRef(tracking_uri, run_id, client.get_run(run_id).info.experiment_id))
    latest = f"{NIGHTLY_LINE}{day}, run " + (f"[{run_id}]({url})" if url.startswith("http") else f"`{run_id}`")
    kept = [line for line in (client.get_model_version(name, version).description or "").split("\n")
            if line.strip() and not line.startswith(NIGHTLY_LINE)]
    client.update_model_version(name, version, description="\n\n".join([*kept, latest]))


NIGHTLY_LINE = "Latest nightly evaluation: "
