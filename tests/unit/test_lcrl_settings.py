"""LcRL's profile rules: what a GRPO section with coupled groups or the search loop refuses, and what it accepts."""

from __future__ import annotations

import pytest

from components.config import load_profile_dict
from components.settings import ProfileError

GRPO = {"model": {"model": "m"}, "rewards": [{"name": "lcrl"}], "lcrl": {"dataset": {"name": "offline_qa"}}}
RL_DATA = {"source": {"path": "x.jsonl"}, "languages": ["fr"], "rejection": {"policy": {"model": "m"}}}

REFUSED = {  # overrides on GRPO -> the error line that names the problem
    "vllm server mode": (["grpo.model.backend=vllm", "grpo.vllm_mode=server"],
                         "coupled groups and the search loop need 'colocate'"),
    "encoder with bm25": (["grpo.lcrl.retrieval.model=intfloat/multilingual-e5-large"],
                          "the bm25 retriever reads none of them"),
    "key without coupling": (["grpo.coupling.key=source"], "they are not read with mode 'none'"),
    "unknown round word": (["grpo.lcrl.rounds=[[query], [everyone]]"], "rounds.1: ['everyone'] are neither"),
    "unknown retriever": (["grpo.lcrl.retrieval.retriever=tfidf"], "unknown retriever 'tfidf'"),
    "QA rows beside an RL set": ([], "grpo.lcrl.dataset: the recipe trains GRPO on the RL set of data.rejection"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_meaningless_lcrl_settings_are_refused(case):
    overrides, message = REFUSED[case]
    data = {"name": "x", "grpo": GRPO, **({"data": RL_DATA} if case == "QA rows beside an RL set" else {})}
    with pytest.raises(ProfileError) as error:
        load_profile_dict(data, overrides)
    assert message in str(error.value)


def test_qa_rows_stand_in_for_the_grpo_dataset():
    profile = load_profile_dict({"name": "x", "grpo": GRPO}, ["grpo.coupling=language"])
    assert profile.grpo.dataset is None and profile.grpo.lcrl.dataset.name == "offline_qa"
    assert profile.grpo.coupling.mode == "language" and profile.grpo.coupling.baseline == "group"
    with pytest.raises(ProfileError, match="grpo.dataset: unset"):
        load_profile_dict({"name": "x", "grpo": GRPO}, ["grpo.lcrl.dataset=null"])
