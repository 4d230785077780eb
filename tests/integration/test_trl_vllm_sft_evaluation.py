"""SFT through the training entry, then vLLM with its adapter: the engine writes what SFT taught, and a GPU
profile's evaluation runs on it with the profile's own settings.

Runs where vLLM is importable (``.venv-vllm``, built by ``.ci/vllm-env.sh``). The SFT job goes
through ``components.training.__main__.main`` as the stage's task writes it (LoRA on every linear
module, ``merge``), and teaches the tiny model one completion for every prompt:
``TAUGHT``, a step and a boxed 13. Then:

* the ``vllm`` backend serves the adapter as a LoRA request and writes ``TAUGHT``, as it does
  on the merged weights SFT saved and as transformers does with the adapter; the base model
  does not;
* ``polyreason evaluate profiles/qwen3-4b-adamame-evaluation.yaml`` runs with the profile's
  backend (vLLM in-process), chat template with thinking, bfloat16, ``max_model_len`` 9,216,
  four samples at temperature 0.6 / top-p 0.95 up to 8,192 new tokens, prompt style and
  scoring. The overrides swap only what a CPU cannot have: the model (the tiny one, its
  context widened to 16,384 positions, plus the SFT adapter), ``device: cpu`` (kept ``cuda``
  on a GPU), the offline data folder, one problem per language, and no hub language (there
  is no network). SFT also saw those evaluation prompts, so every sample ends at EOS after
  ``TAUGHT`` and the 8,192-token budget costs nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.grpo_vllm import on_cuda

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("trl") is None,
                       reason="vllm and trl are not importable here; build .venv-vllm with .ci/vllm-env.sh "
                              "and run there"),
]

REPO = Path(__file__).resolve().parents[2]
TAUGHT = "16 - 3 = 13, donc \\boxed{13}."  # no think tags: the tiny tokenizer's are special, dropped on decode
QUESTIONS = ["Janet has 16 eggs and sells 3.", "Janet a 16 œufs et en vend 3.", "ジャネットは卵を16個持っています。"]
PROFILE = REPO / "profiles" / "qwen3-4b-adamame-evaluation.yaml"
BENCHMARKS = ("mgsm_rev2", "msvamp")  # the profile's benchmarks, in its order
DEVICE = "cuda" if on_cuda() else "cpu"


def widened_context(model_dir: Path, out: Path, positions: int) -> Path:
    """A copy of the tiny model that accepts ``positions`` positions (rotary: no weight depends on it)."""
    shutil.copytree(model_dir, out)
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    config["max_position_embeddings"] = positions
    (out / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def profile_overrides(shared_data: Path, model: Path, adapter: Path | None) -> list[str]:
    """What a CPU cannot have of the GPU profile: its model and device, the data folder, sizes, hub languages."""
    overrides = [f"evaluation.model.model={model}"] + ([] if on_cuda() else ["evaluation.model.device=cpu"])
    overrides += [f"evaluation.model.adapter={adapter}"] if adapter else []
    for index, name in enumerate(BENCHMARKS):
        overrides += [f"evaluation.benchmarks.{index}.data_dir={shared_data / name}",
                      f"evaluation.benchmarks.{index}.languages=[fr,ja]", f"evaluation.benchmarks.{index}.limit=1"]
    return overrides + ["evaluation.benchmarks.0.hub_languages=[]"]


def evaluation_questions(model: Path, shared_data: Path) -> list[str]:
    """The user turns the profile's evaluation will send (its prompt style and instruction placement)."""
    from components.config import load_profile
    from components.data.benchmarks import load_benchmark
    from components.data.prompts import user_text

    evaluation = load_profile(PROFILE, profile_overrides(shared_data, model, None)).evaluation
    texts = []
    for benchmark in evaluation.benchmarks:
        items = load_benchmark(benchmark.name, data_dir=benchmark.data_dir, languages=benchmark.languages,
                               limit=benchmark.limit, selection=benchmark.selection,
                               sample_seed=benchmark.sample_seed, hub_languages=benchmark.hub_languages).items
        texts += [user_text(item, evaluation.prompt.style, evaluation.prompt.instruction) for item in items]
    return texts


