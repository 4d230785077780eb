"""Prompt builders: question -> prompt string for a chat or a base model.

Styles (``PromptSettings.style``):

- ``plain``: the question (and lettered options for multiple choice) alone.
- ``instruction``: "prompt control" (AdaMame; PCS): a language-specific
  instruction asks to reason *in the query language* and to put the final
  answer in ``\\boxed{}``; ``PromptSettings.instruction`` places it after the
  question (PCS's prompt control, Wang et al.) or before it with a blank line
  between (AdaMame prepends it to every query, appendix A).
- ``prefix``: "prefix control": a query-language opener ("Okay," /
  "D'accord," / "好的，") placed right after the think tag, so the trace starts
  in the query language (the prefix-hacking of Qi et al., 2025, "When Models
  Reason in Your Language"); with the instruction as above, or alone
  (``instruction: none``: PCS's prefix-control baseline prefills the opener and
  adds no instruction).
- ``few_shot``: MGSM native chain-of-thought exemplars (Shi et al., 2022;
  lm-eval's ``mgsm_native_cot``): ``Question: … / Step-by-Step Answer: …`` in the
  query language; languages without exemplars use the English ones.

Chat models get ``tokenizer.apply_chat_template(…, add_generation_prompt=True,
enable_thinking=thinking)`` (Qwen3's switch; other templates ignore it); few-shot
exemplars then become earlier user/assistant turns (lm-eval's
``fewshot_as_multiturn``). Base models get the text itself.

>>> from components.records import BenchmarkItem
>>> item = BenchmarkItem("1", "mgsm", "fr", "Combien ?", "3")
>>> user_text(item, "instruction")
'Combien ?\\nVeuillez raisonner étape par étape en français et mettez votre réponse finale dans \\\\boxed{}.'
>>> add_prefix("<|im_start|>assistant\\n", "ja", thinking=True)
'<|im_start|>assistant\\n<think>\\nわかりました。'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from components.settings import PromptSettings
from components.records import OPTION_LETTERS, BenchmarkItem

THINK_OPEN = "<think>"
BOXED = "\\boxed{}"

INSTRUCTIONS: dict[str, str] = {
    "en": f"Please reason step by step in English and put your final answer within {BOXED}.",
    "es": f"Por favor, razona paso a paso en español y escribe tu respuesta final dentro de {BOXED}.",
    "fr": f"Veuillez raisonner étape par étape en français et mettez votre réponse finale dans {BOXED}.",
    "de": f"Bitte denke Schritt für Schritt auf Deutsch nach und gib deine endgültige Antwort in {BOXED} an.",
    "ru": f"Пожалуйста, рассуждай шаг за шагом на русском языке и запиши окончательный ответ в {BOXED}.",
    "zh": f"请用中文逐步推理，并将最终答案放在 {BOXED} 中。",
    "ja": f"日本語で段階的に推論し、最終的な答えを {BOXED} の中に書いてください。",
    "th": f"โปรดให้เหตุผลทีละขั้นตอนเป็นภาษาไทย และใส่คำตอบสุดท้ายของคุณไว้ใน {BOXED}",
    "sw": f"Tafadhali fikiri hatua kwa hatua kwa Kiswahili na uweke jibu lako la mwisho ndani ya {BOXED}.",
    "bn": f"অনুগ্রহ করে বাংলায় ধাপে ধাপে যুক্তি দিন এবং আপনার চূড়ান্ত উত্তর {BOXED} এর মধ্যে লিখুন।",
    "te": f"దయచేసి తెలుగులో దశలవారీగా ఆలోచించి, మీ తుది సమాధానాన్ని {BOXED} లో ఉంచండి.",
    "pt": f"Por favor, raciocine passo a passo em português e coloque sua resposta final dentro de {BOXED}.",
    "ko": f"한국어로 단계별로 추론하고 최종 답을 {BOXED} 안에 넣어 주세요.",
    "vi": f"Vui lòng suy luận từng bước bằng tiếng Việt và đặt câu trả lời cuối cùng của bạn trong {BOXED}.",
    "ar": f"يرجى التفكير خطوة بخطوة باللغة العربية ووضع إجابتك النهائية داخل {BOXED}.",
}

# Query-language openers for prefix control ("Okay," is how Qwen3/R1 traces start in English).
OPENERS: dict[str, str] = {
    "en": "Okay,", "es": "De acuerdo,", "fr": "D'accord,", "de": "Alles klar,", "ru": "Хорошо,",
    "zh": "好的，", "ja": "わかりました。", "th": "โอเค", "sw": "Sawa,", "bn": "ঠিক আছে,",
    "te": "సరే,", "pt": "Certo,", "ko": "알겠습니다.", "vi": "Được rồi,", "ar": "حسنًا،",
}


def _require(table: dict[str, str], lang: str, what: str) -> str:
    if lang not in table:
        raise ValueError(f"no {what} for language {lang!r} (known: {', '.join(sorted(table))})")
    return table[lang]


def format_question(item: BenchmarkItem) -> str:
    """The question, followed by ``A. …`` lines when the item has options.

    >>> format_question(BenchmarkItem("1", "m", "en", "Pick", "B", options=("x", "y")))
    'Pick\\nA. x\\nB. y'
    """
    if not item.options:
        return item.question
    lines = [f"{OPTION_LETTERS[i]}. {option}" for i, option in enumerate(item.options)]
    return "\n".join([item.question, *lines])


def user_text(item: BenchmarkItem, style: str, instruction: str = "after") -> str:
    """The user turn for zero-shot styles: the question, and for instruction/prefix the instruction
    after it (``after``), before it with a blank line (``before``) or not at all (``none``).

    >>> user_text(BenchmarkItem("1", "m", "en", "2+2?", "4"), "instruction", "before")
    'Please reason step by step in English and put your final answer within \\\\boxed{}.\\n\\n2+2?'
    """
    text = format_question(item)
    if style not in ("instruction", "prefix") or instruction == "none":
        return text
    line = _require(INSTRUCTIONS, item.lang, "instruction")
    if instruction == "before":
        return f"{line}\n\n{text}"
    if instruction != "after":
        raise ValueError(f"unknown instruction placement {instruction!r} (known: after, before, none)")
    return f"{text}\n{line}"


def add_prefix(prompt: str, lang: str, *, thinking: bool) -> str:
    """Prefix control: append the opener, after ``<think>\\n`` when thinking is on.

    A template that already opened the think block (DeepSeek-R1 style) is not
    given a second one; with thinking off (Qwen3 closes an empty block) the
    opener starts the visible answer.

    >>> add_prefix("A: <think>\\n", "fr", thinking=True)
    "A: <think>\\nD'accord,"
    >>> add_prefix("A: ", "zh", thinking=False)
    'A: 好的，'
    """
    opener = _require(OPENERS, lang, "opener")
    if thinking and not prompt.rstrip().endswith(THINK_OPEN):
        prompt = f"{prompt}{THINK_OPEN}\n"
    elif thinking and not prompt.endswith("\n"):
        prompt = f"{prompt.rstrip()}\n"
    return prompt + opener


# ---------------------------------------------------------------- MGSM exemplars


def load_exemplars(path: str | Path) -> dict[str, list[tuple[str, str]]]:
    """``exemplars.json`` (MGSM, converted from upstream ``exemplars.py``) -> lang -> [(q, a)] in order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    table = data.get("exemplars") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{path}: expected an object with an 'exemplars' mapping of languages")
    out: dict[str, list[tuple[str, str]]] = {}
    for lang, shots in table.items():
        ordered = sorted(shots.items(), key=lambda kv: int(kv[0]))
        out[lang] = [(shot["q"], shot["a"]) for _, shot in ordered]
    return out


