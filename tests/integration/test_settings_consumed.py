"""Every profile key does what it says: each field of each section changes a cache key and is read.

Two table-driven checks over ``components.settings.SECTIONS``:

* **keys**: changing any field changes the cache key the tasks compute
  (``runtime.cache.policy.inputs_key``, the ``SettingsInputs`` part of every task's cache
  policy), except the fields a section declares ``OPERATIONAL`` — and those must
  not change it.
* **reads**: every field is read by the code that runs. Leaf sections are handed
  to the real functions that consume them (generation backends on the tiny
  model, prompt builders, the data builders with the fake backend, scoring,
  trl's config builders, the trainer job launcher …) while a recorder notes
  every field read through an attribute (serialising a section never counts).
  Container sections, whose fields are sub-sections handed on by a flow, are
  checked on the flow sources' syntax trees (``READ_IN_FLOWS``). Fields no code
  reads on purpose are listed in ``UNREAD`` with the reason.

``test_the_checker_finds_a_dead_field`` shows the check failing on a section
with a deliberately unread field. Imports trl (10-25 s), hence not a unit test.
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import Field

from components.settings import (
    SECTIONS, AuditSettings, BenchmarkSettings, CouplingSettings, DataSettings, DataSourceSettings,
    EvaluationSettings, ExecutionSettings, GRPOStageSettings, GRPOValidationSettings, KLResetSettings, LcRLSettings,
    LoraSettings,
    ModelSettings, NightlySettings, Profile, PromptSettings, RegistrySettings, RejectionSettings, RetrievalSettings,
    RewardAuditSettings, RewardSettings, SamplingSettings, ScoringSettings, SearchSettings, SFTSettings, StrictSettings,
    TraceSettings, TrackingSettings, TranslationSettings,
)  # fmt: skip
from components.settings.trainer import TrainerSettings, trl_fields
from runtime.cache.policy import inputs_key
from runtime.project import Project
from tests.helpers.settings_reads import attributes_read_in, recording_reads

REPO = Path(__file__).resolve().parents[2]
BASES = {  # a valid instance of each section to start from
    TrackingSettings: TrackingSettings(), ModelSettings: ModelSettings(), SamplingSettings: SamplingSettings(),
    PromptSettings: PromptSettings(), LoraSettings: LoraSettings(), BenchmarkSettings: BenchmarkSettings(name="mgsm"),
    ScoringSettings: ScoringSettings(), EvaluationSettings: EvaluationSettings(), AuditSettings: AuditSettings(),
    DataSourceSettings: DataSourceSettings(path="x.jsonl"), TranslationSettings: TranslationSettings(),
    TraceSettings: TraceSettings(), RejectionSettings: RejectionSettings(),
    DataSettings: DataSettings(source={"path": "x.jsonl"}, languages=["fr"]), SFTSettings: SFTSettings(),
    RewardSettings: RewardSettings(), KLResetSettings: KLResetSettings(), RewardAuditSettings: RewardAuditSettings(),
    GRPOValidationSettings: GRPOValidationSettings(),
    GRPOStageSettings: GRPOStageSettings(model={"model": "m"}, dataset="d.jsonl"), Profile: Profile(name="p"),
    RegistrySettings: RegistrySettings(), NightlySettings: NightlySettings(), ExecutionSettings: ExecutionSettings(),
    CouplingSettings: CouplingSettings(), RetrievalSettings: RetrievalSettings(), LcRLSettings: LcRLSettings(),
    SearchSettings: SearchSettings(),
}
READ_IN_FLOWS = {Profile, EvaluationSettings, DataSettings, AuditSettings, RegistrySettings,  # a flow hands them on
                 NightlySettings}
FLOW_SOURCES = ("flows/*.py",  # the flows, the recipe's plan (registry section), the GRPO flow's LcRL inputs
                "tasks/registry.py",  # the registration task reads the registry section's alias
                "cli/deploy.py")  # the nightly deployments' schedule (nightly.cron)
FIELDS_READ_IN_FLOWS = {  # single fields that decide what a flow runs
    (RewardAuditSettings, "enabled"), (RejectionSettings, "policy"), (GRPOStageSettings, "model"),
    (GRPOStageSettings, "dataset"), (LcRLSettings, "dataset"),
}
UNREAD: dict[tuple[type, str], str] = {
    (ExecutionSettings, "address"): "read by the ray and dask task runners only (optional extras, not installed in CI)",
}
UNMIRRORED = {  # trl options no polyreason code names: they reach trl only as trl keys of the section
    "SFTConfig": {"weight_decay": 0.01, "max_grad_norm": 0.5, "completion_only_loss": True},
    "GRPOConfig": {"loss_type": "cispo", "top_entropy_quantile": 0.5, "mask_truncated_completions": True,
                   "epsilon_high": 0.28, "weight_decay": 0.01},
}


# ---------------------------------------------------------------- keys


def alternative(value):
    """A different value of the same kind (validation is skipped: only the key is computed)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.05 if value <= 0.9 else value - 0.05
    if isinstance(value, str):
        return value + "-x"
    if isinstance(value, list):
        return [*value, alternative(value[-1])] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    if isinstance(value, StrictSettings):  # change the first field that counts (or the first of all)
        names = list(type(value).model_fields)
        first = next((n for n in names if n not in type(value).OPERATIONAL), names[0])
        return value.model_copy(update={first: changed(value, first)})
    raise TypeError(f"no alternative for {value!r}")