@pytest.fixture(scope="module")
def sft(tiny_model_dir, shared_data, tmp_path_factory) -> dict:
    """LoRA SFT of the widened tiny model on (question, ``TAUGHT``), through the training entry, merged too.

    The questions: a few plain ones and the profile evaluation's own user turns (a model this
    small learns the completion for the prompts it sees, not for every prompt).
    """
    import pandas as pd

    from components.settings import ModelSettings, SFTSettings
    from components.training.__main__ import main
    from components.training.runner import TrainingJob, write_job

    from tests.helpers.tiny_model import whole_character_variant

    root = tmp_path_factory.mktemp("sft")
    varied = whole_character_variant(tiny_model_dir, root / "varied", std=0.3)  # logits large enough to be sure
    model = widened_context(varied, root / "model", 16384)
    data = root / "sft.parquet"
    questions = QUESTIONS + evaluation_questions(model, shared_data)
    pd.DataFrame([{"prompt": q, "completion": TAUGHT} for q in questions]).to_parquet(data)
    settings = SFTSettings(model=ModelSettings(model=str(model), device=DEVICE, dtype="float32"), template="chat",
                           max_length=512, learning_rate=1e-2, max_steps=40, per_device_train_batch_size=len(questions),
                           warmup_steps=0, lr_scheduler_type="constant", gradient_checkpointing=False,
                           save_steps=1000, merge=True, resume=False, accelerate_config=None)
    out = root / "out"
    job = TrainingJob(stage="sft", sft=settings, model=str(model), dataset=str(data))
    assert main(["--job", str(write_job(job, out)), "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return {"model": model, "adapter": Path(result["adapter_dir"]), "merged": Path(result["full_model_dir"]),
            "result": result}


def chat_prompts(model_dir: Path, questions: list[str]) -> list[str]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return [tokenizer.apply_chat_template([{"role": "user", "content": q}], tokenize=False,
                                          add_generation_prompt=True) for q in questions]


def greedy(settings, prompts: list[str], cache: Path) -> list[str]:
    from components.generation import build_generator
    from components.settings import SamplingSettings

    generator = build_generator(settings, cache)
    generator.progress = False
    try:
        return [samples[0].text for samples in generator.generate(prompts, SamplingSettings(max_new_tokens=32))]
    finally:
        if hasattr(generator, "close"):
            generator.close()


def test_vllm_with_the_sft_adapter_writes_what_sft_taught(sft, tmp_path, monkeypatch):
    from components.settings import ModelSettings

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm-cache"))
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    prompts = chat_prompts(sft["model"], QUESTIONS[:2] + ["Combien reste-t-il ?"])  # the last one was not taught
    base = dict(model=str(sft["model"]), dtype="float32", device=DEVICE)
    adapter = greedy(ModelSettings(backend="vllm", adapter=str(sft["adapter"]), **base), prompts, tmp_path)
    merged = greedy(ModelSettings(backend="vllm", **{**base, "model": str(sft["merged"])}), prompts, tmp_path)
    transformers = greedy(ModelSettings(adapter=str(sft["adapter"]), **base), prompts, tmp_path)
    untrained = greedy(ModelSettings(**base), prompts, tmp_path)
    assert sft["result"]["global_step"] == 40
    assert adapter == merged == transformers
    assert adapter[:2] == [TAUGHT] * 2
    assert TAUGHT not in untrained


def test_gpu_profile_evaluation_with_its_own_settings(sft, shared_data, tmp_path):
    project = tmp_path / "project"
    out = tmp_path / "summary.json"
    overrides = profile_overrides(shared_data, sft["model"], sft["adapter"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "VLLM_"))}
    env.update(VLLM_CPU_KVCACHE_SPACE="1", VLLM_CACHE_ROOT=str(tmp_path / "vllm-cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "cli", "evaluate", str(PROFILE), *overrides, "--project-dir", str(project), "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["model"]["model"]["backend"] == "vllm" and summary["model"]["model"]["max_model_len"] == 9216
    for name in BENCHMARKS:
        path = Path(summary["benchmarks"][name]["generations"]["path"])
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        expected = [(lang, index) for lang in ("fr", "ja") for index in range(4)]  # 1 problem x 4 samples
        assert sorted((r["lang"], r["sample_index"]) for r in rows) == expected, name
        for row in rows:
            assert row["prompt"].endswith("<|im_start|>assistant\n"), row["prompt"][-60:]  # thinking: no empty block
            assert (row["completion"], row["num_tokens"] < 32) == (TAUGHT, True), row
    metrics = mlflow_metrics(project, summary["run_id"])
    for key in ("evaluation/mgsm_rev2/fr/accuracy", "evaluation/msvamp/ja/accuracy", "evaluation/msvamp/ja/ttc"):
        assert key in metrics, sorted(metrics)


def mlflow_metrics(project: Path, run_id: str) -> dict[str, float]:
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}").get_run(run_id).data.metrics
