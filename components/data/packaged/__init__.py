"""The benchmark data that ships inside polyreason, named in a profile as ``packaged:<set>[/<file>]``.

A clone or an installed polyreason runs every ``cpu-*`` profile with no other copy of the data: a path
field (``ProjectPath``) may name a set shipped here instead of a path relative to the project, e.g.
``data_dir: packaged:mgsm``, ``from_file: packaged:mgsm/exemplars.json``,
``reference_path: packaged:msvamp/test_{language}.json``. When a profile's paths are made absolute
(``components.settings.profile.resolve_path``) the reference becomes the absolute path of the file in this
directory, so from then on it is a path like any other: preflight checks that it exists and a task's cache
key covers its bytes (``runtime.cache.file_inputs``), exactly as for a local copy.

Each set carries a ``PROVENANCE.md`` (source, commit, creators, licence, what changed) and, where its licence
asks for its text to travel with the copy, a ``LICENSE``. Only what the CPU profiles read is shipped where
size matters: MGSM whole (11 languages and the exemplars), MGSM-Rev2 and MSVAMP in en/fr/ja, MMATH in fr/ja;
and a hand-written sample in MMLU-ProX's layout (that benchmark is only on the hub). The full sets come from a
local copy (``data_dir``) or from the Hugging Face hub (``data_dir`` unset).

>>> sorted(PACKAGED_DATA)
['mgsm', 'mgsm_rev2', 'mmath', 'mmlu_prox_sample', 'msvamp']
>>> sorted(path.name for path in PACKAGED_DATA["mmath"].glob("*.json"))
['fr.json', 'ja.json']
"""

from __future__ import annotations

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent

PACKAGED_DATA: dict[str, Path] = {
    "mgsm": DIRECTORY / "mgsm",  # CC BY 4.0: 11 languages x 250 problems + the few-shot exemplars
    "mgsm_rev2": DIRECTORY / "mgsm_rev2",  # CC BY-SA 4.0: en, fr, ja
    "msvamp": DIRECTORY / "msvamp",  # MIT: en, fr, ja
    "mmath": DIRECTORY / "mmath",  # MIT: fr, ja
    "mmlu_prox_sample": DIRECTORY / "mmlu_prox_sample",  # ours (Apache-2.0): MMLU-ProX's layout, not its data
}


def packaged_set(path: str | Path) -> str | None:
    """The name of the shipped set a (resolved) path lies in, or ``None`` for any other path.

    >>> packaged_set(PACKAGED_DATA["msvamp"] / "test_French.json"), packaged_set("/data/msvamp")
    ('msvamp', None)
    """
    target = Path(path)
    return next((name for name, directory in PACKAGED_DATA.items()
                 if target == directory or directory in target.parents), None)
