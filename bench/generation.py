"""CPU generation against the hardware: the demo's real workload on every backend this machine has.

The workload is what ``polyreason evaluate profiles/cpu-demo.yaml`` generates: its benchmarks,
few-shot MGSM prompts and stop strings built as the evaluation flow builds them, its model
(Gemma-3-270M, ``embedded:gemma3-270m``, converted once into ``<cache-dir>/embedded/``) and dtype
on each backend in turn (whichever backend the profile names), greedy, its ``max_new_tokens`` and
batch size. Each backend generates every prompt; tokens/s counts the
tokens the backend reports as generated (up to EOS or a stop string) per second of generation.
Loading (and a server's start) is timed apart and not counted; one prompt warms each backend up.

The decode roofline: every decode step reads all weights once (Gemma's tied 262k-token
embedding is read again by the output layer), so steps/s <= copy bandwidth / parameter bytes,
and tokens/s <= that times the batch (the profile's ``batch_size``). Parameter bytes are the
parameter count (from the safetensors headers) times the width of the profile's dtype; the
bandwidth is a measured ``torch`` copy of a 512 MiB buffer (bytes read per second, best of 5
at the start and best of 15 at the end; the larger counts: other jobs only ever lower it). The
roofline is at the profile's batch size, as the demo runs transformers; ``vllm-server`` with more
requests in flight than that batches more sequences per step, so its fraction can pass 100%.

Backends: ``transformers`` (as configured, and with each ``--threads`` value), ``vllm-server``
(a vLLM OpenAI server started and stopped by polyreason; needs an interpreter with vLLM, by
default ``.venv-vllm/bin/python`` of this checkout or of ``--server-python``), and ``vllm``
in-process when this interpreter has vLLM. Greedy outputs are compared with the first backend's
(share of identical completions after the stop-string cut). The machine load is printed: other
jobs sharing the cores make every number here noisy.

    python bench/generation.py [--profile profiles/cpu-demo.yaml] [--cache-dir .cache] [--threads 1,2] [--smoke]

``--smoke`` (CI): the profile's first two prompts, 4 new tokens, on the tests' tiny from-config
model with transformers only, and a 64 MiB bandwidth buffer: seconds, numbers meaningless.

Last line: {"best_backend": ..., "tokens_per_s": ..., "roofline_fraction": ...} for the fastest backend.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def workload(profile_path: str) -> tuple:
    """(evaluation settings, items, prompts, stop strings) as the evaluation flow builds them."""
    from components.config import load_profile
    from components.data.benchmarks import load_benchmark
    from components.data.prompts import build_prompts, stop_sequences

    section = load_profile(profile_path).with_absolute_paths().evaluation  # as a flow's prepared() makes them
    items = []
    for bench in section.benchmarks:
        items += load_benchmark(bench.name, data_dir=bench.data_dir, languages=bench.languages, limit=bench.limit,
                                selection=bench.selection, sample_seed=bench.sample_seed, offset=bench.offset).items
    prompts = build_prompts(items, section.prompt, chat=section.model.chat, thinking=section.model.thinking)
    return section, items, prompts, stop_sequences(items, section.prompt, chat=section.model.chat)


def smoke_workload(section, items: list, prompts: list[str], work: Path) -> tuple:
    """The smoke mode's workload: two prompts, 4 new tokens, the tiny from-config model."""
    from tests.helpers.tiny_model import build_tiny_model

    model = section.model.model_copy(update={"model": str(build_tiny_model(work / "tiny-model")), "dtype": "float32"})
    sampling = section.sampling.model_copy(update={"max_new_tokens": 4})
    return section.model_copy(update={"model": model, "sampling": sampling}), items[:2], prompts[:2]


def copy_bandwidth(megabytes: int = 512) -> float:
    """Bytes read per second by a torch tensor copy (best of 5)."""
    import torch

    source = torch.ones(megabytes * 2**20 // 4)
    target = torch.empty_like(source)
    target.copy_(source)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        target.copy_(source)
        best = min(best, time.perf_counter() - start)
    return source.numel() * 4 / best


def parameter_count(model_dir: Path) -> int:
    from safetensors import safe_open

    total = 0
    for path in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(path), "pt") as handle:
            for name in handle.keys():
                count = 1
                for size in handle.get_slice(name).get_shape():
                    count *= size
                total += count
    return total


def run_backend(label: str, generator, prompts: list[str], sampling, stop: list[str]) -> dict:
    from components.generation.base import truncate_at_stops

    start = time.perf_counter()
    load = getattr(generator, "load", None)
    if load is not None:
        load()
    generator.generate(prompts[:1], sampling.model_copy(update={"max_new_tokens": 8}), stop)
    ready = time.perf_counter() - start
    out = generator.generate(prompts, sampling, stop)
    stats = generator.stats
    texts = [truncate_at_stops(samples[0].text, stop) for samples in out]
    print(f"  {label}: {stats.tokens} tokens in {stats.seconds:.1f} s = {stats.tokens_per_second:.1f} tokens/s "
          f"(load/start + warm-up {ready:.1f} s)", flush=True)
    return {"label": label, "tokens_per_s": stats.tokens_per_second, "seconds": stats.seconds,
            "tokens": stats.tokens, "ready_s": ready, "texts": texts}


def on_backend(model, backend: str, **fields):
    """The profile's model on another backend (the other backends' own fields back to their defaults)."""
    defaults = {name: info.get_default() for name, info in type(model).model_fields.items()
                if name in ("server_python", "max_concurrency", "max_retries", "base_url", "api_key_env")}
    return model.model_copy(update={**defaults, "backend": backend, **fields})


