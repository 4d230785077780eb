"""A trainer section is trl's own configuration plus polyreason's fields.

The ``sft`` and ``grpo`` sections of a profile hold two kinds of keys:

* polyreason's own fields, typed on the section (the model, the dataset, rewards,
  LoRA, curricula, the audit, sampling, how the trainer process is launched);
* every other key is a field of trl's ``SFTConfig`` / ``GRPOConfig`` and reaches
  it unchanged, so every option of the installed trl is usable from a profile and
  from a ``key=value`` override (``grpo.top_entropy_quantile=0.2``), and a new
  trl release needs no change here.

When a section is validated, trl's config class is imported (inside the
validator: importing the settings never imports trl) and decides:

1. a key trl's config does not have is refused with the ``TypeError`` the config
   raises for it, and the closest field names;
2. each value is checked against the type trl annotates the field with (coerced
   as pydantic does, so YAML's ``1e-5``, a string, becomes a float) and against
   the ``choices`` trl declares for it;
3. the section's own defaults (``TRL_DEFAULTS``: AdaMame's recipe) fill the trl
   keys the profile leaves out, so a dumped section holds what trl receives;
4. trl's config is constructed from those keys plus the values polyreason
   derives, so the checks of its ``__post_init__`` run with its own message.

trl leaves counts unbounded; a trl key that is not a finite number within 64 bits, or a count
above ``TRL_BOUNDS`` (``max_steps``, batch sizes, lengths), is refused before trl sees it.

Values the project decides are refused as trl keys, naming the polyreason key
that sets them: those derived from the section's own fields (``TRL_DERIVED`` on
the section: ``num_generations`` is ``sampling.n``), those decided by where the
trainer runs (``TRL_RUNTIME``: the output directory, precision from
``model.dtype``/``model.device``, no ``report_to`` integration) and those with no
effect on polyreason's trainers (``TRL_REFUSED``, which a section may extend).

What trl checks only once it trains (GRPO's ``loss_type`` and ``scale_rewards``
are read inside its loss) is checked then, with trl's message. A warm-up that the
chosen ``lr_scheduler_type`` does not apply (transformers builds ``constant``,
``reduce_lr_on_plateau`` and ``greedy`` without one) is refused, naming both keys.

Importing trl takes seconds (it imports torch and transformers), so a command
that trains no section need not pay it: validated with the context
``{TRL_CHECKS: names}``, only the trainer sections named there are checked by
trl and transformers (steps 1, 2, 4 and the warm-up rule); the others keep their
trl keys as given, with the refusals above and the section's defaults, and say
so (``trl_checked`` is false), and building a trainer from one
(``trl_arguments``) is refused. Without the context every section is checked.
``components.config.checked_trainers`` checks them later, with the same errors.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from functools import cached_property, lru_cache
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError, ValidationInfo, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from components.settings.base import (
    MAX_BATCH, MAX_STEPS, MAX_TOKENS, StrictSettings, changed_fields, number_problems,
)  # fmt: skip

TRL_RUNTIME = {  # set by the training job for the machine it runs on (components.training.runner)
    "output_dir": "the trainer writes under the stage's artifact directory",
    "use_cpu": "set model.device",
    "bf16": "set model.dtype and model.device (bfloat16 weights on CUDA train with bf16)",
    "fp16": "set model.dtype",
    "report_to": "metrics go to the stage's metrics.jsonl and its MLflow run",
}
TRL_REFUSED = {  # trl keys that cannot do what they say in polyreason's trainers (a section may add its own)
    "model_init_kwargs": "polyreason loads the model itself: set model.dtype and model.device",
    "resume_from_checkpoint": "trl's trainers do not read it; set resume (the last complete checkpoint)",
    "do_train": "trl's trainers do not read it (it is for training scripts)",
    "do_eval": "trl's trainers do not read it (it is for training scripts)",
    "do_predict": "trl's trainers do not read it (it is for training scripts)",
    "eval_strategy": "the trainer gets no evaluation set; the evaluation section measures the model",
}
TRL_OPERATIONAL = {  # trl keys that change how the trainer reports or loads data, not what it trains or logs
    "disable_tqdm": "progress bars in the trainer's log",
    "log_level": "how much the trainer's log says",
    "log_level_replica": "how much the other processes' logs say",
    "run_name": "a name for report_to integrations, which polyreason leaves off",
    "dataloader_num_workers": "how many processes load the same batches",
    "dataloader_prefetch_factor": "how far ahead batches are loaded",
    "dataloader_persistent_workers": "whether loader processes are kept between epochs",
    "dataloader_pin_memory": "how batches are copied to the device",
}
TRL_BOUNDS = {  # trl keys of counts, which trl leaves unbounded: the most polyreason accepts (see settings.base)
    "max_steps": MAX_STEPS, "num_train_epochs": 100_000, "save_steps": MAX_STEPS, "logging_steps": MAX_STEPS,
    "eval_steps": MAX_STEPS, "per_device_train_batch_size": MAX_BATCH, "per_device_eval_batch_size": MAX_BATCH,
    "gradient_accumulation_steps": MAX_BATCH, "generation_batch_size": MAX_BATCH, "steps_per_generation": MAX_STEPS,
    "num_iterations": 10_000, "max_length": MAX_TOKENS, "max_prompt_length": MAX_TOKENS,
    "max_completion_length": MAX_TOKENS, "save_total_limit": 100_000, "warmup_steps": MAX_STEPS,
}
VALIDATION_RUNTIME = {"output_dir": "trainer", "use_cpu": True, "bf16": False, "fp16": False, "report_to": []}
TRL_CHECKS = "trl_checks"  # validation-context key: the trainer sections trl checks now (absent: every one)


def trl_checks_wanted(section: str, info: ValidationInfo | None) -> bool:
    """Whether the trainer section ``section`` is checked by trl in this validation (see ``TRL_CHECKS``)."""
    context = info.context if info is not None else None
    return not context or TRL_CHECKS not in context or section in context[TRL_CHECKS]


def trl_config_class(name: str) -> type:
    """trl's ``SFTConfig`` or ``GRPOConfig``, imported now."""
    import trl

    return getattr(trl, name)


