"""The trainer's progress line: step/total, loss or reward, time left.

transformers' ``Trainer`` calls ``on_log`` with the numbers it just logged (trl
adds ``reward`` for GRPO) every ``logging_steps``, ``on_step_end`` after every
optimizer step and ``on_train_end`` once; ``state.max_steps`` is the total it
computed and ``state.global_step`` the step reached. ``ProgressCallback``
reports one line on the progress logger (``components.progress``) per logging
step, and after a step when ``every_s`` seconds passed without a line; the time
left is this run's pace so far (a resumed run counts from where it resumed).
The last step's line is left to ``on_train_end`` (its "done in"): reported from
``on_step_end`` too, before that step's numbers are logged, a log would end with
two "done" lines holding different losses. For the same reason ``on_step_end`` says
nothing on a step whose numbers are about to be logged (``control.should_log``, set by
transformers' flow callback before ours runs), and a line between logging steps names
the step its numbers come from (``loss 1.235 at step 4``), never passing them off as
this step's. Only the main process reports.

>>> class State: global_step, max_steps, is_world_process_zero = 0, 4, True
>>> lines = []
>>> cb = ProgressCallback("sft", clock=iter(range(0, 100, 10)).__next__, emit=lambda *a: lines.append(a))
>>> state = State()
>>> cb.on_train_begin(None, state, None)
>>> state.global_step = 1
>>> cb.on_log(None, state, None, logs={"loss": 2.0})
>>> class Control: should_log = False
>>> state.global_step = 2
>>> cb.on_step_end(None, state, Control())  # 10 s passed, no log at this step: the numbers are step 1's
>>> state.global_step = 4
>>> cb.on_step_end(None, state, Control())  # the last step: its line comes at the end
>>> cb.on_log(None, state, None, logs={"loss": 1.0})
>>> cb.on_train_end(None, state, None)
>>> [line for _, line, _ in lines]  # doctest: +NORMALIZE_WHITESPACE
['sft: step 1/4, loss 2.000, 30s left', 'sft: step 2/4, loss 2.000 at step 1, 30s left',
 'sft: step 4/4, loss 1.000, done in 50s']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from components.progress import report, training_line
from components.training.callbacks import _Callback


class ProgressCallback(_Callback):
    """One progress line per logging step (or every ``every_s`` seconds), and a final one."""

    def __init__(self, stage: str, *, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 emit: Callable[[str, str, bool], None] = report) -> None:
        self.stage = stage
        self.every_s = every_s
        self.clock = clock
        self.emit = emit
        self.started_at = 0.0
        self.start_step = 0
        self.last_line_at = 0.0
        self.values: dict[str, float] = {}
        self.values_step = 0  # the step whose log the values are

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started_at = self.last_line_at = self.clock()
        self.start_step = state.global_step

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        logs = logs or {}
        if "train_runtime" in logs:  # the end-of-training summary, not a step
            return
        self.values.update({k: v for k, v in logs.items() if isinstance(v, (int, float))})
        self.values_step = state.global_step
        self._line(state, final=False)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if getattr(control, "should_log", False):  # this step's numbers follow in on_log, with its line
            return
        if self.clock() - self.last_line_at >= self.every_s:
            self._line(state, final=False)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._line(state, final=True)

    def _line(self, state: Any, final: bool) -> None:
        if not state.is_world_process_zero or (not final and 0 < state.max_steps <= state.global_step):
            return
        now = self.clock()
        self.last_line_at = now
        line = training_line(self.stage, state.global_step, state.max_steps, self.values,
                             elapsed_s=now - self.started_at, steps_done=state.global_step - self.start_step,
                             values_step=self.values_step)
        self.emit(self.stage, line, final)
