"""Budget split and naming of sequential pipelines."""

from __future__ import annotations

import pytest

from es_lightning.strategies import ESStrategy, GRPOStrategy
from es_lightning.training.pipeline import Stage, pipeline_name, split_budget, stage_names


def test_split_budget_rounds_and_gives_the_remainder_to_the_last_stage():
    halves = [Stage(ESStrategy()), Stage(GRPOStrategy())]
    assert split_budget(10, halves) == [5, 5]
    assert split_budget(11, halves) == [6, 5]  # round(5.5) = 6 (banker's rounding gives 6 too)
    thirds = [Stage(ESStrategy(), 0.3), Stage(GRPOStrategy(), 0.3), Stage(ESStrategy(), 0.4, name="es2")]
    assert split_budget(10, thirds) == [3, 3, 4]


@pytest.mark.parametrize(
    ("fractions", "total", "match"),
    [([0.5, 0.4], 10, "add up to 1"), ([1.0, 0.0], 10, "positive"), ([0.5, 0.5], 1, "none")],
)
def test_split_budget_errors(fractions, total, match):
    stages = [Stage(ESStrategy(), f) for f in fractions]
    with pytest.raises(ValueError, match=match):
        split_budget(total, stages)


def test_names():
    stages = [Stage(GRPOStrategy()), Stage(ESStrategy())]
    assert stage_names(stages) == ["grpo", "es"]
    assert pipeline_name(stage_names(stages)) == "grpo_then_es"
