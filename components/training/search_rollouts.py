"""The LcRL search tool loop as trl's ``rollout_func``: ``<search>`` / ``<answer>`` turns, masked passages.

LcRL (after Search-R1) lets the policy interleave reasoning with retrieval: a
turn ends with ``<search>query</search>`` — the retriever's passages come back
between ``<information>`` tags and the policy continues — or with
``<answer>…</answer>``, which ends the rollout. After ``max_searches`` searches
one last turn is generated without further retrieval. The k-th search of a
rollout goes to the languages of ``rounds[k]`` (query language, then the
others, then English; ``components.retrieval.base.round_languages``).

trl 1.16 offers two multi-turn hooks on ``GRPOTrainer``: ``tools`` /
``environment_factory`` (JSON tool calls parsed through the chat template's
tool-call schema) and ``rollout_func`` (the trainer hands a batch of prompts to
a function that returns ``prompt_ids``, ``completion_ids``, ``logprobs`` and any
extra per-completion fields; an ``env_mask`` field marks model tokens 1 and
inserted tokens 0). LcRL's protocol is plain text tags, which base models
(Qwen2.5-3B base in the paper) write without a tool-calling template, so this
is a ``rollout_func``: retrieved passages (and the notice after a turn with
neither tag) enter the completion with ``env_mask = 0``, and trl multiplies its
loss mask by ``env_mask``, so they carry no gradient. ``search_calls`` (searches
per completion) reaches the reward functions as a column. ``logprobs`` are not
returned: trl recomputes them with the policy where it needs them.

Turns are generated with the trainer's model through ``transformers`` (stop
strings ``</search>``/``</answer>``) or, with ``use_vllm`` in ``colocate``
mode, through trl's colocated vLLM engine (tensor parallel size 1). The whole
completion is kept within ``max_completion_length`` tokens. The tags and their
parsing are ``components.retrieval.protocol``'s, shared with test-time generation.

>>> parse_action("I should look. <search> capital of Japan </search>")
('search', 'capital of Japan')
>>> parse_action("<answer>Tokyo</answer>"), parse_action("nothing")
(('answer', 'Tokyo'), (None, ''))
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from components.retrieval.base import Retriever, format_information, round_languages
from components.retrieval.protocol import (
    INFORMATION_HEAD, INFORMATION_TAIL, INVALID_NOTICE, STOP_STRINGS, parse_action,
)  # fmt: skip


def prompt_key(prompt: Any) -> str:
    """Dictionary key of a prompt (a string, or chat messages)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, sort_keys=True)


@dataclass
class Trajectory:
    """One rollout's completion so far: token ids, the loss mask (1 model, 0 inserted), searches made."""

    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    searches: int = 0
    done: bool = False

    def add(self, ids: Sequence[int], model: bool) -> None:
        self.ids += list(ids)
        self.mask += [int(model)] * len(ids)


def cut_turn(ids: Sequence[int], decode: Callable[[list[int]], str], eos_ids: Sequence[int],
             pad_id: int | None) -> tuple[list[int], bool]:
    """A generated turn up to its first EOS (kept, ends the rollout) or the end of its first stop string.

    >>> vocab = {0: "", 1: "a", 2: "</answer>", 3: "b", 9: "<eos>"}
    >>> decode = lambda ids: "".join(vocab[i] for i in ids)
    >>> cut_turn([1, 2, 3], decode, [9], 0), cut_turn([1, 9, 3], decode, [9], 0), cut_turn([1, 0, 0], decode, [9], 0)
    (([1, 2], False), ([1, 9], True), ([1], False))
    """
    ids = list(ids)
    ended = False
    for position, token in enumerate(ids):
        if token in eos_ids:
            ids, ended = ids[: position + 1], True
            break
    text = decode(ids)
    if not ended and any(stop in text for stop in STOP_STRINGS):
        for length in range(1, len(ids) + 1):
            if any(stop in decode(ids[:length]) for stop in STOP_STRINGS):
                return ids[:length], False
    while not ended and ids and pad_id is not None and ids[-1] == pad_id:
        ids.pop()
    return ids, ended


