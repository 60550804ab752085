"""Every trial is planned, parsed and checked before any runs: bad settings stop the tune, named."""

from __future__ import annotations

import pytest
import yaml

from es_lightning.errors import ConfigError
from es_lightning.tune import Selection, TuneMethod, run_tune
from es_lightning.tune.trials import FitParser, check_trial, plan_trials, validation_recipe
from tests.tune.tripwire import TINY_TUNE_RECIPE

ARITHMETIC = Selection(metric="eval/arithmetic/pass@1")


@pytest.fixture(scope="module")
def parser():
    return FitParser()


@pytest.fixture
def recipe(tmp_path):
    path = tmp_path / "es.yaml"
    path.write_text(TINY_TUNE_RECIPE)
    return str(path)


def _plan(recipe, tmp_path, grid, selection=ARITHMETIC, budget=(), seeds=(0,)):
    methods = {"es": TuneMethod(recipe=recipe, grid=grid)}
    return plan_trials(methods, selection, list(budget), [], list(seeds), tmp_path / "tune")


def test_the_validation_recipe_evaluates_validation_and_keeps_only_safe_callbacks(parser, recipe, tmp_path):
    path = tmp_path / "es_validation.yaml"
    removed = validation_recipe(parser, "es", recipe, path)
    assert removed == ["es_lightning.callbacks.TokenEntropy"]
    written = yaml.safe_load(path.read_text())
    assert written["evaluation"]["split"] == "validation"
    assert written["trainer"]["eval_before"] is True and written["trainer"]["eval_after"] is True
    [held_out] = written["callbacks"]
    assert (
        held_out["class_path"].endswith("HeldOutPassAtK") and held_out["init_args"]["split"] == "validation"
    )
    assert validation_recipe(parser, "es", recipe, path, keep_callbacks=False) == [
        "es_lightning.callbacks.TokenEntropy", "es_lightning.callbacks.HeldOutPassAtK",
    ]  # fmt: skip
    assert yaml.safe_load(path.read_text())["callbacks"] == []


def test_trials_are_one_per_point_and_seed_with_the_forced_settings_last(recipe, tmp_path):
    trials, _ = _plan(
        recipe,
        tmp_path,
        {"strategy.init_args.sigma": [0.01, 0.02]},
        budget=["--trainer.max_steps", "1"],
        seeds=(0, 1),
    )
    assert [(t.point.label, t.spec.seed) for t in trials] == [
        ("sigma=0.01", 0), ("sigma=0.01", 1), ("sigma=0.02", 0), ("sigma=0.02", 1),
    ]  # fmt: skip
    overrides = list(trials[3].spec.overrides)
    assert overrides[:4] == ["--trainer.max_steps", "1", "--strategy.init_args.sigma", "0.02"]
    assert overrides[-6:] == [
        "--evaluation.split",
        "validation",
        "--trainer.eval_before",
        "true",
        "--trainer.eval_after",
        "true",
    ]
    settings = yaml.safe_load(trials[3].settings)
    assert settings["strategy"]["init_args"]["sigma"] == 0.02 and settings["trainer"]["seed"] == 1
    assert settings["trainer"]["output_dir"] == "RUN_DIR" and settings["evaluation"]["split"] == "validation"
    assert trials[3].spec.run_dir == tmp_path / "tune" / "trials" / "es" / "sigma=0.02" / "seed1"


@pytest.mark.parametrize(
    ("grid", "budget", "match"),
    [
        (
            {"strategy.init_args.sgima": [0.01]},
            [],
            r"grid parameter 'strategy.init_args.sgima' does not parse: .*sgima",
        ),
        (
            {"strategy.init_args.sigma": ["small"]},
            [],
            r"grid parameter 'strategy.init_args.sigma' does not parse",
        ),
        (
            {"strategy.init_args.sigma": [0.01]},
            ["--trainer.max_stepz", "1"],
            "the budget and validation_overrides does not parse: .*max_stepz",
        ),
    ],
)
def test_an_unknown_parameter_or_bad_value_is_named_before_any_trial(recipe, tmp_path, grid, budget, match):
    with pytest.raises(ConfigError, match=match):
        _plan(recipe, tmp_path, grid, budget=budget)
    assert not (tmp_path / "tune" / "trials").exists()


@pytest.mark.parametrize(
    ("metric", "match"),
    [
        (
            "eval/gsm8k/pass@1",
            r"does not evaluate task 'gsm8k' of selection.metric eval/gsm8k/pass@1 \(it evaluates \['arithmetic'\]\)",
        ),
        ("eval/arithmetic/pass@8", r"evaluates K in \[1, 2\], not the K=8"),
        ("eval/arithmetic/greedy", "sets evaluation.greedy false"),
    ],
)
def test_a_selection_metric_the_trials_do_not_evaluate_is_refused(parser, recipe, tmp_path, metric, match):
    path = tmp_path / "validation.yaml"
    validation_recipe(parser, "es", recipe, path)
    cfg = parser.parse(["--config", str(path)], "the trial")
    check_trial(cfg, ARITHMETIC, "the trial")  # the metric it evaluates passes
    with pytest.raises(ConfigError, match=match):
        check_trial(cfg, Selection(metric=metric), "the trial")


@pytest.mark.parametrize(
    ("override", "match"),
    [
        (["--evaluation.split", "test"], "would not evaluate the validation split"),
        (["--trainer.eval_before", "false"], "would skip the before or after evaluation"),
        (
            ["--callbacks+", "es_lightning.callbacks.TokenEntropy"],
            "has callback es_lightning.callbacks.TokenEntropy",
        ),
        (
            [
                "--module.init_args.task.init_args.validation",
                "{path: t.jsonl}",
                "--module.init_args.task.init_args.test",
                "{path: t.jsonl}",
            ],
            "the task's validation source is its test source",
        ),
    ],
)
def test_a_trial_that_would_read_the_test_split_is_refused(parser, recipe, tmp_path, override, match):
    path = tmp_path / "validation.yaml"
    validation_recipe(parser, "es", recipe, path)
    cfg = parser.parse(["--config", str(path), *override], "the trial")
    with pytest.raises(ConfigError, match=match):
        check_trial(cfg, ARITHMETIC, "the trial")


def test_a_recipe_that_evaluates_nothing_is_refused(parser, tmp_path):
    path = tmp_path / "none.yaml"
    evaluation = next(line for line in TINY_TUNE_RECIPE.splitlines() if line.startswith("evaluation:"))
    path.write_text(TINY_TUNE_RECIPE.replace(evaluation, "evaluation: null"))
    with pytest.raises(ConfigError, match="recipe .* sets evaluation: null"):
        validation_recipe(parser, "es", str(path), tmp_path / "out.yaml")


def test_the_selection_rule_of_a_folder_cannot_change_after_its_trials(recipe, tmp_path):
    kwargs = dict(
        methods={"es": TuneMethod(recipe=recipe, grid={"strategy.init_args.sigma": [0.01]})},
        launch=False,
        output_dir=tmp_path / "t",
    )
    run_tune(selection=ARITHMETIC, **kwargs)
    with pytest.raises(
        ConfigError, match="was tuned with selection .* the rule is fixed before the trials run"
    ):
        run_tune(selection=Selection(metric="eval/arithmetic/pass@2"), **kwargs)
