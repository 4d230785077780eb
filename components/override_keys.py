"""What the Prefect Run form says about ``overrides``: the keys each profile has and their current values.

Prefect builds a deployment's Run form from its parameter schema (an OpenAPI/JSON
schema: each parameter's ``description`` is shown with its field) and shows the
deployment's ``description`` (markdown) on the deployment's page. ``overrides`` is a
list of dotted ``key=value`` strings whose keys depend on the profile picked in the
drop-down, so both are generated from the profiles when ``polyreason deploy`` runs:

* ``overrides_help``: the parameter's description: how to write an override, and a
  few keys of the default profile with their current values;
* ``deployment_description``: a page's worth: what the command runs, how to
  override, the keys people change with the default profile's values, and a link to
  the full list;
* ``keys_markdown``: the full list (a file ``polyreason deploy`` writes and the page
  names): for every profile the command can run, a table of every key of the
  sections it runs (``components.config.flatten``'s dotted keys, the names an override
  takes) with its current value written as YAML, which is how an override's value is read.

>>> yaml_text(None), yaml_text(True), yaml_text(5e-05), yaml_text('["fr", "ja"]')
('null', 'true', '5e-05', '["fr", "ja"]')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.config import flatten

EXAMPLE_KEYS = ("grpo.learning_rate", "grpo.max_steps", "sft.max_steps", "evaluation.sampling.max_new_tokens")
# the keys people change most, shown on the deployment's page with the default profile's values
CHANGED_KEYS = ("data.languages", "sft.learning_rate", "sft.max_steps", "grpo.learning_rate", "grpo.max_steps",
                "grpo.beta", "evaluation.benchmarks.0.limit", "evaluation.benchmarks.0.languages",
                "evaluation.sampling.max_new_tokens", "registry.name", "tracking.experiment")


def yaml_text(value: Any) -> str:
    """A flattened value as it is written after ``key=`` (read as YAML)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dotted(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys as overrides name them: a list of sections by index (``evaluation.benchmarks.0.limit``), a
    list of plain values whole (``components.config.flatten`` writes it as JSON, which YAML reads).

    >>> dotted({"benchmarks": [{"name": "mgsm", "languages": ["fr"]}], "seed": 0})
    {'benchmarks.0.name': 'mgsm', 'benchmarks.0.languages': '["fr"]', 'seed': 0}
    """
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, list) and item and all(isinstance(entry, dict) for entry in item):
            for index, entry in enumerate(item):
                out.update(dotted(entry, f"{prefix}{key}.{index}."))
        elif isinstance(item, dict):
            out.update(dotted(item, f"{prefix}{key}."))
        else:
            out.update(flatten({key: item}, prefix))
    return out


def section_keys(profile: Any, sections: Sequence[str]) -> dict[str, str]:
    """Every dotted key of ``sections`` in the profile with its current value (YAML text), in the profile's order.

    >>> section_keys({"name": "x", "sft": {"lora": {"r": 8}, "max_steps": -1}, "grpo": {"beta": 0.0}}, ["sft"])
    {'sft.lora.r': '8', 'sft.max_steps': '-1'}
    """
    data = profile.model_dump(mode="json") if hasattr(profile, "model_dump") else profile
    return {key: yaml_text(value) for key, value in dotted(data).items() if key.split(".", 1)[0] in sections}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or '""'


def profile_table(name: str, keys: Mapping[str, str]) -> str:
    """One profile's keys as a markdown table under its name."""
    lines = [f"### {name}", "", "| key | current value |", "|---|---|"]
    return "\n".join(lines + [f"| `{key}` | {_cell(value)} |" for key, value in keys.items()])


def keys_markdown(command: str, keys: Mapping[str, Mapping[str, str]]) -> str:
    """Every key of every profile ``command`` runs, with its current value (``keys``: profile -> key -> value)."""
    head = f"## polyreason {command}: the keys and current values of the {len(keys)} profile(s) it runs"
    return "\n\n".join([head, *(profile_table(name, found) for name, found in keys.items())])


def deployment_description(command: str, help_text: str, default: str, keys: Mapping[str, str],
                           full_list: str) -> str:
    """The deployment's page: what it runs, how to override, the keys people change (``keys``: the default
    profile's key -> current value), and where the full list is (``full_list``, a link or a file).

    >>> text = deployment_description("sft", "Train.", "demo", {"sft.max_steps": "-1"}, "[all keys](http://x)")
    >>> "`sft.max_steps=-1`" in text and text.endswith("[all keys](http://x)")
    True
    """
    changed = [key for key in CHANGED_KEYS if key in keys] or list(keys)[:5]
    lines = [f"**polyreason {command}**: {help_text}", "",
             "Run > Custom run: pick a **profile**, then add `key=value` items to **overrides** (a dotted key, a "
             "value read as YAML, e.g. `evaluation.benchmarks.0.languages=[fr, ja]`). A key the profile does not "
             "have fails the run before any work, naming the key.", "",
             f"Keys people change ({default}'s current values):", "",
             *(f"- `{key}={_cell(keys[key])}`" for key in changed), "",
             f"Every key of every profile, with its current value: {full_list}"]
    return "\n".join(lines)


def overrides_help(default: str, keys: Mapping[str, str]) -> str:
    """The ``overrides`` parameter's description: the syntax and some keys of the default profile, with values.

    >>> print(overrides_help("demo", {"grpo.learning_rate": "5e-05", "sft.lora.r": "8"}))  # doctest: +ELLIPSIS
    Dotted key=value changes ... e.g. demo has grpo.learning_rate=5e-05. A key ...
    """
    examples = [key for key in EXAMPLE_KEYS if key in keys] or list(keys)[:3]
    shown = ", ".join(f"{key}={keys[key]}" for key in examples)
    return (f"Dotted key=value changes to the chosen profile, one per item; the value is read as YAML. The keys "
            f"of each profile and their current values are listed in this deployment's description (its page), "
            f"e.g. {default} has {shown}. A key the profile does not have fails the run before any work.")
