"""End-to-end: LcRL through the recipe (real Prefect server, MLflow store, trl ``GRPOTrainer``).

Two lean runs of the shipped profiles with the tiny from-config model, 2 steps each,
each a recipe run whose GRPO stage is a child MLflow run of the recipe's run:

* coupled groups on a translated math RL set (``polyreason recipe`` with
  ``profiles/cpu-grpo.yaml`` and ``grpo.coupling=language``): per-language
  advantage and reward curves reach the GRPO run for every language of the
  coupled groups;
* the search tool loop (``polyreason grpo profiles/cpu-lcrl.yaml``: no dataset
  of its own, so the command runs the recipe up to GRPO): the QA rows and the
  BM25 index over the packaged corpus are built by cached tasks, rollouts run
  as trl's ``rollout_func`` with inserted text masked, and fEM, c3Recall, CLR
  and search calls per language reach the GRPO run. The policy is the tiny
  model taught to search once and then answer (``tests/helpers/tool_habit.py``),
  so retrieval fires and every language has answers to score. It trains as the
  paper profile's GRPO does: every weight, trl's reference model at LcRL's KL
  coefficient, FSDP2 — on ``cpu-fsdp-2``, the CPU twin of its ``multi-gpu-fsdp-4``
  (two processes); the stage's run records the distributed type used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.config import load_profile
from components.training.accelerate import ACCELERATE_CONFIGS, CPU_TWINS
from tests.e2e.conftest import free_port
from tests.e2e.test_grpo_flow import PROFILE as GRPO_PROFILE
from tests.e2e.test_grpo_flow import REPO, history, mlflow_client
from tests.e2e.test_recipe_flow import polyreason

pytestmark = pytest.mark.slow

LANGS = ["en", "fr", "ja"]
MATH = [  # a translated RL set: the source id is shared by the languages
    {"id": "s0", "lang": lang, "gold": "13", "question": q}
    for lang, q in [("en", "Janet has 16 eggs and sells 3. How many are left?"),
                    ("fr", "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"),
                    ("ja", "ジャネットは卵を16個持っていて、3個売ります。残りは？")]
] + [
    {"id": "s1", "lang": lang, "gold": "8", "question": q}
    for lang, q in [("en", "Tom has 5 apples and buys 3 more. How many now?"),
                    ("fr", "Tom a 5 pommes et en achète 3. Combien en a-t-il ?"),
                    ("ja", "トムはりんごを5個持っていて3個買います。いくつ？")]
]
COMMON = ["grpo.max_steps=2", "grpo.sampling.n=2", "grpo.per_device_train_batch_size=6", "grpo.save_steps=2",
          "grpo.cpu_threads=1", "grpo.accelerate_config=null", "grpo.model.chat=true"]
QA_LIMIT = 2  # facts per language of the offline QA set
QUERY = "capital"  # what the taught policy searches


def grpo_child(project: Path, summary: dict) -> str:
    """The GRPO stage's run id, checked to be a child of the recipe's run."""
    run_id = summary["grpo"]["run_id"]
    tags = mlflow_client(project).get_run(run_id).data.tags
    assert tags["mlflow.parentRunId"] == summary["run_id"] and tags["polyreason.stage"] == "grpo"
    return run_id


def steps_logged(project: Path, run_id: str, key: str) -> dict[str, list[int]]:
    return {lang: [step for step, _ in history(project, run_id, f"{key}/{lang}")] for lang in LANGS}


@pytest.fixture(scope="module")
def searching_model_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model taught to search once and then answer, on the episodes the search-loop test will run.

    Episodes as the loop builds them for ``profiles/cpu-lcrl.yaml``: each training
    prompt, then the passages its first search (the query's language) finds.
    """
    from transformers import AutoTokenizer

    from components.data.benchmarks import load_benchmark
    from components.data.qa_dataset import qa_rows
    from components.retrieval import build_index, load_retriever
    from components.retrieval.base import format_information
    from components.settings import GRPOStageSettings, RetrievalSettings
    from components.training.grpo_data import training_rows
    from tests.helpers.tool_habit import teach_tool_habit

    root = tmp_path_factory.mktemp("searching-model")
    rows = qa_rows(load_benchmark("offline_qa", data_dir=None, languages=LANGS, limit=QA_LIMIT).items)
    section = GRPOStageSettings(model={"model": str(tiny_model_dir), "chat": True}, dataset="qa.jsonl",
                                prompt={"style": "plain"}, dataset_lang=None, dataset_limit=None)
    prompts = training_rows(rows, section, section.model, AutoTokenizer.from_pretrained(tiny_model_dir))
    retrieval = RetrievalSettings(top_k=2, passage_chars=200)  # as in the profile
    build_index(retrieval, root / "index")
    retriever = load_retriever(root / "index", retrieval)
    found = {lang: format_information([(lang, retriever.search([QUERY], lang, 2)[0])], 200) for lang in LANGS}
    episodes = [(row["prompt"], found[row["lang"]]) for row in prompts]
    return teach_tool_habit(tiny_model_dir, root / "model", episodes, query=QUERY, information_tokens=48)


