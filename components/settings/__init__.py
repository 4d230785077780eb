"""Typed, frozen profile settings: one section class per stage, validated on construction.

A leaf package: its modules import nothing else of ours, so every component can
import its settings from here. The registry names a profile uses are checked
through the ``Registries`` handed to the validation (``components.settings.registries``;
``components.catalog`` implements them over the real registries and installs them).
``components.config`` loads YAML profiles and applies overrides.
"""

from components.settings.audit import AuditSettings
from components.settings.base import (
    REVEAL_CREDENTIALS, ProfileError, StrictSettings, cache_view, check_registered, redact_credentials,
)  # fmt: skip
from components.settings.data import (
    DataSettings, DataSourceSettings, RejectionSettings, TraceSettings, TranslationSettings,
)  # fmt: skip
from components.settings.evaluation import BenchmarkSettings, EvaluationSettings, ScoringSettings
from components.settings.execution import ExecutionSettings
from components.settings.lcrl import CouplingSettings, LcRLSettings, RetrievalSettings, SearchSettings
from components.settings.profile import NightlySettings, Profile, RegistrySettings, resolve_path
from components.settings.registries import CHECKED_UPSTREAM, REGISTRIES, Registries, use_registries
from components.settings.shared import LoraSettings, ModelSettings, PromptSettings, SamplingSettings, TrackingSettings
from components.settings.rewards import RewardAuditSettings, RewardSettings
from components.settings.training import GRPOStageSettings, GRPOValidationSettings, KLResetSettings, SFTSettings

SECTIONS = (
    TrackingSettings, ModelSettings, SamplingSettings, PromptSettings, LoraSettings, BenchmarkSettings,
    ScoringSettings, EvaluationSettings, AuditSettings, DataSourceSettings, TranslationSettings, TraceSettings,
    RejectionSettings, DataSettings, SFTSettings, RewardSettings, KLResetSettings, RewardAuditSettings,
    GRPOValidationSettings, CouplingSettings, RetrievalSettings, SearchSettings, LcRLSettings, GRPOStageSettings,
    RegistrySettings, NightlySettings, ExecutionSettings, Profile,
)  # fmt: skip

__all__ = [cls.__name__ for cls in SECTIONS] + [
    "CHECKED_UPSTREAM", "REGISTRIES", "REVEAL_CREDENTIALS", "ProfileError", "Registries", "SECTIONS",
    "StrictSettings", "cache_view", "check_registered", "redact_credentials", "resolve_path", "use_registries",
]
