"""SFT packing over epochs: bounded for trl's ``bfd``, refused for the strategies that split rows.

The oracle is trl's own ``pack_dataset``: four rows of 20 tokens packed into sequences
of 8 stay four rows under ``bfd`` (each row whole, its overflow truncated) and become
ten under ``bfd_split`` and ``wrapped`` (80 tokens cut into 8-token pieces), so the
unpacked count bounds an epoch only under ``bfd``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_profile
from components.planning import plan_profile

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "profiles" / "cpu-demo.yaml"


@pytest.mark.parametrize(("strategy", "packed"), [("bfd", 4), ("bfd_split", 10), ("wrapped", 10)])
def test_trls_packing_keeps_at_most_the_rows_only_under_bfd(strategy, packed):
    from datasets import Dataset
    from trl.data_utils import pack_dataset

    rows = Dataset.from_dict({"input_ids": [[1] * 20] * 4})
    assert len(pack_dataset(rows, 8, strategy=strategy)) == packed


def sft_plan(*overrides: str):
    profile = load_profile(DEMO, ["sft.packing=true", *overrides]).model_copy(update={"project_dir": str(REPO)})
    return plan_profile(profile, sections=["sft"])


def test_bfd_packing_states_its_steps_as_an_upper_bound():
    plan = sft_plan()
    sft = plan.stages[0]
    assert plan.problems == [] and sft.values["steps_bound"] is True
    assert dict(sft.lines)["packing"].startswith("on (bfd): ")


@pytest.mark.parametrize("strategy", ["bfd_split", "wrapped"])
def test_a_strategy_that_splits_rows_is_refused_over_epochs_naming_the_keys(strategy):
    assert [p.keys for p in sft_plan(f"sft.packing_strategy={strategy}").problems] == [
        ("sft.packing_strategy", "sft.max_steps", "sft.packing")]
    assert sft_plan(f"sft.packing_strategy={strategy}", "sft.max_steps=4").problems == []
