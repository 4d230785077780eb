"""M-Thinker reward (Zhang et al., 2026, "Think Natively"): language consistency, accuracy, cross-lingual
thinking alignment — the RL baseline PCS compares against (PCS table 2, "M-Thinker").

Per response, in M-Thinker's order (its reward is their sum):

* ``R_lc`` — language consistency: 0 when the reasoning (before ``</think>``) and
  the answer (after it) are both in the query language, else −1; a response
  without exactly one closed think block fails. Each part is judged with its
  LaTeX and numbers removed, and a part with fewer than ``min_letters`` letters
  left passes (nothing to judge), as in M-Thinker. M-Thinker asks langdetect
  for a single detected language; here lingua's top-1 language
  (``components.language``) must be the query language.
* ``R_acc`` — 1 when the response is consistent *and* the verifier (``trusted``
  by default) accepts its answer; an inconsistent response earns no accuracy.
* ``R_cta`` — cross-lingual thinking alignment, only for consistent correct
  responses of rows that carry an English reference: a judge model (any
  generation backend: ``judge`` holds its ``ModelSettings`` fields, e.g. a vLLM
  model or an OpenAI-compatible endpoint) lists the key intermediate results of
  the English reasoning (definitions, equations, values, the answer) and
  answers the share of them the response's reasoning reaches, in ``[0, 1]``
  between ``<score>`` tags; anything else scores 0 and is counted. The judge is
  attached by ``components.training.judge.attach_judge`` (the trainer does it
  when it builds the rewards): rewards import no settings or backends.

``R = R_lc + R_acc + R_cta`` ∈ {−1, 0, 1, 1 + s}. The English question and
reference reasoning come from the dataset columns ``question_column`` and
``reference_column`` (``columns`` tells the trainer to keep them; the data stage
writes them with ``data.rejection.english_references``: the policy's own correct
English answer, as M-Thinker builds them). M-Thinker's extra rule that a
response be longer than 1,000 characters is not taken.

Logged with trl's ``log_metric``: ``reward/r_lc`` (share consistent),
``reward/accuracy``, ``reward/r_cta`` (mean judge score over judged responses),
``reward/cta_judged`` and ``reward/cta_judge_failures``.

>>> parse_score("<score>0.75</score>"), parse_score("about 0.5"), parse_score("<score>1.4</score>")
(0.75, None, None)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.rewards.accuracy import AccuracyReward, LogMetric, columns, completion_text, mean, report
from components.rewards.spec import Params, RewardRange, RewardSpec

_SCORE = re.compile(r"<score>\s*([0-9]*\.?[0-9]+)\s*</score>")
JUDGE_PROMPT = """You compare two solutions of the same math problem: one reasoned in English, one in {language}.

Problem (English):
{question}

English reasoning:
{reference}

{language} reasoning:
{reasoning}

List to yourself every key intermediate result of the English reasoning: variables it defines, equations it sets
up, values it computes, and its final answer. Count how many of them the {language} reasoning also reaches with a
mathematically equivalent result. Reply with that count divided by the number of key results, a number between 0
and 1, between <score> and </score>, and nothing else. Example: <score>0.8</score>"""


def _text(value: Any) -> bool:
    """A non-empty string (parquet gives NaN for a missing text)."""
    return isinstance(value, str) and bool(value.strip())


def parse_score(text: str) -> float | None:
    """The judge's score: the last ``<score>x</score>`` with ``0 <= x <= 1``, else ``None``."""
    found = _SCORE.findall(text or "")
    if not found:
        return None
    value = float(found[-1])
    return value if 0.0 <= value <= 1.0 else None


