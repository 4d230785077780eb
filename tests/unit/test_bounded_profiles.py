"""A profile is read within bounds: aliases capped before expansion, no key given twice, every number finite and bounded.

Each problem is refused naming the file, line or dotted key, before anything copies, plans or runs the
profile; a profile that stands for 9^9 values in 700 bytes is refused in milliseconds under a memory cap.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import annotated_types
import pytest
import yaml
from pydantic import BaseModel

from components.config import load_profile, load_profile_dict
from components.settings import Profile, ProfileError

REPO = Path(__file__).resolve().parents[2]
EVALUATION = {"name": "x", "evaluation": {"model": {"backend": "fake", "model": "fake"},
                                         "benchmarks": [{"name": "mgsm", "data_dir": "mgsm"}]}}


def alias_bomb() -> str:
    """Nine levels of nine aliases: 700 bytes that stand for 9^9 (387 million) strings."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    lines += ["evaluation:", "  model: {backend: fake, model: fake}", "  benchmarks: [{name: mgsm, data_dir: mgsm}]",
              "  sampling: *a9"]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_under_a_memory_cap(tmp_path):
    """Under a 1.5 GiB address-space cap the profile is refused with its line in well under a second; expanding
    it (what loading did) needs tens of GB and dies of MemoryError under the cap."""
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(), encoding="utf-8")
    script = textwrap.dedent(f"""
        import resource, time
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        from components.config import load_profile
        from components.settings import ProfileError
        started = time.perf_counter()
        try:
            load_profile({str(path)!r})
        except ProfileError as error:
            print(f"{{time.perf_counter() - started:.3f}}", error)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seconds, message = done.stdout.strip().split(" ", 1)
    assert float(seconds) < 1.0
    assert message == (f"{path}: line 2: YAML aliases (*name, with &name anchors) make this profile stand for more "
                       "than 1000000 values once written out (the most a profile may hold): write the value out once")


def test_an_alias_bomb_inside_an_override_value_is_refused():
    bomb = "[" + ", ".join(["&l0 [x, x, x, x, x, x, x, x, x, x]"] + ["*l0"] * 9) + "]"
    value = "&l1 " + bomb
    for level in range(2, 7):
        value = f"[&l{level} [{value}], " + ", ".join([f"*l{level}"] * 9) + "]"
    with pytest.raises(ProfileError, match="line 1: YAML aliases"):
        load_profile_dict(EVALUATION, [f"evaluation.benchmarks.0.languages={value}"])


def test_a_profile_written_by_yaml_safe_dump_with_shared_lists_reads_as_pyyaml_reads_it(tmp_path):
    """``yaml.safe_dump`` writes an anchor and an alias wherever two keys share one Python list: such a profile is
    ordinary YAML and loads to what PyYAML's own safe loader builds."""
    languages = ["en", "fr"]
    profile = {"name": "x", "evaluation": {"model": {"backend": "fake", "model": "fake"}, "benchmarks": [
        {"name": "mgsm", "data_dir": "mgsm", "languages": languages},
        {"name": "msvamp", "data_dir": "msvamp", "languages": languages}]}}
    text = yaml.safe_dump(profile)
    assert "*id001" in text
    path = tmp_path / "dumped.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_profile(path).evaluation.benchmarks[1].languages == yaml.safe_load(text)["evaluation"][
        "benchmarks"][1]["languages"] == ["en", "fr"]


def test_a_section_given_twice_is_refused_naming_it_and_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("evaluation:\n  model: {backend: fake, model: fake}\n  sampling: {n: 2}\n"
                    "  benchmarks: [{name: mgsm, data_dir: mgsm}]\n  sampling: {n: 4}\n", encoding="utf-8")
    with pytest.raises(ProfileError) as error:
        load_profile(path)
    assert str(error.value) == f"{path}: line 5: key `evaluation.sampling` given twice (first at line 3): keep one"


