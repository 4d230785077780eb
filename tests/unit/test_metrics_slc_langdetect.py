"""PCS's reference step detector (langdetect, seeded) on hand-labelled reasoning steps, in SLC, scoring and the
PCS reward."""

from __future__ import annotations

import pytest

pytest.importorskip("langdetect")

from components.langdetect_detector import LangdetectDetector  # noqa: E402
from components.metrics.slc import slc, step_detector  # noqa: E402

# (step, the language a reader labels it with): full sentences in PCS's five languages, English and Chinese
LABELLED = [
    ("Calculons d'abord le nombre total de pommes dans le panier, puis retirons celles qui ont été mangées.", "fr"),
    ("Primeiro calculamos o número total de maçãs na cesta e depois tiramos as que foram comidas.", "pt"),
    ("まず、かごの中のりんごの合計を計算して、それから食べられた分を引きます。", "ja"),
    ("먼저 바구니에 있는 사과의 총 개수를 계산한 다음 먹은 사과를 뺍니다.", "ko"),
    ("ก่อนอื่นเราคำนวณจำนวนแอปเปิ้ลทั้งหมดในตะกร้า แล้วลบจำนวนที่ถูกกินไป", "th"),
    ("Wait, let me double-check the subtraction once more before writing the answer.", "en"),
    ("首先计算篮子里苹果的总数，然后减去被吃掉的苹果。", "zh"),   # langdetect's zh-cn, answered as zh
]


@pytest.fixture(scope="module")
def langdetect_steps():
    return step_detector("langdetect")


@pytest.mark.parametrize("step,label", LABELLED, ids=[label for _, label in LABELLED])
def test_langdetect_labels_each_step_as_a_reader_does(langdetect_steps, step, label):
    assert langdetect_steps.detect_step(step) == label


def test_langdetect_answers_are_reproducible_and_math_bears_no_language():
    # a short, ambiguous text is where langdetect's random n-gram sampling shows; seeded, two fresh
    # detectors (no shared memo) answer the same
    short = "Donc x = 3 et y = 4, alors"
    assert LangdetectDetector().detect(short) == LangdetectDetector().detect(short)
    assert LangdetectDetector().detect("$$24 - 6 = 18$$") is None   # nothing but math: no language


def test_slc_with_langdetect_is_the_share_of_steps_in_the_query_language(langdetect_steps):
    fr, en = LABELLED[0][0], LABELLED[5][0]
    trace = f"{fr}\n\n$$\n24 - 6 = 18\n$$\n\n{en}\n\n{fr}"
    # hand count: three language-bearing steps (the display math is left out), two of them French
    assert slc(trace, "fr", langdetect_steps) == pytest.approx(2 / 3)
    assert slc(trace, "en", langdetect_steps) == pytest.approx(1 / 3)


def test_scoring_and_the_pcs_reward_read_the_chosen_detector():
    from components.rewards.pcs import PCSReward
    from components.scoring import score_rows
    from components.settings import ScoringSettings

    fr, en = LABELLED[0][0], LABELLED[5][0]
    completion = f"<think>{fr}\n\n{en}\n\n{fr}\n\n{fr}</think> \\boxed{{4}}"   # 3 of 4 steps French
    row = {"id": "q", "lang": "fr", "gold": "4", "completion": completion}
    for name in ("lingua", "langdetect"):
        scored = score_rows([row], ScoringSettings(extraction="strict", slc_detector=name))
        assert scored["rows"][0]["slc"] == pytest.approx(0.75), name
    reward = PCSReward(slc_detector="langdetect", tau_start=0.8)
    assert reward(["q"], [completion], gold=["4"], lang=["fr"]) == [1.0]   # SLC 0.75 < tau 0.8: no bonus
    assert reward.step_detector() is not None
    with pytest.raises(ValueError, match="slc_detector 'cld3' is unknown"):
        PCSReward(slc_detector="cld3")
