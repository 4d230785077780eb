"""Ordinary mistakes at the command line: exit code 2, a line or two naming the key, file or option, no
traceback, and nothing started (no Prefect server, no MLflow run, no artifact)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "score_example.jsonl"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


DEAD = f"http://127.0.0.1:{closed_port()}"


def evaluation(**changes) -> dict:
    section = {"model": {"backend": "fake", "model": "fake"}, "sampling": {"n": 1},
               "benchmarks": [{"name": "mgsm", "data_dir": "mgsm", "languages": ["en"], "limit": 2}]}
    return {"name": "mistake", "evaluation": {**section, **changes}}


PROFILES = {  # file name -> content (a dict is written as YAML-compatible JSON)
    "ok.yaml": evaluation(),
    "empty.yaml": "",
    "no-benchmarks.yaml": evaluation(benchmarks=[]),
    "no-data-dir.yaml": evaluation(benchmarks=[{"name": "mgsm", "data_dir": "missing-dir"}]),
    "no-language.yaml": evaluation(benchmarks=[{"name": "mgsm", "data_dir": "mgsm", "languages": ["en", "ko"]}]),
    "no-exemplars.yaml": evaluation(prompt={"style": "few_shot", "num_shots": 2, "exemplars_path": "exemplar.json"}),
    "model-typo.yaml": evaluation(model={"backend": "transformers", "model": "./tiny-modle"}),
    "no-key.yaml": evaluation(model={"backend": "openai", "model": "gpt", "api_key_env": "POLYREASON_UNSET_KEY"}),
    "openai-chat.yaml": evaluation(model={"backend": "openai", "model": "m", "chat": True, "base_url": f"{DEAD}/v1"}),
    "dead-base-url.yaml": evaluation(model={"backend": "openai", "model": "m", "base_url": f"{DEAD}/v1"}),
    "tau-out-of-reach.yaml": {"name": "mistake", "grpo": {
        "model": {"model": "Qwen/Qwen3-8B-Base"}, "dataset": "rl.jsonl", "max_steps": 2,
        "rewards": [{"name": "pcs"}], "sampling": {"n": 2, "temperature": 1.0}}},
    "duplicate-benchmark.yaml": evaluation(benchmarks=[{"name": "mgsm", "data_dir": "mgsm", "languages": ["en"]},
                                                       {"name": "mgsm", "data_dir": "mgsm", "languages": ["fr"]}]),
    "alias-bomb.yaml": "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)) + "evaluation: {sampling: *a9}\n",
    "sampling-twice.yaml": "evaluation:\n  model: {backend: fake, model: fake}\n  sampling: {n: 2}\n"
                           "  benchmarks: [{name: mgsm, data_dir: mgsm}]\n  sampling: {n: 4}\n",
    "loop-data-dir.yaml": evaluation(benchmarks=[{"name": "mgsm", "data_dir": "loop", "languages": ["en"]}]),
}

# (Found item, case, command line, what the message must name)
CASES = [
    ("7", "empty profile", ["evaluate", "empty.yaml"], "empty.yaml: profile 'empty' has no evaluation section"),
    ("7", "benchmarks: []", ["evaluate", "no-benchmarks.yaml"], "has no evaluation.benchmarks"),
    ("7", "missing data_dir", ["evaluate", "no-data-dir.yaml"], "evaluation.benchmarks.0.data_dir: {p}/missing-dir"),
    ("7", "language the benchmark lacks", ["evaluate", "no-language.yaml"],
     "evaluation.benchmarks.0.languages: mgsm has no ko"),
    ("7", "missing exemplars", ["evaluate", "no-exemplars.yaml"], "evaluation.prompt.exemplars_path: {p}/exemplar.json"),
    ("7", "local model path typo", ["evaluate", "model-typo.yaml"], "evaluation.model.model: ./tiny-modle does not exist"),
    ("7", "openai backend without its key", ["evaluate", "no-key.yaml"], "POLYREASON_UNSET_KEY (model.api_key_env)"),
    ("7", "openai backend with chat: true", ["evaluate", "openai-chat.yaml"], f"{DEAD}/v1 is not reachable"),
    ("7", "benchmark listed twice", ["evaluate", "duplicate-benchmark.yaml"], "mgsm listed more than once"),
    ("8", "score: no such file", ["score", "missing.jsonl"], "missing.jsonl: no such file"),
    ("8", "score: a directory", ["score", "mgsm"], "mgsm: is a directory"),
    ("8", "verify: no such file", ["verify", "missing.jsonl"], "missing.jsonl: no such file"),
    ("8", "verify: a directory", ["verify", "mgsm"], "mgsm: is a directory"),
    ("8", "unknown --verifier", ["score", str(EXAMPLE), "--verifier", "exactt"], "'--verifier': unknown verifier 'exactt'"),
    ("8", "unknown --lcpr-rule", ["score", str(EXAMPLE), "--lcpr-rule", "lcx"], "'--lcpr-rule': unknown LCPR rule 'lcx'"),
    ("8", "override: index out of range", ["evaluate", "ok.yaml", "evaluation.benchmarks.5.limit=1"],
     "override 'evaluation.benchmarks.5.limit=1': evaluation.benchmarks.5 is not an index"),
    ("8", "override: value not YAML", ["evaluate", "ok.yaml", "evaluation.sampling.n=[1"],
     "override 'evaluation.sampling.n=[1': the value is not valid YAML"),
    ("8", "override: key under a number", ["evaluate", "ok.yaml", "evaluation.sampling.n.x=1"],
     "override 'evaluation.sampling.n.x=1': `evaluation.sampling.n` is a value, it has no key `x`"),
    ("8", "override: unknown key", ["evaluate", "ok.yaml", "evaluation.sampling.temprature=1"],
     "no such key `evaluation.sampling.temprature`; did you mean `evaluation.sampling.temperature`?"),
    ("8", "override: misspelled list key", ["evaluate", "ok.yaml", "evaluation.benchmark.0.limit=1"],
     "override 'evaluation.benchmark.0.limit=1': no such key `evaluation.benchmark`; did you mean "
     "`evaluation.benchmarks`?"),
    ("8", "non-UTF-8 profile", ["evaluate", "latin1.yaml"], "latin1.yaml: not UTF-8 text"),
    ("8", "score: no valid row", ["score", "all-bad.jsonl"], "all-bad.jsonl: no valid row (3 bad row(s))"),
    ("bounds", "an alias bomb", ["evaluate", "alias-bomb.yaml"],
     "alias-bomb.yaml: line 2: YAML aliases (*name, with &name anchors) make this profile stand for more than 1000000 "
     "values"),
    ("bounds", "a section given twice", ["evaluate", "sampling-twice.yaml"],
     "sampling-twice.yaml: line 5: key `evaluation.sampling` given twice (first at line 3): keep one"),
    ("bounds", "sampling.n=10**30", ["evaluate", "ok.yaml", "evaluation.sampling.n=1" + "0" * 30],
     "evaluation.sampling.n: Input should be less than or equal to 10000"),
    ("bounds", "temperature .inf", ["evaluate", "ok.yaml", "evaluation.sampling.temperature=.inf"],
     "evaluation.sampling.temperature: Input should be a finite number"),
    ("smaller", "a data_dir symlink loop", ["evaluate", "loop-data-dir.yaml"],
     "evaluation.benchmarks.0.data_dir: {p}/loop is a symbolic-link loop (it leads back to itself)"),
    ("8", "verify: no valid row", ["verify", "all-bad.jsonl"], "all-bad.jsonl: no valid row (3 bad row(s))"),
    ("8", "verify: \"expected\": \"false\"", ["verify", "string-booleans.jsonl"],
     "string-booleans.jsonl:1: field 'expected': expected true or false, got 'false'"),
    ("8", "--max-context 0", ["score", str(EXAMPLE), "--max-context", "0"], "'--max-context'"),
    ("8", "--lcpr-rule lcb without --words", ["score", str(EXAMPLE), "--lcpr-rule", "lcb"], "needs --words"),
    ("plan", "a curriculum its steps cannot complete", ["grpo", "tau-out-of-reach.yaml"],
     "grpo.rewards.0.params.tau_max, grpo.rewards.0.params.tau_interval, grpo.max_steps: the τ curriculum cannot "
     "reach 0.95 in the planned 2 optimizer steps (max_steps 2)"),
    ("8", "unreachable openai base_url", ["evaluate", "dead-base-url.yaml"],
     f"evaluation.model.base_url: {DEAD}/v1 is not reachable"),
    ("8", "unreachable tracking store", ["evaluate", "ok.yaml", f"tracking.tracking_uri={DEAD}"],
     f"tracking store {DEAD} is not reachable"),
    ("9", "deploy without a server", ["deploy"], "needs a running Prefect server that outlives it; "
                                                 "run `polyreason up` to start one"),
    ("9", "worker without a server", ["worker"], "needs a running Prefect server that outlives it; "
                                                 "run `polyreason up` to start one"),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mistakes")
    (root / "mgsm").mkdir()
    for lang in ("en", "fr"):
        (root / "mgsm" / f"mgsm_{lang}.tsv").write_text("One plus one?\t2\n", encoding="utf-8")
    for name, content in PROFILES.items():
        (root / name).write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    (root / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (root / "loop").symlink_to(root / "loop")
    (root / "a-file").write_text("not a directory\n", encoding="utf-8")
    (root / "rl.jsonl").write_text("".join(json.dumps({"question": "q", "gold": "1", "lang": "fr"}) + "\n"
                                           for _ in range(4)))
    (root / "all-bad.jsonl").write_text("".join(json.dumps({"id": i, "lang": "xx"}) + "\n" for i in range(3)))
    (root / "string-booleans.jsonl").write_text(
        json.dumps({"id": 1, "lang": "en", "gold": "5", "answer": "5", "expected": "false"}) + "\n"
        + json.dumps({"id": 2, "lang": "en", "gold": "5", "answer": "5", "expected": True}) + "\n")
    return root


@pytest.mark.parametrize(("found", "case", "args", "named"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_mistake_is_one_line_with_exit_2(project, monkeypatch, found, case, args, named):
    from cli.app import app

    monkeypatch.chdir(project)
    monkeypatch.delenv("POLYREASON_UNSET_KEY", raising=False)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    if args[0] in ("evaluate", "grpo", "deploy", "worker"):
        args = [*args, "--project-dir", str(project)]
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):  # no server configured, even in a session
        result = CliRunner().invoke(app, args)                    # whose other tests run one
    lines = result.stderr.strip().splitlines()
    expected_code = 0 if case.startswith("verify: \"expected\"") else 2
    assert result.exit_code == expected_code, result.output
    assert "Traceback" not in result.output
    if expected_code == 2:
        assert 1 <= len(lines) <= 3 and named.format(p=project) in result.stderr, result.stderr
    else:  # one bad row among good ones: reported in the output, counted on stderr
        assert named in result.stdout and lines == ["1 bad row(s) skipped (1 problem(s)); see 'errors'"]
    assert not (project / "artifacts").exists() and not (project / "mlruns" / "mlflow.db").exists()


def test_debug_shows_the_traceback(project, monkeypatch):
    from cli.app import app
    from cli.preflight import Refused

    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["--debug", "score", "missing.jsonl"])
    assert isinstance(result.exception, Refused)
    result = CliRunner().invoke(app, ["score", "missing.jsonl", "--debug"])
    assert isinstance(result.exception, Refused)


def test_deploy_and_worker_find_a_server_configured_in_prefects_settings(tmp_path, monkeypatch):
    """A server set in Prefect's settings (a profile, not the environment) passes the check and is exported
    for the worker's child processes; the command line's check and the command's agree on where it is."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from cli.cockpit import _require_server

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200 if self.path == "/api/health" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/api"
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    try:
        with temporary_settings(updates={PREFECT_API_URL: url}):
            _require_server(tmp_path, "worker")
        assert os.environ["PREFECT_API_URL"] == url
    finally:
        server.shutdown()


@pytest.mark.parametrize("where, named", [
    ("a-file", "--project-dir {p}/a-file: is a file, not a directory"),
    ("a-file/inside", "--project-dir {p}/a-file/inside: {p}/a-file is a file, not a directory"),
    ("loop", "--project-dir {p}/loop: is a symbolic-link loop (it leads back to itself)"),
])
def test_a_project_dir_that_cannot_be_a_directory_is_one_line_with_exit_2(project, monkeypatch, where, named):
    from cli.app import app

    monkeypatch.chdir(project)
    result = CliRunner().invoke(app, ["evaluate", "ok.yaml", "--project-dir", str(project / where)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [f"polyreason evaluate: {named.format(p=project)}"]
