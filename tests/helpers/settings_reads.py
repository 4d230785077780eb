"""Which settings fields a piece of code reads: a recorder on ``StrictSettings`` attribute access.

``recording_reads()`` patches ``StrictSettings.__getattribute__`` for the length
of a ``with`` block and collects ``(section class name, field)`` for every field
read through an attribute. Serialisation (``model_dump``, ``cache_view``,
fingerprints) reads the instance dictionary directly, and reads while the
settings' own validators run (private functions of ``components/settings``, and
whatever they call) are left out, so neither counts as consuming a field: only
code that uses a value does.
"""

from __future__ import annotations

import ast
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from components.settings import StrictSettings

SETTINGS_DIR = str(Path(__file__).resolve().parents[2] / "components" / "settings")


@contextmanager
def recording_reads() -> Iterator[set[tuple[str, str]]]:
    reads: set[tuple[str, str]] = set()

    def spy(self, name):
        if name in type(self).model_fields and not _in_a_validator(sys._getframe(1)):
            reads.add((type(self).__name__, name))
        return object.__getattribute__(self, name)

    StrictSettings.__getattribute__ = spy
    try:
        yield reads
    finally:
        del StrictSettings.__getattribute__


def _in_a_validator(frame) -> bool:
    """Whether the read happens while a settings validator runs (a private function of ``components/settings``
    anywhere up the stack: a validator may call a public method, e.g. the trl values a section derives)."""
    while frame is not None:
        code = frame.f_code
        if SETTINGS_DIR in code.co_filename and code.co_name.startswith("_"):
            return True
        frame = frame.f_back
    return False


def attributes_read_in(path: Path) -> set[str]:
    """Every attribute name read in a source file (``x.name`` loads), by its syntax tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)}
