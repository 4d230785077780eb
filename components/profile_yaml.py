"""Reading a profile's YAML within bounds: aliases capped, no key given twice, a budget on its size.

PyYAML builds an alias (``*name``) as a second reference to the value its anchor
(``&name``) labels, so nine levels of nine aliases fit in a kilobyte of text and
stand for 9^9 values: building the mapping costs nothing, but every later copy or
dump of it (a deep copy, JSON, a Prefect parameter) writes them all out. Aliases
themselves are ordinary YAML (``yaml.safe_dump`` writes one wherever a Python
mapping shares a list between keys), so they are kept, but the composed node tree
is measured before any value is built: the number of values it stands for once
every alias is written out is counted (each shared node walked once), and a
document beyond ``MAX_VALUES`` is refused naming the line of its first alias. A
key given twice is kept last by PyYAML, silently; it is refused here on the node
tree with both lines. Both checks are written by hand because PyYAML has no switch
for either (its ``SafeLoader`` is subclassed, its event and node API used as
documented).

``check_size`` bounds a mapping that did not come from a file (a Python caller may
share one list between keys) by the same count on the built values, and a mapping
that holds itself is refused.

>>> read_yaml_text("a: 1\\nb: [2, 3]", "p.yaml")
{'a': 1, 'b': [2, 3]}
>>> read_yaml_text("a: &x [1]\\nb: *x", "p.yaml")
{'a': [1], 'b': [1]}
>>> read_yaml_text("a: &x [1, 2, 3]\\nb: [*x, *x, *x]", "p.yaml", budget=10)
Traceback (most recent call last):
...
components.settings.base.ProfileError: p.yaml: line 2: YAML aliases (*name, with &name anchors) make this profile \
stand for more than 10 values once written out (the most a profile may hold): write the value out once
>>> read_yaml_text("a:\\n  b: 1\\n  b: 2", "p.yaml")
Traceback (most recent call last):
...
components.settings.base.ProfileError: p.yaml: line 3: key `a.b` given twice (first at line 2): keep one
"""

from __future__ import annotations

from typing import Any

import yaml

from components.settings import ProfileError

__all__ = ["MAX_VALUES", "check_size", "read_yaml_text"]

MAX_VALUES = 1_000_000  # values (mappings, lists, scalars) one profile may stand for; shipped ones hold < 5,000


class _Refused(Exception):
    def __init__(self, line: int, problem: str):
        super().__init__(problem)
        self.line, self.problem = line, problem


class _ProfileLoader(yaml.SafeLoader):
    """PyYAML's safe loader measuring aliases' expansion and refusing keys given twice, both on the node tree."""

    budget = MAX_VALUES

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent) and not hasattr(self, "first_alias_line"):
            self.first_alias_line = self.peek_event().start_mark.line + 1
        return super().compose_node(parent, index)

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        if hasattr(self, "first_alias_line") and _expanded_size(node, self.budget) > self.budget:
            raise _Refused(self.first_alias_line, "YAML aliases (*name, with &name anchors) make this profile stand "
                                                  f"for more than {self.budget} values once written out (the most "
                                                  "a profile may hold): write the value out once")
        _refuse_repeated_keys(node, [], set())
        return self.construct_document(node)


def _expanded_size(root: yaml.Node, budget: int) -> int:
    """Values ``root`` stands for with every alias written out, counting stops past ``budget``; each node is walked
    once (an alias is the node its anchor labels, reached again), a node inside itself counts as past the budget."""
    sizes: dict[int, int] = {}
    walking: set[int] = set()

    def size(node: yaml.Node) -> int:
        if isinstance(node, yaml.ScalarNode):
            return 1
        if id(node) in walking:
            return budget + 1
        if id(node) not in sizes:
            walking.add(id(node))
            children = [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) \
                else node.value
            total = 1
            for child in children:
                total += size(child)
                if total > budget:
                    break
            walking.discard(id(node))
            sizes[id(node)] = total
        return sizes[id(node)]

    return size(root)


def _refuse_repeated_keys(node: yaml.Node, path: list[str], seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias: its node was checked where its anchor stands
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _refuse_repeated_keys(item, [*path, str(index)], seen_nodes)
    elif isinstance(node, yaml.MappingNode):
        seen: dict[tuple[str, Any], int] = {}
        for key, value in node.value:
            name = (key.tag, key.value) if isinstance(key, yaml.ScalarNode) else (key.tag, id(key))
            line = key.start_mark.line + 1
            where = ".".join([*path, str(key.value)])
            if name in seen:
                raise _Refused(line, f"key `{where}` given twice (first at line {seen[name]}): keep one")
            seen[name] = line
            _refuse_repeated_keys(value, [*path, str(key.value)], seen_nodes)


def read_yaml_text(text: str, source: str, budget: int = MAX_VALUES) -> Any:
    """The value of one YAML document; aliases standing for more than ``budget`` values and keys given twice
    refused (``ProfileError`` naming the line)."""
    loader = type("_BudgetLoader", (_ProfileLoader,), {"budget": budget})
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except _Refused as refused:
        raise ProfileError(f"{source}: line {refused.line}: {refused.problem}") from None


def check_size(data: Any, source: str, budget: int = MAX_VALUES) -> int:
    """How many values ``data`` stands for once written out; ``ProfileError`` beyond ``budget`` or for a cycle.

    >>> shared = [1, 2, 3]
    >>> check_size({"a": shared, "b": shared}, "p")
    9
    >>> check_size({"a": [shared] * 10}, "p", budget=20)
    Traceback (most recent call last):
    ...
    components.settings.base.ProfileError: p: stands for more than 20 values once its shared parts are written out \
(the most a profile may hold); write each value out once
    """
    sizes: dict[int, int] = {}

    def size(value: Any, holding: frozenset[int]) -> int:
        if not isinstance(value, (dict, list, tuple)):
            return 1
        if id(value) in holding:
            raise ProfileError(f"{source}: holds itself (a mapping or list inside its own value)")
        if id(value) not in sizes:
            items = value.values() if isinstance(value, dict) else value
            inside, total = holding | {id(value)}, 1
            for item in items:
                total += size(item, inside)
                if total > budget:
                    break
            sizes[id(value)] = total
        if sizes[id(value)] > budget:
            raise ProfileError(f"{source}: stands for more than {budget} values once its shared parts are written "
                               "out (the most a profile may hold); write each value out once")
        return sizes[id(value)]

    return size(data, frozenset())
