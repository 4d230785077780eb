"""End-to-end: the evaluation flow through a real Prefect server and a real MLflow server,
on a tiny from-config model and the offline MGSM and MMATH files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.publishers import late_writes

pytestmark = pytest.mark.slow


def tiny_profile(model_dir: Path, shared_data: Path, project: Path, tracking_uri: str, **scoring) -> dict:
    return {
        "name": "tiny-evaluation",
        "project_dir": str(project),
        "tracking": {"tracking_uri": tracking_uri, "experiment": "e2e-evaluation"},
        "evaluation": {
            "model": {"backend": "transformers", "model": str(model_dir), "dtype": "float32", "chat": True},
            "sampling": {"n": 2, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 8, "batch_size": 4, "seed": 7},
            "prompt": {"style": "instruction"},
            "benchmarks": [
                {"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": ["en", "fr"], "limit": 2},
                {"name": "mmath", "data_dir": str(shared_data / "mmath"), "languages": ["en"], "limit": 2},
            ],
            "scoring": {"verifier": "trusted", **scoring},
        },
    }


@pytest.fixture
def backend_calls(monkeypatch):
    """Count calls that reach the real backend (a spy: the real generator still runs)."""
    import components.generation as generation
    from runtime.processes.generators import release_generators

    release_generators()
    calls = []
    real_build = generation.build_generator

    def counting_build(model, cache_dir):
        generator = real_build(model, cache_dir)
        real_generate = generator.generate

        def generate(prompts, sampling, **options):
            calls.append(len(prompts))
            return real_generate(prompts, sampling, **options)

        generator.generate = generate
        return generator

    monkeypatch.setattr(generation, "build_generator", counting_build)
    return calls


def test_evaluation_flow_logs_caches_and_rescores(tiny_model_dir, shared_data, tmp_path, prefect_server,
                                                   mlflow_server, backend_calls):
    from mlflow import MlflowClient

    from components.config import load_profile_dict
    from components.generation.transformers_backend import TransformersGenerator
    from flows.evaluation import evaluation_flow

    profile = load_profile_dict(tiny_profile(tiny_model_dir, shared_data, tmp_path, mlflow_server))
    loads = TransformersGenerator.loads
    first = evaluation_flow(profile)
    assert sum(backend_calls) == 2 * 2 + 2  # prompts: mgsm en+fr x 2, mmath en x 2
    assert TransformersGenerator.loads == loads + 1  # two benchmarks, one model load

    client = MlflowClient(mlflow_server)
    metrics = client.get_run(first.run_id).data.metrics
    for lang in ("en", "fr"):
        for name in ("accuracy", "pass_at_1", "avg_at_2", "slc_and_acc", "ttc", "ttc_chars"):
            assert f"evaluation/mgsm/{lang}/{name}" in metrics, name
        # random weights write few lines whose language can be decided: LPR and LCPR are logged with the number of
        # problems they judged, and a value wherever that number is above 0
        for name in ("lpr", "lcpr"):
            judged = metrics[f"evaluation/mgsm/{lang}/{name}_n"]
            assert (f"evaluation/mgsm/{lang}/{name}" in metrics) is (judged > 0), name
    assert "evaluation/mgsm/overall/accuracy" in metrics
    assert "evaluation/mmath/en/accuracy" in metrics
    assert "evaluation/mmath/en/accuracy_micro" in metrics                     # MMATH: macro over its subsets
    assert metrics["evaluation/mgsm/in_domain/ttc_chars"] == metrics["evaluation/mgsm/fr/ttc_chars"]  # default set
    assert not any("@" in k or "&" in k for k in metrics)

    generations = Path(first.benchmarks["mgsm"].generations.path).read_text().splitlines()
    assert len(generations) == 2 * 2 * 2  # languages x problems x samples
    artifacts = {a.path for a in client.list_artifacts(first.run_id, "evaluation/mgsm")}
    assert "evaluation/mgsm/mgsm_generations.jsonl" in artifacts
    assert "mgsm_accuracy_vs_lcpr.png" in {a.path for a in client.list_artifacts(first.run_id)}  # top level
    logged = json.loads(generations[0])
    assert {"prompt", "completion", "gold", "lang", "sample_index"} <= set(logged)

    backend_calls.clear()
    second = evaluation_flow(profile)
    assert backend_calls == []
    assert not any(b.generated or b.scored for b in second.benchmarks.values())
    assert client.get_run(second.run_id).data.tags["polyreason.cache"] == "hit"

    exact = load_profile_dict(tiny_profile(tiny_model_dir, shared_data, tmp_path, mlflow_server, verifier="exact",
                                           in_domain=["en"]))
    third = evaluation_flow(exact)
    assert backend_calls == []
    assert [(b.generated, b.scored) for b in third.benchmarks.values()] == [(False, True), (False, True)]
    metrics = client.get_run(third.run_id).data.metrics                     # scoring.in_domain reaches the groups
    assert metrics["evaluation/mgsm/in_domain/ttc_chars"] == metrics["evaluation/mgsm/en/ttc_chars"]
    assert metrics["evaluation/mgsm/out_of_domain/ttc_chars"] == metrics["evaluation/mgsm/fr/ttc_chars"]
    assert late_writes(Path(profile.project_dir)) == []  # one publisher per product: scores, reports, generations


def test_benchmarks_still_to_generate_share_one_backend_call(shared_data, tmp_path, prefect_server, mlflow_server,
                                                             backend_calls):
    from components.config import load_profile_dict
    from flows.evaluation import evaluation_flow

    def profile(*extra: dict):
        return load_profile_dict({
            "name": "pooled-evaluation", "project_dir": str(tmp_path),
            "tracking": {"tracking_uri": mlflow_server, "experiment": "e2e-pooled"},
            "evaluation": {
                "model": {"backend": "fake", "model": "fake"},
                "sampling": {"n": 2, "max_new_tokens": 8, "batch_size": 16},
                "benchmarks": [
                    {"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": ["en", "fr"], "limit": 2},
                    {"name": "msvamp", "data_dir": str(shared_data / "msvamp"), "languages": ["en"], "limit": 3},
                    *extra,
                ],
            },
        })

    first = evaluation_flow(profile())
    assert backend_calls == [2 * 2 + 3]  # both benchmarks' prompts in one call
    assert len(first.pooled) == 1 and sorted(first.pooled[0].benchmarks) == ["mgsm", "msvamp"]
    assert first.pooled[0].prompts_generated == 7
    rows = {name: Path(b.generations.path).read_text().splitlines() for name, b in first.benchmarks.items()}
    assert {name: len(lines) for name, lines in rows.items()} == {"mgsm": 8, "msvamp": 6}
    assert {json.loads(line)["benchmark"] for line in rows["msvamp"]} == {"msvamp"}
    assert all(b.generated for b in first.benchmarks.values())

    backend_calls.clear()
    mmath = {"name": "mmath", "data_dir": str(shared_data / "mmath"), "languages": ["en"], "limit": 2}
    second = evaluation_flow(profile(mmath))
    assert backend_calls == [2]  # one benchmark left to generate: its own call, nothing pooled
    assert second.pooled == []
    assert {name: b.generated for name, b in second.benchmarks.items()} == {"mgsm": False, "msvamp": False,
                                                                            "mmath": True}
    assert second.benchmarks["mgsm"].generations == first.benchmarks["mgsm"].generations  # one cache entry each