def changed(section: StrictSettings, name: str):
    value = section.__dict__[name]
    if value is not None:
        return alternative(value)
    annotation = type(section).model_fields[name].annotation
    kinds = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    kind = typing.get_origin(kinds[0]) or kinds[0]
    if isinstance(kind, type) and issubclass(kind, StrictSettings):
        return BASES.get(kind, kind.model_construct())
    return {str: "x", int: 1, float: 0.5, list: ["x"]}.get(kind, "x")


def key_of(section: StrictSettings) -> str:
    return inputs_key({"section": section})


def trl_keys(cls: type) -> list[str]:
    """The fields of a trainer section's trl config that a profile may set (none for other sections)."""
    if not issubclass(cls, TrainerSettings):
        return []
    return [key for key in trl_fields(cls.TRL_CONFIG) if not cls.trl_refusal(key)]


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda c: c.__name__)
def test_every_field_but_the_operational_ones_changes_the_cache_key(cls):
    base = BASES[cls]
    assert set(cls.OPERATIONAL) <= {*cls.model_fields, *trl_keys(cls)}, "OPERATIONAL names a field that does not exist"
    for name in cls.model_fields:
        other = base.model_copy(update={name: changed(base, name)})
        if name in cls.OPERATIONAL:
            assert key_of(other) == key_of(base), f"{cls.__name__}.{name} is operational but changes the key"
        else:
            assert key_of(other) != key_of(base), f"{cls.__name__}.{name} does not change the cache key"


@pytest.mark.parametrize("cls", [SFTSettings, GRPOStageSettings], ids=lambda c: c.__name__)
def test_every_trl_key_but_the_operational_ones_changes_the_cache_key(cls):
    """Every field of trl's config a profile may set, given or left to its default, is in the key."""
    base = BASES[cls]
    for key in trl_keys(cls):
        value = base.trl_option(key)
        other = base.model_copy(update={key: "x" if value is None else alternative(value)})
        if key in cls.OPERATIONAL:
            assert key_of(other) == key_of(base), f"{cls.__name__}.{key} is operational but changes the key"
        else:
            assert key_of(other) != key_of(base), f"{cls.__name__}.{key} does not change the cache key"


# ---------------------------------------------------------------- reads


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, tiny_model_dir, shared_data):
    root = tmp_path_factory.mktemp("consumed")
    adapter = root / "adapter"
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                   __import__("components.training.runner", fromlist=["lora_config"]).lora_config(LoraSettings())
                   ).save_pretrained(adapter)
    rows = [{"id": "0", "lang": "fr", "gold": "3", "benchmark": "mgsm", "sample_index": 0, "num_tokens": 5,
             "completion": "<think>Calculons trois.</think>La réponse est \\boxed{3}."}]
    generations = root / "generations.jsonl"
    generations.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return SimpleNamespace(root=root, model=str(tiny_model_dir), adapter=str(adapter), data=shared_data,
                           generations=generations, words=str(shared_data / "language_confusion" / "words"), built={})


def consume_tracking(c):
    from runtime.tracking import stage_run

    with stage_run(TrackingSettings(tracking_uri=f"sqlite:///{c.root / 'mlflow.db'}",
                                    artifact_root=(c.root / "a").as_uri()), c.root, "consumed", stage="sft"):
        pass


