"""Prefect tasks over the model registry for the nightly re-evaluation (thin adapters over ``tasks.registry``)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks import registry


@task(name="nightly-versions", cache_policy=NO_CACHE)
def nightly_references_task(tracking_uri: str, names: list[str], alias: str | None, latest: int) -> list[str]:
    """The registered versions to re-evaluate tonight (read from the registry now, never cached)."""
    return registry.nightly_references(tracking_uri, names, alias, latest)


@task(name="link-evaluation", cache_policy=NO_CACHE)
def link_evaluation_task(tracking_uri: str, reference: str, run_id: str, day: str) -> None:
    """Tag the model version with its dated evaluation run."""
    registry.link_evaluation(tracking_uri, reference, run_id, day)
