"""The plan where flows and the command line meet it: the refusal before any work, and the plan as a Prefect artifact.

* ``checked_plan(profile, sections)``: the plan, or its problems for the sections
  a command runs as the ``ProfileError`` every entry point reports the same way
  (the command line's preflight lists the same lines and exits 2; a run started
  from the Prefect UI with edited values fails before any work, naming the keys).
* ``publish_plan(plan)``: the plan as the markdown artifact ``plan-<profile>`` of
  the current Prefect flow run (``runtime.flow_artifacts``, which publishes every
  report a flow run shows), so each profile's latest plan is one artifact in the UI.
"""

from __future__ import annotations

from typing import Any

from components.settings import ProfileError
from runtime.flow_artifacts import publish_markdown


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
