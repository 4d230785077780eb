"""The batch API shared by scoring and the GRPO rewards: one parallel lingua call per batch, a bounded memo."""

from __future__ import annotations

import pytest

from components.language import MemoDetector, batch_detector, detect_block, get_detector
from components.rewards import REWARDS, build_reward

FR = "Janet a seize œufs et en vend trois au marché."
EN = "Janet has sixteen eggs and sells three at the market."
BLOCKS = [FR, f"{FR}\n{FR.replace('seize', 'dix')}", f"{FR}\n{EN}", "Il en reste treize.\n.", EN]


class CountingDetector:
    """A real ``LanguageDetector`` that counts the texts it is asked to detect, per call."""

    def __init__(self, languages=("fr",)):
        self.inner = get_detector(languages)
        self.languages = self.inner.languages
        self.batches: list[list[str]] = []
        self.singles: list[str] = []

    def read_many(self, texts, *, clean=True):
        self.batches.append(list(texts))
        return self.inner.read_many(texts, clean=clean)

    def read(self, text, *, clean=True):
        self.singles.append(text)
        return self.inner.read(text, clean=clean)


def test_prefetch_blocks_leaves_detect_block_nothing_to_detect():
    counting = CountingDetector()
    memo = MemoDetector(counting)
    memo.prefetch_blocks(BLOCKS)
    assert len(counting.batches) == 1  # every line detect_block reads, in one parallel call
    assert [detect_block(memo, block) for block in BLOCKS] == [detect_block(counting.inner, b) for b in BLOCKS]
    assert counting.singles == []
    assert len(counting.batches[0]) == len(set(counting.batches[0]))  # each text once


def test_a_full_memo_keeps_only_what_the_next_batch_needs():
    counting = CountingDetector()
    memo = MemoDetector(counting, max_entries=2)
    memo.prefetch([FR, EN, "Bonjour à tous."])
    memo.prefetch([FR, "Guten Tag zusammen."])
    assert counting.batches[-1] == ["Guten Tag zusammen."]  # FR survived the trim
    assert set(memo._memo) == {(FR, True), ("Guten Tag zusammen.", True)}


def test_batch_detector_is_shared_per_language_set():
    assert batch_detector(["fr"]) is batch_detector(["fr", "en"])  # en is a base language already
    assert batch_detector(["fr"]) is not batch_detector(["fr", "it"])


@pytest.mark.parametrize("name", sorted(REWARDS))  # a reward that detects no language passes trivially
def test_a_batch_seen_before_is_not_detected_again(monkeypatch, name):
    think = f"<think>{FR}\n\n{EN}\n\n{FR.replace('seize', 'vingt')}</think>La réponse est \\boxed{{13}}."
    completions = [think, think.replace("trois", "quatre")]
    kwargs = {"gold": ["13", "13"], "lang": ["fr", "fr"]}
    memo = batch_detector(["fr"])
    build_reward(name, {}, languages=["fr"])(["q"] * 2, completions, **kwargs)
    calls: list[list[str]] = []
    original = type(memo.detector).detect_many
    monkeypatch.setattr(type(memo.detector), "detect_many", lambda self, texts, clean=True: calls.append(
        list(texts)) or original(self, texts, clean=clean))
    again = build_reward(name, {}, languages=["fr"])(["q"] * 2, completions, **kwargs)
    assert all(batch == [] for batch in calls)
    assert len(again) == 2
