"""The rule delta_last on hand-worked numbers, read from evaluation files as the trials write them."""

import json

import numpy as np
import pytest

from es_lightning.tune.config import Selection
from es_lightning.tune.selection import Candidate, Point, candidates_of, choose, metric_value, trial_point


def test_the_largest_mean_delta_wins_and_the_first_of_equals():
    # Δ per seed: a: +0.10, +0.00 (mean 0.05); b: +0.20, -0.12 (mean 0.04); c: +0.05, +0.05 (mean 0.05)
    a = Candidate("a", {0: Point(0.30, 0.40), 1: Point(0.32, 0.32)})
    b = Candidate("b", {0: Point(0.30, 0.50), 1: Point(0.32, 0.20)})
    c = Candidate("c", {0: Point(0.30, 0.35), 1: Point(0.32, 0.37)})
    assert [x.score for x in (a, b, c)] == pytest.approx([0.05, 0.04, 0.05])
    assert choose([a, b, c]) is a and choose([c, b, a]) is c  # a tie goes to the first in grid order
    assert choose([b]) is b


def test_a_configuration_with_an_unfinished_seed_takes_no_part():
    best_but_incomplete = Candidate("x", {0: Point(0.0, 1.0), 1: None})
    modest = Candidate("y", {0: Point(0.3, 0.31), 1: Point(0.3, 0.30)})
    assert not best_but_incomplete.eligible and best_but_incomplete.score is None
    assert choose([best_but_incomplete, modest]) is modest
    assert choose([best_but_incomplete]) is None and choose([]) is None
    assert not Candidate("z", {}).eligible


def test_a_method_that_changes_nothing_scores_zero_not_its_starting_accuracy():
    unchanged = Candidate("same", {0: Point(0.6, 0.6)})
    worse = Candidate("worse", {0: Point(0.6, 0.55)})
    assert unchanged.score == 0.0 and choose([worse, unchanged]) is unchanged


def test_the_metric_is_read_from_the_trial_evaluations(tmp_path):
    selection = Selection(metric="eval/arithmetic/pass@4")
    (tmp_path / "eval").mkdir()
    before = {"arithmetic": {"pass@1": 0.25, "pass@4": 0.5, "split": "validation"}}
    after = {"arithmetic": {"pass@1": 0.5, "pass@4": 0.875, "split": "validation"}}
    (tmp_path / "eval" / "before.json").write_text(json.dumps(before))
    assert trial_point(tmp_path, selection) is None  # no after.json yet
    (tmp_path / "eval" / "after.json").write_text(json.dumps(after))
    point = trial_point(tmp_path, selection)
    assert (point.before, point.after, point.delta) == (0.5, 0.875, 0.375)
    assert metric_value(after, Selection(metric="eval/arithmetic/greedy")) is None  # not evaluated
    assert metric_value(after, Selection(metric="eval/gsm8k/pass@1")) is None
    assert (
        metric_value({"arithmetic": {"pass@1": float("nan")}}, Selection(metric="eval/arithmetic/pass@1"))
        is None
    )


def test_scores_a_rounding_apart_are_a_tie():
    a = Candidate("a", {0: Point(0.30, 0.40), 1: Point(0.32, 0.32)})  # (0.1 + 0.0) / 2 rounds above 0.05
    c = Candidate("c", {0: Point(0.30, 0.35), 1: Point(0.32, 0.37)})  # (0.05 + 0.05) / 2 rounds below
    assert a.score != c.score and a.score == pytest.approx(c.score)
    assert choose([c, a]) is c and choose([a, c]) is a


def test_candidates_from_trial_records_in_grid_order():
    records = [
        {"label": "lr=1", "seed": 0, "before": 0.25, "after": 0.5},
        {"label": "lr=1", "seed": 1, "before": 0.25, "after": 0.25},
        {"label": "lr=2", "seed": 0, "before": 0.25, "after": 0.75},
        {"label": "lr=2", "seed": 1, "before": None, "after": None},  # failed
    ]
    first, second = candidates_of(records)
    assert (first.label, first.score) == ("lr=1", 0.125)  # (0.25 + 0.0) / 2
    assert second.label == "lr=2" and not second.eligible and choose([first, second]) is first


