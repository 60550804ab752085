"""ES's settings: each is checked once where ESSettings declares it (every bad one named at once),
the strategy's keyword arguments are exactly the fields with their defaults, and hparams() is
derived from them (the help: tests/strategies/test_strategy_help.py)."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from es_lightning.errors import ConfigError
from es_lightning.strategies import ESStrategy
from es_lightning.strategies.es_settings import ESSettings


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(population_size=0), r"invalid population_size=0 \(must be >= 2"),
        (
            dict(population_size=1),
            r"population_size=1 \(must be >= 2: z-scores of one reward are undefined\)",
        ),
        (
            dict(member_sampling_seeds="shared"),
            r"member_sampling_seeds='shared' \(must be common or independent\)",
        ),
        (dict(member_rollouts="cached"), r"member_rollouts='cached' \(must be regenerate or fixed\)"),
        (dict(population_size=3, estimator="antithetic"), "antithetic needs an even population_size"),
        (dict(antithetic_budget="pairs"), r"antithetic_budget='pairs' \(must be rollouts or directions\)"),
        (dict(update="lazy"), r"update='lazy' \(must be accumulate or redraw\)"),
        (dict(estimator="two_point"), r"estimator='two_point' \(must be one_point or antithetic\)"),
        (dict(normalization="softmax"), r"normalization='softmax' \(must be zscore, rank or none\)"),
        (dict(sigma=0.0), r"sigma=0.0 \(must be > 0\)"),
        (dict(responses_per_prompt=0), r"responses_per_prompt=0 \(must be >= 1\)"),
        (dict(learning_rate=-1.0), r"learning_rate=-1.0 \(must be > 0\)"),
        (dict(sigma=float("nan")), r"sigma=nan \(must be > 0\)"),
        (dict(optimizer="lion"), r"optimizer='lion' \(must be sgd or adam\)"),
        (dict(checksum_tolerance=-1.0), r"checksum_tolerance=-1.0 \(must be >= 0\)"),
        (dict(reward_control="shuffled"), r"reward_control='shuffled' \(must be none or permuted\)"),
        (dict(signal_window=0), r"signal_window=0 \(must be null or >= 1\)"),
        (dict(signal_threshold=0.0), r"signal_threshold=0.0 \(must be > 0\)"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=r"^ESStrategy: "):
        ESStrategy(**kwargs)
    with pytest.raises(ValueError, match=match):
        ESStrategy(**kwargs)


def test_every_bad_setting_is_named_at_once_in_the_signature_order():
    with pytest.raises(ConfigError, match=r"invalid sigma=-1.0 \(must be > 0\); optimizer='lion' \(must be"):
        ESStrategy(optimizer="lion", sigma=-1.0)


def test_strategy_arguments_are_the_settings_fields_with_their_defaults():
    """The recipes' strategy.init_args: every field of ESSettings, in its order, with its default."""
    parameters = inspect.signature(ESStrategy).parameters
    assert [(n, p.default) for n, p in parameters.items()] == [
        (f.name, f.default) for f in fields(ESSettings)
    ]
    strategy = ESStrategy(sigma=1e-3)
    assert isinstance(strategy, ESSettings) and strategy.sigma == 1e-3 and strategy.population_size == 32


def test_hparams_are_the_settings_with_the_resolved_backend():
    hparams = ESStrategy(population_size=8, signal_window=None).hparams()
    assert list(hparams) == [f.name for f in fields(ESSettings)]
    assert hparams["population_size"] == 8 and hparams["signal_window"] is None
    assert hparams["process_group_backend"] is None  # Fabric resolves it when the run starts
