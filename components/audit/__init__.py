"""Reward audit ("Multilingual verifier bias in RLVR", arXiv 2608.20362).

* ``stress``      — answer-format stress suite over ``stress_table.yaml``;
* ``diagnostics`` — per-language FNR / FPR / Err of proxy verifiers vs ``trusted`` and their VLB;
* ``probe``       — number-only answer-interface probe (format effect vs capability gap);
* ``selection``   — local majority vs cross-lingual aggregation vs oracle;
* ``guard``       — ``check_reward_verifier`` for the GRPO stage (``RewardBiasError``);
* ``report``      — flat MLflow metric names, table records and the FNR bar chart.
"""

from components.audit.diagnostics import Judgement, LanguageRates, VerifierDiagnostics, diagnose, judge_rows, vlb
from components.audit.guard import GuardResult, RewardBiasError, check_reward_verifier
from components.audit.probe import interface_probe, number_only_instruction, number_only_prompt
from components.audit.selection import selection_report
from components.audit.stress import build_variants, run_stress

__all__ = [
    "GuardResult", "Judgement", "LanguageRates", "RewardBiasError", "VerifierDiagnostics", "build_variants",
    "check_reward_verifier", "diagnose", "interface_probe", "judge_rows", "number_only_instruction",
    "number_only_prompt", "run_stress", "selection_report", "vlb",
]
