"""The training entry point: ``python -m components.training --job JOB --out DIR [--phase train|rollouts]``.

Launched by a task through ``accelerate launch`` (see ``components.training.runner``);
dispatches on the job's stage: ``sft`` trains LoRA SFT, ``grpo`` trains GRPO or,
in the ``rollouts`` phase, samples the policy for the reward audit.
``--abort-after-checkpoint N`` ends the process abruptly once checkpoint N is
complete (resume tests).

A launch of several processes ends together: every process waits at a barrier
until all have finished (the main process writes ``result.json`` last) and
closes the process group, and the launched module leaves with ``os._exit``
once exit handlers have run and its output is flushed. A gloo process group
left open at exit can abort the process while the interpreter finalizes
(torch's gloo work objects still hold tensors whose release needs the GIL:
SIGABRT, "terminate called without an active exception"); a worker that
finished early died so in one run in six of a two-process ZeRO-3 GRPO on CPU,
before the main process had written ``result.json``, and torchrun then ended
the others. Closing the group first and skipping the interpreter's teardown of
native objects leaves nothing to abort.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from components.progress import install_child_handler
from components.quiet import quiet_libraries
from components.training.runner import read_job


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="components.training", description=__doc__.split("\n")[0])
    parser.add_argument("--job", required=True, help="job.json written by the stage's task")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--phase", choices=["train", "rollouts"], default="train")
    parser.add_argument("--abort-after-checkpoint", type=int, default=None)
    args = parser.parse_args(argv)
    job = read_job(args.job)
    install_child_handler()  # progress lines go to the log as marked lines; the task shows them
    quiet_libraries()  # the command's warning filters (its --verbose shows them all)
    args.out.mkdir(parents=True, exist_ok=True)
    if job.settings.cpu_threads:  # oversubscribed CPUs: torch's spin-waiting threads cost 10x here
        import torch

        torch.set_num_threads(job.settings.cpu_threads)
    if job.stage == "sft":
        from components.training.sft import train as train_sft

        train_sft(job, args.out, abort_after=args.abort_after_checkpoint)
    elif args.phase == "rollouts":
        from components.training.rollouts import sample_rollouts

        sample_rollouts(job, args.out)
    else:
        from components.training.grpo import train as train_grpo

        train_grpo(job, args.out, abort_after=args.abort_after_checkpoint)
    leave_process_group()
    return 0


def leave_process_group() -> None:
    """Wait for every process of the launch, then close its process group (nothing without one, or with a
    group of one process: trl's colocated vLLM builds such a group in a single process and keeps using it, so a
    caller that trains again in the same process, as the tests of that mode do, needs it left open)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()
        dist.destroy_process_group()


def exit_now(code: int) -> None:
    """End the process once exit handlers have run and output is flushed, skipping the interpreter's teardown."""
    import atexit
    import os
    import sys

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":  # a trainer process: its settings come from a job written from a checked profile
    from components.settings import CHECKED_UPSTREAM, use_registries

    use_registries(CHECKED_UPSTREAM)
    exit_now(main())
