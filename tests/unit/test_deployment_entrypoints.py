"""Every file a deployment names as its entrypoint, loaded as a worker loads it, hands the settings their registries.

A worker loads ``flows/<stage>.py`` by its path (Prefect's ``load_flow_from_entrypoint``), not as the module
``flows.<stage>``, and then validates the flow's typed profile parameter: without the project's registries the
settings refuse every name. Each entrypoint is loaded in one child interpreter with the registries cleared and the
``flows`` package forgotten before it, so one file cannot pass on what another installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli.deploy import ALSO_PLACED, STAGE_ENTRIES

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINTS = sorted({*STAGE_ENTRIES.values(), *(e for extra in ALSO_PLACED.values() for e in extra),
                      "flows/entry.py:recipe", "flows/nightly.py:nightly_evaluation"})

SCRIPT = """
import json, sys
from prefect.flows import load_flow_from_entrypoint
from components.settings import registries
verdicts = {}
for entrypoint in json.loads(sys.argv[1]):
    registries._installed.clear()
    for name in [m for m in sys.modules if m == "flows" or m.startswith("flows.")]:
        del sys.modules[name]
    load_flow_from_entrypoint(entrypoint)
    try:
        registries.registries_for()
        verdicts[entrypoint] = "installed"
    except LookupError as error:
        verdicts[entrypoint] = str(error)
print(json.dumps(verdicts))
"""


def test_every_deployment_entrypoint_installs_the_registries_when_loaded_by_its_path():
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(ENTRYPOINTS)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = json.loads(done.stdout.strip().splitlines()[-1])
    assert verdicts == {entrypoint: "installed" for entrypoint in ENTRYPOINTS}
