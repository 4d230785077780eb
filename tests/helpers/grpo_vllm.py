"""What the tests of trl's vLLM paths share: the forking policy and its data, the GRPO job, a probe on the trainer.

The policy is the forking scripted model (``tests.helpers.scripted_model.build_forking_model``):
after the prompt it writes ``La réponse est`` (greedy before training; PCS reward 0, no boxed
answer) or ``\\boxed{13}`` (PCS reward 1), about half and half. A random tiny model would give
every rollout the same PCS reward, so GRPO would have no advantage, no gradient and no policy
change to observe. The learning rate is large (1e-2) so that one step moves the policy visibly.

``run_entry`` writes the GRPO job as the stage's task does and runs the training entry
(``components.training.__main__.main``) on it in this process, with a ``Probe`` added to the
trainer the entry builds. The probe only observes: it asks the trainer's vLLM (its colocated
engine, or the server through trl's client) for a greedy completion and the first token's
log-probabilities before training and after the last step, and reads the trained policy's own
first-token log-probabilities after step 1.

On CUDA the same code trains in bfloat16 (``bench/gpu_check.sh`` runs these tests there); on
CPU in float32, while vLLM's CPU build runs the float32 checkpoint in bfloat16.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FIRST, SECOND = "La réponse est", "\\boxed{13}"
ROWS = [{"id": f"q{i}", "lang": lang, "question": question, "gold": "13"}
        for i, pair in enumerate([("Janet has 16 eggs and sells 3.", "Janet a 16 œufs et en vend 3."),
                                  ("Janet has 17 eggs and eats 4.", "Janet a 17 œufs et en mange 4.")])
        for lang, question in zip(("en", "fr"), pair)]
PCS = {"name": "pcs", "params": {"require_think": False, "extraction": "lenient"}}


def on_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def grpo_section(model_dir: Path, **changes: Any):
    """The GRPO section of the tests: 2 steps of PCS on 4 prompts x 4 rollouts, vLLM colocated unless changed."""
    from components.settings import GRPOStageSettings, ModelSettings

    device, dtype = ("cuda", "bfloat16") if on_cuda() else ("cpu", "float32")
    model = ModelSettings(backend="vllm", model=str(model_dir), dtype=dtype, device=device, chat=True,
                          max_model_len=256, gpu_memory_utilization=0.3)
    return GRPOStageSettings(
        model=model, rewards=[PCS], max_steps=2, per_device_train_batch_size=8, learning_rate=1e-2,
        sampling={"n": 4, "temperature": 1.0, "max_new_tokens": 16, "seed": 0}, prompt={"style": "plain"},
        save_steps=100, resume=False, audit={"enabled": False}, accelerate_config=None, **changes)


def forking_setup(root: Path) -> dict:
    """The forking model for the rendered prompts' last token, the dataset file, the first prompt's token ids."""
    from components.training.grpo_data import training_rows
    from tests.helpers.scripted_model import build_forking_model
    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    settings = grpo_section(root)
    prompts = [row["prompt"] for row in training_rows(ROWS, settings, settings.model, tokenizer)]
    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    if len({i[-1] for i in ids}) != 1:
        raise AssertionError("the rendered prompts must end with one token")
    data = root / "rows.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    model = build_forking_model(root / "model", ids[0][-1], FIRST, SECOND)
    first, second = (tokenizer(t, add_special_tokens=False)["input_ids"][0] for t in (FIRST, SECOND))
    return {"model": model, "data": data, "prompt_ids": ids[0], "first": first, "second": second}


class Probe:
    """Observes the trainer: its vLLM's greedy completion and first-token log-probabilities, the policy's."""

    def __init__(self, trainer: Any, prompt_ids: list[int]) -> None:
        self.trainer, self.prompt_ids, self.seen = trainer, prompt_ids, {}

    def engine(self) -> tuple[str, dict[int, float]]:
        """What the trainer's vLLM writes greedily, and its two likeliest first tokens."""
        generation = self.trainer.vllm_generation
        if generation.mode == "server":
            client = generation.vllm_client
            greedy = client.generate([self.prompt_ids], n=1, temperature=0.0, max_tokens=16)["completion_ids"][0]
            first = client.generate([self.prompt_ids], n=1, temperature=1.0, max_tokens=1, logprobs=1)
            logprobs = dict(zip(first["logprob_token_ids"][0][0], first["logprobs"][0][0]))
            return self.trainer.processing_class.decode(greedy, skip_special_tokens=True), logprobs
        from vllm import SamplingParams

        request = [{"prompt_token_ids": self.prompt_ids}]
        greedy = generation.llm.generate(request, SamplingParams(temperature=0, max_tokens=16), use_tqdm=False)
        first = generation.llm.generate(request, SamplingParams(temperature=1.0, max_tokens=1, logprobs=2),
                                        use_tqdm=False)[0].outputs[0]
        return greedy[0].outputs[0].text, {token: entry.logprob for token, entry in first.logprobs[0].items()}

    def policy(self) -> dict[int, float]:
        """The trained policy's two likeliest first tokens."""
        import torch

        model = self.trainer.model
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([self.prompt_ids], device=model.device)).logits[0, -1]
        top = torch.log_softmax(logits.float(), -1).topk(2)
        return {int(token): float(value) for value, token in zip(top.values, top.indices)}

    def on_train_begin(self, args, state, control, **kwargs):
        self.seen["before"] = self.engine()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 1:
            self.seen["policy_after_step_1"] = self.policy()

    def on_train_end(self, args, state, control, **kwargs):
        self.seen["after"] = self.engine()

    def __getattr__(self, name):  # every other TrainerCallback event: nothing to observe
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def run_entry(settings: Any, setup: dict, out: Path, monkeypatch,
              **job_fields: Any) -> tuple[dict, list[dict], Probe, Any]:
    """Write the job, run the training entry on it with the probe attached: result, metrics, probe, trainer.
    ``job_fields``: more fields of the training job (a validation dataset)."""
    import components.training.grpo as grpo
    from components.training.__main__ import main
    from components.training.runner import TrainingJob, read_metrics, write_job

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(out / "vllm-cache"))
    built: dict = {}
    real_build = grpo.build_trainer

    def build_with_probe(*args, **kwargs):
        trainer, stateful = real_build(*args, **kwargs)
        built["probe"], built["trainer"] = Probe(trainer, setup["prompt_ids"]), trainer
        trainer.add_callback(built["probe"])
        return trainer, stateful

    monkeypatch.setattr(grpo, "build_trainer", build_with_probe)
    job = TrainingJob(stage="grpo", grpo=settings, model=str(setup["model"]), dataset=str(setup["data"]),
                      **job_fields)
    environment = dict(os.environ)
    try:
        assert main(["--job", str(write_job(job, out)), "--out", str(out)]) == 0
    finally:  # trl's colocate mode sets RANK, WORLD_SIZE, MASTER_ADDR ... for vLLM: not for the next test
        os.environ.clear()
        os.environ.update(environment)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return result, read_metrics(out / "metrics.jsonl"), built["probe"], built["trainer"]


def assert_engine_follows_the_policy(setup: dict, result: dict, metrics: list[dict], probe: Probe) -> None:
    """vLLM wrote the first continuation before training and writes the rewarded one with the step-1 policy's odds."""
    import pytest

    first, second = setup["first"], setup["second"]
    assert result["global_step"] == 2
    before_text, before = probe.seen["before"]
    after_text, after = probe.seen["after"]
    policy = probe.seen["policy_after_step_1"]
    assert (before_text, after_text) == (FIRST, SECOND)
    assert before[first] > before[second] and after[second] > after[first]
    assert after[second] == pytest.approx(policy[second], abs=0.01)  # bfloat16 engine, float32 policy on CPU
    assert after[first] == pytest.approx(policy[first], abs=0.01)
    steps = {row["step"]: row for row in metrics if "reward_std" in row}
    assert steps[1]["reward_std"] > 0  # both continuations were sampled: GRPO had a signal
    assert steps[2]["sampling/sampling_logp_difference/max"] < 0.01  # step 2 sampled from the synced weights