@lru_cache(maxsize=4)
def trl_fields(name: str) -> dict[str, dataclasses.Field]:
    """The fields of trl's config ``name`` that its constructor takes."""
    return {field.name: field for field in dataclasses.fields(trl_config_class(name)) if field.init}


def trl_default(name: str, key: str) -> Any:
    """trl's own default of field ``key``."""
    field = trl_fields(name)[key]
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default


@lru_cache(maxsize=512)
def _adapter(name: str, key: str) -> TypeAdapter:
    hint = typing.get_type_hints(trl_config_class(name))[key]
    return TypeAdapter(hint, config=ConfigDict(arbitrary_types_allowed=True))


def checked_option(name: str, key: str, value: Any) -> Any:
    """``value`` as trl's config ``name`` declares field ``key`` (JSON data); ``ValueError`` says why not."""
    if key not in trl_fields(name):
        try:
            trl_config_class(name)(**{key: value})
        except TypeError as error:  # the message trl's dataclass gives for a field it does not have
            close = difflib.get_close_matches(key, trl_fields(name), n=3)
            hint = f" (closest: {', '.join(close)})" if close else ""
            raise ValueError(f"neither a field of this section nor of trl's {name}: {error}{hint}") from None
    adapter = _adapter(name, key)
    try:
        value = adapter.dump_python(adapter.validate_python(value), mode="json")
    except ValidationError as error:
        hint = typing.get_type_hints(trl_config_class(name))[key]
        reasons = "; ".join(dict.fromkeys(e["msg"] for e in error.errors()))
        raise ValueError(f"trl's {name} declares it {getattr(hint, '__name__', hint)}: {reasons}") from None
    choices = trl_fields(name)[key].metadata.get("choices")
    if choices is not None and value not in choices:
        raise ValueError(f"trl's {name} accepts {', '.join(map(repr, choices))}; got {value!r}")
    return value


@lru_cache(maxsize=4)
def _checking_class(name: str) -> type:
    """trl's config with device set-up left out, so checking a profile touches no accelerate/torch state.

    Constructing ``TrainingArguments`` sets up accelerate's process state (and, in
    a launched trainer process, its process group); a profile is checked in the
    CLI, in flow runs and in the trainer process before the real config is built,
    so the check runs on one CPU process instead: trl's checks that depend on the
    number of processes run again, for real, when the trainer builds its config.
    """
    import torch

    class Checking(trl_config_class(name)):  # type: ignore[misc, valid-type]
        @cached_property
        def _setup_devices(self) -> Any:
            self.distributed_state, self._n_gpu = None, 0
            return torch.device("cpu")

    Checking.__name__ = Checking.__qualname__ = name
    return Checking