def consume_model_and_sampling(c):
    from components.generation import build_generator
    from components.generation.vllm_backend import engine_options

    model = ModelSettings(model=c.model, adapter=c.adapter, dtype="float32", device="cpu")
    generator = build_generator(model, c.root)
    generator.progress = False
    generator.generate(["Janet a 16 œufs."], SamplingSettings(n=2, temperature=0.7, top_p=0.9, max_new_tokens=3,
                                                              seed=1, batch_size=1))
    engine_options(ModelSettings(backend="vllm", model=c.model, adapter=c.adapter, max_model_len=64))
    from components.generation.vllm_server import VLLMServerGenerator

    served = ModelSettings(backend="vllm-server", model=c.model, server_python=sys.executable, max_model_len=64)
    VLLMServerGenerator(served, c.root).options()  # what the server would be started with (not started)


def consume_api_model(c):
    from components.generation import build_generator
    from tests.helpers.scripted_api import ScriptedAPI

    with ScriptedAPI([]) as api, pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYREASON_TEST_KEY", "k")
        model = ModelSettings(backend="openai", model="m", base_url=api.url, api_key_env="POLYREASON_TEST_KEY",
                              chat=True, max_concurrency=2, max_retries=1)
        build_generator(model, c.root).generate(["q"], SamplingSettings())


def consume_prompts(c):
    from components.records import BenchmarkItem
    from tasks.evaluation import build_prompts_task
    from runtime.outputs import ModelRef

    item = BenchmarkItem("1", "mgsm", "fr", "Combien ?", "3").to_dict()
    few_shot = PromptSettings(style="few_shot", num_shots=2, exemplars_path=str(c.data / "mgsm" / "exemplars.json"))
    build_prompts_task.fn([item], few_shot, ModelRef(tag="t", model=ModelSettings(model=c.model), fingerprint="f"))
    chat = ModelSettings(model=c.model, chat=True, thinking=True)
    build_prompts_task.fn([item], PromptSettings(), ModelRef(tag="t", model=chat, fingerprint="f"))


def consume_benchmark(c):
    from tasks.evaluation import load_benchmark_task

    benchmark = BenchmarkSettings(name="mgsm", data_dir=str(c.data / "mgsm"), languages=["fr"], limit=2,
                                  selection="sample", sample_seed=3, samples=2, offset=1)
    load_benchmark_task.fn(benchmark)
    EvaluationSettings(benchmarks=[benchmark]).sampling_for(benchmark)


def consume_scoring(c):
    from runtime.artifacts import ArtifactRef
    from tasks.evaluation import score_task

    scoring = ScoringSettings(lcpr_rule="lcb", words_path=c.words, in_domain=["fr"], pass_k=[1])
    score_task.fn(ArtifactRef(str(c.generations), "fp"), scoring, Project(str(c.root)))


def consume_execution(c):
    """A fanned-out generation task on the fake backend, in its own process, on a GPU slot of a listed node."""
    from runtime.processes.fanout import run_unit
    from runtime.outputs import ModelRef, PreparedBenchmark
    from runtime.flow_runs.task_runners import task_resources, task_runner
    from tasks.fanout import plan_units_task

    execution = ExecutionSettings(runner="threads", gpus=[0, 1], gpus_per_task=1, split="benchmark",
                                  shard_languages=["mgsm"], cpu_threads=1, timeout_s=120)
    task_runner(execution)
    with task_resources(execution):
        pass
    model = ModelRef(tag="base", model=ModelSettings(backend="fake", model="fake"), fingerprint="fake")
    bench = PreparedBenchmark(name="mgsm", items=[{"id": "1", "benchmark": "mgsm", "lang": "fr", "question": "q", "gold": "3"}],
                              errors=[], prompts=["q"], stop=[], sampling=SamplingSettings())
    [unit] = plan_units_task.fn([model], [[bench]], execution, Project(str(c.root)))
    run_unit(unit, execution, Project(str(c.root)))


def consume_lora(c):
    from components.training.runner import lora_config

    lora_config(LoraSettings())


