"""The tiny test model taught LcRL's tool habit: search once, then answer (for end-to-end tests of the search loop).

A tiny model with random weights never writes ``<search>`` or ``<answer>``, so
in a training run retrieval would never fire and the answer metrics (fEM,
c3Recall, CLR) would have nothing to score. ``teach_tool_habit`` overfits a
copy of it, with a plain next-token loss on its own turns only, to the two
turns of one episode per prompt, token piece by token piece as the search loop
assembles them: after the prompt, ``<search> QUERY </search>``; after the
``<information>`` block the loop inserts (the caller gives its text, cut here
as the loop cuts it), ``<answer> ANSWER </answer>`` (the stop string ends the
rollout). About a hundred full-batch steps, seconds on CPU. Tests that use it
assert mechanics (retrieval ran, answers were scored and logged), not what the
model knows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

HEAD, TAIL = "\n\n<information>\n", "\n</information>\n\n"  # what the search loop inserts around passages


def habit_sequences(tokenizer, episodes: Sequence[tuple[str, str]], query: str, answer: str,
                    information_tokens: int) -> list[tuple[list[int], list[int]]]:
    """``(input_ids, labels)`` per ``(prompt, information)`` episode: labels on the model's turns, -100 elsewhere."""
    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    search, reply, head, tail = ids(f"<search> {query} </search>"), ids(f"<answer> {answer} </answer>"), \
        ids(HEAD), ids(TAIL)
    out = []
    for prompt, information in episodes:
        inserted = head + ids(information)[: information_tokens - len(head) - len(tail)] + tail
        pieces = [(ids(prompt), False), (search, True), (inserted, False), (reply, True)]
        input_ids = [token for piece, _ in pieces for token in piece]
        labels = [token if learned else -100 for piece, learned in pieces for token in piece]
        out.append((input_ids, labels))
    return out


def teach_tool_habit(model_dir: str | Path, out_dir: str | Path, episodes: Sequence[tuple[str, str]],
                     query: str = "capital", answer: str = "Tokyo", information_tokens: int = 48,
                     steps: int = 100, lr: float = 3e-3, seed: int = 0) -> Path:
    """Write a copy of the model at ``model_dir`` that searches ``query`` once, then answers ``answer``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    data = habit_sequences(tokenizer, episodes, query, answer, information_tokens)
    width, pad = max(len(ids) for ids, _ in data), tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids, _ in data])
    labels = torch.tensor([[-100] * (width - len(lab)) + lab for _, lab in data])
    attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in data])
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains faster on one thread of a busy machine
    try:
        for _ in range(steps):
            model(input_ids=input_ids, attention_mask=attention, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return Path(out_dir)