def test_a_key_given_twice_inside_a_list_item_is_named_with_its_index(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("evaluation:\n  benchmarks:\n    - name: mgsm\n      limit: 2\n      limit: 3\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"line 5: key `evaluation\.benchmarks\.0\.limit` given twice \(first at "
                                           r"line 4\)"):
        load_profile(path)


def test_a_mapping_sharing_its_parts_past_the_budget_is_refused_before_it_is_copied():
    shared: list = ["x"] * 110
    for _ in range(2):  # 110^3 (1.3 million) values once written out, three lists in memory; small enough that
        shared = [shared] * 110  # a loader without the budget copies it in ~100 MB rather than exhausting memory
    with pytest.raises(ProfileError, match="stands for more than 1000000 values"):
        load_profile_dict({**EVALUATION, "nightly": {"models": shared}})


def test_a_mapping_holding_itself_is_refused():
    loop: dict = {"name": "x"}
    loop["evaluation"] = loop
    with pytest.raises(ProfileError, match="holds itself"):
        load_profile_dict(loop)


@pytest.mark.parametrize("override, key, problem", [
    ("evaluation.sampling.n=1" + "0" * 30, "evaluation.sampling.n", "less than or equal to 10000"),
    ("evaluation.sampling.max_new_tokens=1" + "0" * 30, "evaluation.sampling.max_new_tokens", "less than or equal"),
    ("evaluation.benchmarks.0.limit=1" + "0" * 12, "evaluation.benchmarks.0.limit", "less than or equal to 100000000"),
    ("evaluation.sampling.temperature=.inf", "evaluation.sampling.temperature", "finite number"),
    ("evaluation.sampling.top_p=.nan", "evaluation.sampling.top_p", "finite number"),
    ("evaluation.sampling.seed=1" + "0" * 30, "evaluation.sampling.seed", "less than or equal to 4294967295"),
    ("evaluation.scoring.pass_k=[1, 100000]", "evaluation.scoring.pass_k", "at most 10000"),
])
def test_a_number_out_of_bounds_is_refused_naming_its_key(override, key, problem):
    with pytest.raises(ProfileError) as error:
        load_profile_dict(EVALUATION, [override])
    line = next(line for line in str(error.value).splitlines() if line.strip().startswith(f"- {key}:"))
    assert problem in line


def test_a_non_finite_value_in_the_file_is_refused(tmp_path):
    path = tmp_path / "inf.yaml"
    path.write_text("evaluation:\n  model: {backend: fake, model: fake}\n  benchmarks: [{name: mgsm, data_dir: m}]\n"
                    "  sampling: {temperature: .inf}\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"evaluation\.sampling\.temperature: Input should be a finite number"):
        load_profile(path)


GRPO = {"name": "g", "grpo": {"model": {"model": "m"}, "dataset": "d.jsonl"}}


@pytest.mark.parametrize("override, line", [
    ("grpo.max_steps=1" + "0" * 30, "grpo.max_steps: 10**30 is beyond the 64-bit range (at most 2**63 - 1)"),
    ("grpo.max_steps=1000000000", "grpo.max_steps: at most 100000000 (a count this large is a typo)"),
    ("grpo.beta=.inf", "grpo.beta: inf is not a finite number"),
    ("grpo.rewards=[{name: softlc, params: {threshold: .nan}}]", "params.threshold: nan is not a finite number"),
])
def test_trl_keys_and_reward_parameters_are_bounded_too(override, line):
    """Values no field types (trl's keys, a reward's params) are checked before trl or the reward sees them,
    also when trl does not check the section (``trl_checks=()``, a command that does not train it)."""
    with pytest.raises(ProfileError) as error:
        load_profile_dict(GRPO, [override], trl_checks=())
    assert line in str(error.value)


def _numeric_fields(model: type[BaseModel], seen: set, path: str = "") -> list[tuple[str, typing.Any]]:
    """(dotted field, FieldInfo or item metadata) of every int/float under ``model``, nested sections included."""
    if model in seen:
        return []
    seen.add(model)
    found = []
    for name, field in model.model_fields.items():
        where = f"{path}{name}"
        for member in _members(field.annotation):
            origin, args = typing.get_origin(member), typing.get_args(member)
            if member in (int, float):
                found.append((where, field.metadata))
            elif origin is list and args and typing.get_origin(args[0]) is typing.Annotated:
                if typing.get_args(args[0])[0] in (int, float):
                    found.append((f"{where}.N", typing.get_args(args[0])[1].metadata))
            elif origin is list and args and args[0] in (int, float):
                found.append((f"{where}.N", "validator"))  # bounded by a field validator, tested above
            elif isinstance(member, type) and issubclass(member, BaseModel):
                found += _numeric_fields(member, seen, f"{where}.")
            elif origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
                found += _numeric_fields(args[0], seen, f"{where}.N.")
    return found


def _members(annotation) -> list:
    from types import NoneType, UnionType

    if typing.get_origin(annotation) in (typing.Union, UnionType):
        return [arg for arg in typing.get_args(annotation) if arg is not NoneType]
    return [annotation]


def test_every_number_of_a_profile_has_an_upper_bound():
    fields = _numeric_fields(Profile, set())
    assert len(fields) > 50  # the walk reaches the nested sections
    unbounded = [where for where, metadata in fields if metadata != "validator"
                 and not any(isinstance(m, (annotated_types.Le, annotated_types.Lt)) for m in metadata)]
    assert unbounded == []
