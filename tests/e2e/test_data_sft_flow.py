"""End-to-end: data construction + LoRA SFT through the ``polyreason`` CLI (real Prefect, MLflow, trl).

Offline MSVAMP English problems, two target languages (fr, ja), the shipped
``profiles/cpu-data-sft.yaml`` with its models swapped for test ones:

* translator and teacher: an OpenAI-compatible HTTP server started here on
  127.0.0.1 (``OracleAPI``), reached through the real ``openai`` backend. It
  answers translations with MSVAMP's own reference translations and teacher
  prompts with a templated in-language ``<think>`` trace and the gold answer,
  except for a few scripted failures (an untranslated query, a wrong answer, an
  English trace), so the gates and filters have something to reject. The
  registered ``fake`` backend cannot play this part: its traces are English with
  hash answers, so retention would be 0 — that path is tested as the refusal.
* student (SFT) and rejection-sampling policy: the tiny from-config model
  (random weights: mechanics, not content).

The SFT flow is killed once a checkpoint exists, re-run (it resumes: the step
count does not restart at 0), then re-run again (everything cached: no API
request, no training process, no new artifact).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers.cockpit import said

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
POLYREASON = [sys.executable, "-m", "cli"]
NAMES = {"French": "fr", "Japanese": "ja"}
TRACES = {
    "fr": ("<think>\nNous lisons l'énoncé attentivement et nous faisons le calcul demandé.\n"
           "Le résultat de ce calcul est la réponse cherchée.\n</think>\n\nLa réponse est \\boxed{{{gold}}}."),
    "ja": ("<think>\n問題文をよく読んで、必要な計算を順番に行います。\n計算の結果がそのまま答えになります。\n"
           "</think>\n\n答えは \\boxed{{{gold}}} です。"),
    "en": ("<think>\nWe read the problem carefully and do the requested computation.\n"
           "The result of this computation is the answer.\n</think>\n\n\\boxed{{{gold}}}"),
}
LIMIT = 6
SFT_STEPS = 20


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class OracleAPI:
    """``/v1/completions`` that translates with MSVAMP references and answers with templated traces.

    Scripted failures: row 1 into Japanese comes back untranslated (wrong language); the French
    trace of row 2 has a wrong answer; the Japanese trace of row 3 reasons in English.
    """

    def __init__(self, msvamp: Path):
        english = read_jsonl(msvamp / "test_English.json")
        self.row_of = {r["m_query"]: i for i, r in enumerate(english[:LIMIT])}
        self.gold = [int(float(r["response"])) for r in english[:LIMIT]]
        self.refs = {code: [r["m_query"] for r in read_jsonl(msvamp / f"test_{name}.json")[:LIMIT]]
                     for name, code in NAMES.items()}
        self.question_of = {text: (code, i) for code, texts in self.refs.items() for i, text in enumerate(texts)}
        self.requests: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append(body["prompt"])
                text = api.answer(body["prompt"])
                data = json.dumps({"id": "x", "object": "text_completion", "created": 0, "model": body["model"],
                                   "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, prompt: str) -> str:
        match = re.search(r"\nEnglish: ([^\n]*)\n(\w+):$", prompt)
        if match:
            row, lang = self.row_of[match.group(1)], NAMES[match.group(2)]
            return match.group(1) if (row, lang) == (1, "ja") else self.refs[lang][row]
        question = prompt.rstrip("\n").rsplit("\n", 1)[0]
        lang, row = self.question_of[question]
        gold = self.gold[row] + (1 if (lang, row) == ("fr", 2) else 0)
        return TRACES["en" if (lang, row) == ("ja", 3) else lang].format(gold=gold)


@pytest.fixture
def oracle(shared_data):
    api = OracleAPI(shared_data / "msvamp")
    yield api
    api.server.shutdown()
    api.server.server_close()


def write_profile(path: Path, shared_data: Path, tiny_model_dir: Path, teacher: dict) -> Path:
    profile = yaml.safe_load((REPO / "profiles" / "cpu-data-sft.yaml").read_text(encoding="utf-8"))
    data, sft = profile["data"], profile["sft"]
    data["source"].update(path=str(shared_data / "msvamp" / "test_English.json"), limit=LIMIT,
                          reference_path=str(shared_data / "msvamp" / "test_{language}.json"))
    data["translation"]["model"] = {k: v for k, v in teacher.items() if k != "thinking"}
    data["traces"].update(model=teacher, prompt={"style": "instruction"})
    # random weights solve nothing: `unsolved` keeps every query (zero_one_filter would keep none and stop the stage)
    data["rejection"].update(strategy="unsolved",
                             sampling={"n": 4, "temperature": 1.0, "max_new_tokens": 8, "seed": 0, "batch_size": 8})
    sft.update(model={"backend": "transformers", "model": str(tiny_model_dir), "dtype": "float32", "device": "cpu"},
               template="chat", max_length=512, max_steps=SFT_STEPS, save_steps=4, logging_steps=1)
    path.write_text(yaml.safe_dump(profile, allow_unicode=True), encoding="utf-8")
    return path


def cli_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def polyreason(stage: str, profile: Path, project: Path, timeout: float = 600) -> tuple[dict, float]:
    out = project / f"{stage}-summary.json"
    start = time.perf_counter()
    done = subprocess.run([*POLYREASON, stage, str(profile), "--project-dir", str(project), "--out", str(out)],
                          cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, said(done)
    return json.loads(out.read_text(encoding="utf-8")), time.perf_counter() - start


def kill_sft_after_first_checkpoint(profile: Path, project: Path, timeout: float = 600) -> int:
    """Start ``polyreason sft``, kill its whole process group once a complete checkpoint exists.

    Returns how many per-step log lines the killed trainer had written.
    """
    log = (project / "killed-run.log").open("w")
    process = subprocess.Popen([*POLYREASON, "sft", str(profile), "--project-dir", str(project)], cwd=REPO,
                               env=cli_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            found = sorted(project.glob("artifacts/sft/*/trainer/checkpoint-*/checkpoint_complete.json"))
            if found:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
                return len(read_jsonl(found[0].parents[2] / "metrics.jsonl"))
            assert process.poll() is None, (project / "killed-run.log").read_text()[-4000:]
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
    raise AssertionError("no checkpoint appeared")


def snapshot(*roots: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for root in roots for p in root.rglob("*") if p.is_file()}


def test_data_and_sft_flow_resumes_logs_and_caches(tiny_model_dir, shared_data, tmp_path, oracle):
    from mlflow import MlflowClient

    project = tmp_path / "project"
    project.mkdir()
    teacher = {"backend": "openai", "model": "oracle", "base_url": oracle.url, "max_concurrency": 4}
    profile = write_profile(tmp_path / "profile.yaml", shared_data, tiny_model_dir, teacher)

    logged_before_kill = kill_sft_after_first_checkpoint(profile, project)
    assert 0 < logged_before_kill < SFT_STEPS
    requests_before_resume = len(oracle.requests)
    assert requests_before_resume == 2 * LIMIT + (2 * LIMIT - 1)  # translations + traces of accepted ones

    summary, resumed_seconds = polyreason("sft", profile, project)
    result = summary["sft"]["trained"]["run"]["summary"]
    resumed_step = int(Path(result["resumed_from"]).name.split("-")[1])
    assert resumed_step >= 4 and result["global_step"] == SFT_STEPS
    rows = read_jsonl(Path(summary["sft"]["trained"]["run"]["path"]) / "metrics.jsonl")
    assert [row["step"] for row in rows if "loss" in row] == list(range(1, SFT_STEPS + 1))  # killed run's extra lines dropped
    assert len(oracle.requests) == requests_before_resume  # data came from the Prefect cache

    report = summary["data"]["report"]
    traces = report["traces"]["summary"]
    assert traces["retention"]["fr"]["rate"] == pytest.approx(5 / 6)
    assert traces["retention"]["ja"]["rate"] == pytest.approx(4 / 5)
    assert traces["retention"]["fr"]["reason_incorrect"] == 1 and traces["retention"]["ja"]["reason_language"] == 1
    translation = report["translation"]["summary"]["languages"]
    assert translation["ja"]["reason_wrong_language"] == 1 and translation["fr"]["chrf"] == pytest.approx(100.0)
    rejection = summary["rl"]["rl_set"]["summary"]
    assert rejection["strategy"] == "unsolved" and rejection["languages"]["fr"]["rollouts"] == 5 * 4
    rollouts = pd.read_parquet(Path(summary["rl"]["rl_set"]["path"]).parent / "rollouts.parquet")
    fr = rollouts[rollouts["lang"] == "fr"].groupby("id")["correct"].sum()
    assert len(fr) == 5 and rejection["languages"]["fr"]["selected"] == int((fr == 0).sum())  # the unsolved ones
    assert rejection["languages"]["fr"]["selected"] >= 3  # random weights rarely hit a gold by chance

    client = MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    children = {run.data.tags["polyreason.stage"]: run for run in client.search_runs(
        [client.get_run(summary["run_id"]).info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{summary['run_id']}'")}
    assert set(children) == {"data", "sft", "rejection"}
    inputs = {d.dataset.name: d.dataset.digest for stage in ("data", "rejection")
              for d in children[stage].inputs.dataset_inputs}
    for name in ("source/source", "source/source_problems", "translation/translations",
                 "translation/translations_rejected", "traces/sft", "traces/traces_rejected",
                 "rejection/rl_train", "rejection/rl_validation", "rejection/rollouts"):
        assert inputs.get(name), name
    metrics = children["data"].data.metrics
    assert metrics["data/traces/rate/fr"] == pytest.approx(5 / 6) and metrics["data/traces/kept"] == 9
    assert metrics["data/translation/chrf/ja"] == pytest.approx(100.0)
    sft_run = children["sft"].info.run_id
    losses = client.get_metric_history(sft_run, "sft/loss")
    assert sorted(m.step for m in losses) == list(range(1, SFT_STEPS + 1))
    adapter = client.get_logged_model(summary["sft"]["model_id"])  # the adapter: a logged model of the SFT run
    assert adapter.source_run_id == sft_run and adapter.params["step"] == str(SFT_STEPS)
    assert "adapter_model.safetensors" in {a.path for a in client.list_logged_model_artifacts(adapter.model_id)}
    checkpoint = children["sft"].data.tags[f"polyreason.checkpoint.{SFT_STEPS}"]  # every checkpoint, with its step
    assert client.get_logged_model(checkpoint.removeprefix("models:/")).params["step"] == str(SFT_STEPS)
    assert [d.dataset.name for d in children["sft"].inputs.dataset_inputs] == ["sft/sft"]  # what it trained on

    before = snapshot(project / "artifacts", project / ".cache")
    again, cached_seconds = polyreason("sft", profile, project)
    assert len(oracle.requests) == requests_before_resume
    assert snapshot(project / "artifacts", project / ".cache") == before  # no training process, no new table
    assert again["sft"]["trained"]["run"]["summary"] == result
    assert again["data"]["report"]["traces"]["digests"] == report["traces"]["digests"]
    print(f"\nkilled after {logged_before_kill} steps; resumed run {resumed_seconds:.0f}s; cached re-run {cached_seconds:.0f}s")


def test_data_flow_refuses_when_no_trace_is_kept(tiny_model_dir, shared_data, tmp_path, oracle):
    """The registered fake teacher writes English traces: retention 0, the flow stops and says why."""
    project = tmp_path / "project"
    project.mkdir()
    teacher = {"backend": "openai", "model": "oracle", "base_url": oracle.url}
    profile = write_profile(tmp_path / "profile.yaml", shared_data, tiny_model_dir, teacher)
    text = yaml.safe_load(profile.read_text(encoding="utf-8"))
    text["data"]["traces"]["model"] = {"backend": "fake", "model": "fake"}
    profile.write_text(yaml.safe_dump(text, allow_unicode=True), encoding="utf-8")
    done = subprocess.run([*POLYREASON, "data", str(profile), "--project-dir", str(project)], cwd=REPO,
                          env=cli_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "traces: nothing was kept, so there is nothing to go on with" in output
    assert '"kept": 0.0' in output and '"reason_language"' in output  # the per-language report