def test_coupled_groups_on_translated_math_set(tmp_path, tiny_model_dir, prefect_server):
    data = tmp_path / "rl_train.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in MATH), encoding="utf-8")
    overrides = [f"grpo.model.model={tiny_model_dir}", f"grpo.dataset={data}", "grpo.question_column=question",
                 "grpo.gold_column=gold", "grpo.dataset_lang=null", "grpo.dataset_limit=null",
                 "grpo.rewards=[{name: accuracy}]", "grpo.coupling=language", "grpo.audit.enabled=false",
                 "grpo.kl_reset.enabled=false", "grpo.sampling.max_new_tokens=12", *COMMON]
    summary, _ = polyreason("recipe", GRPO_PROFILE, tmp_path, prefect_server, *overrides)
    assert summary["grpo"]["trained"]["run"]["summary"]["global_step"] == 2
    run_id = grpo_child(tmp_path, summary)
    for key in ("grpo/coupling/advantage", "grpo/coupling/reward"):
        assert steps_logged(tmp_path, run_id, key) == {lang: [1, 2] for lang in LANGS}, key


def test_search_tool_loop_with_bm25(tmp_path, searching_model_dir, prefect_server):
    paper = load_profile(REPO / "profiles/qwen2.5-3b-lcrl-mkqa.yaml", trl_checks=[]).grpo
    launch = ACCELERATE_CONFIGS["cpu-fsdp-2"].read_text(encoding="utf-8")
    config = tmp_path / "cpu-fsdp-2.yaml"  # the shipped twin on a free rendezvous port (tests run beside each other)
    config.write_text(launch.replace("main_process_port: ", f"main_process_port: {free_port()} #"), encoding="utf-8")
    assert (CPU_TWINS["cpu-fsdp-2"], paper.lora) == (paper.accelerate_config, None)
    overrides = [f"grpo.model.model={searching_model_dir}", f"grpo.lcrl.dataset.limit={QA_LIMIT}",
                 "grpo.sampling.max_new_tokens=96", "grpo.sampling.temperature=0.5", "grpo.lcrl.max_turn_tokens=16",
                 "grpo.lcrl.max_information_tokens=48", *COMMON, "grpo.lora=null", f"grpo.beta={paper.beta}",
                 f"grpo.accelerate_config={config}"]
    summary, _ = polyreason("grpo", REPO / "profiles/cpu-lcrl.yaml", tmp_path, prefect_server, *overrides)
    result = summary["grpo"]["trained"]["run"]["summary"]
    assert (result["global_step"], result["weights"], result["num_processes"]) == (2, "full", 2)
    run_id = grpo_child(tmp_path, summary)
    tags = mlflow_client(tmp_path).get_run(run_id).data.tags
    assert result["distributed_type"] == tags["polyreason.grpo.distributed_type"] == "FSDP"
    for key in ("grpo/lcrl/fem", "grpo/lcrl/c3recall", "grpo/lcrl/clr", "grpo/lcrl/answered", "grpo/search/calls",
                "grpo/coupling/advantage"):
        assert steps_logged(tmp_path, run_id, key) == {lang: [1, 2] for lang in LANGS}, key
    for lang in LANGS:  # the taught policy searched and answered in every language
        assert all(value > 0 for _, value in history(tmp_path, run_id, f"grpo/search/calls/{lang}")), lang
        assert all(value > 0 for _, value in history(tmp_path, run_id, f"grpo/lcrl/answered/{lang}")), lang
    assert [s for s, _ in history(tmp_path, run_id, "grpo/reward/anti_consistency")] == [1, 2]
    indexes = list(tmp_path.glob("artifacts/retrieval/*/meta.json"))
    assert len(indexes) == 1 and json.loads(indexes[0].read_text())["retriever"] == "bm25"
    rows = (next(tmp_path.glob("artifacts/lcrl-data/*/qa.jsonl"))).read_text(encoding="utf-8").splitlines()
    assert len(rows) == QA_LIMIT * len(LANGS) and "<search>" in json.loads(rows[0])["question"]


