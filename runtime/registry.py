"""Trained models in the MLflow model registry: register a recipe's model, resolve ``models:/`` references.

A registered version is an MLflow *logged model* (MLflow 3) whose artifacts are
the LoRA adapter (or a merged full model) and ``polyreason-model.json``, the card
that says how to load it: the base model as the profile named it (a hub id, or
``embedded:gemma3-270m``, so the version loads on any machine that can reach the
base), whether it is an adapter or a merged model, and where it came from.
Versions carry tags (recipe, base model, languages, profile digest, parent run,
per-language headline metrics) and an alias (``candidate`` by default).

``resolve_registered`` turns ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION`` into
local files (downloaded once into the project cache) and model settings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping

from runtime import tracking
from runtime.outputs import RegisteredModel

CARD = "polyreason-model.json"
PREFIX = "models:/"


def write_model_dir(out: Path, weights: str, kind: str, card: Mapping[str, Any]) -> Path:
    """A directory holding the weights to register (``adapter/`` or ``merged/``) and the card."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(weights, out / kind)
    (out / CARD).write_text(json.dumps({**card, "kind": kind, "weights": kind}, indent=1), encoding="utf-8")
    return out


def register_model(run: tracking.RunRef, name: str, alias: str, model_dir: Path,
                   tags: Mapping[str, str]) -> RegisteredModel:
    """Log ``model_dir`` as a logged model of ``run``, register it as a new version of ``name`` and alias it."""
    client = tracking.client(run.tracking_uri)
    logged = client.create_logged_model(run.experiment_id, name=name, source_run_id=run.run_id, tags=dict(tags))
    client.log_model_artifacts(logged.model_id, str(model_dir))
    client.finalize_logged_model(logged.model_id, "READY")
    if not client.search_registered_models(filter_string=f"name = '{name}'"):
        client.create_registered_model(name, description="Registered by polyreason recipes.")
    version = client.create_model_version(name, source=version_source(run.tracking_uri, logged), run_id=run.run_id,
                                          tags=dict(tags), model_id=logged.model_id,
                                          description=version_description(run, logged.model_id, tags))
    client.set_registered_model_alias(name, alias, version.version)
    return RegisteredModel(name=name, version=int(version.version), alias=alias,
                           uri=f"{PREFIX}{name}/{version.version}", model_id=logged.model_id)


def version_description(run: tracking.RunRef, model_id: str, tags: Mapping[str, str]) -> str:
    """The version's description (markdown on its page): its logged model, and the trained one it copies.

    >>> version_description(tracking.RunRef("http://h", "r1", "3"), "m-1", {"polyreason.kind": "merged",
    ...                     "polyreason.trained_model": "models:/m-0"})
    'merged weights: logged model [m-1](http://h/#/experiments/3/models/m-1); trained as logged model [m-0](http://h/#/experiments/3/models/m-0) by the recipe run [r1](http://h/#/experiments/3/runs/r1?workflowType=machine_learning)'
    """
    def model_link(identifier: str) -> str:
        if run.tracking_uri.startswith(("http://", "https://")):
            return f"[{identifier}]({run.tracking_uri.rstrip('/')}/#/experiments/{run.experiment_id}/models/{identifier})"
        return f"`{identifier}`"

    text = f"{tags.get('polyreason.kind', 'model')} weights: logged model {model_link(model_id)}"
    trained = tags.get("polyreason.trained_model", "").removeprefix(PREFIX)
    if trained:
        url = tracking.run_url(run)
        by = f"[{run.run_id}]({url})" if url.startswith("http") else f"`{run.run_id}`"
        text += f"; trained as logged model {model_link(trained)} by the recipe run {by}"
    return text


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
    """Tag a model version with the evaluation run of ``day`` (and as its latest nightly evaluation)."""
    name, _, version = parse_reference(reference)
    client = tracking.client(tracking_uri)
    client.set_model_version_tag(name, version, f"polyreason.nightly.{day}", run_id)
    client.set_model_version_tag(name, version, "polyreason.nightly.last_run", run_id)
