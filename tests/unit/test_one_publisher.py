"""One publisher per product: tasks and flows write artifacts only through ``Project.produce``, and nothing is
written into a directory after its products were published.

The static check reads the task and flow modules: no manifest publication, lock,
artifact directory or file write of their own, except the work functions they
hand to ``Project.produce`` (nested functions and lambdas) and the journal
hand-over of pooled generation. The dynamic check (``tests.helpers.publishers``,
also run by the e2e tests on real projects) is shown here to catch each way a
product can get a second writer.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from runtime.project import Made, Project
from tests.helpers.publishers import late_writes

REPO = Path(__file__).resolve().parents[2]
WRITES = {"write_text", "write_bytes", "publish", "artifact_dir", "copytree", "copyfile", "copy", "write_atomic"}
JOURNAL_HANDOVER = {("tasks/evaluation.py", "pool_generations_task")}  # holds the locks, publishes nothing


def own_writes(path: Path, root: Path = REPO) -> list[str]:
    """Writes a task or flow module makes outside the work functions it hands to ``Project.produce``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for top in tree.body:
        if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nested = {id(n) for inner in ast.walk(top) if inner is not top and isinstance(inner, (ast.FunctionDef, ast.Lambda))
                  for n in ast.walk(inner)}
        for node in ast.walk(top):
            if not isinstance(node, ast.Call) or id(node) in nested:
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            mode = next((a.value for a in node.args[1:2] if isinstance(a, ast.Constant)), "r") if name == "open" else ""
            if name in WRITES or (name == "open" and set(str(mode)) & set("wax")) or (
                    name == "writing" and (str(path.relative_to(root)), top.name) not in JOURNAL_HANDOVER):
                found.append(f"{path.relative_to(root)}:{node.lineno} {top.name}: {name}")
    return found


def test_tasks_and_flows_write_artifacts_only_through_project_produce():
    files = sorted((REPO / "tasks").glob("*.py")) + sorted((REPO / "flows").glob("*.py"))
    assert [write for path in files for write in own_writes(path)] == []


def test_the_static_check_sees_a_direct_write(tmp_path):
    source = tmp_path / "tasks" / "probe.py"
    source.parent.mkdir()
    source.write_text("def t(project, out):\n    out.write_text('x')\n    project.produce('s', 1, 'p', "
                      "lambda d: (d / 'p').write_text('y'))\n    open(out, 'w')\n    open(out)\n"
                      "    with writing(out):\n        pass\n")
    assert [w.split(" ", 1)[1] for w in own_writes(source, tmp_path)] == ["t: write_text", "t: open", "t: writing"]


def publish(project: Project, identity: str, name: str = "table.jsonl") -> Path:
    def work(out: Path) -> Made:
        (out / name).write_text('{"a": 1}\n', encoding="utf-8")
        (out / "train.log").write_text("working file\n", encoding="utf-8")
        return Made(summary={"rows": 1})

    return Path(project.produce("stage", identity, name, work).path)


@pytest.mark.parametrize("case, expected", [
    ("clean", []),
    ("written afterwards", ["extra.txt: in no product"]),
    ("no manifest", ["files but no manifest"]),
    ("two publishers", ["table.jsonl: published by table.jsonl, copy"]),
])
def test_late_writes_finds_every_second_writer(tmp_path, case, expected):
    project = Project(str(tmp_path))
    product = publish(project, "one")
    if case == "written afterwards":
        (product.parent / "extra.txt").write_text("late\n", encoding="utf-8")
    elif case == "no manifest":
        (tmp_path / "artifacts" / "profiles" / "ab12").mkdir(parents=True)
        (tmp_path / "artifacts" / "profiles" / "ab12" / "profile.yaml").write_text("x: 1\n", encoding="utf-8")
    elif case == "two publishers":
        manifest_path = product.parent / ".manifest.json"
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest["copy"] = manifest["table.jsonl"]
        manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    found = late_writes(tmp_path)
    assert len(found) == len(expected) and all(want in got for want, got in zip(expected, found))
