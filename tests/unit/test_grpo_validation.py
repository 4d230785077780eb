"""Validation curves during GRPO: per-language accuracy, LCPR and response length of the held-out answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.generation import Completion
from components.settings import GRPOStageSettings, GRPOValidationSettings
from components.training.validation import ValidationCallback, validation_metrics

FR_RIGHT = "<think>\nJanet a seize œufs et elle en vend trois au marché.\n</think>\n\nLa réponse est \\boxed{13}."
FR_WRONG = "<think>\nJanet has sixteen eggs and she sells three at the market.\n</think>\n\n\\boxed{12}"
JA_RIGHT = "<think>\nジャネットは卵を十六個持っていて、三個を市場で売ります。\n</think>\n\n答えは \\boxed{13} です。"


def test_metrics_per_language_and_overall():
    rows = [{"id": "a", "lang": "fr", "gold": "13"}, {"id": "b", "lang": "fr", "gold": "13"},
            {"id": "c", "lang": "ja", "gold": "13"}]
    outputs = [[Completion(FR_RIGHT, 30)], [Completion(FR_WRONG, 10)], [Completion(JA_RIGHT, 20)]]
    metrics = validation_metrics(rows, outputs, "trusted")
    assert metrics["validation/accuracy/fr"] == 0.5 and metrics["validation/accuracy/ja"] == 1.0
    # LPR 1/2 (the English trace fails the line level), WPR 1: LCPR = 2 * 0.5 * 1 / 1.5
    assert metrics["validation/lcpr/fr"] == pytest.approx(2 / 3)
    assert metrics["validation/lcpr/ja"] == 1.0
    assert metrics["validation/response_length/fr"] == 20.0 and metrics["validation/response_length/overall"] == 20.0
    assert metrics["validation/accuracy/overall"] == pytest.approx(2 / 3)
    # fr: two problems, one right; the ideal bootstrap's mean is 0, 1/2 or 1 w.p. 1/4, 1/2, 1/4: sd sqrt(1/8)
    assert metrics["validation/accuracy_n/fr"] == 2
    assert metrics["validation/accuracy_stderr/fr"] == pytest.approx((1 / 8) ** 0.5, abs=0.03)
    assert "validation/accuracy_stderr/ja" not in metrics  # one problem: no standard error


class Model:
    """Stands in for the policy: records train/eval switches; generation is replaced below."""

    training = True

    def eval(self):
        self.training = False

    def train(self, mode=True):
        self.training = mode


def test_callback_validates_at_its_steps_and_restores_training_mode(monkeypatch):
    import components.training.validation as validation

    written = []
    monkeypatch.setattr(validation._PolicyGenerator, "__init__", lambda self, model, tokenizer: None)
    monkeypatch.setattr(validation._PolicyGenerator, "generate",
                        lambda self, prompts, sampling: [[Completion("\\boxed{13}", 3)] for _ in prompts])
    settings = GRPOValidationSettings(enabled=True, every_n_steps=2)
    rows = [{"id": "a", "lang": "fr", "gold": "13", "prompt": "P"}]
    callback = ValidationCallback(rows, settings, tokenizer=None, write=lambda step, values: written.append(step))
    model = Model()
    callback.on_train_begin(None, SimpleNamespace(global_step=0, is_world_process_zero=True), None, model=model)
    for step in (1, 2, 3, 4):
        callback.on_step_end(None, SimpleNamespace(global_step=step, is_world_process_zero=True), None, model=model)
    assert written == [0, 2, 4] and model.training is True
    resumed = ValidationCallback(rows, settings, tokenizer=None, write=lambda step, values: written.append(step))
    resumed.on_train_begin(None, SimpleNamespace(global_step=4, is_world_process_zero=True), None, model=model)
    assert written == [0, 2, 4]  # a resumed run does not validate "before training" again


def test_validation_settings_are_refused_while_validation_is_off():
    with pytest.raises(ValueError, match="read only when validation.enabled is true"):
        GRPOValidationSettings(every_n_steps=5)


def test_the_held_out_split_beside_the_training_set_is_the_default(tmp_path):
    from tasks.grpo import validation_dataset

    train = tmp_path / "rl_train.parquet"
    section = GRPOStageSettings(model={"model": "m"}, dataset=str(train), validation={"enabled": True})
    with pytest.raises(FileNotFoundError, match="no validation set at .*rl_validation.parquet"):
        validation_dataset(section, str(train))
    (tmp_path / "rl_validation.parquet").write_bytes(b"")
    assert validation_dataset(section, str(train)) == str(tmp_path / "rl_validation.parquet")
    assert validation_dataset(section.model_copy(update={"validation": GRPOValidationSettings()}), str(train)) is None