class SearchRollout:
    """trl ``rollout_func`` running the search loop; see the module docstring."""

    def __init__(self, settings: Any, retriever: Retriever, lang_by_prompt: dict[str, str],
                 max_completion_length: int) -> None:
        self.settings = settings
        self.retriever = retriever
        self.lang_by_prompt = lang_by_prompt
        self.budget = max_completion_length

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        tokenizer = trainer.processing_class
        texts = [p if isinstance(p, str) else tokenizer.apply_chat_template(p, tokenize=False,
                                                                            add_generation_prompt=True)
                 for p in prompts]
        prompt_ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
        langs = [self.lang_by_prompt[prompt_key(p)] for p in prompts]
        generate = turn_generator(trainer)
        states = [Trajectory() for _ in prompts]
        for turn in range(self.settings.max_searches + 1):
            active = [i for i, s in enumerate(states) if not s.done and len(s.ids) < self.budget]
            if not active:
                break
            room = min(self.settings.max_turn_tokens, min(self.budget - len(states[i].ids) for i in active))
            outputs = generate([prompt_ids[i] + states[i].ids for i in active], room)
            queries = self._take_turns(tokenizer, trainer, [states[i] for i in active], outputs,
                                       last=turn == self.settings.max_searches)
            self._insert_information(tokenizer, [(states[active[j]], langs[active[j]], q) for j, q in queries])
        return {"prompt_ids": prompt_ids, "completion_ids": [s.ids for s in states], "logprobs": None,
                "env_mask": [s.mask for s in states], "search_calls": [s.searches for s in states]}

    def _take_turns(self, tokenizer, trainer, states: list[Trajectory], outputs: list[list[int]],
                    last: bool) -> list[tuple[int, str]]:
        """Append each generated turn; return ``(position, query)`` of the rollouts that search next."""
        decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
        eos = getattr(trainer, "eos_token_ids", None) or [tokenizer.eos_token_id]
        queries = []
        for position, (state, output) in enumerate(zip(states, outputs)):
            ids, ended = cut_turn(output, decode, eos, tokenizer.pad_token_id)
            state.add(ids, model=True)
            kind, content = parse_action(decode(ids))
            if ended or kind == "answer" or last or not ids:
                state.done = True
            elif kind == "search":
                queries.append((position, content))
            else:
                self._append_text(tokenizer, state, INVALID_NOTICE)
        return queries

    def _insert_information(self, tokenizer, searches: list[tuple[Trajectory, str, str]]) -> None:
        """Retrieve for every searching rollout (batched per language) and insert the passages, masked."""
        wanted: dict[str, list[int]] = {}
        plans = []
        for index, (state, lang, query) in enumerate(searches):
            plan = round_languages(self.settings.rounds, state.searches, lang, self.retriever.languages)
            plans.append(plan)
            for code in plan:
                wanted.setdefault(code, []).append(index)
        found: dict[tuple[int, str], list] = {}
        for code, indices in wanted.items():
            hits = self.retriever.search([searches[i][2] for i in indices], code, self.settings.retrieval.top_k)
            found.update({(i, code): passages for i, passages in zip(indices, hits)})
        for index, (state, _, _) in enumerate(searches):
            body = format_information([(code, found[(index, code)]) for code in plans[index]],
                                      self.settings.retrieval.passage_chars)
            self._append_information(tokenizer, state, body)
            state.searches += 1

    def _append_information(self, tokenizer, state: Trajectory, body: str) -> None:
        head = tokenizer(INFORMATION_HEAD, add_special_tokens=False)["input_ids"]
        tail = tokenizer(INFORMATION_TAIL, add_special_tokens=False)["input_ids"]
        room = min(self.settings.max_information_tokens, self.budget - len(state.ids)) - len(head) - len(tail)
        if room <= 0:
            state.done = True
            return
        state.add(head + tokenizer(body, add_special_tokens=False)["input_ids"][:room] + tail, model=False)

    def _append_text(self, tokenizer, state: Trajectory, text: str) -> None:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][: max(0, self.budget - len(state.ids))]
        state.add(ids, model=False)


def turn_generator(trainer: Any) -> Callable[[list[list[int]], int], list[list[int]]]:
    """``generate(sequences, max_new_tokens) -> new token ids`` with the trainer's policy."""
    if getattr(trainer, "use_vllm", False):
        return _vllm_turns(trainer)
    return _transformers_turns(trainer)


def _transformers_turns(trainer: Any):
    import torch
    from trl.models import unwrap_model_for_generation

    tokenizer = trainer.processing_class

    def generate(sequences: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        width = max(len(s) for s in sequences)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences], device=trainer.accelerator.device)
        attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences],
                                 device=trainer.accelerator.device)
        config = copy.deepcopy(trainer.generation_config)
        config.max_new_tokens = max_new_tokens
        config.stop_strings = list(STOP_STRINGS)
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                         gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                         generation_kwargs=trainer.generation_kwargs) as model, torch.no_grad():
            out = model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config,
                                 tokenizer=tokenizer)
        return [row.tolist() for row in out[:, width:].cpu()]

    return generate


def _vllm_turns(trainer: Any):
    from vllm import SamplingParams

    if trainer.args.vllm_mode != "colocate":
        raise ValueError("the LcRL search loop generates with vLLM in 'colocate' mode only (set grpo.vllm_mode)")

    def generate(sequences: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        params = SamplingParams(n=1, temperature=trainer.temperature, top_p=trainer.top_p, max_tokens=max_new_tokens,
                                stop=list(STOP_STRINGS), include_stop_str_in_output=True)
        outputs = trainer.vllm_generation.llm.generate([{"prompt_token_ids": s} for s in sequences],
                                                       sampling_params=params, use_tqdm=False)
        return [list(output.outputs[0].token_ids) for output in outputs]

    return generate
