"""The plan where flows and the command line meet it: the refusal before any work, and the plan as a Prefect artifact.

* ``checked_plan(profile, sections)``: the plan, or its problems for the sections
  a command runs as the ``ProfileError`` every entry point reports the same way
  (the command line's preflight lists the same lines and exits 2; a run started
  from the Prefect UI with edited values fails before any work, naming the keys).
* ``publish_plan(plan)``: the plan as the markdown artifact ``plan-<profile>`` of
  the current Prefect flow run (``runtime.flow_runs.prefect_artifacts``, which publishes every
  report a flow run shows), so each profile's latest plan is one artifact in the UI.
* ``refused(message)``: how a flow run started from the UI ends on settings that cannot run: the
  message in its log and its Failed state, and nothing else. Prefect's engine turns a flow run's
  Failed state into a ``FailedRun`` exception when its process ends and logs that with its
  traceback ("Engine execution exited with unexpected exception"), which would only repeat the
  message under forty lines of Prefect's own frames; ``RefusalShown`` drops exactly those records.
"""

from __future__ import annotations

import logging
from typing import Any

from components.settings import ProfileError
from runtime.flow_runs.prefect_artifacts import publish_markdown


def checked_plan(profile: Any, sections: list[str], source: str = "") -> Any:
    """The plan of the profile's ``sections``; ``ProfileError`` listing its problems when it has any."""
    from components.planning import plan_profile

    plan = plan_profile(profile, sections=sections)
    problems = plan.problems_for(sections)
    if problems:
        head = f"{source}: " if source else ""
        lines = [f"  - {problem}" for problem in problems]
        raise ProfileError(f"{head}{len(problems)} setting(s) cannot do what they say:\n" + "\n".join(lines))
    return plan


def publish_plan(plan: Any) -> Any:
    """A plan as the markdown artifact ``plan-<profile>`` of the current flow run."""
    from components.planning.render import markdown

    return publish_markdown(f"plan-{plan.profile}", markdown(plan),
                            f"polyreason plan {plan.profile}: what each stage reads, does and costs (estimate)")


class RefusalShown(logging.Filter):
    """Drops the records whose exception is the ``FailedRun`` of a refusal already logged (``message``)."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message

    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.exceptions import FailedRun

        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, FailedRun) and str(error) == self.message)


ENGINE_LOGGERS = ("prefect.flow_runs", "prefect.engine")  # where Prefect's engine logs a failed run's exception


def refused(message: str):
    """The flow run's end for settings that cannot run: the message in its log and its Failed state, no traceback."""
    from prefect import get_run_logger
    from prefect.states import Failed

    get_run_logger().error(message)
    for name in ENGINE_LOGGERS:
        logging.getLogger(name).addFilter(RefusalShown(message))
    return Failed(message=message)
