"""The plan where flows and the command line meet it: the refusal before any work, and the plan as a Prefect artifact.

* ``checked_plan(profile, sections)``: the plan, or its problems for the sections
  a command runs as the ``ProfileError`` every entry point reports the same way
  (the command line's preflight lists the same lines and exits 2; a run started
  from the Prefect UI with edited values fails before any work, naming the keys).
* ``publish_markdown(key, markdown, description)``: a markdown artifact on the
  current Prefect flow run (Prefect's ``create_markdown_artifact``), under a key
  Prefect accepts, so each profile's latest plan is one artifact in the UI. Any
  stage can publish its own report through it.
"""

from __future__ import annotations

import re
from typing import Any

from components.settings import ProfileError


def checked_plan(profile: Any, sections: list[str], source: str = "") -> Any:
    """The profile's plan; ``ProfileError`` listing its problems for ``sections`` when it has any."""
    from components.planning import plan_profile

    plan = plan_profile(profile)
    problems = plan.problems_for(sections)
    if problems:
        head = f"{source}: " if source else ""
        lines = [f"  - {problem}" for problem in problems]
        raise ProfileError(f"{head}{len(problems)} setting(s) cannot do what they say:\n" + "\n".join(lines))
    return plan


def artifact_key(text: str) -> str:
    """A Prefect artifact key from ``text`` (lowercase letters, digits and dashes).

    >>> artifact_key("plan-Qwen3-8B_pcs.grpo")
    'plan-qwen3-8b-pcs-grpo'
    """
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")


def publish_markdown(key: str, markdown: str, description: str) -> Any:
    """A markdown artifact on the current flow run (its id); ``None`` outside a flow run."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return None
    return create_markdown_artifact(markdown=markdown, key=artifact_key(key), description=description)


def publish_plan(plan: Any) -> Any:
    """A plan as the markdown artifact ``plan-<profile>`` of the current flow run."""
    from components.planning.render import markdown

    return publish_markdown(f"plan-{plan.profile}", markdown(plan),
                            f"polyreason plan {plan.profile}: what each stage reads, does and costs (estimate)")
