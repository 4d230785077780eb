"""Answer-interface probe: same prompts, number-only final answer; format effect vs capability gap.

Section 6 of "Multilingual verifier bias in RLVR" (arXiv 2608.20362): asking
for a number-only final answer removes the surface variation a proxy verifier
trips on, so the proxy's reward-error VLB falls (*format effect*), while the
accuracy gap between languages under ``trusted`` stays (*capability gap*).
``number_only_prompt`` rewrites a prompt built by ``components.data.prompts``
(styles ``instruction``/``prefix``, chat-templated or not): the language's
step-by-step instruction is kept and the number-only instruction, in the same
language, is added right after it, so only the final-answer interface changes.
``interface_probe`` reports both interfaces side by side.

>>> from components.data.prompts import INSTRUCTIONS
>>> rewritten = number_only_prompt("2+2? " + INSTRUCTIONS["en"] + " <|end|>", "en")
>>> rewritten.startswith("2+2? Please reason"), rewritten.endswith("thousands separators. <|end|>")
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable

from components.audit.diagnostics import RATE_NAMES, Judgement, accuracy_by_language, diagnose, vlb

NUMBER_ONLY_INSTRUCTIONS: dict[str, str] = {
    "en": "Give the final answer as a bare number inside \\boxed{}: Arabic digits only, no units, "
          "no currency signs, no thousands separators.",
    "ja": "最終的な答えは数字のみで\\boxed{}の中に書いてください（半角の算用数字のみ、単位・通貨記号・桁区切りなし）。",
    "zh": "请将最终答案仅以数字形式写在\\boxed{}中（只用半角阿拉伯数字，不带单位、货币符号或千位分隔符）。",
    "fr": "Donnez la réponse finale sous la forme d'un nombre seul dans \\boxed{} : chiffres arabes uniquement, "
          "sans unité, sans symbole monétaire ni séparateur de milliers.",
    "de": "Gib die endgültige Antwort als reine Zahl in \\boxed{} an: nur arabische Ziffern, ohne Einheiten, "
          "Währungszeichen oder Tausendertrennzeichen.",
    "th": "ให้คำตอบสุดท้ายเป็นตัวเลขเท่านั้นใน \\boxed{} โดยใช้เลขอารบิกเท่านั้น ไม่มีหน่วย สัญลักษณ์สกุลเงิน "
          "หรือตัวคั่นหลักพัน",
    "es": "Da la respuesta final como un número solo dentro de \\boxed{}: solo dígitos arábigos, sin unidades, "
          "sin símbolos de moneda ni separadores de miles.",
    "ru": "Запишите окончательный ответ только числом внутри \\boxed{}: арабскими цифрами, без единиц измерения, "
          "знаков валют и разделителей тысяч.",
    "pt": "Dê a resposta final apenas como um número dentro de \\boxed{}: somente algarismos arábicos, sem unidades, "
          "símbolos de moeda ou separadores de milhar.",
    "ko": "최종 답은 \\boxed{} 안에 숫자로만 쓰세요: 아라비아 숫자만 사용하고 단위, 통화 기호, 천 단위 구분 기호는 "
          "쓰지 마세요.",
    "sw": "Toa jibu la mwisho kama nambari tu ndani ya \\boxed{}: tarakimu za Kiarabu pekee, bila vipimo, "
          "alama za sarafu wala vitenganishi vya maelfu.",
    "bn": "চূড়ান্ত উত্তরটি শুধু একটি সংখ্যা হিসেবে \\boxed{} এর ভিতরে লিখুন: কেবল আরবি অঙ্ক, কোনো একক, মুদ্রার চিহ্ন বা "
          "হাজারের বিভাজক ছাড়া।",
    "te": "చివరి సమాధానాన్ని \\boxed{} లోపల కేవలం ఒక సంఖ్యగా ఇవ్వండి: అరబిక్ అంకెలు మాత్రమే, యూనిట్లు, కరెన్సీ "
          "గుర్తులు లేదా వేల విభాజకాలు లేకుండా.",
}


def number_only_instruction(lang: str) -> str:
    """The number-only final-answer instruction in ``lang`` (ValueError for a language without one)."""
    try:
        return NUMBER_ONLY_INSTRUCTIONS[lang]
    except KeyError:
        known = ", ".join(sorted(NUMBER_ONLY_INSTRUCTIONS))
        raise ValueError(f"no number-only instruction for {lang!r} (known: {known})") from None


def number_only_prompt(prompt: str, lang: str) -> str:
    """``prompt`` with the number-only instruction added after its last step-by-step instruction.

    Raises ``ValueError`` when the prompt holds no instruction of ``lang`` (styles
    ``plain`` and ``few_shot`` have none: the probe needs ``instruction`` or ``prefix``).
    """
    from components.data.prompts import INSTRUCTIONS

    standard = INSTRUCTIONS.get(lang)
    extra = number_only_instruction(lang)
    cut = prompt.rfind(standard) if standard else -1
    if cut < 0:
        raise ValueError(f"prompt holds no {lang!r} instruction to rewrite (the interface probe needs "
                         "prompt.style 'instruction' or 'prefix')")
    end = cut + len(standard)
    return f"{prompt[:end]} {extra}{prompt[end:]}"


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def interface_probe(standard: list[Judgement], number_only: list[Judgement], proxies: Iterable[str]) -> dict:
    """Both interfaces side by side.

    Returns ``{"accuracy": {interface: {lang: acc}}, "accuracy_gap": {interface: gap},
    "capability_gap": gap under number-only, "verifiers": {proxy: {"standard": vlb dict,
    "number_only": vlb dict, "format_effect": {rate: VLB drop (standard - number-only)}}},
    "diagnostics": {interface: {proxy: VerifierDiagnostics}}}``.
    """
    proxies = list(proxies)
    diags = {"standard": diagnose(standard, proxies), "number_only": diagnose(number_only, proxies)}
    accuracy = {"standard": accuracy_by_language(standard), "number_only": accuracy_by_language(number_only)}
    gaps = {name: vlb(acc) for name, acc in accuracy.items()}
    verifiers = {}
    for proxy in proxies:
        std, num = diags["standard"][proxy].vlb, diags["number_only"][proxy].vlb
        verifiers[proxy] = {
            "standard": dict(std), "number_only": dict(num),
            "format_effect": {rate: _difference(std[rate], num[rate]) for rate in RATE_NAMES},
        }
    return {
        "accuracy": accuracy, "accuracy_gap": gaps, "capability_gap": gaps["number_only"],
        "verifiers": verifiers, "diagnostics": diags,
    }
