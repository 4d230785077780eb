"""A paper's spec: everything the project knows about one paper it reproduces, registered once in ``PAPERS``.

A ``PaperSpec`` holds what is the paper's rather than one run's:

* ``title``, ``arxiv``: the citation every report of a run held against it prints;
* ``seed``: the text file the numbers were read from (the paper's text beside the repository, in
  ``shared/seeds``), which the tests read the tables' values back from;
* ``models``: the hub models its profiles run (trained, evaluated, or the teacher that writes their
  traces); their size, KV heads and context are ``components/planning/models.yaml``'s, shared by every
  paper that runs the same model, and the plan reads them from there;
* ``profiles``: one ``PaperProfile`` per profile that runs one of its experiments: the profile
  ``profiles/<name>.yaml``, its table file ``profiles/papers/<name>.yaml`` (the rows of the paper's
  tables a run measures: ``components.reports.paper_tables``), for an evaluation the protocol the paper
  states (``Protocol``), and the ``cpu-*`` twin CI runs in its place.

The plan names the paper of a profile it plans (``paper_line``), a comparison with ``--paper`` and the
recipe find the table through its spec (``table_of``), and the tests iterate ``PAPERS``: nothing else
lists papers or their profiles. The protocols are written from the papers' texts, never read from the
profiles, so the tests that hold a profile to its protocol compare two independent records.

>>> paper_of("qwen3-8b-pcs-evaluation").name, paper_of("cpu-pcs-evaluation").name, paper_of("cpu-demo")
('pcs', 'pcs', None)
>>> table_of("qwen2.5-3b-lcrl-mkqa").relative_to(REPOSITORY_PROFILES).as_posix()
'papers/qwen2.5-3b-lcrl-mkqa.yaml'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPOSITORY_PROFILES = Path(__file__).resolve().parents[2] / "profiles"

THINKING_CHAT_VLLM = {"backend": "vllm", "chat": True, "thinking": True}


@dataclass(frozen=True)
class Protocol:
    """An evaluation as the paper prescribes it (sampling, prompt, benchmarks with their languages, scoring)."""

    model: str
    n: int
    temperature: float
    top_p: float
    max_new_tokens: int
    prompt: tuple[str, str]  # style, where the language instruction goes
    benchmarks: dict[str, tuple[list[str], int | None]]  # name -> (languages, samples: None = n)
    verifier: str
    pass_k: list[int]
    max_context: int
    in_domain: list[str]
    backend: str = "vllm"
    chat: bool = True
    thinking: bool = True


@dataclass(frozen=True)
class PaperProfile:
    """A profile that runs one of the paper's experiments, and the rows of its tables a run of it measures."""

    name: str
    protocol: Protocol | None = None
    twin: str | None = None  # the cpu-* profile with every protocol switch and the counts shrunk

    @property
    def path(self) -> Path:
        return REPOSITORY_PROFILES / f"{self.name}.yaml"

    @property
    def table(self) -> Path:
        return REPOSITORY_PROFILES / "papers" / f"{self.name}.yaml"


@dataclass(frozen=True)
class PaperSpec:
    """One paper (see the module docstring)."""

    name: str
    title: str
    arxiv: str | None
    seed: str
    models: tuple[str, ...]
    profiles: tuple[PaperProfile, ...]

    @property
    def citation(self) -> str:
        return f"{self.title} (arXiv {self.arxiv})" if self.arxiv else self.title

    def profile(self, name: str) -> PaperProfile | None:
        """Its profile called ``name``, or the one whose CPU twin that is."""
        return next((p for p in self.profiles if name in (p.name, p.twin)), None)


ADAMAME_BENCHMARKS = {"mgsm_rev2": (["fr", "ja", "ko", "th", "bn", "en", "es", "ru", "sw", "te", "zh", "de"], None),
                      "msvamp": (["fr", "ja", "th", "bn", "en", "es", "sw", "ru", "zh", "de"], None)}
ADAMAME_IN_DOMAIN = ["fr", "pt", "ja", "ko", "th"]


def adamame_protocol(model: str) -> Protocol:
    """AdaMame §4 and appendix C: 4 samples at 0.6 / 0.95 in 8,192 tokens, the instruction before the question,
    pass@1 and pass@4 judged by math-verify, the same on each backbone (its table 12)."""
    return Protocol(model=model, n=4, temperature=0.6, top_p=0.95, max_new_tokens=8192,
                    prompt=("instruction", "before"), benchmarks=ADAMAME_BENCHMARKS, verifier="math_verify",
                    pass_k=[1, 4], max_context=8192, in_domain=ADAMAME_IN_DOMAIN)


PCS_LANGUAGES = ["fr", "pt", "ja", "ko", "th"]

