"""Observes the trainer processes of a launch from inside them, without asking the project what they do.

Put this folder on ``PYTHONPATH`` and set ``POLYREASON_SHARD_PROBE`` to a directory: in every process that
``torchrun`` started (``RANK`` is set) the interpreter imports this file at start-up (``site``'s
``sitecustomize`` hook), which waits for ``transformers.trainer`` to be imported (a finder on ``sys.meta_path``)
and then wraps ``Trainer.train`` to add ``tests.helpers.shard_observer.ShardObserver`` to the trainer before it
trains. The observer only reads (see its module).
"""

import importlib.abc
import importlib.util
import os
import sys

TARGET = "transformers.trainer"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds ``transformers.trainer`` as usual and runs ``install`` once the module has executed."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            from tests.helpers.shard_observer import install

            install(module.Trainer)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("POLYREASON_SHARD_PROBE") and os.environ.get("RANK") is not None:
    sys.meta_path.insert(0, _AfterImport())