def consume_data_source(c):
    from components.data.sources import _records, load_references, load_source
    from components.settings.data import source_overlaps

    source = c.root / "source.jsonl"
    source.write_text(json.dumps({"q": "Combien ?", "a": "#### 3", "i": "a"}) + "\n", encoding="utf-8")
    settings = DataSourceSettings(name="s", path=str(source), format="jsonl", question_column="q", answer_column="a",
                                  id_column="i", answer_regex="####\\s*(.+)$", limit=1, benchmark="msvamp",
                                  reference_column="m_query", reference_path=str(c.root / "{lang}.jsonl"))
    load_source(settings)
    (c.root / "fr.jsonl").write_text(json.dumps({"m_query": "Combien ?"}) + "\n", encoding="utf-8")
    load_references(settings, ["fr"])
    source_overlaps(settings, [BenchmarkSettings(name="mgsm")])
    _records(DataSourceSettings(hub="some/dataset", hub_config="en", split="test"))  # not iterated: offline


def consume_translation_and_traces(c):
    from components.data.datasets import (
        build_rl_set, build_traces, build_traces_from_file, build_translations, read_table, write_table,
    )

    fake = {"backend": "fake", "model": "fake"}
    rows = [{"id": "a", "row": 0, "question": "How many?", "gold": "3", "source": "s"}]
    source_path = write_table(rows, c.root / "src.parquet", "source")
    translation = TranslationSettings(model=fake, sampling={"max_new_tokens": 8}, judge=fake,
                                      judge_sampling={"max_new_tokens": 2}, judge_min_score=2)
    build_translations(translation, DataSourceSettings(path=str(source_path)), ["fr"], "en", source_path,
                       c.root / "translations", c.root)
    traced = [{**rows[0], "id": name, "lang": "fr", "source_question": "How many?", "judge_score": 5}
              for name in ("a", "b")]  # two queries, so the one-query probe leaves a rest to generate
    write_table(traced, c.root / "tr.parquet", "translations")
    traces = TraceSettings(model=fake, sampling={"max_new_tokens": 8}, prompt={"style": "plain"}, verifier="exact",
                           lcpr_rule="lcb", words_path=c.words, per_language=5, seed=2,
                           early_stop={"probe_per_language": 1, "min_share": 0.01})
    build_traces(traces, ["fr"], c.root / "tr.parquet", c.root / "traces", c.root)
    build_traces_from_file(TraceSettings(from_file=str(c.data / "mgsm" / "exemplars.json")), ["fr"], c.root / "file")
    sft = [{"id": "a", "lang": "fr", "question": "Q", "gold": "3", "prompt": "Q", "completion": "C"}]
    write_table(sft, c.root / "sft.parquet", "sft")
    rejection = RejectionSettings(sampling={"n": 2, "max_new_tokens": 4}, prompt={"style": "plain"}, per_language=3,
                                  validation_per_language=0, seed=1)
    build_rl_set(rejection, "exact", ["fr"], c.root / "sft.parquet", ModelSettings(**fake), c.root / "rl", c.root)
    assert read_table(c.root / "rl" / "rl_train.parquet") is not None


def consume_sft(c):
    from components.data.datasets import write_table
    from components.training.runner import TrainingJob, resume_checkpoint
    from components.training.sft import build_trainer, output_dirs
    from runtime.processes.trainer import trainer_command, training_dir

    rows = [{"id": "a", "lang": "fr", "question": "Q", "gold": "3", "prompt": "Combien ?", "completion": "Trois."}]
    data = write_table(rows, c.root / "sft-train.parquet", "sft")
    sft = SFTSettings(model={"model": c.model, "adapter": c.adapter, "device": "cpu"}, merge=True, cpu_threads=1,
                      template="plain", max_length=64, save_total_limit=1, **UNMIRRORED["SFTConfig"])
    job = TrainingJob(stage="sft", sft=sft, model=c.model, adapter=c.adapter, dataset=str(data))
    c.built["sft"] = (sft, build_trainer(job, c.root / "sft")[0])
    output_dirs(sft, c.root / "sft")
    resume_checkpoint(sft, c.root / "sft")
    trainer_command(job, c.root / "sft")
    training_dir(Project(str(c.root)), job, "code-digest", 1)


