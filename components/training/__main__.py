"""The training entry point: ``python -m components.training --job JOB --out DIR [--phase train|rollouts]``.

Launched by a task through ``accelerate launch`` (see ``components.training.runner``);
dispatches on the job's stage: ``sft`` trains LoRA SFT, ``grpo`` trains GRPO or,
in the ``rollouts`` phase, samples the policy for the reward audit.
``--abort-after-checkpoint N`` ends the process abruptly once checkpoint N is
complete (resume tests).
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
