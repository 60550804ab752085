"""EvalConfig refuses nonsensical settings, naming the ``evaluation.*`` option."""

import pytest

from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_samples": 0}, "evaluation.num_samples must be >= 1, got 0"),
        ({"num_samples": 4, "ks": [1, 8]}, "evaluation.ks [8] out of range 1..num_samples=4"),
        ({"ks": []}, "evaluation.ks is an empty list"),
        ({"limit": 0}, "evaluation.limit must be >= 1, got 0"),
        ({"temperature": -0.1}, "evaluation.temperature must be >= 0, got -0.1"),
        ({"top_p": 0.0}, "evaluation.top_p must be in (0, 1], got 0.0"),
        ({"max_tokens": 0}, "evaluation.max_tokens must be >= 1, got 0"),
        ({"split": "train"}, "evaluation.split must be one of test, validation, got 'train'"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ConfigError) as err:
        EvalConfig(**kwargs)
    assert message in str(err.value)


def test_boundaries_are_accepted():
    config = EvalConfig(num_samples=4, ks=[1, 4], temperature=0.0, top_p=1.0, max_tokens=1, limit=1)
    assert config.ks == [1, 4]
    assert EvalConfig().split == "test" and EvalConfig(split="validation").split == "validation"