def _trial(tmp_path, name: str, before, after) -> dict:
    """A trial's record with its outcomes read from completions written as an evaluation does."""
    from es_lightning.tune.selection import trial_outcomes
    from tests.report.synthetic import TASK, write_outcomes

    run_dir = tmp_path / name
    write_outcomes(run_dir / "eval", "before", np.asarray(before))
    write_outcomes(run_dir / "eval", "after", np.asarray(after))
    return {"seed": int(name[-1]), "outcomes": trial_outcomes(run_dir, TASK)}


def test_learned_reads_the_paired_bootstrap_of_the_validation_outcomes(tmp_path):
    from es_lightning.tune.selection import delta_interval

    rng = np.random.default_rng(0)
    p = rng.beta(1, 2, size=200)
    before = [rng.binomial(32, p) for _ in range(2)]
    same = [rng.binomial(32, p) for _ in range(2)]  # a configuration that changed nothing
    better = [rng.binomial(32, np.clip(p + 0.1, 0, 1)) for _ in range(2)]
    nothing = [_trial(tmp_path, f"n{s}", before[s], same[s]) for s in range(2)]
    learned = [_trial(tmp_path, f"l{s}", before[s], better[s]) for s in range(2)]
    assert nothing[1]["outcomes"]["after"] == same[1].tolist()
    flat, up = delta_interval(nothing, "pass@1"), delta_interval(learned, "pass@1")
    expected = (np.mean(better) - np.mean(before)) / 32  # pooled over seeds and problems
    assert up["estimate"] == pytest.approx(expected) and up["low"] > 0
    assert flat["low"] <= 0 <= flat["high"]
    assert delta_interval(learned, "greedy") is None  # only pass@k has per-problem counts here
    assert delta_interval([{"seed": 0, "outcomes": None}], "pass@1") is None


def test_tune_md_says_when_no_configuration_learned():
    from es_lightning.tune.page import _learning_note

    def summary(*learned):
        return {"candidates": [{"label": f"c{i}", "learned": v} for i, v in enumerate(learned)]}

    assert "No configuration of es learned" in _learning_note("es", summary(False, False))[0]
    assert _learning_note("es", summary(False, True))[0].endswith(": c1.")
    assert _learning_note("es", summary(None, True)) == []


def test_over_control_scores_each_configuration_against_its_own_control():
    from es_lightning.tune.grid import expand
    from es_lightning.tune.selection import control_pairs, over_control

    grid = {
        "strategy.init_args.learning_rate": [0.003, 0.004],
        "strategy.init_args.reward_control": ["none", "permuted"],
    }
    points = {p.label: p for p in expand(grid)}
    pairs = control_pairs(points, {"strategy.init_args.reward_control": "permuted"})
    assert pairs == {
        "learning_rate=0.003_reward_control=none": "learning_rate=0.003_reward_control=permuted",
        "learning_rate=0.004_reward_control=none": "learning_rate=0.004_reward_control=permuted",
    }
    # α = 3e-3: ES 0.33 after, its control 0.30 (+3 points); α = 4e-3: ES 0.34, control 0.33 (+1 point).
    # Both start at 0.29: by Δ alone, α = 4e-3 would win.
    after = {"0.003_reward_control=none": 0.33, "0.003_reward_control=permuted": 0.30}
    after |= {"0.004_reward_control=none": 0.34, "0.004_reward_control=permuted": 0.33}
    records = [
        {"label": f"learning_rate={k}", "seed": 0, "before": 0.29, "after": v} for k, v in after.items()
    ]
    scored = candidates_of(over_control(records, pairs))
    assert [c.score for c in scored] == pytest.approx([0.03, 0.01])
    assert choose(scored).label == "learning_rate=0.003_reward_control=none"
    floor = [c for c in scored if c.score >= 0.02]
    assert [c.label for c in floor] == ["learning_rate=0.003_reward_control=none"]
    assert choose([c for c in scored if c.score >= 0.05]) is None  # nothing reaches the floor


