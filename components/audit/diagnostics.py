"""Rollout diagnostics: per-language reward error of a proxy verifier against ``trusted``.

Implements section 3 of "Multilingual verifier bias in RLVR" (arXiv 2608.20362).
For a language ``l``, a proxy verifier ``v`` and the trusted reference ``r*``:

* ``FNR(l) = P(r_v = 0 | r* = 1)`` — correct completions the proxy rejects;
* ``FPR(l) = P(r_v = 1 | r* = 0)`` — wrong completions the proxy accepts;
* ``Err(l) = P(r_v != r*)`` and the expected policy pressure ``-Err(l)``, the
  signed reward a policy loses per sample in that language;
* ``VLB(m) = max_l m(l) - min_l m(l)`` for each per-language rate ``m``.

Conventions (documented choices, not in the paper):

* a rate whose conditioning set is empty (``FNR`` with no trusted-correct
  samples, ``FPR`` with no trusted-wrong ones) is ``None``, never 0;
* ``VLB`` is taken over the languages where the rate is defined and is ``None``
  when fewer than two languages have a defined value (a gap needs two ends);
* rows whose language is missing or unknown, or that lack a gold answer or a
  completion, are returned in ``errors`` (one entry per row, with its index) and
  are left out of every per-language figure — never counted in another language.

Judging (``judge_rows``) calls the verifiers once per row; everything after
that (``language_rates``, ``diagnose``) is pure counting over ``Judgement``
records, so the arithmetic is testable by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

RATE_NAMES = ("fnr", "fpr", "err")


@dataclass(frozen=True)
class Judgement:
    """The verdicts of the reference and each proxy on one generation row."""

    row: int
    id: str
    lang: str
    reference: bool
    proxies: Mapping[str, bool] = field(default_factory=dict)
    sample_index: int = 0
    answer: str | None = None  # the reference-normalized answer (cluster key for selection)


@dataclass(frozen=True)
class LanguageRates:
    """Counts and rates of one proxy against the reference in one language."""

    lang: str
    n: int
    positives: int
    negatives: int
    false_negatives: int
    false_positives: int
    reference_accuracy: float
    proxy_accuracy: float
    fnr: float | None
    fpr: float | None
    err: float | None

    @property
    def pressure(self) -> float | None:
        """Expected policy pressure ``-Err(l)``."""
        return None if self.err is None else -self.err


@dataclass(frozen=True)
class VerifierDiagnostics:
    """Per-language rates of one proxy verifier and their VLB."""

    verifier: str
    per_lang: Mapping[str, LanguageRates]
    vlb: Mapping[str, float | None]


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def vlb(values: Mapping[str, float | None]) -> float | None:
    """Verifier language bias: max - min over the languages with a defined value.

    >>> vlb({"en": 0.122, "ja": 0.642, "zh": 0.073, "th": None})
    0.569
    >>> vlb({"en": 0.5, "ja": None}) is None
    True
    """
    defined = [value for value in values.values() if value is not None]
    if len(defined) < 2:
        return None
    return round(max(defined) - min(defined), 12)


def language_rates(judgements: Iterable[Judgement], proxy: str) -> dict[str, LanguageRates]:
    """FNR, FPR and Err of ``proxy`` per language.

    >>> js = [Judgement(0, "a", "en", True, {"exact": False}), Judgement(1, "b", "en", True, {"exact": True})]
    >>> r = language_rates(js, "exact")["en"]
    >>> (r.fnr, r.fpr, r.err)
    (0.5, None, 0.5)
    """
    counts: dict[str, list[int]] = {}
    for item in judgements:
        proxy_ok = item.proxies[proxy]
        c = counts.setdefault(item.lang, [0, 0, 0, 0, 0])  # n, pos, fn, fp, proxy_pos
        c[0] += 1
        c[1] += item.reference
        c[2] += item.reference and not proxy_ok
        c[3] += proxy_ok and not item.reference
        c[4] += proxy_ok
    out = {}
    for lang, (n, pos, fn, fp, proxy_pos) in sorted(counts.items()):
        neg = n - pos
        out[lang] = LanguageRates(
            lang=lang, n=n, positives=pos, negatives=neg, false_negatives=fn, false_positives=fp,
            reference_accuracy=pos / n, proxy_accuracy=proxy_pos / n,
            fnr=_ratio(fn, pos), fpr=_ratio(fp, neg), err=_ratio(fn + fp, n),
        )
    return out


def diagnose(judgements: list[Judgement], proxies: Iterable[str]) -> dict[str, VerifierDiagnostics]:
    """Per-language rates and VLB (of fnr, fpr, err) for every proxy verifier."""
    out = {}
    for proxy in proxies:
        per_lang = language_rates(judgements, proxy)
        bias = {name: vlb({lang: getattr(r, name) for lang, r in per_lang.items()}) for name in RATE_NAMES}
        out[proxy] = VerifierDiagnostics(verifier=proxy, per_lang=per_lang, vlb=bias)
    return out


def accuracy_by_language(judgements: Iterable[Judgement]) -> dict[str, float]:
    """Reference (trusted) accuracy per language.

    >>> accuracy_by_language([Judgement(0, "a", "ja", True), Judgement(1, "a", "ja", False)])
    {'ja': 0.5}
    """
    totals: dict[str, list[int]] = {}
    for item in judgements:
        pair = totals.setdefault(item.lang, [0, 0])
        pair[0] += item.reference
        pair[1] += 1
    return {lang: ok / n for lang, (ok, n) in sorted(totals.items())}


def row_problem(row: Mapping, known_languages: frozenset[str] | None) -> str | None:
    """Why ``row`` cannot be audited, or ``None`` when it can."""
    lang = row.get("lang")
    if not isinstance(lang, str) or not lang.strip():
        return "missing language"
    if known_languages is not None and lang not in known_languages:
        return f"unknown language {lang!r}"
    if known_languages is None:
        from components.language import is_supported

        if not is_supported(lang):
            return f"unknown language {lang!r}"
    if row.get("gold") in (None, ""):
        return "missing gold answer"
    if not isinstance(row.get("completion"), str):
        return "missing completion"
    return None


def judge_rows(
    rows: Iterable[Mapping],
    proxies: Iterable[str],
    *,
    reference: str = "trusted",
    known_languages: Iterable[str] | None = None,
) -> tuple[list[Judgement], list[dict]]:
    """Run the reference and every proxy verifier on each generation row.

    Rows are dicts with ``id``, ``lang``, ``gold``, ``completion`` (and optional
    ``sample_index``). The verifiers see the response part of the completion
    (after ``</think>`` when there is one). ``known_languages=None`` accepts the
    languages ``components.language.is_supported`` knows. Returns the judgements
    and one error entry ``{"row", "id", "lang", "error"}`` per rejected row.
    """
    from components.verification import get_verifier, split_think

    proxies = list(proxies)
    verifiers = {name: get_verifier(name) for name in [reference, *proxies]}
    known = None if known_languages is None else frozenset(known_languages)
    judgements: list[Judgement] = []
    errors: list[dict] = []
    for index, row in enumerate(rows):
        problem = row_problem(row, known)
        if problem is not None:
            errors.append({"row": index, "id": row.get("id"), "lang": row.get("lang"), "error": problem})
            continue
        lang, gold = row["lang"], str(row["gold"])
        text = split_think(row["completion"]).response
        ref = verifiers[reference](text, gold, lang)
        verdicts = {name: bool(verifiers[name](text, gold, lang).correct) for name in proxies}
        judgements.append(Judgement(
            row=index, id=str(row.get("id")), lang=lang, reference=bool(ref.correct), proxies=verdicts,
            sample_index=int(row.get("sample_index") or 0), answer=ref.normalized,
        ))
    return judgements, errors

