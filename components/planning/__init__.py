"""``polyreason plan``: what a profile will do before it runs, and the settings that cannot do what they say.

``plan_profile(profile)`` (``components.planning.plan``) reads settings, local
files and two tables kept here (``models.yaml``: hub models' size and context;
``throughput.yaml``: per-GPU throughput for the GPU-hours estimate), never model
weights, the network or a GPU. ``components.planning.render`` shows the result.
"""

from components.planning.plan import Plan, plan_profile
from components.planning.stage import Problem, StagePlan

__all__ = ["Plan", "Problem", "StagePlan", "plan_profile"]