def scheduler_takes_warmup(name: Any) -> bool:
    """Whether transformers' schedule for ``lr_scheduler_type`` ``name`` applies a warm-up.

    ``transformers.get_scheduler`` passes ``num_warmup_steps`` only to the schedule
    functions that declare it (``constant`` and ``reduce_lr_on_plateau`` do not), so
    the signature in its table says whether a warm-up does anything. An unknown
    name is left to trl's own check.
    """
    import inspect

    from transformers.optimization import TYPE_TO_SCHEDULER_FUNCTION, SchedulerType

    try:
        function = TYPE_TO_SCHEDULER_FUNCTION[SchedulerType(getattr(name, "value", name))]
    except (ValueError, KeyError):
        return True
    return "num_warmup_steps" in inspect.signature(function).parameters


def construction_problem(name: str, arguments: dict[str, Any], derived: dict[str, str]) -> str | None:
    """What trl's config refuses in ``arguments`` (``None``: nothing); derived names get their polyreason key."""
    try:
        _checking_class(name)(**arguments)
    except Exception as error:  # noqa: BLE001 - any refusal of trl's __post_init__ is the profile's problem
        text = f"trl's {name} refuses these settings: {error}"
        notes = [f"{key} is {own} here" for key, own in derived.items() if key in str(error)]
        return text + (f" ({'; '.join(notes)})" if notes else "")
    return None


def out_of_bounds(key: str, value: Any) -> str | None:
    """Why trl key ``key`` cannot hold ``value`` in polyreason: not finite, beyond 64 bits, or above ``TRL_BOUNDS``.

    >>> out_of_bounds("max_steps", 10**9), out_of_bounds("max_steps", 40), out_of_bounds("beta", float("nan"))
    ('at most 100000000 (a count this large is a typo)', None, 'nan is not a finite number')
    """
    problems = number_problems(value, key)
    if problems:
        return problems[0].split(": ", 1)[1]
    bound = TRL_BOUNDS.get(key)
    if bound is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value > bound:
        return f"at most {bound} (a count this large is a typo)"
    return None


