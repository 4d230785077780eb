"""Oracle cases no stage command reaches on a fake model: a cached task called inside a flow of its own.

``data-traces`` needs translations that pass the translation gates (numbers kept,
the target language), which the fake backend cannot write; here the translated
table is written by hand and the task runs on it, as the data flow runs it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow


@flow(name="oracle-traces")
def traces(profile) -> None:
    from components.data.datasets import write_table
    from runtime.artifacts import file_fingerprint
    from runtime.artifacts import ArtifactRef
    from runtime.project import Project
    from tasks.data import traces_task

    project = Project(str(Path(profile.project_dir).resolve()))
    rows = [{"id": name, "row": row, "question": "Combien ?", "gold": "3", "source": "s", "lang": "fr",
             "source_question": "How many?", "judge_score": 5} for row, name in enumerate(("a", "b"))]
    path = write_table(rows, Path(profile.project_dir) / "translated.parquet", "translations")
    translations = ArtifactRef(str(path), file_fingerprint(path), {})
    traces_task(profile.data.traces, ["fr"], translations, "fake", project)
