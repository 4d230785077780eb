"""``python -m tests.helpers.slow_cli ARGS``: the ``polyreason`` command with a fake backend that takes its time.

Each ``generate`` call of the fake backend first sleeps ``POLYREASON_FAKE_DELAY_S``
seconds (default 0.2), so a test can run two evaluations at once or interrupt one
half-way. Everything else is the real command: Prefect, MLflow, the CLI's signal
handling and exit.
"""

from __future__ import annotations

import os
import sys
import time

from components.generation import fake

_generate = fake.FakeGenerator.generate


def _slow_generate(self, prompts, sampling, stop=()):
    time.sleep(float(os.environ.get("POLYREASON_FAKE_DELAY_S", "0.2")))
    return _generate(self, prompts, sampling, stop)


fake.FakeGenerator.generate = _slow_generate

if __name__ == "__main__":
    from cli.app import app

    sys.exit(app(prog_name="polyreason"))
