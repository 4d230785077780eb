"""Where the scored answer can be found: the model's thinking switch against the answer extraction.

Strict extraction (``components.extraction``) takes the last ``\\boxed{}`` after the
last ``</think>`` of a completion and nothing else, the answer format the paper
protocols prescribe. A model run with ``thinking: false`` writes no think block
of its own (Qwen3's template closes an empty one inside the prompt, other
templates open none), so strict extraction finds no answer in any completion and
every accuracy is 0 however well the model answers. The pair is refused when the
profile loads, naming both keys, rather than discovered in a table of zeros.
"""

from __future__ import annotations

from components.settings.evaluation import EvaluationSettings


def answer_format_problems(evaluation: EvaluationSettings | None) -> list[str]:
    """The evaluation's ``model.thinking: false`` with ``scoring.extraction: strict``, as one readable line.

    >>> line, = answer_format_problems(EvaluationSettings(scoring={"extraction": "strict"}))
    >>> line.startswith("evaluation.model.thinking false with evaluation.scoring.extraction strict")
    True
    >>> answer_format_problems(EvaluationSettings(model={"thinking": True}, scoring={"extraction": "strict"}))
    []
    """
    if evaluation is None or evaluation.model.thinking or evaluation.scoring.extraction != "strict":
        return []
    return ["evaluation.model.thinking false with evaluation.scoring.extraction strict: strict extraction reads only "
            "the \\boxed{} answer after </think>, and a model run without thinking writes no think block, so every "
            "answer would be missed (accuracy 0); set evaluation.scoring.extraction=lenient, or "
            "evaluation.model.thinking=true for a model that reasons in a think block"]
