import re

import pytest

from es_lightning.errors import ConfigError
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
        {"checkpoint_steps": [1, 2, 3, 5, 7, 10]},
        {"checkpoint_steps": []},
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
        ({"checkpoint_steps": [1, 0, -2]}, "trainer.checkpoint_steps must be updates >= 1, got [0, -2]"),
        ({"checkpoint_steps": [1, 5, 1]}, "trainer.checkpoint_steps repeats a step: [1, 5, 1]"),
        ({"train_limit": 0}, "trainer.train_limit must be >= 1, got 0"),
        ({"data_offset": -1}, "trainer.data_offset must be >= 0, got -1"),
        ({"num_nodes": 0}, "trainer.num_nodes must be >= 1, got 0"),
        ({"devices": 0}, "trainer.devices must be >= 1"),
        ({"epochs": float("nan")}, "trainer.epochs must be > 0, got nan"),
        ({"output_dir": ""}, "trainer.output_dir is empty"),
        (
            {"precision": "bf16"},
            "trainer.precision 'bf16' is not a Fabric precision; use one of 32-true, bf16-mixed",
        ),
    ],
)
def test_each_validation_error_names_its_field(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainerConfig(**kwargs)


def test_an_output_dir_that_is_a_file_is_refused(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    with pytest.raises(ConfigError, match=f"trainer.output_dir '{taken}' is an existing file"):
        TrainerConfig(output_dir=str(taken))
    assert TrainerConfig(output_dir=str(tmp_path)).output_dir == str(tmp_path)  # a folder is fine


def test_resume_allow_changes_takes_a_bool_or_keys():
    assert TrainerConfig().resume_allow_changes is False
    assert TrainerConfig(resume_allow_changes=["strategy.sigma"]).resume_allow_changes == ["strategy.sigma"]