PCS = PaperSpec(
    name="pcs", title="PCS: efficient multilingual reasoning transfer through progressive code-switching",
    arxiv="2607.00485", seed="000_cc53a9cef5011c63.txt",
    models=("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base", "Qwen/Qwen3-4B-Base"),
    profiles=(
        PaperProfile("qwen3-8b-pcs-evaluation", twin="cpu-pcs-evaluation", protocol=Protocol(
            # "Evaluation details": one context limit for every row (the trained rows' 30,720 new tokens);
            # table 2's "Qwen3-8B" row is the question alone (the language instruction is "Prompt Control")
            model="Qwen/Qwen3-8B", n=4, temperature=0.9, top_p=0.95, max_new_tokens=30720, prompt=("plain", "after"),
            benchmarks={"mmath": (PCS_LANGUAGES, None), "mmlu_prox_math": (PCS_LANGUAGES, 1)},
            verifier="trusted", pass_k=[1], max_context=32768, in_domain=PCS_LANGUAGES)),
        PaperProfile("qwen3-8b-pcs-grpo"),
        PaperProfile("qwen3-4b-base-pcs-grpo"),
        PaperProfile("qwen3-8b-mthinker-grpo"),  # M-Thinker, PCS's baseline, is a row of PCS's table 2
    ))

ADAMAME = PaperSpec(
    name="adamame", title="AdaMame: a training recipe for adaptive multilingual reasoning", arxiv=None,
    seed="004_786c9c99d381df82.txt",
    models=("Qwen/Qwen3-4B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "Qwen/Qwen3-8B"),  # Qwen3-8B: teacher
    profiles=(
        PaperProfile("qwen3-4b-adamame-evaluation", twin="cpu-adamame-evaluation",
                     protocol=adamame_protocol("Qwen/Qwen3-4B")),
        PaperProfile("distill-qwen-1.5b-adamame-evaluation",
                     protocol=adamame_protocol("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B")),
        PaperProfile("qwen3-4b-adamame-grpo"),
        PaperProfile("distill-qwen-1.5b-adamame-grpo"),
        PaperProfile("qwen3-4b-data-sft"),
    ))

LCRL = PaperSpec(
    name="lcrl", title="LcRL: language-coupled reinforcement learning for multilingual retrieval-augmented generation",
    arxiv="2601.14896", seed="003_a48c0393b6638961.txt", models=("Qwen/Qwen2.5-3B",),
    profiles=(PaperProfile("qwen2.5-3b-lcrl-mkqa", twin="cpu-lcrl"),))

VERIFIER_BIAS = PaperSpec(
    name="verifier-bias", title="Multilingual verifier bias in RLVR: benchmarks, rollout diagnostics and the "
    "cross-lingual selection bottleneck", arxiv="2608.20362", seed="001_bb3f89d5701a40cd.txt",
    models=("Qwen/Qwen3-8B",),
    profiles=(
        PaperProfile("qwen3-8b-verifier-bias-evaluation", twin="cpu-verifier-bias-evaluation", protocol=Protocol(
            # §3: k = 8 rollouts per MGSM problem in en, ja and zh; decoding and length are the profile's choice
            model="Qwen/Qwen3-8B", n=8, temperature=0.6, top_p=0.95, max_new_tokens=4096,
            prompt=("instruction", "after"), benchmarks={"mgsm": (["en", "ja", "zh"], None)},
            verifier="trusted", pass_k=[1, 8], max_context=8192, in_domain=["ja", "zh"])),
    ))

PAPERS: tuple[PaperSpec, ...] = (PCS, ADAMAME, LCRL, VERIFIER_BIAS)


def paper_of(profile: str) -> PaperSpec | None:
    """The paper whose profile (or whose profile's CPU twin) is called ``profile``."""
    return next((paper for paper in PAPERS if paper.profile(profile) is not None), None)


def table_of(profile: str) -> Path | None:
    """The shipped table file of the paper profile called ``profile`` (a CPU twin has none of its own)."""
    paper = paper_of(profile)
    entry = paper.profile(profile) if paper else None
    return entry.table if entry is not None and entry.name == profile else None


def paper_line(profile: str) -> str | None:
    """What the plan says of a paper profile: the paper, and the table its runs are held against.

    >>> paper_line("cpu-lcrl").partition("; ")[2]
    'CPU twin of qwen2.5-3b-lcrl-mkqa (table: profiles/papers/qwen2.5-3b-lcrl-mkqa.yaml)'
    """
    paper = paper_of(profile)
    if paper is None:
        return None
    entry = paper.profile(profile)
    twin = "" if entry.name == profile else f"CPU twin of {entry.name} "
    return f"paper: {paper.citation}; {twin}(table: profiles/papers/{entry.name}.yaml)"