class MThinkerReward:
    """``R_lc + R_acc + R_cta`` (see the module docstring); ``None`` for rows without gold/lang."""

    def __init__(self, *, verifier: str = "trusted", extraction: str = "strict", judge: Mapping[str, Any] | None = None,
                 judge_max_new_tokens: int = 64, judge_temperature: float = 0.0,
                 question_column: str = "en_question", reference_column: str = "en_reference",
                 min_letters: int = 16, languages: Sequence[str] = ()) -> None:
        self.__name__ = "mthinker"
        self.accuracy = AccuracyReward(verifier=verifier, extraction=extraction)
        self.judge = dict(judge) if judge is not None else None
        self.judge_options = {"temperature": judge_temperature, "max_new_tokens": judge_max_new_tokens}
        self.columns = (question_column, reference_column)
        self.min_letters = min_letters
        self.languages = tuple(languages)
        self.ask_judge: Callable[[list[str]], list[str]] | None = None  # prompts -> answers, see attach_judge

    def consistent(self, text: str, lang: str, detector: Any) -> tuple[bool, Any]:
        """``R_lc == 0``: one closed think block and both parts in ``lang``; also returns the split."""
        from components.language import clean_for_detection
        from components.verification import split_think

        split = split_think(text)
        if not split.has_think or text.count("</think>") != 1:
            return False, split
        for part in (split.trace, split.response):
            cleaned = clean_for_detection(part)
            if sum(ch.isalpha() for ch in cleaned) >= self.min_letters and detector.detect(cleaned, clean=False) != lang:
                return False, split
        return True, split

    @staticmethod
    def judge_prompt(lang: str, question: str, reference: str, reasoning: str) -> str:
        """The judge's request (the user turn; a chat judge gets its template around it)."""
        from components.language import LANGUAGE_NAMES

        return JUDGE_PROMPT.format(language=LANGUAGE_NAMES.get(lang, lang), question=question, reference=reference,
                                   reasoning=reasoning)

    def alignment(self, items: list[tuple[str, str, str, str]]) -> list[float | None]:
        """The judge's score per ``(lang, English question, English reasoning, reasoning)`` item."""
        if not items or self.judge is None:
            return [None] * len(items)
        if self.ask_judge is None:
            raise RuntimeError("the mthinker reward has a judge model but no judge attached "
                               "(components.training.judge.attach_judge)")
        return [parse_score(answer) for answer in self.ask_judge([self.judge_prompt(*item) for item in items])]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], gold: Sequence[Any] | None = None,
                 lang: Sequence[Any] | None = None, log_metric: LogMetric | None = None,
                 **dataset_columns: Any) -> list[float | None]:
        from components.language import get_detector

        golds, langs = columns(len(completions), gold, lang)
        questions, references = (list(dataset_columns.get(c) or [None] * len(completions)) for c in self.columns)
        detector = get_detector(self.languages)
        rewards: list[float | None] = []
        lcs, accs, to_judge = [], [], []
        for index, (completion, g, l) in enumerate(zip(completions, golds, langs)):
            if g is None or l is None:
                rewards.append(None)
                continue
            text = completion_text(completion)
            ok, split = self.consistent(text, str(l), detector)
            correct = ok and bool(self.accuracy.correct(text, g, l))
            lcs.append(float(ok))
            accs.append(float(correct))
            rewards.append((0.0 if ok else -1.0) + float(correct))
            if correct and _text(questions[index]) and _text(references[index]):
                to_judge.append((index, (str(l), str(questions[index]), str(references[index]), split.trace)))
        scores = self.alignment([item for _, item in to_judge])
        for (index, _), score in zip(to_judge, scores):
            rewards[index] += score or 0.0
        report(log_metric, "reward/r_lc", mean(lcs))
        report(log_metric, "reward/accuracy", mean(accs))
        report(log_metric, "reward/r_cta", mean(scores))
        report(log_metric, "reward/cta_judged", float(len(to_judge)))
        report(log_metric, "reward/cta_judge_failures", float(sum(s is None for s in scores)) if self.judge else None)
        return rewards


def _range(params: Params) -> RewardRange:
    # R_lc ∈ {−1, 0} + R_acc ∈ {0, 1} + R_cta ∈ [0, 1], the last only with a judge (its score is refused above 1)
    return RewardRange(-1.0, 2.0 if params["judge"] is not None else 1.0)


SPEC = RewardSpec("mthinker", MThinkerReward, range=_range,
                  columns=lambda params: (params["question_column"], params["reference_column"]))