def label_prefix(texts: Sequence[str]) -> str:
    """The shared label that starts every text, up to its colon and the spaces after it.

    >>> label_prefix(["Question : a b", "Question : c"])
    'Question : '
    >>> label_prefix(["問題：ロジャー", "問題：森"])
    '問題：'
    """
    common = texts[0]
    for text in texts[1:]:
        while not text.startswith(common):
            common = common[:-1]
    cut = max(common.rfind(":"), common.rfind("："))
    if cut < 0:
        raise ValueError(f"exemplars share no 'label:' prefix (common start {common!r})")
    end = cut + 1
    while end < len(texts[0]) and texts[0][end] == " ":
        end += 1
    return texts[0][:end]


def few_shot_turns(lang: str, exemplars: dict[str, list[tuple[str, str]]], num_shots: int):
    """Exemplar (q, a) pairs and the (question label, answer label) for ``lang`` (English fallback)."""
    shots = exemplars.get(lang) or exemplars.get("en")
    if not shots:
        raise ValueError(f"no exemplars for {lang!r} nor 'en' (have: {', '.join(sorted(exemplars))})")
    q_label = label_prefix([q for q, _ in shots])
    a_label = label_prefix([a for _, a in shots]).rstrip()
    return shots[:num_shots], q_label, a_label