def test_over_control_waits_for_both_runs_and_names_a_missing_control():
    from es_lightning.errors import ConfigError
    from es_lightning.tune.grid import expand
    from es_lightning.tune.selection import control_pairs, over_control

    grid = {
        "strategy.init_args.learning_rate": [0.003],
        "strategy.init_args.reward_control": ["none", "permuted"],
    }
    points = {p.label: p for p in expand(grid)}
    pairs = control_pairs(points, {"strategy.init_args.reward_control": "permuted"})
    es, control = "learning_rate=0.003_reward_control=none", "learning_rate=0.003_reward_control=permuted"
    unfinished = [
        {"label": es, "seed": 0, "before": 0.29, "after": 0.33},
        {"label": control, "seed": 0, "before": None, "after": None},
    ]
    assert not candidates_of(over_control(unfinished, pairs))[0].eligible
    lone = {
        p.label: p
        for p in expand(
            {"strategy.init_args.learning_rate": [0.003], "strategy.init_args.reward_control": ["none"]}
        )
    }
    with pytest.raises(ConfigError, match="has no control"):
        control_pairs(lone, {"strategy.init_args.reward_control": "permuted"})
    with pytest.raises(ConfigError, match="not in the grid"):
        control_pairs(lone, {"strategy.init_args.sigma": 0.1})


def test_over_control_needs_its_control_and_delta_last_refuses_one():
    from es_lightning.errors import ConfigError

    with pytest.raises(ConfigError, match="over_control needs"):
        Selection(metric="eval/x/pass@1", rule="over_control")
    with pytest.raises(ConfigError, match="over_control needs"):
        Selection(metric="eval/x/pass@1", control={"a": 1})
    rule = Selection(metric="eval/x/pass@1", rule="over_control", control={"r": "permuted"}, min_score=0.02)
    assert "at least 0.02" in rule.describe() and "r = permuted" in rule.describe()


def test_tune_md_shows_each_configuration_against_its_control_and_when_none_reaches_the_floor():
    from es_lightning.tune.page import render

    grid = {
        "strategy.init_args.learning_rate": [0.003],
        "strategy.init_args.reward_control": ["none", "permuted"],
    }
    es, control = "learning_rate=0.003_reward_control=none", "learning_rate=0.003_reward_control=permuted"

    def trial(label, after):
        return {
            "method": "es",
            "label": label,
            "seed": 0,
            "before": 0.324,
            "after": after,
            "status": "finished",
            "compute": {},
        }

    summary = {
        "recipe": "r.yaml",
        "grid": grid,
        "removed_callbacks": [],
        "candidates": [
            {
                "label": es,
                "settings": {p: v[0] for p, v in grid.items()},
                "score": 0.014,
                "eligible": True,
                "delta_interval": {"low": 0.004, "high": 0.023},
                "learned": True,
                "control": control,
            },
        ],
        "chosen": None,
        "unfinished": [],
        "below_min_score": 0.02,
    }
    selection = {"metric": "eval/t/pass@1", "rule": "over_control", "description": "the rule"}
    config = {
        "selection": selection,
        "budget": [],
        "validation_overrides": [],
        "seeds": [0],
        "trial_callbacks": False,
    }
    tune = {
        "command": "es-lightning tune",
        "config": config,
        "methods": {"es": summary},
        "trials": [trial(es, 0.336), trial(control, 0.322)],
    }
    page = render(tune)
    assert "| control after | after | score (after − control's) |" in page
    assert f"| {es} | 0.003 | none | 0.322 | 0.336 | +0.014 | [+0.004, +0.023] | yes |" in page
    assert "Nothing chosen: no configuration's score reached the rule's minimum, 0.02." in page