def consume_grpo(c):
    from components.training.grpo import build_trainer
    from components.training.rollouts import sample_rollouts
    from components.training.runner import TrainingJob, resume_checkpoint
    from runtime.artifacts import ArtifactRef
    from tasks.grpo import GRPOInputs, audit_rollouts_task, reward_audit_task
    from runtime.tracking import open_run
    from runtime.processes.trainer import trainer_command

    data = c.root / "grpo.jsonl"
    data.write_text(json.dumps({"question": "Combien ?", "answer": "3"}) + "\n", encoding="utf-8")
    grpo = GRPOStageSettings(
        model={"model": c.model, "device": "cpu", "dtype": "float32"}, dataset=str(data), gold_column="answer",
        dataset_lang="fr", dataset_limit=1, prompt={"style": "plain"}, sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 2},
        rewards=[{"name": "pcs", "weight": 0.5, "params": {"tau_interval": 2}}], per_device_train_batch_size=2,
        kl_reset={"enabled": True, "threshold": 0.3}, cpu_threads=1, generation_batch_size=2,
        audit={"verifier": "exact", "sample_size": 1, "num_generations": 1, "rollouts": None},
        **UNMIRRORED["GRPOConfig"])
    job = TrainingJob(stage="grpo", grpo=grpo, model=c.model, dataset=str(data))
    c.built["grpo"] = (grpo, build_trainer(job, c.root / "grpo", None, None)[0])
    resume_checkpoint(grpo, c.root / "grpo")
    trainer_command(job, c.root / "grpo")
    rollouts = sample_rollouts(job, c.root / "grpo")
    run = open_run(TrackingSettings(tracking_uri=f"sqlite:///{c.root / 'mlflow.db'}"), c.root, "audit")
    inputs = GRPOInputs(job=job, audit=grpo.audit, fingerprints=["m", "d"])
    given = GRPOInputs(job=job, audit=grpo.audit.model_copy(update={"rollouts": str(rollouts)}), fingerprints=["m", "d"])
    audit_rollouts_task.fn(given, Project(str(c.root)))
    reward_audit_task.fn(run, inputs, ArtifactRef(str(rollouts), "fp"))


def consume_grpo_validation(c):
    from components.training.grpo import build_trainer
    from components.training.runner import TrainingJob
    from components.training.validation import ValidationCallback
    from tasks.grpo import validation_dataset

    data = c.root / "validation.jsonl"
    data.write_text(json.dumps({"question": "Combien ?", "gold": "3", "lang": "fr"}) + "\n", encoding="utf-8")
    validation = GRPOValidationSettings(enabled=True, every_n_steps=1, before_training=True, dataset=str(data),
                                        limit_per_language=1, sampling={"max_new_tokens": 2}, verifier="exact")
    grpo = GRPOStageSettings(model={"model": c.model, "device": "cpu", "dtype": "float32"}, dataset=str(data),
                             prompt={"style": "plain"}, per_device_train_batch_size=2, validation=validation,
                             sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 2})
    job = TrainingJob(stage="grpo", grpo=grpo, model=c.model, dataset=str(data),
                      validation_dataset=validation_dataset(grpo, str(data)))
    trainer, _ = build_trainer(job, c.root / "grpo-validation", None, None)
    [callback] = [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, ValidationCallback)]
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    callback.on_train_begin(None, state, None, model=trainer.model)
    callback.on_step_end(None, SimpleNamespace(global_step=1, is_world_process_zero=True), None, model=trainer.model)
    assert callback.history == [0, 1]


def consume_lcrl(c):
    """LcRL: coupled layout and the search loop (a scripted policy searches), BM25 and dense indexes."""
    from components.data.benchmarks import load_benchmark
    from components.data.qa_dataset import write_qa_dataset
    from components.retrieval import build_index
    from components.training import search_rollouts
    from components.training.grpo import build_trainer
    from components.training.runner import TrainingJob

    data = c.root / "qa.jsonl"
    write_qa_dataset(load_benchmark("offline_qa", data_dir=None, languages=["en", "fr"], limit=1).items, data)
    dense = RetrievalSettings(retriever="dense", model=c.model, device="cpu", batch_size=8, languages=["en", "fr"])
    build_index(dense, c.root / "dense-index")
    index = c.root / "bm25-index"
    build_index(RetrievalSettings(corpus=None, languages=["en", "fr"]), index)
    lcrl = LcRLSettings(retrieval={"index": str(index), "top_k": 1, "passage_chars": 50}, rounds=[["query"], ["en"]],
                        max_searches=1, max_turn_tokens=4, max_information_tokens=32)
    grpo = GRPOStageSettings(model={"model": c.model, "device": "cpu", "dtype": "float32"}, dataset=str(data),
                             prompt={"style": "plain"}, sampling={"n": 2, "temperature": 1.0, "max_new_tokens": 40},
                             rewards=[{"name": "lcrl"}], per_device_train_batch_size=4, audit={"enabled": False},
                             coupling={"mode": "language", "baseline": "group", "key": "id", "languages": ["en", "fr"]},
                             lcrl=lcrl)
    trainer, _ = build_trainer(TrainingJob(stage="grpo", grpo=grpo, model=c.model, dataset=str(data)),
                               c.root / "lcrl", None, None)
    prompts = [row["prompt"] for row in trainer.train_dataset]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_rollouts, "turn_generator", lambda t: lambda seqs, n: [
            trainer.processing_class("<search> Tokyo </search>", add_special_tokens=False)["input_ids"] for _ in seqs])
        trainer.rollout_func(prompts, trainer)


