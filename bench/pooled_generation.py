"""Two benchmarks in one backend call against two calls, on the vLLM CPU server.

The evaluation flow sends the prompts of every benchmark still to generate to
the backend together (``generate_into_journals``); before, each benchmark was
one ``generate_to_jsonl`` after the other. This bench runs both ways on the same
prompts: MGSM and MSVAMP, en/fr/ja/th, ``--per-language`` problems each, the
demo's instruction prompts, Gemma-3-270M (``embedded:gemma3-270m``), greedy,
``--max-new-tokens``, through ``vllm-server`` (a vLLM OpenAI server polyreason
starts from ``.venv-vllm``; ``--concurrency`` requests in flight). The server is
started and warmed up on every prompt once first (so both ways find the same
prefix cache), then the two ways alternate ``--repeats`` times; medians are
printed. Outputs must be identical (greedy).

    python bench/pooled_generation.py [--shared-data ../shared/data] [--server-python .venv-vllm/bin/python]
        [--smoke]

``--smoke`` (CI): one problem per language, 4 new tokens, one repeat, on the tests' tiny
from-config model with the transformers backend (no vLLM, no server): the same two ways in
seconds, numbers meaningless.

Last line: ``{"separate_s": …, "pooled_s": …, "speedup": …}``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from locations import shared_data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def benchmark_jobs(shared_data: Path, per_language: int) -> list[tuple[list, list[str]]]:
    """(items, prompts) of MGSM and MSVAMP, as the evaluation flow builds them for the demo's prompts."""
    from components.data.benchmarks import load_benchmark
    from components.data.prompts import build_prompts
    from components.settings import PromptSettings

    jobs = []
    for name in ("mgsm", "msvamp"):
        items = load_benchmark(name, data_dir=shared_data / name, languages=["en", "fr", "ja", "th"],
                               limit=per_language).items
        jobs.append((items, build_prompts(items, PromptSettings(style="instruction"))))
    return jobs


def separate(generator, jobs, sampling, out: Path) -> float:
    from components.generation.resumable import generate_to_jsonl

    start = time.perf_counter()
    for index, (items, prompts) in enumerate(jobs):
        generate_to_jsonl(generator, items, prompts, sampling, out / f"{index}.jsonl")
    return time.perf_counter() - start


def pooled(generator, jobs, sampling, out: Path) -> float:
    from components.generation.resumable import GenerationJob, generate_into_journals, generate_to_jsonl

    start = time.perf_counter()
    generate_into_journals(generator, [GenerationJob(i, p, out / f"{n}.jsonl") for n, (i, p) in enumerate(jobs)],
                           sampling)
    for index, (items, prompts) in enumerate(jobs):  # finishes each file from its journal, no backend call
        generate_to_jsonl(generator, items, prompts, sampling, out / f"{index}.jsonl")
    return time.perf_counter() - start


def build(args: argparse.Namespace):
    """The vLLM server generator on Gemma-3-270M, or (smoke) transformers on the tiny from-config model."""
    from components.settings import ModelSettings

    if args.smoke:
        from components.generation import build_generator
        from tests.helpers.tiny_model import build_tiny_model

        work = Path(tempfile.mkdtemp(prefix="pooled-smoke-"))
        atexit.register(shutil.rmtree, work, True)
        model = ModelSettings(backend="transformers", model=str(build_tiny_model(work / "tiny-model")), dtype="float32")
        generator = build_generator(model, args.cache_dir)
        generator.progress = False
        return generator
    from components.generation.vllm_server import VLLMServerGenerator

    model = ModelSettings(backend="vllm-server", model="embedded:gemma3-270m", dtype="float32",
                          server_python=args.server_python, max_concurrency=args.concurrency)
    return VLLMServerGenerator(model, args.cache_dir, progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=shared_data())
    parser.add_argument("--server-python", default=str(REPO / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".cache")
    parser.add_argument("--per-language", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny model on transformers, seconds (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.per_language, args.max_new_tokens, args.repeats = 1, 4, 1
    elif not Path(args.server_python).exists():
        sys.exit(f"{args.server_python} not found: build it with `bash .ci/vllm-env.sh`")

    from components.generation.vllm_server import stop_servers
    from components.settings import SamplingSettings

    jobs = benchmark_jobs(args.shared_data.resolve(), args.per_language)
    prompts = sum(len(p) for _, p in jobs)
    sampling = SamplingSettings(n=1, temperature=0.0, max_new_tokens=args.max_new_tokens, batch_size=prompts)
    generator = build(args)
    times: dict[str, list[float]] = {"separate": [], "pooled": []}
    try:
        generator.load()
        server = getattr(generator, "server", None)
        print(f"{'server up in %.1f s' % server.startup_seconds if server else 'loaded'}; {prompts} prompts "
              f"({', '.join(str(len(p)) for _, p in jobs)}), greedy, {args.max_new_tokens} new tokens, "
              f"{args.concurrency} in flight", flush=True)
        generator.generate([p for _, ps in jobs for p in ps], sampling)  # warm-up: the same prefix cache for both
        texts = {}
        for repeat in range(args.repeats):
            for way, run in (("separate", separate), ("pooled", pooled)):
                out = Path(tempfile.mkdtemp(prefix=f"pooled-bench-{way}-"))
                times[way].append(run(generator, jobs, sampling, out))
                texts[way] = [out.joinpath(f"{i}.jsonl").read_text() for i in range(len(jobs))]
                print(f"  {way:<8} #{repeat + 1}: {times[way][-1]:.2f} s", flush=True)
    finally:
        stop_servers()
    same = texts["separate"] == texts["pooled"]
    result = {way: round(statistics.median(values), 2) for way, values in times.items()}
    print(f"separate calls {result['separate']:.2f} s, one pooled call {result['pooled']:.2f} s "
          f"(medians of {args.repeats}); identical outputs: {same}")
    print(json.dumps({"separate_s": result["separate"], "pooled_s": result["pooled"],
                      "speedup": round(result["separate"] / result["pooled"], 3), "identical": same}))


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
