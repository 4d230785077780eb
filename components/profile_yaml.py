"""Reading a profile's YAML within bounds: no aliases, no key given twice, a budget on its size.

PyYAML builds an alias (``*name``) as a second reference to the value its anchor
(``&name``) labels, so nine levels of nine aliases fit in a kilobyte of text and
stand for 9^9 values: building the mapping costs nothing, but every later copy or
dump of it (a deep copy, JSON, a Prefect parameter) writes them all out. A profile
never needs one, so aliases are refused while PyYAML composes the document, before
any value is built, naming the line. A key given twice is kept last by PyYAML,
silently; it is refused here on the composed node tree with both lines. Both checks
are written by hand because PyYAML has no switch for either (its ``SafeLoader`` is
subclassed, its event and node API used as documented).

``check_size`` bounds a mapping that did not come from a file (a Python caller may
share one list between keys): the number of values it stands for is counted with
each shared container counted once per reference but walked once, and a mapping that
holds itself is refused.

>>> read_yaml_text("a: 1\\nb: [2, 3]", "p.yaml")
{'a': 1, 'b': [2, 3]}
>>> read_yaml_text("a: &x [1]\\nb: *x", "p.yaml")
Traceback (most recent call last):
...
components.settings.base.ProfileError: p.yaml: line 2: YAML aliases (*name, with &name anchors) are not allowed in a profile: write the value out
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
    """PyYAML's safe loader refusing aliases (at composition) and keys given twice (on the node tree)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + 1
            raise _Refused(line, "YAML aliases (*name, with &name anchors) are not allowed in a profile: write the "
                                 "value out")
        return super().compose_node(parent, index)

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _refuse_repeated_keys(node, [])
        return self.construct_document(node)


def _refuse_repeated_keys(node: yaml.Node, path: list[str]) -> None:
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _refuse_repeated_keys(item, [*path, str(index)])
    elif isinstance(node, yaml.MappingNode):
        seen: dict[tuple[str, Any], int] = {}
        for key, value in node.value:
            name = (key.tag, key.value) if isinstance(key, yaml.ScalarNode) else (key.tag, id(key))
            line = key.start_mark.line + 1
            where = ".".join([*path, str(key.value)])
            if name in seen:
                raise _Refused(line, f"key `{where}` given twice (first at line {seen[name]}): keep one")
            seen[name] = line
            _refuse_repeated_keys(value, [*path, str(key.value)])


def read_yaml_text(text: str, source: str) -> Any:
    """The value of one YAML document, aliases and keys given twice refused (``ProfileError`` naming the line)."""
    try:
        return yaml.load(text, Loader=_ProfileLoader)  # noqa: S506 - a SafeLoader subclass
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