def consume_search(c):
    """The search loop at test time (a scripted model that searches), a BM25 index of the packaged corpus."""
    from components.generation.base import Completion
    from components.generation.search_generator import SearchGenerator
    from components.retrieval import build_index, load_retriever
    from tests.helpers.tiny_model import build_tokenizer

    index = c.root / "search-index"
    build_index(RetrievalSettings(languages=["en", "fr"]), index)
    search = SearchSettings(retrieval={"index": str(index), "top_k": 1, "passage_chars": 50}, rounds=[["query"]],
                            max_searches=1, max_turn_tokens=8, max_information_tokens=32)
    searching = SimpleNamespace(generate=lambda prompts, sampling, stop: [
        [Completion("<search> Tokyo </search>", 6)] for _ in prompts])
    loop = SearchGenerator(searching, load_retriever(index, search.retrieval), search, {"Q:": "fr"}, build_tokenizer())
    loop.generate(["Q:"], SamplingSettings(max_new_tokens=64))


CONSUMERS = [consume_tracking, consume_execution, consume_model_and_sampling, consume_api_model, consume_prompts,
             consume_benchmark, consume_scoring, consume_lora, consume_data_source, consume_translation_and_traces, consume_sft,
             consume_grpo, consume_grpo_validation, consume_lcrl, consume_search]


@pytest.fixture(scope="module")
def reads(ctx) -> set[tuple[str, str]]:
    with recording_reads() as found:
        for consume in CONSUMERS:
            consume(ctx)
    return found


def flow_attributes() -> set[str]:
    return set().union(*(attributes_read_in(path) for pattern in FLOW_SOURCES for path in sorted(REPO.glob(pattern))))


def unread_fields(cls: type, reads: set[tuple[str, str]]) -> list[str]:
    def read(name: str) -> bool:
        if cls in READ_IN_FLOWS or (cls, name) in FIELDS_READ_IN_FLOWS:
            return name in flow_attributes()
        return (cls.__name__, name) in reads

    return [n for n in cls.model_fields if not read(n) and (cls, n) not in UNREAD]


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda c: c.__name__)
def test_every_field_is_read_by_the_code_that_runs(cls, reads):
    assert unread_fields(cls, reads) == []


def as_given(value):
    """A trl config value as a profile writes it (trl turns some strings into enums)."""
    return getattr(value, "value", value)


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_every_trl_key_and_derived_value_reaches_trl(stage, ctx, reads):
    """The trainer the job builds holds each trl key of the section (defaults, given and unmirrored ones) and
    each value polyreason derives; ``None`` lets trl decide (e.g. ``generation_batch_size``)."""
    section, trainer = ctx.built[stage]
    assert set(UNMIRRORED[section.TRL_CONFIG]) <= set(section.trl_options)
    wanted = {**section.trl_options, **section.trl_derived()}
    got = {key: as_given(getattr(trainer.args, key)) for key in wanted}
    assert {k: v for k, v in got.items() if wanted[k] is not None} == {k: v for k, v in wanted.items() if v is not None}


def test_the_checker_finds_a_dead_field(ctx):
    class DemoSettings(StrictSettings):
        used: int = 1
        dead: int = Field(default=2, description="never read: the check must name it")

    def consume(section: DemoSettings) -> int:
        return section.used * 2

    with recording_reads() as found:
        consume(DemoSettings())
    assert unread_fields(DemoSettings, found) == ["dead"]
    assert key_of(DemoSettings(dead=3)) != key_of(DemoSettings())  # and the key check sees it too