def test_recipe_evaluates_base_and_trained_models_on_held_out_questions(tmp_path, searching_model_dir, prefect_server):
    """``polyreason recipe profiles/cpu-lcrl.yaml``: GRPO, then both models answer the held-out questions with the
    search loop at test time; fEM, c3Recall and CLR per language with errors and n, in the comparison too."""
    overrides = [f"grpo.model.model={searching_model_dir}", f"grpo.lcrl.dataset.limit={QA_LIMIT}",
                 "grpo.sampling.max_new_tokens=96", "grpo.sampling.temperature=0.5", "grpo.lcrl.max_turn_tokens=16",
                 "grpo.lcrl.max_information_tokens=48", *COMMON, f"evaluation.model.model={searching_model_dir}",
                 "evaluation.model.chat=true", f"evaluation.benchmarks.0.offset={QA_LIMIT}",
                 f"evaluation.benchmarks.0.limit={QA_LIMIT}", "evaluation.sampling.max_new_tokens=96",
                 "evaluation.search.max_turn_tokens=16", "evaluation.search.max_information_tokens=48"]
    summary, done = polyreason("recipe", REPO / "profiles/cpu-lcrl.yaml", tmp_path, prefect_server, *overrides)
    assert [e["model"]["tag"] for e in summary["evaluations"]] == ["base", "grpo"]
    trained = {json.loads(line)["id"] for line in
               next(tmp_path.glob("artifacts/lcrl-data/*/qa.jsonl")).read_text(encoding="utf-8").splitlines()}
    for evaluation in summary["evaluations"]:
        metrics = mlflow_client(tmp_path).get_run(evaluation["run_id"]).data.metrics
        for lang in LANGS:
            for name in ("fem", "c3recall", "clr", "searches"):
                key = f"evaluation/offline_qa/{lang}/{name}"
                assert key in metrics and key + "_stderr" in metrics and metrics[key + "_n"] == QA_LIMIT, key
        rows = [json.loads(line) for line in Path(evaluation["benchmarks"]["offline_qa"]["generations"]["path"])
                .read_text(encoding="utf-8").splitlines()]
        assert len(rows) == QA_LIMIT * len(LANGS) and not {row["id"] for row in rows} & trained  # held out
        assert all("<information>" in row["completion"] for row in rows)  # the taught model searched at test time
    lines = done.stdout.splitlines()  # the headline a person reads at the end: CLR, then fEM, of both models
    assert [line.split()[:2] for line in lines if line.startswith(("clr ", "fem "))] == [["clr", "base"], ["fem", "base"]]
    text = lines[:next(i for i, line in enumerate(lines) if line.startswith("MLflow run: "))]  # paths, URLs whole
    assert any(" grpo - base  Δ " in line for line in lines) and max(map(len, text)) <= 100, done.stdout
    for name in ("fem", "c3recall", "clr"):  # the full table: in the summary (--json, --out)
        assert f"\n{name}\n" in summary["comparison_table"]
    parent = mlflow_client(tmp_path).get_run(summary["run_id"]).data.metrics
    assert "evaluation/grpo/offline_qa/fr/fem_delta" in parent
