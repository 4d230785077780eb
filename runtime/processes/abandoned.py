"""Runs a killed process left open: closed the next time a command starts in the project.

A process ended by ``kill -9`` (or a power cut) cannot close its MLflow runs or
tell Prefect that its flow run stopped: they would say RUNNING forever. Every
run and flow run this project starts carries its process's owner token
(``runtime.processes.children.owner_token``: host, PID and start time). At the next start,
``close_abandoned_runs`` marks KILLED the MLflow runs whose owner is gone, and
``crash_abandoned_flow_runs`` sets such flow runs to Crashed. Runs of live
processes (a second run going on at the same time) and of other hosts are left
alone.
"""

from __future__ import annotations

from runtime.processes.children import owner_alive
from runtime.tracking import OWNER_TAG, client

FLOW_RUN_OWNER = "polyreason-owner="  # tag prefix on flow runs
STARTED: list = []  # ids of the flow runs this process executes, to close if an interrupt leaves them running


def register_flow_run() -> None:
    """Remember the flow run being executed, to close it if an interrupt leaves it running."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None:
        STARTED.append(context.flow_run.id)


def close_abandoned_runs(uri: str) -> list[str]:
    """Mark KILLED the RUNNING runs of this host whose owning process is gone; returns their ids."""
    from mlflow.entities import ViewType

    mlflow_client = client(uri)
    experiments = [e.experiment_id for e in mlflow_client.search_experiments(view_type=ViewType.ALL)]
    if not experiments:
        return []
    closed = []
    for run in mlflow_client.search_runs(experiments, "attributes.status = 'RUNNING'", max_results=1000):
        owner = run.data.tags.get(OWNER_TAG)
        if owner and owner_alive(owner) is False:
            mlflow_client.set_tag(run.info.run_id, "polyreason.ended", f"its process ({owner}) ended without closing it")
            mlflow_client.set_terminated(run.info.run_id, status="KILLED")
            closed.append(run.info.run_id)
    return closed


def flow_run_owner_tag(token: str) -> str:
    return FLOW_RUN_OWNER + token


def crash_abandoned_flow_runs() -> list[str]:
    """Set Crashed the running or pending flow runs whose owning process is gone; returns their names."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    open_states = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING]))
    crashed = []
    with get_client(sync_client=True) as prefect_client:
        for run in prefect_client.read_flow_runs(flow_run_filter=FlowRunFilter(state=open_states), limit=200):
            owner = next((tag[len(FLOW_RUN_OWNER):] for tag in run.tags if tag.startswith(FLOW_RUN_OWNER)), None)
            if owner and owner_alive(owner) is False:
                message = f"its process ({owner}) ended without reporting (killed)"
                prefect_client.set_flow_run_state(run.id, Crashed(message=message), force=True)
                crashed.append(run.name)
    return crashed


def crash_flow_runs(ids: list, message: str) -> list[str]:
    """Set Crashed the flow runs among ``ids`` that are still running (an interrupt the engine did not report)."""
    from prefect import get_client
    from prefect.states import Crashed

    crashed = []
    with get_client(sync_client=True) as prefect_client:
        for flow_run_id in ids:
            run = prefect_client.read_flow_run(flow_run_id)
            if run.state is not None and not run.state.is_final():
                prefect_client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
                crashed.append(run.name)
    return crashed