def few_shot_text(item: BenchmarkItem, exemplars: dict[str, list[tuple[str, str]]], num_shots: int) -> str:
    """Base-model few-shot prompt: exemplars, then ``<Q label>question\\n<A label>``."""
    shots, q_label, a_label = few_shot_turns(item.lang, exemplars, num_shots)
    blocks = [f"{q}\n{a}" for q, a in shots]
    blocks.append(f"{q_label}{format_question(item)}\n{a_label}")
    return "\n\n".join(blocks)


def few_shot_stops(langs: Sequence[str], exemplars: dict[str, list[tuple[str, str]]]) -> list[str]:
    """Where a base model's few-shot continuation must be cut: a new line opening the next question.

    A base model answers, then writes the next "Question: ..." itself; the final
    answer must come from before it (the stop sequences of MGSM's few-shot evaluation).

    >>> few_shot_stops(["fr", "ja"], {"fr": [("Question : a", "R : b")], "ja": [("問題：a", "答え：b")]})
    ['\\nQuestion', '\\n問題']
    """
    stops = set()
    for lang in langs:
        _, q_label, _ = few_shot_turns(lang, exemplars, 0)
        stops.add("\n" + q_label.rstrip(" :：").rstrip())
    return sorted(stops)


def stop_sequences(items: Sequence[BenchmarkItem], settings: PromptSettings, *, chat: bool) -> list[str]:
    """Stop strings the generator needs for these prompts (few-shot base-model prompts only)."""
    if chat or settings.style != "few_shot" or settings.exemplars_path is None:
        return []
    return few_shot_stops(sorted({item.lang for item in items}), load_exemplars(settings.exemplars_path))


# ---------------------------------------------------------------- assembling


def chat_messages(item: BenchmarkItem, settings: PromptSettings,
                  exemplars: dict[str, list[tuple[str, str]]] | None) -> list[dict[str, str]]:
    """Chat turns: few-shot exemplars as earlier turns, then the question."""
    if settings.style != "few_shot":
        return [{"role": "user", "content": user_text(item, settings.style, settings.instruction)}]
    shots, q_label, _ = few_shot_turns(item.lang, exemplars or {}, settings.num_shots)
    messages: list[dict[str, str]] = []
    for q, a in shots:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": f"{q_label}{format_question(item)}"})
    return messages


def render_chat(tokenizer: Any, messages: list[dict[str, str]], *, thinking: bool) -> str:
    """The tokenizer's chat template as text, ready for generation."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("chat=True but the tokenizer has no chat_template")
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         enable_thinking=thinking)


def render_turns(turns: str | Sequence[dict[str, str]], lang: str, settings: PromptSettings, *,
                 tokenizer: Any = None, chat: bool = False, thinking: bool = False) -> str:
    """A user turn (text) or chat turns, ready for generation; the one renderer of every prompt.

    Chat models get the tokenizer's chat template with the thinking switch, base
    models the text and a blank line; style ``prefix`` then appends the opener.
    Evaluation, the data stage and GRPO all render through here, so a GRPO
    prompt is the prompt SFT trained on and evaluation samples with.

    >>> render_turns("Combien ?", "fr", PromptSettings(style="prefix", instruction="none"))
    "Combien ?\\n\\nD'accord,"
    """
    if chat:
        if tokenizer is None:
            raise ValueError("chat=True needs a tokenizer (for its chat template)")
        messages = [{"role": "user", "content": turns}] if isinstance(turns, str) else [dict(m) for m in turns]
        prompt = render_chat(tokenizer, messages, thinking=thinking)
    elif isinstance(turns, str):
        prompt = f"{turns}\n\n"
    else:
        raise ValueError("chat messages need a chat model (model.chat: true) to be rendered")
    if settings.style == "prefix":
        prompt = add_prefix(prompt, lang, thinking=thinking)
    return prompt


def build_prompts(items: Sequence[BenchmarkItem], settings: PromptSettings, *, tokenizer: Any = None,
                  chat: bool = False, thinking: bool = False) -> list[str]:
    """One prompt per item (see the module docstring for the styles)."""
    if chat and tokenizer is None:
        raise ValueError("chat=True needs a tokenizer (for its chat template)")
    exemplars = None
    if settings.style == "few_shot":
        if settings.exemplars_path is None:
            raise ValueError("prompt.style few_shot needs prompt.exemplars_path (MGSM exemplars.json)")
        exemplars = load_exemplars(settings.exemplars_path)
    prompts = []
    for item in items:
        if exemplars is not None and not chat:
            prompts.append(few_shot_text(item, exemplars, settings.num_shots))
            continue
        turns = chat_messages(item, settings, exemplars) if chat else user_text(item, settings.style,
                                                                                settings.instruction)
        prompts.append(render_turns(turns, item.lang, settings, tokenizer=tokenizer, chat=chat, thinking=thinking))
    return prompts
