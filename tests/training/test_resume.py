"""check_resume_compatible on real checkpoints (save_checkpoint), shaped as the trainer writes them."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from es_lightning.checkpoint import Checkpoint, save_checkpoint
from es_lightning.errors import ConfigError
from es_lightning.strategies import ESStrategy, GRPOStrategy
from es_lightning.training.config import TrainerConfig
from es_lightning.training.resume import check_resume_compatible

CONFIG = TrainerConfig(output_dir="runs/a", max_steps=10, batch_size=8, seed=3)


def _checkpoint(
    tmp_path: Path, meta_dir: Path, strategy, config: TrainerConfig = CONFIG, hparams: bool = True
) -> Checkpoint:
    """A checkpoint as Trainer.save writes it (hparams as Trainer._hparams builds them)."""
    recorded = {
        "strategy": {"name": strategy.strategy_name, **strategy.hparams()},
        "trainer": asdict(config),
        "model": "es-lightning/tiny-random",
        "task": "gsm8k",
        "run_config": {"trainer": {"max_steps": config.max_steps}},
    }
    folder = save_checkpoint(
        tmp_path / "run",
        4,
        iter([("w", torch.ones(2))]),
        serving_dtype=torch.float32,
        meta_dir=meta_dir,
        strategy_name=strategy.strategy_name,
        write_state=lambda folder: None,
        trainer_state={"seed": config.seed, "source_model": "es-lightning/tiny-random"},
        hparams=recorded if hparams else None,
    )
    return Checkpoint(folder)


def _check(ckpt: Checkpoint, strategy, config: TrainerConfig = CONFIG, **kwargs) -> list[str]:
    return check_resume_compatible(ckpt, strategy.strategy_name, strategy.hparams(), config, **kwargs)


def test_the_same_settings_resume(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy(sigma=1e-3, learning_rate=2e-3))
    assert _check(ckpt, ESStrategy(sigma=1e-3, learning_rate=2e-3), task_name="gsm8k") == []


def test_changes_that_decide_an_update_are_refused_and_each_is_listed(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy(population_size=8, sigma=1e-3, learning_rate=2e-3))
    changed = ESStrategy(population_size=16, sigma=2e-3, learning_rate=5e-3)
    config = replace(CONFIG, seed=4, batch_size=16)
    with pytest.raises(ConfigError) as err:
        _check(ckpt, changed, config)
    message = str(err.value)
    assert str(ckpt.path) in message
    for line in (
        "strategy.population_size: 8 → 16",
        "strategy.sigma: 0.001 → 0.002",
        "strategy.learning_rate: 0.002 → 0.005",
        "trainer.seed: 3 → 4",
        "trainer.batch_size: 8 → 16",
    ):
        assert line in message
    assert "resume_allow_changes" in message


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        (dict(normalization="rank"), "strategy.normalization: 'zscore' → 'rank'"),
        (dict(estimator="antithetic"), "strategy.estimator: 'one_point' → 'antithetic'"),
        (dict(optimizer="adam"), "strategy.optimizer: 'sgd' → 'adam'"),
        (dict(responses_per_prompt=2), "strategy.responses_per_prompt: 1 → 2"),
        (dict(member_rollouts="fixed"), "strategy.member_rollouts"),
        (dict(member_sampling_seeds="independent"), "strategy.member_sampling_seeds"),
        (dict(estimator="antithetic", antithetic_budget="directions"), "strategy.antithetic_budget"),
    ],
)
def test_every_es_setting_of_the_update_is_guarded(tmp_path, meta_dir, kwargs, key):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy())
    with pytest.raises(ConfigError, match=key):
        _check(ckpt, ESStrategy(**kwargs))


def test_how_the_es_update_is_summed_may_change(tmp_path, meta_dir):
    """``update`` (accumulate or redraw) changes only the order of float32 sums, like GRPO's
    micro-batches: a resume may switch it."""
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy(update="redraw"))
    assert _check(ckpt, ESStrategy(update="accumulate")) == []


def test_grpo_settings_are_guarded_and_memory_knobs_are_free(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, GRPOStrategy(group_size=8, learning_rate=1e-6))
    free = GRPOStrategy(group_size=8, learning_rate=1e-6, micro_batch_size=2, gradient_checkpointing=True)
    assert _check(ckpt, free) == []
    for changed, key in (
        (GRPOStrategy(group_size=4, learning_rate=1e-6), "strategy.group_size: 8 → 4"),
        (GRPOStrategy(learning_rate=1e-5), "strategy.learning_rate: 1e-06 → 1e-05"),
        (GRPOStrategy(adam_betas=(0.9, 0.95)), "strategy.adam_betas: [0.9, 0.999] → [0.9, 0.95]"),
        (GRPOStrategy(clip_eps=0.1), "strategy.clip_eps: 0.2 → 0.1"),
        (GRPOStrategy(loss_aggregation="sequence_mean"), "strategy.loss_aggregation"),
    ):
        with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
            _check(ckpt, changed)


def test_another_strategy_is_refused_by_name(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy())
    with pytest.raises(ConfigError, match="strategy.name: 'es' → 'grpo'"):
        _check(ckpt, GRPOStrategy())


def test_run_length_evaluation_and_logging_may_change(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy())
    config = replace(
        CONFIG,
        output_dir="runs/elsewhere",
        max_steps=50,
        epochs=3.0,
        eval_every=5,
        checkpoint_every=2,
        progress_bar=False,
        devices=2,
        resume=True,
    )
    assert _check(ckpt, ESStrategy(checksum_tolerance=1e-6), config) == []


def test_allowed_changes_pass_and_are_returned(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy(sigma=1e-3))
    changed, config = ESStrategy(sigma=2e-3), replace(CONFIG, batch_size=16)
    assert _check(ckpt, changed, config, allow_changes=True) == [
        "strategy.sigma: 0.001 → 0.002",
        "trainer.batch_size: 8 → 16",
    ]
    # a list allows the keys it names, as the refusal names them or bare
    assert len(_check(ckpt, changed, config, allow_changes=["strategy.sigma", "batch_size"])) == 2
    with pytest.raises(ConfigError, match="trainer.batch_size: 8 → 16") as err:
        _check(ckpt, changed, config, allow_changes=["sigma"])
    assert "strategy.sigma" not in str(err.value)
    # by default the run's trainer.resume_allow_changes decides
    assert len(_check(ckpt, changed, replace(config, resume_allow_changes=True))) == 2
    with pytest.raises(ConfigError):
        _check(ckpt, changed, config)


def test_the_task_is_compared_when_given(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy())
    with pytest.raises(ConfigError, match="task: 'gsm8k' → 'math'"):
        _check(ckpt, ESStrategy(), task_name="math")


def test_a_checkpoint_without_hparams_still_checks_seed_and_strategy(tmp_path, meta_dir):
    ckpt = _checkpoint(tmp_path, meta_dir, ESStrategy(), hparams=False)
    assert ckpt.hparams() == {}
    assert _check(ckpt, ESStrategy(sigma=0.5)) == []  # nothing recorded to compare σ with
    with pytest.raises(ConfigError, match="trainer.seed: 3 → 9"):
        _check(ckpt, ESStrategy(), replace(CONFIG, seed=9))
    with pytest.raises(ConfigError, match="strategy.name: 'es' → 'grpo'"):
        _check(ckpt, GRPOStrategy())
