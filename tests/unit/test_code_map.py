"""docs/code-map.md names every module of the project where it lives, and names no module that is not there.

The map is one block: an entry starts at the left margin (a top-level folder: ``runtime/``) or two spaces in
(a module or subpackage of ``components/``), and its description continues on deeper-indented lines. A module
is listed when its file name appears in its folder's entry (a subpackage's own entry inside ``components/``);
package ``__init__``/``__main__`` files are their folder's entry. Every ``name.py`` the map mentions (a glob such as
``conformance*.py`` too) must match a file under the folder of the entry that mentions it.

A module of a spec folder (``SPEC_FOLDERS``: the rewards) that assigns ``SPEC`` at its top level is described by that
spec, and ``python -m components.rewards`` lists every one (module, what it pays, range, parts, curriculum) from
the specs; the map's entry for the folder points there, so a new reward needs no line here. The registry test
(``tests/unit/test_rewards_registry.py``) holds every such module registered, so the listing misses none.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("components", "runtime", "tasks", "flows", "cli", "bench")  # the modules the map describes
ENTRY = re.compile(r"^( {0,2})(\S+)")
MENTION = re.compile(r"[\w*-]+\.(?:py|sh)\b")
SPEC_FOLDERS = ("components/rewards",)  # a module here ending with its SPEC is described by it (python -m ...)


def map_entries(text: str) -> dict[str, str]:
    """The map's folder entries, by folder path (``components/metrics``), each with its own lines."""
    block = text.split("```", 2)[1]
    entries: dict[str, list[str]] = {}
    top = sub = None
    for line in block.splitlines():
        found = ENTRY.match(line)
        if found and found.group(2).endswith("/"):
            name = found.group(2).rstrip("/")
            if found.group(1):
                sub = f"{top}/{name}"
            else:
                top, sub = name, None
        elif found and found.group(1) == "":
            top = sub = None  # a top-level file (constraints/gpu.txt) closes the folder above it
        elif found:
            sub = None  # a module of components/ closes the subpackage before it
        folder = sub or top  # a subpackage's lines are its own, not its parent's
        if folder:
            entries.setdefault(folder, []).append(line)
    return {folder: "\n".join(lines) for folder, lines in entries.items()}


def modules() -> list[Path]:
    """Every module file of the described folders, relative to the repository (packages' own files left out)."""
    files = (path.relative_to(REPO) for folder in FOLDERS for path in (REPO / folder).rglob("*.py"))
    return sorted(path for path in files if path.name not in ("__init__.py", "__main__.py")
                  and "__pycache__" not in path.parts)


def described_by_spec(module: Path, root: Path = REPO) -> bool:
    """Whether ``module`` (relative to ``root``) is in a spec folder and assigns ``SPEC`` at its top level."""
    if str(module.parent) not in SPEC_FOLDERS:
        return False
    tree = ast.parse((root / module).read_text(encoding="utf-8"))
    return any(isinstance(target, ast.Name) and target.id == "SPEC"
               for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
               for target in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def entry_of(module: Path) -> str:
    """The entry a module belongs in: its subpackage's inside components/, else its top folder's."""
    parts = module.parts
    return "/".join(parts[:2]) if parts[0] == "components" and len(parts) > 2 else parts[0]


def unlisted(entries: dict[str, str], files: list[Path]) -> list[str]:
    """The modules whose file name is not in their folder's entry."""
    return [str(path) for path in files
            if not re.search(rf"(?<![\w*-]){re.escape(path.name)}\b", entries.get(entry_of(path), ""))]


def stale(entries: dict[str, str], root: Path) -> list[str]:
    """The ``name.py`` mentions that match no file under their entry's folder."""
    named = {(folder, name) for folder, text in entries.items() for name in MENTION.findall(text)}
    return sorted(f"{folder}: {name}" for folder, name in named if not next((root / folder).rglob(name), None))


def read_map() -> dict[str, str]:
    return map_entries((REPO / "docs" / "code-map.md").read_text(encoding="utf-8"))


def test_the_map_parses_into_every_folder_it_describes():
    subpackages = {f"components/{path.name}" for path in (REPO / "components").iterdir()
                   if (path / "__init__.py").exists()}
    assert sorted((set(FOLDERS) | subpackages) - set(read_map())) == []


def test_every_module_has_its_line_in_the_code_map():
    """A reward module is described by its spec instead (``described_by_spec``)."""
    described = [module for module in modules() if not described_by_spec(module)]
    assert unlisted(read_map(), described) == [], "add a line for each to docs/code-map.md, in its folder's entry"


def test_a_spec_describes_only_a_module_of_a_spec_folder_that_ends_with_one(tmp_path):
    files = {"components/rewards/new.py": "X = 1\nSPEC = make('new')\n", "components/rewards/helper.py": "SPECS = []\n",
             "components/data/new.py": "SPEC = make('new')\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert [described_by_spec(Path(name), tmp_path) for name in files] == [True, False, False]


def test_every_module_the_code_map_names_exists_where_it_says():
    assert stale(read_map(), REPO) == []


def test_the_check_sees_a_missing_module_and_a_stale_name(tmp_path):
    text = ("# map\n```\ncomponents/   the library\n  metrics/    metric objects; qa_table.py: QA's\n"
            "    lcpr.py     LCPR\n  scoring.py  rows to verdicts; gone.py: nothing\nruntime/     tracking.py\n"
            "constraints/gpu.txt  pins; .ci/vllm-env.sh\n```\n")
    entries = map_entries(text)
    assert entries["components/metrics"] == "  metrics/    metric objects; qa_table.py: QA's\n    lcpr.py     LCPR"
    assert entries["components"] == "components/   the library\n  scoring.py  rows to verdicts; gone.py: nothing"
    assert set(entries) == {"components", "components/metrics", "runtime"}  # constraints/gpu.txt is a file
    files = [Path("components/metrics/qa_table.py"), Path("components/metrics/sample.py"),
             Path("components/scoring.py"), Path("components/lcpr.py"), Path("runtime/tracking.py")]
    assert unlisted(entries, files) == ["components/metrics/sample.py", "components/lcpr.py"]  # lcpr.py: metrics'
    for path in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert stale(entries, tmp_path) == ["components/metrics: lcpr.py", "components: gone.py"]
