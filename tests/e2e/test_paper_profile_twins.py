"""End-to-end: the CPU twins of the paper evaluation profiles run on the tiny model, so they cannot rot.

Each shipped twin (``profiles/cpu-*-evaluation.yaml``) is loaded as it is — every
protocol switch kept — with the tiny from-config model (Qwen3-style chat template)
in place of Gemma; their data ships in the package (``packaged:``), so they run with
nothing beside the repository. AdaMame's and PCS's twins run the evaluation flow,
the verifier-bias twin the audit flow (which generates first). Real Prefect server, MLflow in the project; random weights:
the tests assert that the protocol reaches the prompts, the sample counts and
the logged metric names, never the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def twin(name: str, model_dir: Path, project: Path) -> dict:
    data = yaml.safe_load((REPO / "profiles" / f"cpu-{name}-evaluation.yaml").read_text(encoding="utf-8"))
    data["project_dir"] = str(project)
    data["evaluation"]["model"]["model"] = str(model_dir)
    return data


def rows_of(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def metrics_of(project: Path, run_id: str) -> dict[str, float]:
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}").get_run(run_id).data.metrics


def check_adamame(generations: dict, metrics: dict) -> None:
    rows = rows_of(generations["mgsm_rev2"])
    assert len(rows) == 3 * 2 * 2  # languages x problems x samples
    first = rows[0]["prompt"]
    assert first.startswith("<|im_start|>user\nVeuillez raisonner")  # the instruction comes first (prepended)
    assert first.endswith("<|im_start|>assistant\n")                  # thinking on: the turn is left open
    for key in ("pass_at_2", "pass_at_1", "avg_at_2", "lcpr", "ttc", "fallback_share"):
        assert f"evaluation/mgsm_rev2/fr/{key}" in metrics and f"evaluation/msvamp/en/{key}" in metrics, key


def check_pcs(generations: dict, metrics: dict) -> None:
    mmath = rows_of(generations["mmath"])
    mmlu = rows_of(generations["mmlu_prox_math"])
    assert len(mmath) == 2 * 2 * 2 and len(mmlu) == 2 * 2 * 1  # avg@2 on MMATH, one sample on MMLU-ProX
    assert "\nA. 74\nB. 84" in mmlu[0]["prompt"] and mmlu[0]["gold"] == "B"
    user_turn = mmath[0]["prompt"].split("<|im_end|>")[0]
    assert user_turn.startswith("<|im_start|>user\nChaque matin")  # table 2's "Qwen3-8B" row: the question alone,
    assert "\\boxed" not in user_turn and "raisonner" not in user_turn  # no boxed line, no language instruction
    for lang in ("fr", "ja"):
        assert f"evaluation/mmath/{lang}/avg_at_2" in metrics and f"evaluation/mmath/{lang}/slc_and_acc" in metrics
        assert f"evaluation/mmath/{lang}/accuracy_micro" in metrics  # macro over subsets, pooled beside it
        assert f"evaluation/mmlu_prox_math/{lang}/avg_at_1" in metrics
        assert f"evaluation/mmath/{lang}/fallback_share" in metrics  # answers only a lenient fallback finds


def check_verifier_bias(generations: dict, metrics: dict) -> None:
    assert len(rows_of(generations["mgsm"])) == 3 * 2 * 2
    for lang in ("en", "ja", "zh"):
        assert f"audit/trusted/{lang}/accuracy" in metrics and f"audit/exact/{lang}/err" in metrics
        assert f"audit/stress/exact/{lang}/accept_correct" in metrics
    assert "audit/exact/vlb_err" in metrics and "audit/guard/status" in metrics
    assert "audit/probe/accuracy_gap_number_only" in metrics


CHECKS = {"adamame": check_adamame, "pcs": check_pcs, "verifier-bias": check_verifier_bias}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_cpu_twin_runs_on_the_tiny_model(name, tiny_model_dir, tmp_path, prefect_server):
    from components.config import load_profile_dict
    from flows.commands import run_audit
    from flows.evaluation import evaluation_flow

    profile = load_profile_dict(twin(name, tiny_model_dir, tmp_path))
    if profile.audit is not None:  # the audit generates through the evaluation first
        audited = run_audit(profile)
        generations, run_id = {"mgsm": audited["generations"]}, audited["run_id"]
    else:
        outputs = evaluation_flow(profile)
        generations = {name: b.generations.path for name, b in outputs.benchmarks.items()}
        run_id = outputs.run_id
    CHECKS[name](generations, metrics_of(tmp_path, run_id))
