import re

import pytest

from es_lightning.training.config import TrainerConfig


def test_defaults_are_valid():
    cfg = TrainerConfig()
    assert (cfg.max_steps, cfg.epochs, cfg.batch_size, cfg.seed, cfg.resume) == (None, 1.0, 64, 0, False)
    assert (cfg.checkpoint_every, cfg.eval_every, cfg.train_limit) == (0, 0, None)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_steps": 0},
        {"epochs": 0.01},
        {"batch_size": 1},
        {"train_limit": 1},
        {"checkpoint_every": 0, "eval_every": 0},
        {"checkpoint_every": 5, "eval_every": 3},
    ],
)
def test_boundary_values_are_accepted(kwargs):
    cfg = TrainerConfig(**kwargs)
    for key, value in kwargs.items():
        assert getattr(cfg, key) == value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_steps": -1}, "trainer.max_steps must be >= 0, got -1"),
        ({"epochs": 0}, "trainer.epochs must be > 0, got 0"),
        ({"epochs": -0.5}, "trainer.epochs must be > 0, got -0.5"),
        ({"batch_size": 0}, "trainer.batch_size must be >= 1, got 0"),
        ({"checkpoint_every": -1}, "trainer.checkpoint_every"),
        ({"eval_every": -2}, "trainer.eval_every"),
        ({"train_limit": 0}, "trainer.train_limit must be >= 1, got 0"),
    ],
)
def test_each_validation_error_names_its_field(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainerConfig(**kwargs)
