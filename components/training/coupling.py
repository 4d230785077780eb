"""Language-coupled GRPO groups on trl's ``GRPOTrainer`` (LcRL, "Language-coupled GRPO").

LcRL samples the semantically equivalent queries ``Q = {q_1..q_n}`` of one
question (one per language) together and normalizes the advantage over the
rollouts of *all* of them, so a weak language is measured against the strong
languages' rewards instead of only its own.

trl 1.16 computes the GRPO advantage inside ``_generate_and_score_completions``
as ``rewards.view(-1, num_generations)``: a group is a contiguous run of
``num_generations`` completions, and its ``RepeatSampler`` makes that run the
copies of one prompt. The seam used here changes only the *layout*, not trl's
arithmetic: ``GroupedGRPOTrainer`` (a subclass) overrides the train sampler
to lay out each coupled group contiguously — the ``G`` rollouts of every
language of a source id, languages in a fixed order — and sets the trainer's
``num_generations`` to the group's size (``K`` languages × ``G``). trl's own mean,
std (``scale_rewards``), unscorable-row handling and multi-objective aggregation
then apply to the multilingual group unchanged, and a trl release that keeps
"a group is a contiguous run of ``num_generations``" keeps this working; the
integration test pins it against trl's advantages on uncoupled and coupled
batches. A batch-wide baseline (``baseline: batch``) is the same seam with
the whole generation batch as one group (critic-free: not PPO).

Not supported with coupling: vLLM ``server`` mode (it deduplicates prompts by
taking every ``num_generations``-th one, which assumes one prompt per group);
colocated vLLM and transformers generation work.

``group_advantages`` is the specification (written out for the tests):
``A_i = (r_i − mean_{g(i)}) / (std_{g(i)} + 1e-4)`` with the sample standard
deviation, or ``r_i − mean`` when ``scale="none"``.

>>> [round(a, 3) for a in group_advantages([1.0, 0.0, 0.0, 0.0], ["q", "q", "q", "q"], scale="none")]
[0.75, -0.25, -0.25, -0.25]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any


def group_advantages(rewards: Sequence[float], groups: Sequence[Hashable], scale: str = "group") -> list[float]:
    """GRPO advantages with baselines per group id (``scale``: ``group`` divides by the group's std, ``none`` not)."""
    members: dict[Hashable, list[float]] = {}
    for reward, group in zip(rewards, groups, strict=True):
        members.setdefault(group, []).append(float(reward))
    stats = {}
    for group, values in members.items():
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
        stats[group] = (mean, math.sqrt(var))
    out = []
    for reward, group in zip(rewards, groups):
        mean, std = stats[group]
        out.append((reward - mean) / (std + 1e-4) if scale == "group" else reward - mean)
    return out


@dataclass
class GroupLayout:
    """Rows grouped into units laid out together; ``group_size`` completions share one baseline.

    ``units``: lists of row indices (one row per unit without coupling; the
    rows of one source id, in language order, with it). ``rollouts``: completions
    per row (trl's ``num_generations`` setting). ``group_size``: completions per
    advantage group (``unit × rollouts``, or the generation batch for
    ``baseline: batch``). ``dropped``: source ids left out, with the reason.
    """

    units: list[list[int]]
    rollouts: int
    group_size: int
    dropped: dict[str, str] = field(default_factory=dict)

    @property
    def unit_size(self) -> int:
        return len(self.units[0]) * self.rollouts


def coupled_units(rows: Sequence[dict], key: str, languages: Sequence[str] | None) -> tuple[list[list[int]], dict]:
    """Row indices per value of ``key``, ordered by ``languages``; groups missing a language are dropped.

    >>> rows = [{"id": "a", "lang": "fr"}, {"id": "a", "lang": "en"}, {"id": "b", "lang": "en"}]
    >>> coupled_units(rows, "id", ["en", "fr"])
    ([[1, 0]], {'b': 'missing fr'})
    """
    found: dict[str, dict[str, int]] = {}
    for index, row in enumerate(rows):
        if key not in row:
            raise ValueError(f"coupling key {key!r} is not a column of dataset row {index} (columns: {sorted(row)})")
        found.setdefault(str(row[key]), {}).setdefault(str(row["lang"]), index)
    wanted = list(languages) if languages else sorted({str(row["lang"]) for row in rows})
    units, dropped = [], {}
    for source, by_lang in found.items():
        missing = [lang for lang in wanted if lang not in by_lang]
        if missing:
            dropped[source] = "missing " + ", ".join(missing)
        else:
            units.append([by_lang[lang] for lang in wanted])
    if not units:
        raise ValueError(f"no {key!r} group has every language of {wanted}; dropped: {dict(list(dropped.items())[:5])}")
    return units, dropped


def plan_layout(rows: Sequence[dict], mode: str, baseline: str, key: str, languages: Sequence[str] | None,
                rollouts: int, generation_batch_size: int) -> GroupLayout:
    """The layout for ``coupling`` settings; raises when a group does not fit the generation batch."""
    if mode == "language":
        units, dropped = coupled_units(rows, key, languages)
    else:
        units, dropped = [[i] for i in range(len(rows))], {}
    unit = len(units[0]) * rollouts
    size = generation_batch_size if baseline == "batch" else unit
    if generation_batch_size % unit or generation_batch_size % size:
        raise ValueError(f"the generation batch ({generation_batch_size} completions) must hold whole groups of "
                         f"{size} completions ({len(units[0])} language(s) x {rollouts} rollouts); change "
                         "per_device_train_batch_size, gradient_accumulation_steps or generation_batch_size")
    return GroupLayout(units, rollouts, size, dropped)


def group_ids(rows: Sequence[dict], mode: str, key: str) -> list[str]:
    """The ``group`` column rewards see: the coupling key when coupled, else the prompt (id and language).

    >>> group_ids([{"id": "a", "lang": "fr"}], "none", "id"), group_ids([{"id": "a", "lang": "fr"}], "language", "id")
    (['a/fr'], ['a'])
    """
    if mode == "language":
        return [str(row[key]) for row in rows]
    return [f"{row['id']}/{row['lang']}" for row in rows]


class UnitSampler:
    """trl's ``RepeatSampler`` over units, each unit expanded to its rows × ``rollouts`` contiguous copies."""

    def __init__(self, layout: GroupLayout, units_per_batch: int, repeat_count: int, shuffle: bool,
                 seed: int | None) -> None:
        from trl.trainer.utils import RepeatSampler

        self.layout = layout
        self.order = RepeatSampler(layout.units, mini_repeat_count=1, batch_size=units_per_batch,
                                   repeat_count=repeat_count, shuffle=shuffle, seed=seed)

    def __iter__(self):
        for unit in self.order:
            for row in self.layout.units[unit]:
                for _ in range(self.layout.rollouts):
                    yield row

    def __len__(self) -> int:
        return len(self.order) * self.layout.unit_size


@functools.cache
def grouped_trainer_class() -> type:
    """``GroupedGRPOTrainer``: trl's ``GRPOTrainer`` with a group layout and per-language logs (built on first use)."""
    from trl import GRPOTrainer

    class GroupedGRPOTrainer(GRPOTrainer):
        """Lays out groups with ``layout`` and, with ``log_languages`` (coupled groups), logs per-language advantage
        and reward means (``coupling/*``); uncoupled, nothing is logged for a feature that is off."""

        def __init__(self, *args: Any, layout: GroupLayout, log_languages: bool = True, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.log_languages = log_languages
            if self.use_vllm and self.args.vllm_mode == "server" and layout.group_size != layout.rollouts:
                raise ValueError("coupled groups need vllm_mode 'colocate' (server mode assumes one prompt per group)")
            self.layout = layout
            self.num_generations = layout.group_size  # completions per advantage group, read by trl's normalization
            self._last_rewards = None

        def _get_train_sampler(self, dataset: Any = None) -> UnitSampler:
            generation = self.args.generation_batch_size
            return UnitSampler(self.layout, generation // self.layout.unit_size,
                               self.num_iterations * self.args.steps_per_generation, self.shuffle_dataset,
                               self.args.seed)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            self._last_rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            return self._last_rewards

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            if self.log_languages:
                self._log_languages(inputs, output["advantages"])
            return output

        def _log_languages(self, inputs: list[dict], advantages: Any) -> None:
            from accelerate.utils import gather_object

            mode = "train" if self.model.training else "eval"
            langs = gather_object([str(x.get("lang")) for x in inputs])
            advantages = self.accelerator.gather(advantages).tolist()
            weights = self.reward_weights.to(self._last_rewards.device).unsqueeze(0)
            rewards = (self._last_rewards * weights).nansum(dim=1).tolist()
            for name, values in (("advantage", advantages), ("reward", rewards)):
                for lang in sorted(set(langs)):
                    picked = [v for v, code in zip(values, langs) if code == lang]
                    self._metrics[mode][f"coupling/{name}/{lang}"].append(sum(picked) / len(picked))

    return GroupedGRPOTrainer
