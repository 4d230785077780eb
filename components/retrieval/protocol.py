"""The text protocol of search-augmented answering (Search-R1, LcRL): the tags a policy writes and reads.

A model turn ends with ``<search>query</search>`` — the retriever's passages come
back between ``<information>`` tags and the model goes on — or with
``<answer>…</answer>``, which ends the rollout. Both the GRPO rollouts
(``components.training.search_rollouts``, in token ids) and test-time generation
(``components.generation.search_generator``, in text) speak it, so a model is evaluated
with the protocol it was trained on.

>>> parse_action("I should look. <search> capital of Japan </search>")
('search', 'capital of Japan')
>>> parse_action("<answer>Tokyo</answer>"), parse_action("nothing")
(('answer', 'Tokyo'), (None, ''))
>>> cut_after_action("<search>q</search> more text")
'<search>q</search>'
>>> information_block("[fr] 1. Paris")
'\\n\\n<information>\\n[fr] 1. Paris\\n</information>\\n\\n'
"""

from __future__ import annotations

import re

ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
STOP_STRINGS = ("</search>", "</answer>")
INFORMATION_HEAD, INFORMATION_TAIL = "\n\n<information>\n", "\n</information>\n\n"
INVALID_NOTICE = ("\nNo action found: end a turn with <search> query </search> to search, "
                  "or with <answer> answer </answer> to answer.\n")
_OPEN = re.compile(r"<(search|answer)>(?!.*</\1>)", re.DOTALL)


def parse_action(text: str) -> tuple[str | None, str]:
    """The first ``<search>``/``<answer>`` block of a turn: ``(kind, content)``, or ``(None, "")``."""
    match = ACTION.search(text)
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def cut_after_action(text: str) -> str:
    """A turn up to the end of its first complete action (the text after it was never asked for)."""
    match = ACTION.search(text)
    return text[: match.end()] if match else text


def close_open_action(text: str) -> str:
    """A turn whose last tag was opened and never closed, closed: backends that drop the stop string
    (vLLM's default) return ``<search> query`` for ``<search> query </search>``.

    >>> close_open_action("<think>x</think><search> tokyo"), close_open_action("no tag")
    ('<think>x</think><search> tokyo</search>', 'no tag')
    """
    if ACTION.search(text):
        return text
    match = _OPEN.search(text)
    return f"{text}</{match.group(1)}>" if match else text


def information_block(body: str) -> str:
    """The text inserted after a search: the passages between ``<information>`` tags."""
    return f"{INFORMATION_HEAD}{body}{INFORMATION_TAIL}"