def transformers_runs(section, cache_dir: Path, prompts, stop, threads: list[int]) -> list[dict]:
    import torch

    from components.generation import build_generator

    generator = build_generator(on_backend(section.model, "transformers"), cache_dir)
    generator.progress = False
    runs = []
    for count in threads:
        torch.set_num_threads(count)
        runs.append(run_backend(f"transformers threads={count}", generator, prompts, section.sampling, stop))
    return runs


def server_python(args: argparse.Namespace) -> str | None:
    for candidate in (args.server_python, REPO / ".venv-vllm" / "bin" / "python"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    return None


def vllm_server_run(section, cache_dir: Path, prompts, stop, python: str, concurrency: int) -> dict:
    from components.generation.vllm_server import VLLMServerGenerator, stop_servers

    model = on_backend(section.model, "vllm-server", server_python=python, max_concurrency=concurrency)
    generator = VLLMServerGenerator(model, cache_dir, progress=False)
    try:
        run = run_backend(f"vllm-server concurrency={concurrency}", generator, prompts, section.sampling, stop)
        run["startup_s"] = generator.server.startup_seconds
        return run
    finally:
        stop_servers()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default=str(REPO / "profiles" / "cpu-demo.yaml"))
    parser.add_argument("--cache-dir", default=str(REPO / ".cache"))
    parser.add_argument("--threads", default="2", help="torch thread counts to run transformers with")
    parser.add_argument("--server-python", default=None, help="interpreter with vLLM for vllm-server")
    parser.add_argument("--concurrency", default="8,24", help="requests in flight for vllm-server")
    parser.add_argument("--backends", default="transformers,vllm-server,vllm")
    parser.add_argument("--smoke", action="store_true", help="two prompts on the tiny model, transformers (CI)")
    args = parser.parse_args()
    os.chdir(REPO)  # the profile's data paths are relative to the project directory
    section, items, prompts, stop = workload(args.profile)
    cache_dir = Path(args.cache_dir)
    buffer_mb = 512
    if args.smoke:
        work = Path(tempfile.mkdtemp(prefix="generation-smoke-"))
        atexit.register(shutil.rmtree, work, True)
        section, items, prompts = smoke_workload(section, items, prompts, work)
        args.backends, args.threads, buffer_mb = "transformers", "2", 64
    print(f"load average: {os.getloadavg()}  cores: {os.cpu_count()}")
    print(f"workload: {len(prompts)} prompts ({len(items)} items), greedy, max_new_tokens "
          f"{section.sampling.max_new_tokens}, batch {section.sampling.batch_size}, stop {stop}")
    from components.generation.base import resolve_model

    model_dir = Path(resolve_model(section.model, cache_dir).path)
    params = parameter_count(model_dir)
    dtype = section.model.dtype if section.model.dtype in DTYPE_BYTES else "float32"
    bandwidth = copy_bandwidth(buffer_mb)  # measured again at the end: the larger (less disturbed) one counts
    batch = min(section.sampling.batch_size, len(prompts))
    steps = bandwidth / (params * DTYPE_BYTES[dtype])
    roofline = steps * batch
    print(f"roofline: {params / 1e6:.0f}M parameters x {DTYPE_BYTES[dtype]} B ({dtype}) = "
          f"{params * DTYPE_BYTES[dtype] / 1e9:.2f} GB per step; copy bandwidth {bandwidth / 1e9:.1f} GB/s -> "
          f"{steps:.1f} steps/s -> {roofline:.0f} tokens/s at batch {batch}")
    wanted = args.backends.split(",")
    runs: list[dict] = []
    if "transformers" in wanted:
        runs += transformers_runs(section, cache_dir, prompts, stop, [int(t) for t in args.threads.split(",")])
    python = server_python(args)
    if "vllm-server" in wanted and python:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            runs.append(vllm_server_run(section, cache_dir, prompts, stop, python, concurrency))
    elif "vllm-server" in wanted:
        print("  vllm-server: skipped (no interpreter with vLLM: build .venv-vllm or pass --server-python)")
    if "vllm" in wanted and importlib.util.find_spec("vllm") is not None:
        from components.generation import build_generator

        generator = build_generator(on_backend(section.model, "vllm"), cache_dir)
        runs.append(run_backend("vllm in-process", generator, prompts, section.sampling, stop))
    bandwidth_after = max(copy_bandwidth(buffer_mb) for _ in range(3))
    if bandwidth_after > bandwidth:
        roofline *= bandwidth_after / bandwidth
        print(f"copy bandwidth at the end {bandwidth_after / 1e9:.1f} GB/s -> roofline {roofline:.0f} tokens/s")
    print(f"load average: {os.getloadavg()}")
    reference = runs[0]["texts"]
    print(f"{'backend':32s}{'tokens/s':>10s}{'roofline':>10s}{'same text':>11s}{'ready s':>9s}")
    for run in runs:
        same = statistics.mean(a == b for a, b in zip(reference, run["texts"]))
        print(f"{run['label']:32s}{run['tokens_per_s']:10.1f}{run['tokens_per_s'] / roofline:10.0%}"
              f"{same:11.0%}{run['ready_s']:9.1f}")
    best = max(runs, key=lambda run: run["tokens_per_s"])
    print(json.dumps({"best_backend": best["label"], "tokens_per_s": round(best["tokens_per_s"], 1),
                      "roofline_fraction": round(best["tokens_per_s"] / roofline, 3)}))


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
