"""LcRL's search loop at test time: a ``Generator`` that answers QA prompts turn by turn with retrieval.

LcRL evaluates its policies as it trains them: the model reasons, writes
``<search>query</search>`` when it needs knowledge, reads the passages the
multilingual retriever returns between ``<information>`` tags, and ends with
``<answer>…</answer>`` (``components.retrieval.protocol``). The k-th search goes to
the languages of ``rounds[k]`` (``components.retrieval.base.round_languages``:
the query's language, then the others, then English), exactly as in the GRPO
rollouts (``components.training.search_rollouts``), which work on token ids inside
trl. This loop works on text over any backend of the generation contract
(transformers, vLLM, a server, an API), so ``SearchGenerator`` wraps the loaded
generator and the resumable JSONL writer uses it like any other: one row per
sample, whose ``completion`` holds every model turn and every inserted passage
block, and whose ``num_tokens`` counts the tokens the model generated.

Budgets, as in training: each model turn gets at most ``max_turn_tokens`` new
tokens (the same room for every rollout of a turn: the smallest left), an
``<information>`` block at most ``max_information_tokens`` tokens, and the whole
completion (model and inserted tokens, counted with the model's tokenizer)
``sampling.max_new_tokens``. After ``max_searches`` searches one last turn is
generated whose search, if any, is not answered. A turn with neither tag that
stopped before its room was used (the model ended its text) ends the rollout; one
cut by its room gets the protocol notice and goes on. Sampled decoding runs every
sample as its own rollout (n = 1 per call, the seed moved on each turn); greedy
decoding runs one rollout per prompt and copies it ``n`` times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from components.generation.base import Completion, replicate_greedy
from components.retrieval.base import Retriever, format_information, round_languages
from components.retrieval.protocol import (
    INFORMATION_HEAD, INFORMATION_TAIL, INVALID_NOTICE, STOP_STRINGS, close_open_action, cut_after_action,
    information_block, parse_action,
)  # fmt: skip

if TYPE_CHECKING:
    from components.generation.base import Generator
    from components.settings import SamplingSettings
    from components.settings.search import SearchSettings


@dataclass
class Rollout:
    """One sample's completion so far: its text, the model's tokens, every token used, searches made."""

    prompt: str
    lang: str
    text: str = ""
    model_tokens: int = 0
    used: int = 0
    searches: int = 0
    done: bool = False


class SearchGenerator:
    """The search loop over ``inner`` (see the module docstring); ``languages`` maps each prompt to its language."""

    name = "search"

    def __init__(self, inner: "Generator", retriever: Retriever, settings: "SearchSettings",
                 languages: Mapping[str, str], tokenizer: Any) -> None:
        self.inner, self.retriever, self.settings = inner, retriever, settings
        self.languages, self.tokenizer = languages, tokenizer

    def _tokens(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, prompts: list[str], sampling: "SamplingSettings",
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        """``sampling.n`` searched completions per prompt, in prompt order (``stop`` is the protocol's own)."""
        greedy = sampling.temperature == 0
        copies = 1 if greedy else sampling.n
        rollouts = [Rollout(prompt, self.languages[prompt]) for prompt in prompts for _ in range(copies)]
        for turn in range(self.settings.max_searches + 1):
            active = [r for r in rollouts if not r.done and r.used < sampling.max_new_tokens]
            if not active:
                break
            room = min(self.settings.max_turn_tokens, min(sampling.max_new_tokens - r.used for r in active))
            turn_sampling = sampling.model_copy(update={"n": 1, "max_new_tokens": room, "seed": sampling.seed + turn})
            outputs = self.inner.generate([r.prompt + r.text for r in active], turn_sampling, stop=STOP_STRINGS)
            searching = self._take_turns(active, [samples[0] for samples in outputs], room, sampling.max_new_tokens,
                                         last=turn == self.settings.max_searches)
            self._insert_information(searching, sampling.max_new_tokens)
        done = [Completion(r.text, r.model_tokens) for r in rollouts]
        per_prompt = [done[i * copies:(i + 1) * copies] for i in range(len(prompts))]
        return [replicate_greedy(samples, sampling.n) if greedy else samples for samples in per_prompt]

    def _take_turns(self, active: list[Rollout], outputs: list[Completion], room: int, budget: int,
                    last: bool) -> list[tuple[Rollout, str]]:
        """Append each turn; return the rollouts that search next, with their queries."""
        searching = []
        for rollout, output in zip(active, outputs, strict=True):
            stopped_early = output.num_tokens < room
            text = cut_after_action(output.text)
            text = close_open_action(text) if stopped_early else text
            rollout.text += text
            rollout.model_tokens += output.num_tokens
            rollout.used += output.num_tokens
            kind, query = parse_action(text)
            if kind == "answer" or last or not text.strip() or (kind is None and stopped_early):
                rollout.done = True
            elif kind == "search":
                searching.append((rollout, query))
            else:
                notice = self._tokens(INVALID_NOTICE)[: max(0, budget - rollout.used)]
                rollout.text += self.tokenizer.decode(notice)
                rollout.used += len(notice)
        return searching

    def _insert_information(self, searching: list[tuple[Rollout, str]], budget: int) -> None:
        """Retrieve for every searching rollout (one batch per language) and append the passages."""
        plans = [round_languages(self.settings.rounds, rollout.searches, rollout.lang, self.retriever.languages)
                 for rollout, _ in searching]
        wanted: dict[str, list[int]] = {}
        for index, plan in enumerate(plans):
            for code in plan:
                wanted.setdefault(code, []).append(index)
        found: dict[tuple[int, str], list] = {}
        for code, indices in wanted.items():
            hits = self.retriever.search([searching[i][1] for i in indices], code, self.settings.retrieval.top_k)
            found.update({(i, code): passages for i, passages in zip(indices, hits)})
        frame = len(self._tokens(INFORMATION_HEAD)) + len(self._tokens(INFORMATION_TAIL))
        for index, (rollout, _) in enumerate(searching):
            body = format_information([(code, found[(index, code)]) for code in plans[index]],
                                      self.settings.retrieval.passage_chars)
            room = min(self.settings.max_information_tokens, budget - rollout.used) - frame
            if room <= 0:
                rollout.done = True
                continue
            ids = self._tokens(body)[:room]
            rollout.text += information_block(self.tokenizer.decode(ids))
            rollout.used += frame + len(ids)
            rollout.searches += 1