class TrainerSettings(StrictSettings):
    """Base of the trainer sections: typed polyreason fields, every other key a field of trl's config."""

    model_config = ConfigDict(extra="allow", frozen=True)

    SECTION: ClassVar[str] = ""  # the profile key of the section ("sft", "grpo")
    TRL_CONFIG: ClassVar[str] = ""
    TRL_DEFAULTS: ClassVar[dict[str, Any]] = {}
    TRL_DERIVED: ClassVar[dict[str, str]] = {}  # trl key -> the section's own key that decides it
    TRL_REFUSED: ClassVar[dict[str, str]] = TRL_REFUSED  # trl key -> why it cannot be set here

    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    _trl_checked: bool = PrivateAttr(default=True)

    @model_validator(mode="wrap")
    @classmethod
    def _trl_keys(cls, data: Any, handler: Any, info: ValidationInfo) -> "TrainerSettings":
        if not isinstance(data, dict):
            return handler(data)
        wanted = trl_checks_wanted(cls.SECTION, info)
        own = {key: value for key, value in data.items() if key in cls.model_fields}
        given = {k: v for k, v in data.items() if k not in cls.model_fields}
        options, problems = cls._checked_options(given, by_trl=wanted)
        try:
            section = handler({**own, **options})
        except ValidationError as error:
            if not problems:
                raise
            raise _merged(cls.__name__, problems, error.errors()) from None
        if problems:
            raise _merged(cls.__name__, problems, [])
        section._trl_checked = wanted
        return section

    @classmethod
    def _checked_options(cls, given: dict[str, Any],
                         by_trl: bool = True) -> tuple[dict[str, Any], list[tuple[str, Any, str]]]:
        """The trl keys (defaults filled) and their problems; ``by_trl`` false: only polyreason's refusals."""
        options, problems = {}, []
        for key, value in given.items():
            refusal = cls.trl_refusal(key) or out_of_bounds(key, value)
            if refusal:
                problems.append((key, value, refusal))
                continue
            try:
                options[key] = checked_option(cls.TRL_CONFIG, key, value) if by_trl else value
            except ValueError as error:
                problems.append((key, value, str(error)))
                continue
            if (refusal := out_of_bounds(key, options[key])) is not None:  # a string trl read as a number
                problems.append((key, value, refusal))
        return {**{k: v for k, v in cls.TRL_DEFAULTS.items() if k not in given}, **options}, problems

    @classmethod
    def trl_refusal(cls, key: str) -> str | None:
        """Why trl key ``key`` cannot be set in this section (``None``: it can)."""
        if key in cls.TRL_DERIVED:
            return f"decided by polyreason: set {cls.TRL_DERIVED[key]} instead"
        if key in TRL_RUNTIME:
            return f"decided by polyreason: {TRL_RUNTIME[key]}"
        return f"not usable here: {cls.TRL_REFUSED[key]}" if key in cls.TRL_REFUSED else None

    @model_validator(mode="after")
    def _one_warmup(self) -> "TrainerSettings":
        if "warmup_steps" in self.trl_options and changed_fields(self, ("warmup_ratio",)):
            raise ValueError("warmup_ratio and warmup_steps both set the warm-up; keep one")
        return self

    @model_validator(mode="after")
    def _warmup_applied(self, info: ValidationInfo) -> "TrainerSettings":
        if not trl_checks_wanted(self.SECTION, info):
            return self
        given = "warmup_steps" if "warmup_steps" in self.trl_options else "warmup_ratio"
        warmup = self.trl_options.get("warmup_steps", self.warmup_ratio)
        scheduler = self.trl_option("lr_scheduler_type")
        if warmup and not scheduler_takes_warmup(scheduler):
            raise ValueError(f"{given} {warmup:g} with lr_scheduler_type {scheduler!r}: transformers builds that "
                             "schedule without a warm-up, so the warm-up would be ignored; choose a scheduler that "
                             "warms up (e.g. constant_with_warmup, cosine) or set the warm-up to 0")
        return self

    @model_validator(mode="after")
    def _trl_accepts(self, info: ValidationInfo) -> "TrainerSettings":
        if not trl_checks_wanted(self.SECTION, info):
            return self
        arguments = {**self.trl_options, **self.trl_derived(), **VALIDATION_RUNTIME}
        problem = construction_problem(self.TRL_CONFIG, arguments, self.TRL_DERIVED)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def trl_checked(self) -> bool:
        """Whether trl checked this section's keys (false: loaded for a command that does not train it)."""
        return self._trl_checked

    def require_trl_checked(self) -> None:
        """Refuse to hand trl the keys of a section that trl has not checked (a programming error)."""
        if not self._trl_checked:
            raise RuntimeError(f"the {self.SECTION} section was loaded without trl's checks; check it first "
                               "(components.config.checked_trainers)")

    @property
    def trl_options(self) -> dict[str, Any]:
        """The section's trl keys as trl receives them (the section's defaults filled in)."""
        return dict(self.__pydantic_extra__ or {})

    def trl_option(self, key: str) -> Any:
        """One trl key: as given, else the section's default, else trl's own default."""
        options = self.__pydantic_extra__ or {}
        return options[key] if key in options else trl_default(self.TRL_CONFIG, key)

    def changed_trl_options(self, prefix: str = "") -> list[str]:
        """The trl keys starting with ``prefix`` whose value differs from the default (the section's, else trl's)."""
        def default(key: str) -> Any:
            return self.TRL_DEFAULTS[key] if key in self.TRL_DEFAULTS else trl_default(self.TRL_CONFIG, key)

        return sorted(key for key, value in self.trl_options.items() if key.startswith(prefix) and value != default(key))

    def trl_derived(self) -> dict[str, Any]:
        """The trl values polyreason derives from the section's own fields (``TRL_DERIVED`` and the warm-up).

        transformers 5 has no ``warmup_ratio``: a ``warmup_steps`` below 1 is the
        fraction of the run, which is what the papers give, so ``warmup_ratio``
        stays a field of the section and becomes ``warmup_steps`` unless that is
        given itself.
        """
        return {} if "warmup_steps" in self.trl_options else {"warmup_steps": self.warmup_ratio}

    def trl_arguments(self, runtime: dict[str, Any]) -> dict[str, Any]:
        """Everything trl's config is built with: the trl keys, the derived values and ``runtime``."""
        self.require_trl_checked()
        if set(runtime) != set(TRL_RUNTIME):
            raise ValueError(f"runtime values {sorted(runtime)} are not {sorted(TRL_RUNTIME)}")
        return {**self.trl_options, **self.trl_derived(), **runtime}


def _merged(title: str, problems: list[tuple[str, Any, str]], errors: list[dict]) -> ValidationError:
    """One ``ValidationError`` holding the trl-key problems (by key) and the section's other errors."""
    details = [InitErrorDetails(type=PydanticCustomError("trl_option", "{message}", {"message": message}),
                                loc=(key,), input=value) for key, value, message in problems]
    details += [InitErrorDetails(type=PydanticCustomError(error["type"], "{message}", {"message": error["msg"]}),
                                 loc=error["loc"], input=error.get("input")) for error in errors]
    return ValidationError.from_exception_data(title, details)
