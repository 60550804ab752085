"""The tune's settings refuse what would make the tuning unfair or read the test split."""

import pytest

from es_lightning.errors import ConfigError
from es_lightning.tune.config import Selection, TuneMethod, check_overrides, option_name


@pytest.mark.parametrize(
    ("grid", "match"),
    [
        ({}, "the grid is empty"),
        ({"strategy.init_args.sigma": []}, "grid parameter 'strategy.init_args.sigma' has no values"),
        ({"strategy.init_args.sigma": [1e-3, 1e-3]}, "repeats values"),
        ({"evaluation.split": ["test"]}, "sets 'evaluation.split', which the tune sets itself"),
        ({"callbacks": ["[]"]}, "sets 'callbacks'"),
        ({"trainer.seed": [0, 1]}, "sets 'trainer.seed'"),
    ],
)
def test_bad_grids_are_named(grid, match):
    with pytest.raises(ConfigError, match=match):
        TuneMethod(recipe="recipes/coverage_cpu_es.yaml", grid=grid)


def test_option_names_of_tokens():
    assert option_name("--trainer.max_steps") == "trainer.max_steps"
    assert option_name("--trainer.max_steps=4") == "trainer.max_steps"
    assert option_name("--callbacks+") == "callbacks"
    assert option_name("40") is None


@pytest.mark.parametrize(
    "tokens",
    [
        ["--evaluation.split", "test"],
        ["--evaluation.split=test"],
        ["--evaluation", "null"],
        ["--callbacks", "[]"],
        ["--callbacks+", "es_lightning.callbacks.TokenEntropy"],
        ["--callbacks.init_args.split", "test"],
        ["--config", "other.yaml"],
        ["--trainer.eval_before", "false"],
        ["--trainer.output_dir", "elsewhere"],
    ],
)
def test_overrides_that_the_tune_sets_itself_are_refused(tokens):
    with pytest.raises(ConfigError, match="the budget sets .* trials evaluate the validation split"):
        check_overrides(tokens, "the budget")


def test_ordinary_overrides_pass():
    check_overrides(
        ["--trainer.max_steps", "30", "--evaluation.limit", "200", "--evaluation.ks", "null"], "b"
    )


@pytest.mark.parametrize(
    "metric",
    ["pass@1", "eval/countdown_tiny", "eval/a/b/pass@1", "heldout/x/pass@1", "eval/x/pass@0", "eval/x/f1"],
)
def test_a_malformed_selection_metric_is_named(metric):
    with pytest.raises(ConfigError, match=f"selection.metric {metric!r} is not eval/<task>/<key>"):
        Selection(metric=metric)


def test_selection_metric_parts_and_rule():
    selection = Selection(metric="eval/countdown_tiny/pass@16")
    assert (selection.task, selection.key, selection.rule) == ("countdown_tiny", "pass@16", "delta_last")
    assert "eval/countdown_tiny/pass@16 after the last update" in selection.describe()
    with pytest.raises(ConfigError, match="selection.rule 'best_after' is unknown"):
        Selection(metric="eval/x/greedy", rule="best_after")
